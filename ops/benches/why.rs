//! `rocemend why` on a 32-node job: 8 NICs a node, each NIC's PFC pause
//! counter and each leaf port's every 100 ms, the job's step time every
//! 500 ms; one NIC starts storming two thirds of the way in. Over an hour
//! (18 million samples; target ≤ 2 s) and over a day (442 million; target
//! ≤ 20 s).
//!
//! The recording is written in the daemon's own format (compressed blocks)
//! by the writer the daemon uses. `read+analyze` is the verb's work from
//! the file; `analyze` alone works on what was read. The day's group runs
//! alone with `cargo bench --bench why -- day`.

use criterion::{criterion_group, criterion_main, Criterion};
use engine::recording::{BlockOptions, BlockWriter};
use engine::topology::{Inventory, Nic, Node, Switch, SwitchRole};
use engine::{CounterSpec, Labels, SampleKind, SeriesSpec, Topology, Value, MS, SECOND};
use ops::why;

const NODES: usize = 32;
const NICS: usize = 8;
const START: i64 = 1_700_000_000 * SECOND;
const TICK: i64 = 100 * MS;
/// The storming NIC (node, rail).
const STORM: (usize, usize) = (6, 3);
/// The job's step-time series and its node lists' first id.
const STEP_ID: u32 = 9_999;
const NODE_INFO_ID: u32 = 10_000;

fn inventory() -> Topology {
    let mut inv = Inventory::default();
    for r in 0..NICS as u32 {
        let mut leaf = Switch::new(format!("leaf-rail{r}"), SwitchRole::Leaf);
        leaf.rail = Some(r);
        leaf.plane = Some(r / 4);
        inv.switch.push(leaf);
    }
    for n in 0..NODES {
        let nic = (0..NICS as u32)
            .map(|r| Nic {
                rdma_dev: format!("mlx5_{r}"),
                netdev: format!("eth{r}"),
                port: 1,
                gpu: None,
                rail: r,
                plane: r / 4,
                switch: Some(format!("leaf-rail{r}")),
                switch_port: Some(format!("Ethernet{}", 4 * n)),
            })
            .collect();
        inv.node.push(Node { name: format!("node-{n:02}"), rack: None, pod: None, zone: None, gpu: vec![], nic });
    }
    Topology::from_inventory(inv).unwrap()
}

fn spec(metric: &str, labels: &[(&str, String)], kind: SampleKind) -> SeriesSpec {
    let mut l = Labels::default();
    for (name, value) in labels {
        l.insert(name.to_string(), value);
    }
    SeriesSpec { metric: metric.into(), labels: l, kind }
}

/// Writes `length` of recording to `path` as the daemon writes it; returns
/// its size in bytes and its samples.
fn recording(path: &std::path::Path, length: i64) -> (u64, u64) {
    let out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = BlockWriter::new(out, BlockOptions::default()).unwrap();
    let counter = SampleKind::Counter(CounterSpec::U64);
    let mut id = 0;
    for n in 0..NODES {
        let node = format!("node-{n:02}");
        for r in 0..NICS {
            let nic = [("node", node.clone()), ("netdev", format!("eth{r}")), ("prio", "3".into())];
            w.declare(id, &spec("ethtool_tx_prio_pause_duration_us", &nic, counter)).unwrap();
            let port =
                [("switch", format!("leaf-rail{r}")), ("port", format!("Ethernet{}", 4 * n)), ("prio", "3".into())];
            w.declare(id + 1, &spec("switch_pfc_rx_pause_duration_us", &port, counter)).unwrap();
            id += 2;
        }
        let info = [("job", "big".to_string()), ("node", node)];
        w.declare(NODE_INFO_ID + n as u32, &spec("job_node_info", &info, SampleKind::Gauge)).unwrap();
    }
    w.declare(STEP_ID, &spec(why::STEP_TIME, &[("job", "big".into())], SampleKind::Gauge)).unwrap();
    let storm_at = length / 3 * 2;
    let mut pause = vec![0u64; id as usize];
    let mut rng = fastrand::Rng::with_seed(7);
    let mut samples = 0;
    for k in 0..=(length / TICK) {
        let t = START + k * TICK;
        let storm = k * TICK >= storm_at;
        for (i, p) in pause.iter_mut().enumerate() {
            let (n, r) = (i / (2 * NICS), (i / 2) % NICS);
            *p += if storm && (n, r) == STORM { 99_000 } else { rng.u64(0..300) };
            w.sample(i as u32, t, Value::Count(*p)).unwrap();
        }
        samples += pause.len() as u64;
        if k % 5 == 0 {
            let step = if storm { 1.4 } else { 1.0 } * (1.0 + 0.02 * rng.f64());
            w.sample(STEP_ID, t, Value::Real(step)).unwrap();
            samples += 1;
            if k == 0 {
                for n in 0..NODES as u32 {
                    w.sample(NODE_INFO_ID + n, t, Value::Real(1.0)).unwrap();
                }
            }
        }
    }
    w.finish().unwrap();
    (std::fs::metadata(path).unwrap().len(), samples)
}

/// What `rocemend why` reads: the job's path, found in a first pass over
/// the declarations and node lists.
fn read(path: &std::path::Path, topology: &std::sync::Arc<Topology>) -> why::series::Recorded {
    let select = why::select::for_job(path, "big", Some(topology.clone())).unwrap();
    why::select::read(path, select).unwrap()
}

/// A recording, what was read of it, and the inventory.
struct Prepared {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    topology: std::sync::Arc<Topology>,
    rec: why::series::Recorded,
}

/// Writes the recording and checks the verdict, on first use: a run that
/// filters the group out does not write a day of samples.
fn prepare(name: &str, length: i64) -> Prepared {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.rec");
    let (bytes, samples) = recording(&path, length);
    let topology = std::sync::Arc::new(inventory());
    let rec = read(&path, &topology);
    let report = analyze(&rec, &topology);
    assert_eq!(report.ranking[0].element.to_string(), "rail 3 of node-06", "the storming NIC is named");
    eprintln!(
        "{name}: recording {} MB, {samples} samples ({:.3} bytes a sample), {} series; verdict: {}",
        bytes / 1_000_000,
        bytes as f64 / samples as f64,
        rec.series.len(),
        why::render::verdict(&report)
    );
    Prepared { _dir: dir, path, topology, rec }
}

fn analyze(rec: &why::series::Recorded, topology: &Topology) -> why::Report {
    let q = why::Query { job: "big", span: None, threshold: 0.15, topology: Some(topology), all_metrics: false };
    why::analyze(rec, &q, &[], |_| String::new()).unwrap()
}

fn bench_over(c: &mut Criterion, name: &str, length: i64) {
    let prepared = std::cell::OnceCell::new();
    let get = || prepared.get_or_init(|| prepare(name, length));
    let mut group = c.benchmark_group(format!("why {name}"));
    group.sample_size(10);
    group.bench_function("analyze", |b| {
        let p = get();
        b.iter(|| analyze(&p.rec, &p.topology))
    });
    group.bench_function("read+analyze", |b| {
        let p = get();
        b.iter(|| analyze(&read(&p.path, &p.topology), &p.topology))
    });
    group.finish();
}

fn hour(c: &mut Criterion) {
    bench_over(c, "hour (32 nodes × 8 NICs)", 3600 * SECOND);
}

fn day(c: &mut Criterion) {
    bench_over(c, "day (32 nodes × 8 NICs)", 24 * 3600 * SECOND);
}

criterion_group!(benches, hour, day);
criterion_main!(benches);
