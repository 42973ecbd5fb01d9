//! The recording's cost: bytes a sample on disk and CPU a sample to write
//! and to read back, on two workloads.
//!
//! - **side by side**: 100,000 gauges scraped every second, each one more
//!   than at the last scrape (scripts/side_by_side/exporter.py's changing
//!   series), the workload Prometheus's block is measured on.
//! - **node**: a node's signals as its sensors give them: 8 NICs × 200
//!   ethtool/RDMA counters every 100 ms, each NIC read at its own instant
//!   (20 traffic counters growing by a noisy amount, 10 pause, ECN and CNP
//!   counters bursting now and then, the rest idle queues that never
//!   move), 8 GPUs × 20 DCGM fields every second (temperatures, clocks,
//!   power and utilization with noise), and the job's step time at each
//!   step's end (about 1 s, noisy).
//!
//! Targets (issue 34): ≤ 2 bytes a sample on both, writing ≤ 0.05 µs a
//! sample. The bytes are printed once (they do not vary between runs);
//! criterion measures the time, per sample (`Throughput::Elements`).
//! `SPAN=30 LEVEL=1 cargo bench --bench recording` tries other block
//! options (span in seconds, zstd level).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use engine::recording::{BlockOptions, BlockWriter, Event, Reader};
use engine::{CounterSpec, Labels, SampleKind, SeriesSpec, Value, MS, SECOND};

const START: i64 = 1_800_000_000 * SECOND;

/// One sample to record.
type Sample = (u32, i64, Value);

struct Workload {
    name: &'static str,
    specs: Vec<SeriesSpec>,
    samples: Vec<Sample>,
}

fn gauge(metric: &str, labels: &[(&str, &str)]) -> SeriesSpec {
    SeriesSpec { metric: metric.into(), labels: Labels::from_pairs(labels.iter().copied()), kind: SampleKind::Gauge }
}

fn counter(metric: &str, labels: &[(&str, &str)]) -> SeriesSpec {
    SeriesSpec { kind: SampleKind::Counter(CounterSpec::U64), ..gauge(metric, labels) }
}

fn side_by_side(series: u32, scrapes: i64) -> Workload {
    let specs = (0..series)
        .map(|i| gauge("side_by_side_value", &[("port", &format!("p{}", i % 64)), ("queue", &format!("q{}", i / 64))]))
        .collect();
    let mut rng = fastrand::Rng::with_seed(3);
    let mut samples = Vec::with_capacity((series as i64 * scrapes) as usize);
    for round in 0..scrapes {
        // A scrape's timestamp: the interval with a few ms of jitter.
        let t = START + round * SECOND + rng.i64(0..5_000_000);
        samples.extend((0..series).map(|i| (i, t, Value::Real((round + i64::from(i)) as f64))));
    }
    Workload { name: "side by side (100,000 gauges, 1 s)", specs, samples }
}

const NICS: u32 = 8;
const COUNTERS: u32 = 200;
const GPUS: u32 = 8;
const FIELDS: u32 = 20;

fn node(seconds: i64) -> Workload {
    let mut specs = Vec::new();
    for nic in 0..NICS {
        let netdev = format!("eth{nic}");
        for c in 0..COUNTERS {
            specs.push(counter(&format!("ethtool_counter_{c}"), &[("netdev", &netdev)]));
        }
    }
    for gpu in 0..GPUS {
        for f in 0..FIELDS {
            specs.push(gauge(&format!("dcgm_field_{f}"), &[("gpu", &gpu.to_string())]));
        }
    }
    specs.push(gauge("job_step_time_seconds", &[("job", "train")]));
    let mut rng = fastrand::Rng::with_seed(5);
    let mut counters = vec![0u64; (NICS * COUNTERS) as usize];
    let mut samples = Vec::new();
    let mut next_step = START + SECOND;
    for tick in 0..seconds * 10 {
        let base = START + tick * 100 * MS;
        for nic in 0..NICS {
            // Each NIC is read at its own instant, a few hundred µs apart.
            let t = base + i64::from(nic) * 300_000 + rng.i64(0..50_000);
            for c in 0..COUNTERS {
                let i = (nic * COUNTERS + c) as usize;
                counters[i] += match c {
                    0..20 => 1_000_000 + rng.u64(0..200_000),
                    20..30 if rng.u8(..) < 20 => rng.u64(0..100_000),
                    _ => 0,
                };
                samples.push((i as u32, t, Value::Count(counters[i])));
            }
        }
        if tick % 10 == 0 {
            let t = base + 5 * MS + rng.i64(0..1_000_000);
            for gpu in 0..GPUS {
                for f in 0..FIELDS {
                    let v = match f {
                        0..4 => (60 + rng.u32(0..5)) as f64,
                        4..8 => 1410.0,
                        8..14 => 350.0 + rng.f64() * 50.0,
                        _ => (rng.f64() * 100.0).round() / 100.0,
                    };
                    samples.push((NICS * COUNTERS + gpu * FIELDS + f, t, Value::Real(v)));
                }
            }
        }
        if base >= next_step {
            let step = 1.0 + rng.f64() * 0.04;
            samples.push((NICS * COUNTERS + GPUS * FIELDS, base, Value::Real(step)));
            next_step = base + (step * SECOND as f64) as i64;
        }
    }
    Workload { name: "node (1,761 series, 100 ms)", specs, samples }
}

fn options() -> BlockOptions {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<i64>().ok());
    let d = BlockOptions::default();
    BlockOptions {
        span: env("SPAN").map_or(d.span, |s| s * SECOND),
        level: env("LEVEL").map_or(d.level, |l| l as i32),
        ..d
    }
}

/// A writer with the workload's series declared: once per file, not a
/// cost per sample.
fn declared(w: &Workload) -> BlockWriter<Vec<u8>> {
    let mut out = BlockWriter::new(Vec::with_capacity(w.samples.len()), options()).unwrap();
    out.segment(START, "bench").unwrap();
    for (id, spec) in w.specs.iter().enumerate() {
        out.declare(id as u32, spec).unwrap();
    }
    out
}

fn write_samples(w: &Workload, mut out: BlockWriter<Vec<u8>>) -> BlockWriter<Vec<u8>> {
    for &(id, t, v) in &w.samples {
        out.sample(id, t, v).unwrap();
    }
    out.finish().unwrap();
    out
}

fn write(w: &Workload) -> Vec<u8> {
    write_samples(w, declared(w)).get_ref().clone()
}

fn read(bytes: &[u8]) -> usize {
    let mut reader = Reader::new(bytes, "bench");
    let mut n = 0;
    while let Some(e) = reader.next_event().unwrap() {
        n += matches!(e, Event::Sample { .. }) as usize;
    }
    n
}

/// What a week of the node workload takes with the default retention: a
/// day at full resolution, six thinned to a sample a second.
fn week_on_disk(w: &Workload, bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let (full, thinned) = (dir.path().join("rec.1"), dir.path().join("rec.thinning"));
    std::fs::write(&full, bytes).unwrap();
    let done = engine::recording::thin::thin(&full, &thinned, SECOND).unwrap();
    let thinned_bytes = std::fs::metadata(&thinned).unwrap().len();
    let seconds = (w.samples.last().unwrap().1 - w.samples[0].1) as f64 / SECOND as f64;
    let per_day = |b: u64| b as f64 / seconds * 86_400.0;
    let week = per_day(bytes.len() as u64) + 6.0 * per_day(thinned_bytes);
    eprintln!(
        "{}: thinned to 1 s: {} of {} samples, {} bytes; a day takes {:.0} MiB at full resolution, {:.0} MiB thinned; a week (1 day full, 6 thinned) {:.2} GiB",
        w.name,
        done.kept,
        done.read,
        thinned_bytes,
        per_day(bytes.len() as u64) / (1 << 20) as f64,
        per_day(thinned_bytes) / (1 << 20) as f64,
        week / (1u64 << 30) as f64
    );
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("recording");
    group.sample_size(10);
    for w in [side_by_side(100_000, 60), node(60)] {
        let bytes = write(&w);
        assert_eq!(read(&bytes), w.samples.len(), "every sample reads back");
        eprintln!(
            "{}: {} samples, {} bytes: {:.3} bytes a sample",
            w.name,
            w.samples.len(),
            bytes.len(),
            bytes.len() as f64 / w.samples.len() as f64
        );
        if w.name.starts_with("node") {
            week_on_disk(&w, &bytes);
        }
        group.throughput(Throughput::Elements(w.samples.len() as u64));
        group.bench_function(format!("write {}", w.name), |b| {
            b.iter_batched(|| declared(&w), |out| write_samples(&w, out), BatchSize::LargeInput)
        });
        group.bench_function(format!("read {}", w.name), |b| b.iter(|| read(&bytes)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
