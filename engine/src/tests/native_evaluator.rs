//! The evaluator gives the same events with native predicates as with every
//! condition on Rhai: the standard rules over random traffic (quiet spells,
//! bursts, counters stuck, gauges jumping, XIDs), two evaluators fed the
//! same samples, their events compared after every evaluation.

use engine::rule;
use engine::{
    CounterSpec, EngineEvent, Evaluator, Helpers, Labels, Sample, SampleKind, SeriesId, SeriesSpec, SeriesTable, State,
    Value, MS,
};

/// A small reproducible random source.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The standard rules' metrics, and how each is sampled.
const METRICS: &[(&str, SampleKind)] = &[
    ("rdma_np_cnp_sent", SampleKind::Counter(CounterSpec::U64)),
    ("gpu_xid", SampleKind::Event),
    ("link_carrier_down_count", SampleKind::Counter(CounterSpec::U32_WRAP)),
    ("ethtool_tx_prio_pause_duration_us", SampleKind::Counter(CounterSpec::U64)),
    ("switch_queue_ecn_marked_packets", SampleKind::Counter(CounterSpec::U64)),
    ("switch_queue_occupancy_bytes", SampleKind::Gauge),
    ("switch_pfc_rx_pause_duration_us", SampleKind::Counter(CounterSpec::U64)),
    ("switch_pfcwd_stormed", SampleKind::Gauge),
    ("switch_pfcwd_deadlock_detected", SampleKind::Counter(CounterSpec::U64)),
    ("switch_oper_up", SampleKind::Gauge),
    ("switch_carrier_transitions", SampleKind::Counter(CounterSpec::U64)),
    ("switch_queue_dropped_packets", SampleKind::Counter(CounterSpec::U64)),
    ("ethtool_rx_pcs_symbol_err_phy", SampleKind::Counter(CounterSpec::U64)),
    ("ethtool_rx_corrected_bits_phy", SampleKind::Counter(CounterSpec::U64)),
    ("ethtool_rx_bits_phy", SampleKind::Counter(CounterSpec::U64)),
    ("rdma_symbol_error", SampleKind::Counter(CounterSpec::U64)),
    ("rdma_port_xmit_wait", SampleKind::Counter(CounterSpec::U64)),
];

/// Subjects per rule.
const SUBJECTS: usize = 2;

struct Run {
    events: usize,
    firings: usize,
    native_calls: u64,
    script_calls: u64,
}

/// Registers every metric of [`METRICS`] for each of the [`SUBJECTS`].
fn register(series: &SeriesTable) -> Vec<(SeriesId, SampleKind)> {
    let sensor = series.add_sensor("test", METRICS.len() * SUBJECTS);
    let mut ids = Vec::new();
    for k in 0..SUBJECTS {
        for (metric, kind) in METRICS {
            let (node, netdev, rdma, sw, port) =
                (format!("n{k}"), format!("eth{k}"), format!("mlx5_{k}"), format!("sw{k}"), format!("Ethernet{k}"));
            let labels = Labels::from_pairs([
                ("node", node.as_str()),
                ("netdev", netdev.as_str()),
                ("rdma_dev", rdma.as_str()),
                ("switch", sw.as_str()),
                ("port", port.as_str()),
                ("queue", "3"),
                ("prio", "3"),
                ("xid", "79"),
            ]);
            let spec = SeriesSpec { metric: metric.to_string(), labels, kind: *kind };
            ids.push((series.register(sensor, &spec).expect("registers"), *kind));
        }
    }
    ids
}

/// Random traffic on a set of series: each moves in a mode (0 still, 1 a
/// little, 2 a lot, 3 enormously), changed now and then, so rules fire,
/// hold and resolve.
struct Traffic {
    rng: Rng,
    readings: Vec<u64>,
    modes: Vec<u64>,
}

impl Traffic {
    fn new(seed: u64, series: usize) -> Traffic {
        Traffic { rng: Rng(seed), readings: vec![0; series], modes: vec![0; series] }
    }

    /// The samples of the series `ids` at `now`.
    fn samples(&mut self, ids: &[(SeriesId, SampleKind)], now: i64) -> Vec<Sample> {
        let mut samples = Vec::new();
        for (i, (id, kind)) in ids.iter().enumerate() {
            if self.rng.below(40) == 0 {
                self.modes[i] = self.rng.below(4);
            }
            // A series that stops reporting now and then (stale subjects).
            if self.modes[i] == 0 && self.rng.below(3) == 0 {
                continue;
            }
            if let Some(value) = self.value(i, *kind) {
                samples.push(Sample { series: *id, ts: now, value });
            }
        }
        samples
    }

    /// The next value of series `i`, of `kind`; `None`: no event now.
    fn value(&mut self, i: usize, kind: SampleKind) -> Option<Value> {
        let (rng, mode) = (&mut self.rng, self.modes[i]);
        Some(match kind {
            SampleKind::Counter(_) => {
                self.readings[i] += match mode {
                    0 => 0,
                    1 => rng.below(10),
                    2 => rng.below(1_000_000),
                    _ => rng.below(1 << 40),
                };
                Value::Count(self.readings[i])
            }
            SampleKind::Gauge => Value::Real(match mode {
                0 => 0.0,
                1 => 1.0,
                2 => rng.below(4_000_000) as f64,
                _ => f64::from(rng.below(3) as u8) * 0.5,
            }),
            SampleKind::Event => {
                if mode < 2 || rng.below(10) != 0 {
                    return None;
                }
                Value::Real(79.0)
            }
        })
    }
}

fn run(seed: u64) -> Run {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules");
    let series = SeriesTable::default();
    let load = || rule::load_dir(&dir, Helpers::default()).expect("the standard rules load");
    let mut native = Evaluator::new(series.clone(), load(), None).expect("no store");
    let mut rhai = Evaluator::new(series.clone(), load(), None).expect("no store");
    rhai.set_native_predicates(false);
    let ids = register(&series);
    let mut traffic = Traffic::new(seed, ids.len());
    let (mut events_a, mut events_b) = (Vec::new(), Vec::new());
    let mut result = Run { events: 0, firings: 0, native_calls: 0, script_calls: 0 };
    for step in 1..=900i64 {
        let now = step * 100 * MS;
        let samples = traffic.samples(&ids, now);
        native.ingest(&samples);
        rhai.ingest(&samples);
        native.evaluate(now, &mut events_a);
        rhai.evaluate(now, &mut events_b);
        // Compared as printed: a window over no samples is NaN in both, and NaN != NaN.
        assert_eq!(
            format!("{events_a:?}"),
            format!("{events_b:?}"),
            "seed {seed}, step {step}: native and Rhai evaluations differ"
        );
        result.events += events_a.len();
        result.firings +=
            events_a.iter().filter(|e| matches!(e, EngineEvent::Transition { to: State::Firing, .. })).count();
        events_a.clear();
        events_b.clear();
    }
    result.native_calls = native.stats().native_calls;
    result.script_calls = native.stats().script_calls + rhai.stats().script_calls;
    assert_eq!(native.stats().script_calls, 0, "every standard rule runs natively");
    assert_eq!(rhai.stats().native_calls, 0, "with native predicates off, every condition runs on Rhai");
    result
}

#[test]
fn native_and_rhai_evaluators_emit_the_same_events() {
    let (mut events, mut firings) = (0, 0);
    for seed in 0..12 {
        let r = run(seed);
        assert!(r.native_calls > 0 && r.script_calls > 0, "seed {seed}: both paths ran");
        events += r.events;
        firings += r.firings;
    }
    // Not a quiet run: rules fired (and the events compared were many).
    assert!(firings > 50, "{firings} firings in {events} events");
}

/// An evaluator with one rule over one gauge `g{node="n1"}` (window `x`,
/// its last value); returns the events of `steps` samples, one a second.
fn one_gauge(fire: &str, budget: Option<f64>, steps: &[f64]) -> (Vec<EngineEvent>, engine::rule::Runs) {
    let source = format!(
        r#"
fn fire(w) {{ {fire} }}
#{{
    name: "probe",
    select: ["g"],
    group_by: ["node"],
    windows: #{{ x: last("g") }},
}}
"#
    );
    let series = SeriesTable::default();
    let rules = rule::load_sources(&[("probe.rhai".into(), source)], Helpers::default()).expect("loads");
    let runs = rules.rules[0].fire_runs.clone();
    let mut ev = Evaluator::new(series.clone(), rules, None).expect("no store");
    if let Some(budget) = budget {
        ev.set_cost_budget(budget);
    }
    let sensor = series.add_sensor("test", 1);
    let spec = SeriesSpec { metric: "g".into(), labels: Labels::from_pairs([("node", "n1")]), kind: SampleKind::Gauge };
    let id = series.register(sensor, &spec).expect("registers");
    let mut events = Vec::new();
    for (t, x) in steps.iter().enumerate() {
        let now = t as i64 * engine::SECOND;
        ev.ingest(&[Sample { series: id, ts: now, value: Value::Real(*x) }]);
        ev.evaluate(now, &mut events);
    }
    (events, runs)
}

#[test]
fn an_integer_error_in_a_native_predicate_quarantines_with_rhai_s_error() {
    // Loads (the trial run at 0 short-circuits), runs natively, and divides
    // by zero once `w.x > 1`: the script runs and its error quarantines.
    let (events, runs) = one_gauge("w.x > 1.0 && 1 / 0 > 0", None, &[0.0, 0.0, 5.0, 5.0]);
    assert!(runs.is_native(), "{runs}");
    let quarantined: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Quarantined { rule, error, at } => Some((rule.as_str(), error.clone(), *at)),
            _ => None,
        })
        .collect();
    assert_eq!(quarantined.len(), 1, "{events:?}");
    assert_eq!(quarantined[0].0, "probe");
    assert!(quarantined[0].1.message.contains("Division by zero"), "{}", quarantined[0].1);
    assert_eq!(quarantined[0].2, 2 * engine::SECOND);
}

#[test]
fn native_predicates_count_against_the_cost_budget() {
    // At a budget of a billionth of a core (10 ns per 10 s), the native
    // calls of ten seconds are over it.
    let (events, runs) =
        one_gauge("w.x > 1.0", Some(1e-9), &[0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5]);
    assert!(runs.is_native(), "{runs}");
    let error = events
        .iter()
        .find_map(|e| match e {
            EngineEvent::Quarantined { error, .. } => Some(error.clone()),
            _ => None,
        })
        .expect("over budget");
    assert!(error.over_budget && error.message.starts_with("over its cost budget"), "{error}");
}
