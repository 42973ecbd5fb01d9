//! Tests of the field cases: reproducible, the kind mix, the inventory, the
//! recordings read back through the engine's reader, and the sensors'
//! cadences as real daemons have them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use engine::recording::{Event, Reader};
use engine::{Nanos, Overflow, SampleKind, SeriesSpec, Value, SECOND};

use super::series::START;
use super::*;

/// A recording, read back: its series, and each one's samples.
struct Rec {
    series: BTreeMap<u32, SeriesSpec>,
    samples: BTreeMap<u32, Vec<(Nanos, f64)>>,
    count: usize,
    first: Nanos,
}

impl Rec {
    fn read(bytes: &[u8]) -> Rec {
        let mut reader = Reader::new(bytes, "field.jsonl");
        let mut rec = Rec { series: BTreeMap::new(), samples: BTreeMap::new(), count: 0, first: 0 };
        let mut last = 0;
        while let Some(event) = reader.next_event().expect("the recording reads") {
            match event {
                Event::Series(id, spec) => assert!(rec.series.insert(id, spec).is_none(), "series {id} declared twice"),
                Event::Sample { id, t, value } => {
                    assert!(rec.series.contains_key(&id), "series {id} sampled before it is declared");
                    assert!(t >= last, "samples out of time order: {t} after {last}");
                    if rec.count == 0 {
                        rec.first = t;
                    }
                    last = t;
                    rec.count += 1;
                    let v = match value {
                        Value::Count(n) => n as f64,
                        Value::Real(x) => x,
                    };
                    rec.samples.entry(id).or_default().push((t, v));
                }
                Event::Note(_) => {}
            }
        }
        rec
    }

    fn ids(&self, metric: &str) -> Vec<u32> {
        self.series.iter().filter(|(_, s)| s.metric == metric).map(|(id, _)| *id).collect()
    }

    fn of(&self, id: u32) -> Vec<(Nanos, f64)> {
        self.samples.get(&id).cloned().unwrap_or_default()
    }
}

/// The first seed at or after `from` whose case satisfies `pred`.
fn seed_where(from: u64, pred: impl Fn(&FieldCase) -> bool) -> FieldCase {
    (from..from + 2000).map(case).find(|c| pred(c)).expect("some seed has it")
}

#[test]
fn a_seed_gives_the_same_case_and_the_same_bytes() {
    for seed in [0, 17, 4242] {
        let (a, b) = (case(seed), case(seed));
        assert_eq!(
            (a.kind, &a.job, &a.nodes, &a.truth, &a.description),
            (b.kind, &b.job, &b.nodes, &b.truth, &b.description)
        );
        assert_eq!(record(&a), record(&b), "seed {seed}");
    }
    assert_ne!(record(&case(1)), record(&case(2)));
}

#[test]
fn two_hundred_seeds_hold_the_kinds_in_their_weights() {
    let mut counts: BTreeMap<FieldKind, usize> = BTreeMap::new();
    for seed in 0..200 {
        *counts.entry(case(seed).kind).or_default() += 1;
    }
    for kind in FieldKind::ALL {
        assert_eq!(counts.get(&kind).copied().unwrap_or(0), 2 * kind.weight() as usize, "{}", kind.name());
    }
    assert!(counts[&FieldKind::GpuXid] >= 15 && counts[&FieldKind::EcmpCollision] >= 15);
}

#[test]
fn truths_name_elements_of_the_inventory() {
    let topology = engine::Topology::parse(&inventory_toml(), "field").expect("the inventory parses");
    let switches: BTreeSet<String> = topology.inventory().switch.iter().map(|s| s.name.clone()).collect();
    for seed in 0..100 {
        let c = case(seed);
        assert!(!c.truth.is_empty() && c.nodes.len() >= 4 && c.nodes.len() <= 16, "{c:?}");
        for t in &c.truth {
            let known = if let Some(sw) = t.strip_prefix("switch ") {
                switches.contains(sw)
            } else if let Some(rest) = t.strip_prefix("rail ").or_else(|| t.strip_prefix("GPU ")) {
                rest.split_once(" of ")
                    .is_some_and(|(i, node)| i.parse::<u32>().is_ok_and(|i| i < 8) && topology.has_node(node))
            } else {
                t == "not the fabric" || t == "spine/plane 0" || t == "spine/plane 1"
            };
            assert!(known, "seed {seed}: {t}");
        }
        assert_eq!(c.kind.is_fabric_or_gpu(), c.truth != ["not the fabric"], "seed {seed}");
    }
}

#[test]
fn a_recording_reads_back_with_counters_that_only_rise() {
    let c = case(3);
    let bytes = record(&c);
    let rec = Rec::read(&bytes);
    assert!(rec.count > 10_000, "{}", rec.count);
    assert!(rec.first >= START);
    for (id, spec) in &rec.series {
        let SampleKind::Counter(counter) = spec.kind else { continue };
        for w in rec.of(*id).windows(2) {
            let wrapped = counter.overflow == Overflow::Wrap && counter.bits < 64;
            assert!(w[1].1 >= w[0].1 || wrapped, "{} {:?} fell: {:?}", spec.metric, spec.labels, w);
        }
    }
    for metric in [
        "rdma_port_xmit_data_bytes",
        "ethtool_rx_prio_pause",
        "gpu_temperature_celsius",
        "dcgm_DCGM_FI_DEV_SM_CLOCK",
        "switch_pfc_rx_pkts",
        "job_node_info",
        "link_oper_up",
    ] {
        assert!(!rec.ids(metric).is_empty(), "no {metric}");
    }
    let labels: BTreeSet<&str> =
        rec.ids("rdma_np_cnp_sent").iter().flat_map(|id| rec.series[id].labels.0.keys().map(String::as_str)).collect();
    assert_eq!(labels, BTreeSet::from(["netdev", "node", "rdma_dev", "rdma_port"]));
}

#[test]
fn step_times_are_pushed_once_per_step_at_its_end() {
    let c = seed_where(0, |c| c.kind == FieldKind::HostStraggler);
    let rec = Rec::read(&record(&c));
    let id = rec
        .series
        .iter()
        .find(|(_, s)| s.metric == "job_step_time_seconds" && s.labels.get("job") == Some(&c.job))
        .map(|x| *x.0);
    let pushes = rec.of(id.expect("the job pushes step times"));
    assert!(pushes.len() > 30, "{}", pushes.len());
    let gaps: Vec<f64> = pushes.windows(2).map(|w| (w[1].0 - w[0].0) as f64 / SECOND as f64).collect();
    for (gap, push) in gaps.iter().zip(&pushes[1..]) {
        assert!(
            (gap - push.1).abs() < 1e-6,
            "a push carries the time since the previous step ended: {gap} vs {}",
            push.1
        );
    }
    let (lo, hi) = gaps.iter().fold((f64::MAX, 0.0f64), |(lo, hi), g| (lo.min(*g), hi.max(*g)));
    assert!(hi > lo * 1.02, "pushes are not on a grid: {lo}..{hi}");
}

#[test]
fn queue_counters_move_only_every_ten_seconds_and_port_counters_every_second() {
    let c = seed_where(5, |c| c.scenario.plan.gnmi <= 1.0);
    let rec = Rec::read(&record(&c));
    let changes = |id: u32| -> Vec<f64> {
        rec.of(id).windows(2).filter(|w| w[1].1 != w[0].1).map(|w| w[1].0 as f64 / SECOND as f64).collect()
    };
    let mut checked = 0;
    for id in rec.ids("switch_queue_packets").into_iter().chain(rec.ids("switch_queue_ecn_marked_packets")) {
        for w in changes(id).windows(2) {
            assert!(w[1] - w[0] > 8.9, "{:?} changed {} s apart", rec.series[&id].labels, w[1] - w[0]);
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
    let busy = rec.ids("switch_port_tx_bytes").into_iter().map(changes).max_by_key(Vec::len).unwrap_or_default();
    assert!(busy.windows(2).all(|w| w[1] - w[0] < 2.5), "port counters refresh every second");
}

#[test]
fn broadcom_switches_have_no_pause_durations() {
    let broadcom = seed_where(0, |c| c.scenario.broadcom);
    let mellanox = seed_where(0, |c| !c.scenario.broadcom);
    let (b, m) = (Rec::read(&record(&broadcom)), Rec::read(&record(&mellanox)));
    for metric in ["switch_pfc_rx_pause_duration_us", "switch_pfc_tx_pause_duration_us"] {
        assert!(b.ids(metric).is_empty(), "Broadcom has no {metric}");
        assert!(!m.ids(metric).is_empty(), "Mellanox has {metric}");
    }
    assert!(!b.ids("switch_pfc_on2off_rx_pkts").is_empty() && !b.ids("switch_pfc_queue_paused").is_empty());
}

#[test]
fn a_loader_hang_pushes_no_step_after_its_onset() {
    let c = seed_where(0, |c| c.kind == FieldKind::LoaderHang);
    let rec = Rec::read(&record(&c));
    let onset = START + (c.scenario.fault.onset * 1e9) as Nanos;
    let id = rec
        .series
        .iter()
        .find(|(_, s)| s.metric == "job_step_time_seconds" && s.labels.get("job") == Some(&c.job))
        .map(|x| *x.0);
    let pushes = rec.of(id.expect("steps were pushed before the hang"));
    assert!(pushes.iter().all(|p| p.0 <= onset) && pushes.len() > 20, "{}", c.description);
    let info = rec.ids("job_node_info");
    assert!(info.iter().any(|id| rec.of(*id).iter().any(|s| s.0 > onset)), "the job still exists");
}

#[test]
fn causes_slow_their_jobs_and_the_controls_leave_the_fabric_alone() {
    for kind in [FieldKind::PfcStorm, FieldKind::EcmpCollision, FieldKind::GpuThermal, FieldKind::LoaderStall] {
        let c = seed_where(0, |c| c.kind == kind && c.scenario.fault.until >= c.scenario.duration);
        let world = state::World::build(&c.scenario, &c.fabric, &c.pace);
        let pushes = world.job.sched.pushes(c.scenario.duration);
        let onset = c.scenario.fault.onset;
        let mean = |f: &dyn Fn(f64) -> bool| {
            let v: Vec<f64> = pushes.iter().filter(|p| f(p.0)).map(|p| p.1).collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        let (before, after) = (mean(&|t| t < onset), mean(&|t| t > onset + 60.0));
        assert!(after > before * 1.04, "{}: {before} → {after}: {}", kind.name(), c.description);
    }
}

#[test]
fn recordings_stay_within_budget_and_time() {
    let mut worst = 0;
    for seed in [11, 12, 13, 14] {
        let c = case(seed);
        let started = Instant::now();
        let (bytes, samples) = record::record(&c);
        let took = started.elapsed();
        worst = worst.max(samples);
        assert!(!bytes.is_empty());
        assert!(samples as f64 <= plan::BUDGET * 1.1, "seed {seed}: {samples} samples: {}", c.description);
        if !cfg!(debug_assertions) {
            assert!(took.as_millis() < 150, "seed {seed}: {took:?} for {samples} samples");
        }
    }
    assert!(worst > 50_000, "{worst}");
}

/// A survey of the first 200 cases (sizes, times, measured slowdowns), for a
/// person: `cargo test --release -p rocemend-sim survey -- --ignored --nocapture`.
#[test]
#[ignore = "a report, not a check"]
fn survey() {
    let (mut total, mut slowest, mut biggest) = (0usize, 0u128, 0usize);
    for seed in 0..200 {
        let c = case(seed);
        let started = Instant::now();
        let (_, samples) = record::record(&c);
        let ms = started.elapsed().as_millis();
        let world = state::World::build(&c.scenario, &c.fabric, &c.pace);
        let pushes = world.job.sched.pushes(c.scenario.duration);
        let (onset, until) = (c.scenario.fault.onset, c.scenario.fault.until);
        let mean = |lo: f64, hi: f64| {
            let v: Vec<f64> = pushes.iter().filter(|p| p.0 > lo && p.0 < hi).map(|p| p.1).collect();
            (v.iter().sum::<f64>() / v.len().max(1) as f64, v.len())
        };
        let ((before, _), (after, n_after)) = (mean(0.0, onset), mean(onset + 5.0, until));
        let p = c.scenario.plan;
        println!(
            "{seed:3} {:17} nodes {:2}+{} {:3.0}s rdma {:.2} eth {:.2} gnmi {:.0} {:7} samples {:4} ms  step {:.2}→{:.2} (×{:.2}, {n_after} steps)  {}",
            c.kind.name(),
            c.nodes.len(),
            c.scenario.recorded.len() - c.nodes.len(),
            c.scenario.duration,
            p.rdma,
            p.ethtool,
            p.gnmi,
            samples,
            ms,
            before,
            after,
            after / before,
            c.description
        );
        total += samples;
        slowest = slowest.max(ms);
        biggest = biggest.max(samples);
    }
    println!("mean {} samples, largest {biggest}, slowest {slowest} ms", total / 200);
}

/// Writes case `$FIELD_SEED`'s recording to `$FIELD_OUT`, for a person to
/// look at: `FIELD_SEED=12 FIELD_OUT=/tmp/c12.jsonl cargo test -p rocemend-sim dump -- --ignored`.
#[test]
#[ignore = "a tool, not a check"]
fn dump() {
    let seed = std::env::var("FIELD_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let c = case(seed);
    let path = std::env::var("FIELD_OUT").unwrap_or_else(|_| format!("/tmp/field-{seed}.jsonl"));
    std::fs::write(&path, record(&c)).expect("the recording is written");
    println!("{path}: {:?} {}\n{}", c.kind, c.truth.join(" | "), c.description);
}

/// Every one of the first 200 recordings reads back in time order with
/// counters that only rise (the checks of one recording, over many):
/// `cargo test --release -p rocemend-sim every_recording -- --ignored`.
#[test]
#[ignore = "slow in a debug build"]
fn every_recording_of_200_reads_back() {
    for seed in 0..200 {
        let rec = Rec::read(&record(&case(seed)));
        for (id, spec) in &rec.series {
            let SampleKind::Counter(counter) = spec.kind else { continue };
            let wraps = counter.overflow == Overflow::Wrap && counter.bits < 64;
            let samples = rec.of(*id);
            assert!(samples.windows(2).all(|w| w[1].1 >= w[0].1 || wraps), "seed {seed}: {} fell", spec.metric);
        }
    }
}

#[test]
fn a_tenant_nic_storming_without_a_daemon_shows_only_at_its_leaf_port() {
    let c = seed_where(
        0,
        |c| matches!(c.scenario.fault.cause, world::Cause::PfcStorm { node, .. } if c.scenario.ports_only.contains(&node)),
    );
    let world::Cause::PfcStorm { node, rail, .. } = c.scenario.fault.cause else { unreachable!("chosen above") };
    let rec = Rec::read(&record(&c));
    let name = inventory::node_name(node);
    // Its job still names it (`job_node_info`); no sensor of its own does.
    let own =
        rec.series.values().filter(|s| s.metric != "job_node_info" && s.labels.get("node") == Some(name.as_str()));
    assert_eq!(own.count(), 0, "no daemon on {name}");
    let (leaf, port) = (inventory::leaf_name(inventory::unit_of(node), rail), inventory::node_port(node));
    let id = rec.series.iter().find(|(_, s)| {
        s.metric == "switch_pfc_rx_pkts" && s.labels.get("switch") == Some(&leaf) && s.labels.get("port") == Some(&port)
    });
    let frames = rec.of(*id.expect("its leaf port is recorded").0);
    let onset = START + (c.scenario.fault.onset * 1e9) as Nanos;
    let before = frames.iter().filter(|s| s.0 < onset).map(|s| s.1).fold(0.0, f64::max);
    let last = frames.last().map_or(0.0, |s| s.1);
    assert!(last - before > 1e5, "{name}'s port took {} pause frames: {}", last - before, c.description);
    assert_eq!(c.truth, [format!("rail {rail} of {name}")]);
}

#[test]
fn a_gpu_that_falls_off_the_bus_is_read_no_more() {
    let c = seed_where(0, |c| matches!(c.scenario.fault.cause, world::Cause::GpuXid { xid: 79, .. }));
    let world::Cause::GpuXid { node, gpu, .. } = c.scenario.fault.cause else { unreachable!("chosen above") };
    let rec = Rec::read(&record(&c));
    let (name, index) = (inventory::node_name(node), gpu.to_string());
    let onset = START + (c.scenario.fault.onset * 1e9) as Nanos;
    let of_gpu = |metric: &str| -> Vec<u32> {
        let mine = |s: &SeriesSpec| s.labels.get("node") == Some(name.as_str()) && s.labels.get("gpu") == Some(&index);
        rec.series.iter().filter(|(_, s)| s.metric == metric && mine(s)).map(|(id, _)| *id).collect()
    };
    let xid: Vec<(Nanos, f64)> = of_gpu("gpu_xid").into_iter().flat_map(|id| rec.of(id)).collect();
    assert!(xid.len() == 1 && xid[0].1 == 79.0 && xid[0].0 >= onset, "{xid:?}");
    for id in of_gpu("gpu_temperature_celsius").into_iter().chain(of_gpu("dcgm_DCGM_FI_DEV_GPU_UTIL")) {
        let samples = rec.of(id);
        assert!(samples.iter().all(|s| s.0 <= onset + 10 * SECOND) && !samples.is_empty());
    }
}
