//! Latency: one sample that makes a rule fire → `ingest` + `evaluate` → the `Proposal`
//! (target p99 ≤ 50 µs), with the engine alone (one rule, with and without its store) and
//! inside the loaded fleet, which the probe's rule and series join. Criterion IDs:
//! `latency/alone-1-rule`, `latency/alone-1-rule-with-store`,
//! `latency/in-fleet-100k-series-1001-rules`; each also prints its percentiles.

use std::time::{Duration, Instant};

use criterion::Criterion;

use super::*;

/// The latency probe: a gauge that fires the moment it reads 1 and
/// resolves the moment it reads 0 (no `for`, no cooldown).
pub(super) const PROBE_METRIC: &str = "bench_probe";

/// Registers the probe's one gauge series, from a sensor of its own.
pub(super) fn register_probe(series: &SeriesTable) -> SeriesId {
    let sensor = series.add_sensor("probe", 1);
    let spec = SeriesSpec {
        metric: PROBE_METRIC.into(),
        labels: Labels::from_pairs([("node", "gpu-node-0000")]),
        kind: SampleKind::Gauge,
    };
    series.register(sensor, &spec).expect("one probe series")
}
const PROBE_RULE: &str = r#"
fn fire(w) { w.v > 0.5 }
#{
    name: "latency-probe",
    select: ["bench_probe"],
    group_by: ["node"],
    windows: #{ v: last("bench_probe") },
    actions: [ #{ action: "node.cordon", target: #{ node: "{node}" } } ],
}
"#;

pub(super) fn probe_source() -> (String, String) {
    ("latency-probe.rhai".to_string(), PROBE_RULE.to_string())
}

/// An evaluator with a latency probe: either alone or inside the fleet.
pub(super) trait Probe {
    fn ev(&mut self) -> &mut Evaluator;
    fn probe(&self) -> SeriesId;
    /// Called between iterations, so the rest of the engine can be kept
    /// fresh; `now` is the probe's clock, the result where it continues.
    fn keep_fresh(&mut self, now: Nanos) -> Nanos {
        now
    }
}

pub(super) struct Alone {
    ev: Evaluator,
    probe: SeriesId,
}

impl Alone {
    pub(super) fn new(store: Option<Store>) -> Alone {
        let series = SeriesTable::default();
        let probe = register_probe(&series);
        let rules: RuleSet = rule::load_sources(&[probe_source()], Helpers::default()).expect("probe rule loads");
        Alone { ev: Evaluator::new(series, rules, store).expect("store"), probe }
    }
}

impl Probe for Alone {
    fn ev(&mut self) -> &mut Evaluator {
        &mut self.ev
    }
    fn probe(&self) -> SeriesId {
        self.probe
    }
}

impl Probe for Fleet {
    fn ev(&mut self) -> &mut Evaluator {
        &mut self.ev
    }
    fn probe(&self) -> SeriesId {
        self.probe
    }
    /// The fleet is polled once per simulated second, untimed, so its
    /// subjects never go stale while the probe runs between polls.
    ///
    /// Only the poll runs here: between polls the probe's own evaluations
    /// are the engine's evaluations (more often than the 50 ms tick), so
    /// the stale scans fall into the timed iterations.
    fn keep_fresh(&mut self, now: Nanos) -> Nanos {
        if now < T0 + (self.second + 1) * SECOND {
            return now;
        }
        self.poll(Traffic::Quiet).2
    }
}

/// Simulated time between the probe's samples (fire, then clear).
const PROBE_STEP: Nanos = 50_000;

/// Probe clock, so every sample is newer than the last one.
pub(super) struct Clock(pub(super) Nanos);

/// One fire (timed: ingest of one sample + evaluate → a proposal) and one
/// clear (untimed). Panics unless the fire made exactly one proposal.
fn fire_once<P: Probe>(p: &mut P, clock: &mut Clock, events: &mut Vec<EngineEvent>) -> Duration {
    clock.0 = p.keep_fresh(clock.0);
    let probe = p.probe();
    clock.0 += PROBE_STEP;
    events.clear();
    let sample = [Sample { series: probe, ts: clock.0, value: Value::Real(1.0) }];
    let started = Instant::now();
    p.ev().ingest(&sample);
    p.ev().evaluate(clock.0, events);
    let elapsed = started.elapsed();
    let proposals = events.iter().filter(|e| matches!(e, EngineEvent::Proposal(_))).count();
    if proposals != 1 {
        let probe: Vec<_> = p.ev().instances().into_iter().filter(|i| i.rule == "latency-probe").collect();
        panic!("the probe must go inactive → firing every time: events {events:?}, its instance {probe:?}");
    }
    clock.0 += PROBE_STEP;
    events.clear();
    p.ev().ingest(&[Sample { series: probe, ts: clock.0, value: Value::Real(0.0) }]);
    p.ev().evaluate(clock.0, events);
    elapsed
}

/// Involuntary context switches of this process so far: how often the
/// scheduler took the core away (other work on a shared 2-core machine).
fn preemptions() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .filter(|l| l.starts_with("nonvoluntary_ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

fn print_percentiles<P: Probe>(name: &str, p: &mut P, clock: &mut Clock) {
    const N: usize = 10_000;
    let mut events = Vec::new();
    let preempted = preemptions();
    let mut times: Vec<Duration> = (0..N).map(|_| fire_once(p, clock, &mut events)).collect();
    let preempted = preemptions() - preempted;
    times.sort_unstable();
    let at = |q: f64| times[((N as f64 * q) as usize).min(N - 1)];
    let mean = times.iter().sum::<Duration>() / N as u32;
    eprintln!(
        "== latency {name}: sample -> proposal over {N} firings: mean {:.1} µs, p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs (target p99 <= 50 µs); {} iterations over 50 µs, {preempted} involuntary context switches during the run",
        mean.as_secs_f64() * 1e6,
        at(0.50).as_secs_f64() * 1e6,
        at(0.90).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        at(0.999).as_secs_f64() * 1e6,
        times[N - 1].as_secs_f64() * 1e6,
        times.iter().filter(|t| **t > Duration::from_micros(50)).count(),
    );
}

pub(super) fn bench_latency<P: Probe>(c: &mut Criterion, name: &str, p: &mut P, clock: &mut Clock) {
    print_percentiles(name, p, clock);
    let mut group = c.benchmark_group("latency");
    group.sample_size(20).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    group.bench_function(name, |b| {
        let mut events = Vec::new();
        b.iter_custom(|iters| (0..iters).map(|_| fire_once(p, clock, &mut events)).sum())
    });
    group.finish();
}
