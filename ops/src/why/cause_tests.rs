//! The misreadings an independent generator found, each as a small
//! recording on `docs/examples/inventory.toml`: a job on node-01 and
//! node-02 whose step time rises at 60 s because node-02's NIC on rail 3
//! storms pause frames (seen at both ends of its cable), with something
//! else moving beside it that is no cause.

use engine::counter::CounterSpec;
use engine::recording::Writer;
use engine::series::{SampleKind, SeriesSpec, Value};
use engine::{Labels, Nanos, Topology, SECOND};

use super::path::Element;
use super::{analyze, series, Query, Report};

const T0: Nanos = 1_700_000_000 * SECOND;
const COUNTER: SampleKind = SampleKind::Counter(CounterSpec::U64);

/// A recording under construction: series declared as they are added,
/// samples written per series.
struct Rec {
    w: Writer<Vec<u8>>,
    next: u32,
}

impl Rec {
    fn new() -> Rec {
        Rec { w: Writer::new(Vec::new()), next: 0 }
    }

    fn series(&mut self, metric: &str, labels: &[(&str, &str)], kind: SampleKind) -> u32 {
        let spec = SeriesSpec { metric: metric.into(), labels: Labels::from_pairs(labels.iter().copied()), kind };
        self.w.declare(self.next, &spec).unwrap();
        self.next += 1;
        self.next - 1
    }

    /// Samples of `id` every `every_ms` for `secs` seconds, valued `f(t)` (t in seconds).
    fn points(&mut self, id: u32, secs: i64, every_ms: i64, mut f: impl FnMut(f64) -> f64) {
        for k in 0..=(secs * 1000 / every_ms) {
            let t = k * every_ms;
            self.w.write_raw_sample(id, T0 + t * 1_000_000, Value::Real(f(t as f64 / 1000.0))).unwrap();
        }
    }

    /// A counter growing at `rate(t)` per second, sampled every `every_ms`.
    fn counter(&mut self, id: u32, secs: i64, every_ms: i64, rate: impl Fn(f64) -> f64) {
        let (mut total, dt) = (0.0, every_ms as f64 / 1000.0);
        self.points(id, secs, every_ms, |t| {
            total += rate(t) * dt;
            total
        });
    }

    fn bytes(mut self) -> Vec<u8> {
        self.w.flush().unwrap();
        self.w.inner().clone()
    }
}

/// The job, its step time (0.5 s, 40 % slower from `slow_from` s), and
/// node-02 eth3's storm from 60 s: 30 % of the time pausing its peer, at
/// both ends of the cable (the NIC's pause sent, leaf-rail3 Ethernet4's
/// pause received).
fn storm_case() -> Rec {
    let mut r = Rec::new();
    for node in ["node-01", "node-02"] {
        let info = r.series("job_node_info", &[("job", "train"), ("node", node)], SampleKind::Gauge);
        r.points(info, 120, 1000, |_| 1.0);
    }
    let step = r.series("job_step_time_seconds", &[("job", "train")], SampleKind::Gauge);
    r.points(step, 120, 500, |t| if t >= 60.0 { 0.7 } else { 0.5 } * (1.0 + 0.01 * (t * 7.0).sin()));
    storm(&mut r, 60.0, 3e5);
    r
}

/// node-02 eth3 pausing its peer `us` µs a second from `from` s, at both ends of its cable.
fn storm(r: &mut Rec, from: f64, us: f64) {
    let nic = r.series(
        "ethtool_tx_prio_pause_duration_us",
        &[("node", "node-02"), ("netdev", "eth3"), ("prio", "3")],
        COUNTER,
    );
    r.counter(nic, 120, 100, |t| if t >= from { us } else { 200.0 });
    let port = r.series(
        "switch_pfc_rx_pause_duration_us",
        &[("switch", "leaf-rail3"), ("port", "Ethernet4"), ("prio", "3")],
        COUNTER,
    );
    r.counter(port, 120, 1000, |t| if t >= from { us } else { 500.0 });
}

fn topology() -> Topology {
    Topology::parse(engine::topology::EXAMPLE_INVENTORY, "inventory").unwrap()
}

fn why(r: Rec, all_metrics: bool) -> Report {
    let topology = topology();
    let rec = series::read(&r.bytes()[..], "case").unwrap();
    let q = Query { job: "train", span: None, threshold: 0.15, topology: Some(&topology), all_metrics };
    analyze(&rec, &q, &[], |_| String::new()).unwrap()
}

fn top(report: &Report) -> String {
    match &report.ranking[0].element {
        Element::Rail { node, rail, .. } => format!("{node} rail {rail}"),
        other => format!("{other:?}"),
    }
}

#[test]
fn a_gpus_power_cap_bit_does_not_outrank_a_pfc_storm_but_a_thermal_slowdown_counts() {
    let mut r = storm_case();
    let mask = r.series("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", &[("node", "node-01"), ("gpu", "2")], SampleKind::Gauge);
    // SW_POWER_CAP from 55 s, read every 10 s as DCGM's exporter does.
    r.points(mask, 120, 10_000, |t| if t >= 55.0 { 4.0 } else { 0.0 });
    let report = why(r, false);
    assert_eq!(top(&report), "node-02 rail 3", "{:#?}", report.ranking);
    assert!(
        !report.ranking.iter().flat_map(|e| &e.signals).any(|s| s.metric.contains("THROTTLE") && s.score > 0.0),
        "the power-cap bit is no slowdown: {:#?}",
        report.ranking
    );

    // HW_THERMAL on node-01's GPU 2 instead, and no storm: the GPU is the answer.
    let mut r = Rec::new();
    for node in ["node-01", "node-02"] {
        let info = r.series("job_node_info", &[("job", "train"), ("node", node)], SampleKind::Gauge);
        r.points(info, 120, 1000, |_| 1.0);
    }
    let step = r.series("job_step_time_seconds", &[("job", "train")], SampleKind::Gauge);
    r.points(step, 120, 500, |t| if t >= 60.0 { 0.7 } else { 0.5 });
    let mask = r.series("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", &[("node", "node-01"), ("gpu", "2")], SampleKind::Gauge);
    r.points(mask, 120, 10_000, |t| if t >= 55.0 { 4.0 + 64.0 } else { 4.0 });
    let report = why(r, false);
    assert!(
        matches!(&report.ranking[0].element, Element::Gpu { node, gpu } if node == "node-01" && gpu == "2"),
        "{:#?}",
        report.ranking
    );
}

#[test]
fn rdma_operations_at_step_end_and_a_few_sequence_errors_do_not_outrank_the_storm() {
    let mut r = storm_case();
    for rail in 0..8 {
        let dev = format!("mlx5_{rail}");
        let ops =
            r.series("rdma_rx_write_requests", &[("node", "node-01"), ("rdma_dev", &dev), ("rdma_port", "1")], COUNTER);
        // A job that sends at each step's end: nothing, then 4.4e5 writes a second.
        r.counter(ops, 120, 100, |t| if t >= 60.0 && (t * 2.0).fract() < 0.5 { 4.4e5 } else { 0.0 });
    }
    let seq =
        r.series("rdma_packet_seq_err", &[("node", "node-01"), ("rdma_dev", "mlx5_6"), ("rdma_port", "1")], COUNTER);
    r.counter(seq, 120, 100, |t| if t >= 58.0 { 20.0 } else { 0.0 });
    let report = why(r, false);
    assert_eq!(top(&report), "node-02 rail 3", "{:#?}", report.ranking);
    // Under --all-metrics an unknown metric ranks, with a low weight: the storm still leads.
    let mut r = storm_case();
    let odd = r.series("exporter_thing_total", &[("node", "node-01"), ("netdev", "eth5")], COUNTER);
    r.counter(odd, 120, 100, |t| if t >= 60.0 { 500.0 } else { 0.0 });
    let all = why(r, true);
    assert_eq!(top(&all), "node-02 rail 3", "{:#?}", all.ranking);
    assert!(
        all.ranking.iter().flat_map(|e| &e.signals).any(|s| s.metric == "exporter_thing_total"),
        "{:#?}",
        all.ranking
    );
}

#[test]
fn a_counter_that_falls_because_the_job_slowed_is_no_cause() {
    let mut r = storm_case();
    // Another leaf's queue marks less once the job sends less: 11,626/s → 8,372/s.
    let marks = r.series(
        "switch_queue_ecn_marked_packets",
        &[("switch", "leaf-rail5"), ("port", "Ethernet0"), ("queue", "3"), ("prio", "3")],
        COUNTER,
    );
    r.counter(marks, 120, 1000, |t| if t >= 60.0 { 8372.0 } else { 11626.0 });
    let report = why(r, false);
    assert_eq!(top(&report), "node-02 rail 3", "{:#?}", report.ranking);
    let fell = report.ranking.iter().flat_map(|e| &e.signals).find(|s| s.metric == "switch_queue_ecn_marked_packets");
    assert!(fell.is_none_or(|s| s.score == 0.0), "a fall is a consequence: {fell:?}");
}

#[test]
fn an_uplinks_marks_refreshed_every_ten_seconds_outrank_the_receivers_nic_marks() {
    let mut r = Rec::new();
    for node in ["node-01", "node-02"] {
        let info = r.series("job_node_info", &[("job", "train"), ("node", node)], SampleKind::Gauge);
        r.points(info, 120, 1000, |_| 1.0);
    }
    let step = r.series("job_step_time_seconds", &[("job", "train")], SampleKind::Gauge);
    r.points(step, 120, 500, |t| if t >= 60.0 { 0.65 } else { 0.5 });
    // leaf-rail3's uplink (Ethernet16: no NIC behind it) marks 2e5 packets a second from 60 s;
    // gNMI serves it every second, SONiC refreshes it every 10 s.
    let uplink = r.series(
        "switch_queue_ecn_marked_packets",
        &[("switch", "leaf-rail3"), ("port", "Ethernet16"), ("queue", "3"), ("prio", "3")],
        COUNTER,
    );
    let refreshed = |t: f64| (t / 10.0).floor() * 10.0;
    r.points(uplink, 120, 1000, |t| {
        let at = refreshed(t);
        2e5 * (at - 60.0).max(0.0) + 50.0 * at
    });
    // The receivers' NICs see the marks, read every 100 ms.
    for node in ["node-01", "node-02"] {
        let marks = r.series(
            "rdma_np_ecn_marked_roce_packets",
            &[("node", node), ("rdma_dev", "mlx5_3"), ("rdma_port", "1")],
            COUNTER,
        );
        r.counter(marks, 120, 100, |t| if t >= 60.0 { 6e3 } else { 20.0 });
    }
    let report = why(r, false);
    assert!(matches!(&report.ranking[0].element, Element::Plane { plane } if plane == "0"), "{:#?}", report.ranking);
}

/// The job's step ends: 0.5 s steps, each pushed when it ends, until
/// `slow_from` s; from then steps of `slow` s (none at all when 0: a stall).
fn step_ends(r: &mut Rec, slow_from: f64, slow: f64, until: f64) {
    for node in ["node-01", "node-02"] {
        let info = r.series("job_node_info", &[("job", "train"), ("node", node)], SampleKind::Gauge);
        r.points(info, until as i64, 1000, |_| 1.0);
    }
    let step = r.series("job_step_time_seconds", &[("job", "train")], SampleKind::Gauge);
    let mut t = 0.0;
    while t < until {
        let secs = if t >= slow_from { slow } else { 0.5 };
        if secs == 0.0 {
            break;
        }
        t += secs;
        r.w.write_raw_sample(step, T0 + (t * 1e9) as Nanos, Value::Real(secs)).unwrap();
    }
}

#[test]
fn an_xid_during_the_first_slow_step_is_in_the_regression_not_the_baseline() {
    let mut r = Rec::new();
    // GPU 4 of node-02 raises XID 13 at 60.1 s; every step from the one under way then takes 2 s,
    // the first of them pushed at 62 s.
    step_ends(&mut r, 60.0, 2.0, 120.0);
    let xid = r.series("gpu_xid", &[("node", "node-02"), ("gpu", "4"), ("xid", "13")], SampleKind::Event);
    r.w.write_raw_sample(xid, T0 + 60_100_000_000, Value::Real(13.0)).unwrap();
    // node-01's NICs wait for node-02 meanwhile: victims.
    let wait =
        r.series("rdma_port_xmit_wait", &[("node", "node-01"), ("rdma_dev", "mlx5_2"), ("rdma_port", "1")], COUNTER);
    r.counter(wait, 120, 100, |t| if t >= 62.0 { 4e7 } else { 1e5 });
    let report = why(r, false);
    assert!(
        matches!(&report.ranking[0].element, Element::Gpu { node, gpu } if node == "node-02" && gpu == "4"),
        "{:#?}",
        report.ranking
    );
    assert!(report.windows.rise_at <= T0 + 60_100_000_000, "the slow step began before its XID: {:?}", report.windows);
}

#[test]
fn a_job_that_stops_pushing_steps_is_stalled_and_its_cause_named() {
    let mut r = Rec::new();
    storm(&mut r, 59.8, 9e5);
    step_ends(&mut r, 60.0, 0.0, 120.0);
    let report = why(r, false);
    assert!(report.windows.stalled, "{:?}", report.windows);
    assert_eq!(top(&report), "node-02 rail 3", "{:#?}", report.ranking);
    assert!(report.signal.slowdown > 10.0, "a stall of 60 s against 0.5 s steps: {}", report.signal.slowdown);
}

/// A job slow from its start has no regression in its step time; its
/// elements are compared with their peers instead: node-02's NIC on rail 3
/// storms from the start, the job's other NICs pause a little.
#[test]
fn a_job_slow_from_its_start_is_answered_by_its_peers() {
    let mut r = Rec::new();
    for node in ["node-01", "node-02"] {
        let info = r.series("job_node_info", &[("job", "train"), ("node", node)], SampleKind::Gauge);
        r.points(info, 120, 1000, |_| 1.0);
    }
    let step = r.series("job_step_time_seconds", &[("job", "train")], SampleKind::Gauge);
    r.points(step, 120, 500, |t| 0.7 * (1.0 + 0.01 * (t * 7.0).sin()));
    storm(&mut r, 0.0, 3e5);
    for (node, rail) in [("node-01", 0), ("node-01", 3), ("node-01", 5), ("node-02", 1), ("node-02", 6)] {
        let netdev = format!("eth{rail}");
        let labels = [("node", node), ("netdev", netdev.as_str()), ("prio", "3")];
        let id = r.series("ethtool_tx_prio_pause_duration_us", &labels, COUNTER);
        r.counter(id, 120, 100, |_| 200.0 + 50.0 * rail as f64);
    }
    let report = why(r, false);
    assert!(report.windows.peers_only, "{:?}", report.windows);
    assert_eq!(top(&report), "node-02 rail 3", "{:#?}", report.ranking);
    assert!(report.answer.fabric, "{:?}", report.answer);
    let storm = &report.ranking[0].signals[0];
    assert!(storm.peer_z.unwrap() > 5.0 && storm.effect.baseline < 1e3, "the peers' median → its own: {storm:?}");
    assert!(super::render::text(&report).contains("never faster in the recording"));

    // With nothing standing out from its peers either, there is no answer to give.
    let mut calm = Rec::new();
    let info = calm.series("job_node_info", &[("job", "train"), ("node", "node-01")], SampleKind::Gauge);
    calm.points(info, 120, 1000, |_| 1.0);
    let step = calm.series("job_step_time_seconds", &[("job", "train")], SampleKind::Gauge);
    calm.points(step, 120, 500, |_| 0.7);
    let topology = topology();
    let rec = series::read(&calm.bytes()[..], "case").unwrap();
    let q = Query { job: "train", span: None, threshold: 0.15, topology: Some(&topology), all_metrics: false };
    let err = analyze(&rec, &q, &[], |_| String::new()).unwrap_err().to_string();
    assert!(err.contains("no regression"), "{err}");
}
