//! The engine's hot paths, for instruction counts: 100,000 counter series
//! (10 metrics × 1,250 nodes × 8 NICs) watched by 30 rules (three per
//! metric: `increase` over 10 s, `rate` over 1 s with `max_over` 10 s, and
//! `max_over` 30 s, each grouped by node and NIC, thresholds out of reach),
//! plus a gauge probe rule that fires the moment it reads 1.
//!
//! `cargo run --release -p rocemend-engine --example ingest_path [ROUNDS]`
//! (default 5). Each round is one simulated second: every counter moves
//! (`measured_ingest`, ten batches of 10,000 samples), then one
//! `measured_evaluate`, then one probe firing (`measured_fire`: one sample
//! in, `evaluate`, the proposal out; the probe's clearing is outside it).
//! The first two seconds (routing, first windows) run outside those
//! functions. `scripts/instructions.sh` runs this under callgrind and
//! divides each function's inclusive instructions by the counts printed.

use engine::{
    rule, CounterSpec, EngineEvent, Evaluator, Helpers, Labels, Nanos, Sample, SampleKind, SeriesId, SeriesSpec,
    SeriesTable, Value, SECOND,
};

const NODES: usize = 1_250;
const NICS: usize = 8;
const METRICS: usize = 10;
const BATCH: usize = 10_000;
const T0: Nanos = 1_700_000_000 * SECOND;

fn rules() -> Vec<(String, String)> {
    let mut sources = Vec::new();
    for m in 0..METRICS {
        let metric = format!("port_counter_{m}_total");
        for k in 0..3 {
            let (windows, fire) = match k {
                0 => (format!(r#"inc: increase("{metric}", "10s")"#), "w.inc > 1000000000000000.0"),
                1 => (
                    format!(r#"per_s: rate("{metric}", "1s"), peak: max_over("{metric}", "10s")"#),
                    "w.per_s > 1000000000000000.0 && w.peak > 1000000000000000.0",
                ),
                _ => (format!(r#"peak: max_over("{metric}", "30s")"#), "w.peak > 1000000000000000.0"),
            };
            let name = format!("r{m}-{k}");
            sources.push((
                format!("{name}.rhai"),
                format!(
                    r#"
fn fire(w) {{ {fire} }}
#{{
    name: "{name}",
    select: ["{metric}"],
    group_by: ["node", "netdev"],
    windows: #{{ {windows} }},
    actions: [ #{{ action: "notify.page", target: #{{ rule: "{name}" }} }} ],
}}
"#
                ),
            ));
        }
    }
    sources.push((
        "probe.rhai".into(),
        r#"
fn fire(w) { w.v > 0.5 }
#{
    name: "probe",
    select: ["bench_probe"],
    group_by: ["node"],
    windows: #{ v: last("bench_probe") },
    actions: [ #{ action: "node.cordon", target: #{ node: "{node}" } } ],
}
"#
        .into(),
    ));
    sources
}

/// Ingests one second of the fleet. Returns the samples.
#[inline(never)]
fn measured_ingest(ev: &mut Evaluator, batches: &[Vec<Sample>]) -> usize {
    for b in batches {
        ev.ingest(b);
    }
    batches.iter().map(Vec::len).sum()
}

#[inline(never)]
fn measured_evaluate(ev: &mut Evaluator, now: Nanos, events: &mut Vec<EngineEvent>) {
    ev.evaluate(now, events);
}

/// One firing of the probe: ingest, evaluate, the proposal.
#[inline(never)]
fn measured_fire(ev: &mut Evaluator, probe: SeriesId, now: Nanos, events: &mut Vec<EngineEvent>) -> usize {
    ev.ingest(&[Sample { series: probe, ts: now, value: Value::Real(1.0) }]);
    ev.evaluate(now, events);
    events.iter().filter(|e| matches!(e, EngineEvent::Proposal(_))).count()
}

fn main() {
    let rounds: i64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let table = SeriesTable::default();
    let sensor = table.add_sensor("bench", NODES * NICS * METRICS + 1);
    let mut ids = Vec::new();
    for node in 0..NODES {
        for nic in 0..NICS {
            for m in 0..METRICS {
                let (node, netdev) = (format!("gpu-node-{node:04}"), format!("eth{nic}"));
                let spec = SeriesSpec {
                    metric: format!("port_counter_{m}_total"),
                    labels: Labels::from_pairs([("node", node.as_str()), ("netdev", netdev.as_str())]),
                    kind: SampleKind::Counter(CounterSpec::U64),
                };
                ids.push(table.register(sensor, &spec).expect("under the cap"));
            }
        }
    }
    let probe_spec = SeriesSpec {
        metric: "bench_probe".into(),
        labels: Labels::from_pairs([("node", "gpu-node-0000")]),
        kind: SampleKind::Gauge,
    };
    let probe = table.register(sensor, &probe_spec).expect("under the cap");
    let rules = rule::load_sources(&rules(), Helpers::default()).unwrap_or_else(|e| panic!("{:?}", &e[..1]));
    let mut ev = Evaluator::new(table, rules, None).expect("no store");
    let mut events = Vec::new();
    let mut batches: Vec<Vec<Sample>> = ids.chunks(BATCH).map(|c| Vec::with_capacity(c.len())).collect();
    let fill = |batches: &mut Vec<Vec<Sample>>, second: i64| {
        for (b, chunk) in batches.iter_mut().zip(ids.chunks(BATCH)) {
            b.clear();
            for (i, id) in chunk.iter().enumerate() {
                let step = (id.0 as u64 * 7 + i as u64 + second as u64 * 13) % 1_000 + 1;
                let value = Value::Count(second as u64 * 2_000 + step);
                b.push(Sample { series: *id, ts: T0 + second * SECOND, value });
            }
        }
    };
    let (mut samples, mut fired) = (0usize, 0usize);
    let mut evaluations = 0u64;
    for second in 0..rounds + 2 {
        fill(&mut batches, second);
        let now = T0 + second * SECOND;
        let measured = second >= 2;
        let before = ev.stats().script_calls + ev.stats().native_calls;
        if measured {
            samples += measured_ingest(&mut ev, &batches);
            measured_evaluate(&mut ev, now + SECOND / 2, &mut events);
            evaluations += ev.stats().script_calls + ev.stats().native_calls - before;
            events.clear();
            fired += measured_fire(&mut ev, probe, now + SECOND / 2 + 1, &mut events);
            assert_eq!(fired as i64, second - 1, "the probe fires every round");
        } else {
            for b in &batches {
                ev.ingest(b);
            }
            ev.evaluate(now + SECOND / 2, &mut events);
        }
        events.clear();
        ev.ingest(&[Sample { series: probe, ts: now + SECOND / 2 + 2, value: Value::Real(0.0) }]);
        ev.evaluate(now + SECOND / 2 + 2, &mut events);
        events.clear();
    }
    println!("rounds {rounds} samples {samples} evaluations {evaluations} firings {fired}");
}
