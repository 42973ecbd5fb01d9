//! The gnmi sensor's path from a notification to engine samples, for
//! instruction counts: an aggregator of 28 simulated SONiC switches of 64
//! ports (16 queues, 8 unicast and 8 multicast, 7 counters each: 200,704
//! series), each read at the `sonic_queues` preset's path exactly as the
//! simulated switch's gNMI front answers it (a ONCE Subscribe of the
//! virtual path `COUNTERS/Ethernet*/Queues`, keyed by the ports' aliases),
//! every counter of every queue changing every round, and mapped by the
//! sensor's own `Memory::ingest` (one `Memory` per switch, aliases mapped
//! back to names), as a stream's session does.
//!
//! `cargo run --release -p rocemend-sensors --example gnmi_path [ROUNDS]`
//! (default 10). The first notification of each switch (which registers
//! its series) is ingested outside the measured function; each further
//! round is one call of `measured_ingest`, which ingests and sends one
//! notification per switch, so under
//! `valgrind --tool=callgrind --toggle-collect='*measured_ingest*'` the
//! collected instructions divided by the samples printed are instructions
//! per sample (`scripts/instructions.sh`). It also prints the heap
//! allocations made per sample inside the measured rounds.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use engine::{Batch, SensorContext, SeriesTable};
use gnmi_proto::gnmi::subscribe_response::Response as Resp;
use gnmi_proto::gnmi::subscription_list::Mode as ListMode;
use gnmi_proto::gnmi::Notification;
use gnmi_proto::{ClientConfig, GnmiClient};
use sensors::gnmi::ingest::Memory;
use sensors::gnmi::mapping::OidNames;
use sensors::gnmi::plan::StreamPlan;
use sim::switch::asic::QUEUE_STATS;
use sim::switch::{spawn, Model, Options, RunningSwitch};

const SWITCHES: usize = 28;
const PORTS: usize = 64;

/// The system allocator, counting allocations (and reallocations, which
/// may move), so the example can say how many the path makes per sample.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A switch of the aggregator: its name, its counters, its series memory.
struct Switch {
    name: String,
    served: RunningSwitch,
    ports: Vec<String>,
    queues: usize,
    /// Its ports' aliases, as the sensor's probe reads them from CONFIG_DB.
    oids: OidNames,
    memory: Memory,
}

impl Switch {
    /// Sets every queue counter to a value of a real switch's magnitude
    /// (packet and byte counters of 10 to 15 digits, watermarks and
    /// occupancy of a few), different in every round.
    fn move_counters(&self, round: u64) {
        for (p, port) in self.ports.iter().enumerate() {
            for queue in 0..self.queues {
                for (f, field) in QUEUE_STATS.iter().enumerate() {
                    let scale = if field.contains("WATERMARK") || field.contains("OCCUPANCY") {
                        1_000
                    } else if field.contains("BYTES") {
                        1_000_000_000_000
                    } else {
                        1_000_000_000
                    };
                    let value = scale * (1 + f as u64) + round * (977 + p as u64 * 31 + queue as u64 * 7);
                    self.served.model.set_queue_counter(port, queue, field, value).expect("a queue counter");
                }
            }
        }
    }
}

/// What the switch's front answers to `stream`'s subscriptions asked ONCE, stamped `ts`: every
/// update of every notification before the sync, in one notification under the request's
/// prefix.
async fn notification(switch: &RunningSwitch, stream: &StreamPlan, ts: i64) -> Notification {
    let mut client =
        GnmiClient::connect(&ClientConfig::plain(switch.addr.to_string())).await.expect("the switch answers");
    let mut list = stream.list.clone();
    list.mode = ListMode::Once as i32;
    let mut once = client.subscribe(list).await.expect("the preset's paths are served");
    let mut update = Vec::new();
    while let Some(response) = once.message().await.expect("the ONCE answer") {
        match response.response {
            Some(Resp::Update(note)) => update.extend(note.update),
            Some(Resp::SyncResponse(_)) => break,
            other => panic!("not an update: {other:?}"),
        }
    }
    assert!(!update.is_empty(), "the switch sent no queue");
    Notification { timestamp: ts, prefix: stream.list.prefix.clone(), update, ..Default::default() }
}

/// One round: every switch's notification mapped to samples and sent.
/// Returns the samples sent.
#[inline(never)]
fn measured_ingest(
    switches: &mut [Switch],
    ctx: &SensorContext,
    rt: &tokio::runtime::Runtime,
    stream: &StreamPlan,
    notes: &[Notification],
) -> usize {
    let mut n = 0;
    for (switch, note) in switches.iter_mut().zip(notes) {
        let (samples, problems) = switch.memory.ingest(ctx, &switch.name, stream, &switch.oids, note);
        assert!(problems.is_empty(), "{:?}", problems.first());
        n += samples.len();
        rt.block_on(ctx.send(Batch { samples, notes: Vec::new() })).expect("the channel is open");
    }
    n
}

fn main() {
    let rounds: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let config: sensors::GnmiConfig = toml::from_str(
        "presets = [\"sonic_queues\"]\nsample_interval = \"1s\"\n\
         [[targets]]\nname = \"sw00\"\naddress = \"127.0.0.1:1\"\npath_style = \"prefix-target\"\n",
    )
    .expect("the config parses");
    let sensor = config.build("gnmi").expect("the sensor builds");
    let stream = sensor.targets()[0].prefix_target[0].clone();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(SWITCHES);
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let table = SeriesTable::default();
    let ctx = SensorContext::new(table.clone(), "gnmi", 1 << 20, tx, shutdown);
    let mut switches: Vec<Switch> = (0..SWITCHES)
        .map(|i| {
            let name = format!("leaf{i:03}");
            let model = Model::new(PORTS);
            let ports = model.port_names();
            let queues = model.profile().queues();
            let aliases = ports.iter().filter_map(|p| Some((model.alias(p)?, p.clone()))).collect();
            let oids = OidNames { aliases, ..OidNames::default() };
            let loopback = ([127, 0, 0, 1], 0).into();
            let served = rt.block_on(spawn(&name, loopback, model, Options::default())).expect("the switch serves");
            Switch { name, served, ports, queues, oids, memory: Memory::default() }
        })
        .collect();
    for sw in &mut switches {
        sw.move_counters(0);
        let first = rt.block_on(notification(&sw.served, &stream, 1));
        let (registered, problems) = sw.memory.ingest(&ctx, &sw.name, &stream, &sw.oids, &first);
        assert!(problems.is_empty(), "{:?}", problems.first());
        assert_eq!(registered.len(), PORTS * sw.queues * QUEUE_STATS.len());
        assert!(table.read().labels(registered[0].series).get("port").is_some_and(|p| p.starts_with("Ethernet")));
    }
    let series = table.read().len();
    let mut samples = 0;
    let mut busy = Duration::ZERO;
    let mut allocations = 0;
    for round in 1..=rounds {
        let ts = 1 + round as i64;
        let notes: Vec<Notification> = switches
            .iter()
            .map(|sw| {
                sw.move_counters(round);
                rt.block_on(notification(&sw.served, &stream, ts))
            })
            .collect();
        let started = Instant::now();
        let allocated = ALLOCATIONS.load(Ordering::Relaxed);
        samples += measured_ingest(&mut switches, &ctx, &rt, &stream, &notes);
        allocations += ALLOCATIONS.load(Ordering::Relaxed) - allocated;
        busy += started.elapsed();
        while rx.try_recv().is_ok() {}
    }
    assert_eq!(table.read().len(), series, "every series registered once");
    println!(
        "rounds {rounds} switches {SWITCHES} series {series} samples {samples} ns_per_sample {:.1} \
         allocations_per_sample {:.3}",
        busy.as_nanos() as f64 / samples.max(1) as f64,
        allocations as f64 / samples.max(1) as f64,
    );
}
