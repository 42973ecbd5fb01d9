//! The gnmi sensor's path from a notification to engine samples, for
//! instruction counts: one simulated SONiC switch of 256 ports (8 queues,
//! 7 counters each: 14,336 series) read at the `sonic_queues` preset's
//! path exactly as the simulated switch answers it, its counters moving
//! every round, and mapped by the sensor's own `Memory::ingest`, as a
//! stream's session does.
//!
//! `cargo run --release -p rocemend-sensors --example gnmi_path [ROUNDS]`
//! (default 10). The first notification (which registers every series) is
//! ingested outside the measured function; each further round is one call
//! of `measured_ingest`, so under
//! `valgrind --tool=callgrind --toggle-collect='*measured_ingest*'` the
//! collected instructions divided by the samples printed are instructions
//! per sample (`scripts/instructions.sh`).

use std::time::{Duration, Instant};

use engine::{Batch, SensorContext, SeriesTable};
use gnmi_proto::gnmi::{Encoding, Notification, Path, Update};
use sensors::gnmi::ingest::Memory;
use sensors::gnmi::mapping::OidNames;
use sensors::gnmi::plan::StreamPlan;
use sim::switch::{tree, Model};

const PORTS: usize = 256;

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

/// One notification: mapped to samples and sent. Returns the samples sent.
#[inline(never)]
fn measured_ingest(
    memory: &mut Memory,
    ctx: &SensorContext,
    rt: &tokio::runtime::Runtime,
    stream: &StreamPlan,
    note: &Notification,
) -> usize {
    let (samples, problems) = memory.ingest(ctx, "sw00", stream, &OidNames::default(), note);
    assert!(problems.is_empty(), "{:?}", problems.first());
    let n = samples.len();
    rt.block_on(ctx.send(Batch { samples, notes: Vec::new() })).expect("the channel is open");
    n
}

fn main() {
    let rounds: i64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let config: sensors::GnmiConfig = toml::from_str(
        "presets = [\"sonic_queues\"]\nsample_interval = \"1s\"\n\
         [[targets]]\nname = \"sw00\"\naddress = \"127.0.0.1:1\"\npath_style = \"prefix-target\"\n",
    )
    .expect("the config parses");
    let sensor = config.build("gnmi").expect("the sensor builds");
    let stream = sensor.targets()[0].prefix_target[0].clone();
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(4);
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let ctx = SensorContext::new(SeriesTable::default(), "gnmi", 1 << 20, tx, shutdown);
    let model = Model::new(PORTS);
    for port in model.port_names() {
        for queue in 0..8 {
            // Every counter moves every round: the worst case for the path.
            model.set_queue_counter(&port, queue, "SAI_QUEUE_STAT_PACKETS", 1).expect("a queue counter");
        }
    }
    let mut memory = Memory::default();
    let first = notification(&model, &stream, 1);
    let (registered, _) = memory.ingest(&ctx, "sw00", &stream, &OidNames::default(), &first);
    let series = registered.len();
    let mut samples = 0;
    let mut busy = Duration::ZERO;
    for round in 2..=rounds + 1 {
        model.advance(Duration::from_secs(1));
        let note = notification(&model, &stream, round);
        let started = Instant::now();
        samples += measured_ingest(&mut memory, &ctx, &rt, &stream, &note);
        busy += started.elapsed();
        drop(rx.try_recv().expect("a batch"));
    }
    println!(
        "rounds {rounds} series {series} samples {samples} ns_per_sample {:.1}",
        busy.as_nanos() as f64 / samples.max(1) as f64
    );
}
