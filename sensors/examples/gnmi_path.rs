//! The gnmi sensor's path from a notification to engine samples, for
//! instruction counts: an aggregator of 28 simulated SONiC switches of 64
//! ports (8 queues, 7 counters each: 100,352 series), each read at the
//! `sonic_queues` preset's path exactly as the simulated switch answers it
//! (one update per port, its queue table as JSON), every counter of every
//! queue changing every round, and mapped by the sensor's own
//! `Memory::ingest` (one `Memory` per switch), as a stream's session does.
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
use gnmi_proto::gnmi::{Encoding, Notification, Path, Update};
use sensors::gnmi::ingest::Memory;
use sensors::gnmi::mapping::OidNames;
use sensors::gnmi::plan::StreamPlan;
use sim::switch::model::QUEUE_STATS;
use sim::switch::{tree, Model, QUEUES};

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
    model: Model,
    ports: Vec<String>,
    memory: Memory,
}

impl Switch {
    /// Sets every queue counter to a value of a real switch's magnitude
    /// (packet and byte counters of 10 to 15 digits, watermarks and
    /// occupancy of a few), different in every round.
    fn move_counters(&self, round: u64) {
        for (p, port) in self.ports.iter().enumerate() {
            for queue in 0..QUEUES {
                for (f, field) in QUEUE_STATS.iter().enumerate() {
                    let scale = if field.contains("WATERMARK") || field.contains("OCCUPANCY") {
                        1_000
                    } else if field.contains("BYTES") {
                        1_000_000_000_000
                    } else {
                        1_000_000_000
                    };
                    let value = scale * (1 + f as u64) + round * (977 + p as u64 * 31 + queue as u64 * 7);
                    self.model.set_queue_counter(port, queue, field, value).expect("a queue counter");
                }
            }
        }
    }
}

/// The notification the switch sends for `stream` at `ts`: every queue of
/// every port, relative to the request's prefix.
fn notification(model: &Model, stream: &StreamPlan, ts: i64) -> Notification {
    let prefix = stream.list.prefix.clone();
    let mut update = Vec::new();
    for sub in &stream.list.subscription {
        let full = tree::request_path(prefix.as_ref(), sub.path.as_ref().expect("a subscription path"));
        let values = tree::read(&model.read(), &full, Encoding::JsonIetf).expect("the preset's path reads");
        for (path, val) in values {
            let skip = prefix.as_ref().map_or(0, |p| p.elem.len());
            let relative = Path { elem: path.elem[skip.min(path.elem.len())..].to_vec(), ..Path::default() };
            update.push(Update { path: Some(relative), val: Some(val), ..Default::default() });
        }
    }
    Notification { timestamp: ts, prefix, update, ..Default::default() }
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
        let (samples, problems) = switch.memory.ingest(ctx, &switch.name, stream, &OidNames::default(), note);
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
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(SWITCHES);
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let table = SeriesTable::default();
    let ctx = SensorContext::new(table.clone(), "gnmi", 1 << 20, tx, shutdown);
    let mut switches: Vec<Switch> = (0..SWITCHES)
        .map(|i| {
            let model = Model::new(PORTS);
            let ports = model.port_names();
            Switch { name: format!("leaf{i:03}"), model, ports, memory: Memory::default() }
        })
        .collect();
    for sw in &mut switches {
        sw.move_counters(0);
        let first = notification(&sw.model, &stream, 1);
        let (registered, problems) = sw.memory.ingest(&ctx, &sw.name, &stream, &OidNames::default(), &first);
        assert!(problems.is_empty() && registered.len() == PORTS * QUEUES * QUEUE_STATS.len());
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
                notification(&sw.model, &stream, ts)
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
