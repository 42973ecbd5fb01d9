//! `rocemend why` on an hour of a 32-node job: 8 NICs a node, each NIC's
//! PFC pause counter and each leaf port's every 100 ms, the job's step time
//! every 500 ms; one NIC starts storming 40 minutes in.
//!
//! `read+analyze` is the verb's work from the file, in the daemon's own format
//! (compressed blocks, converted from the JSON lines generated); `analyze`
//! alone on what was read. Target: ≤ 2 s for the whole.

use std::io::Write;

use criterion::{criterion_group, criterion_main, Criterion};
use engine::topology::{Inventory, Nic, Node, Switch, SwitchRole};
use engine::{Topology, MS, SECOND};
use ops::why;

const NODES: usize = 32;
const NICS: usize = 8;
const START: i64 = 1_700_000_000 * SECOND;
const LENGTH: i64 = 3600 * SECOND;
const TICK: i64 = 100 * MS;
/// The storming NIC and when it starts.
const STORM: (usize, usize) = (6, 3);
const STORM_AT: i64 = 2400 * SECOND;

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

/// Writes the recording to `path`; returns its size in bytes.
fn recording(path: &std::path::Path) -> u64 {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut id = 0;
    for n in 0..NODES {
        for r in 0..NICS {
            writeln!(out, r#"{{"series":{id},"metric":"ethtool_tx_prio_pause_duration_us","labels":{{"node":"node-{n:02}","netdev":"eth{r}","prio":"3"}},"kind":"counter","bits":64,"overflow":"wrap"}}"#).unwrap();
            writeln!(out, r#"{{"series":{},"metric":"switch_pfc_rx_pause_duration_us","labels":{{"switch":"leaf-rail{r}","port":"Ethernet{}","prio":"3"}},"kind":"counter","bits":64,"overflow":"wrap"}}"#, id + 1, 4 * n).unwrap();
            id += 2;
        }
        writeln!(
            out,
            r#"{{"series":{},"metric":"job_node_info","labels":{{"job":"big","node":"node-{n:02}"}},"kind":"gauge"}}"#,
            10_000 + n
        )
        .unwrap();
    }
    writeln!(out, r#"{{"series":9999,"metric":"job_step_time_seconds","labels":{{"job":"big"}},"kind":"gauge"}}"#)
        .unwrap();
    let mut pause = vec![0u64; id];
    let mut rng = fastrand::Rng::with_seed(7);
    for k in 0..=(LENGTH / TICK) {
        let t = START + k * TICK;
        let storm = k * TICK >= STORM_AT;
        for (i, p) in pause.iter_mut().enumerate() {
            let (n, r) = (i / (2 * NICS), (i / 2) % NICS);
            *p += if storm && (n, r) == STORM { 99_000 } else { rng.u64(0..300) };
            writeln!(out, r#"{{"s":{i},"t":{t},"v":{p}}}"#).unwrap();
        }
        if k % 5 == 0 {
            let step = if storm { 1.4 } else { 1.0 } * (1.0 + 0.02 * rng.f64());
            writeln!(out, r#"{{"s":9999,"t":{t},"v":{step}}}"#).unwrap();
            if k == 0 {
                for n in 0..NODES {
                    writeln!(out, r#"{{"s":{},"t":{t},"v":1}}"#, 10_000 + n).unwrap();
                }
            }
        }
    }
    out.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// The recording at `json` in the daemon's own format, at `path`; its size.
fn as_blocks(json: &std::path::Path, path: &std::path::Path) -> u64 {
    use engine::recording::{BlockOptions, BlockWriter, Event, Reader};
    let input = std::io::BufReader::with_capacity(engine::recording::READ_BUFFER, std::fs::File::open(json).unwrap());
    let mut reader = Reader::new(input, "bench");
    let out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = BlockWriter::new(out, BlockOptions::default()).unwrap();
    while let Some(event) = reader.next_event().unwrap() {
        match event {
            Event::Series(id, spec) => w.declare(id, &spec).unwrap(),
            Event::Sample { id, t, value } => w.sample(id, t, value).unwrap(),
            Event::Note(note) => w.note(&note).unwrap(),
        }
    }
    w.finish().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// What `rocemend why` reads: the job's path, found in a first pass over
/// the declarations and node lists.
fn read(path: &std::path::Path, topology: &std::sync::Arc<Topology>) -> why::series::Recorded {
    let select = why::select::for_job(path, "big", Some(topology.clone())).unwrap();
    why::select::read(path, select).unwrap()
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hour.jsonl");
    let json_bytes = recording(&json);
    // What the daemon writes: compressed blocks.
    let path = dir.path().join("hour.rec");
    let bytes = as_blocks(&json, &path);
    std::fs::remove_file(&json).unwrap();
    let topology = std::sync::Arc::new(inventory());
    let q = why::Query { job: "big", span: None, threshold: 0.15, topology: Some(&topology) };
    let analyze = |rec: &why::series::Recorded| why::analyze(rec, &q, &[], |_| String::new()).unwrap();
    let rec = read(&path, &topology);
    let report = analyze(&rec);
    let top = report.ranking[0].element.to_string();
    assert_eq!(top, "rail 3 of node-06", "the storming NIC is named");
    eprintln!(
        "recording: {} MB ({} MB as JSON lines), {} series; verdict: {}",
        bytes / 1_000_000,
        json_bytes / 1_000_000,
        rec.series.len(),
        why::render::verdict(&report)
    );
    let mut group = c.benchmark_group("why");
    group.sample_size(10);
    group.bench_function("analyze (1 h, 32 nodes × 8 NICs)", |b| b.iter(|| analyze(&rec)));
    group.bench_function("read+analyze (1 h, 32 nodes × 8 NICs)", |b| b.iter(|| analyze(&read(&path, &topology))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
