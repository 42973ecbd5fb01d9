//! Subject times are kept in 100 ms ticks since the evaluator's first
//! sample, rounded up. These tests pin the consequences a rule can see.

use super::common;

use common::transitions;
use engine::instance::State;
use engine::labels::Labels;
use engine::rule::{self, Helpers, RuleSet};
use engine::series::{Sample, SampleKind, SeriesId, SeriesSpec, SeriesTable, Value};
use engine::{EngineEvent, Evaluator};

const GAUGE_RULE: &str = r#"
fn fire(w) { w.v > 0.5 }
#{
    name: "gauge-high",
    select: ["probe"],
    group_by: ["node"],
    windows: #{ v: last("probe") },
    actions: [ #{ action: "node.cordon", target: #{ node: "{node}" } } ],
}
"#;

const T0: i64 = 1_700_000_000_000_000_000;

fn setup() -> (Evaluator, SeriesId, SeriesId) {
    let series = SeriesTable::default();
    let sensor = series.add_sensor("test", 2);
    let register = |node: &str| {
        let labels = Labels::from_pairs([("node", node)]);
        series.register(sensor, &SeriesSpec { metric: "probe".into(), labels, kind: SampleKind::Gauge }).unwrap()
    };
    let (early, probe) = (register("n0"), register("n1"));
    let rules: RuleSet =
        rule::load_sources(&[("gauge.rhai".to_string(), GAUGE_RULE.to_string())], Helpers::default()).unwrap();
    (Evaluator::new(series, rules, None).unwrap(), early, probe)
}

fn step(ev: &mut Evaluator, series: SeriesId, ts: i64, value: f64) -> Vec<EngineEvent> {
    let mut events = Vec::new();
    ev.ingest(&[Sample { series, ts, value: Value::Real(value) }]);
    ev.evaluate(ts, &mut events);
    events
}

/// Regression: with `first_seen` rounded up to the next tick, a rule
/// without ranged windows (nothing to warm up) refused to resolve until
/// that tick had passed, so an instance fired and cleared within 100 ms
/// stayed firing.
#[test]
fn a_subject_first_seen_between_ticks_resolves_at_once_when_nothing_needs_warming_up() {
    let (mut ev, early, probe) = setup();
    // The evaluator's epoch is the first sample, at T0; the probe appears
    // 1.23456 s later, between two ticks.
    step(&mut ev, early, T0, 0.0);
    let t = T0 + 1_234_560_000;
    for i in 0..3 {
        let at = t + i * 100_000;
        let fired = step(&mut ev, probe, at, 1.0);
        assert!(transitions(&fired).contains(&(State::Pending, State::Firing)), "round {i}: {fired:?}");
        let cleared = step(&mut ev, probe, at + 50_000, 0.0);
        assert_eq!(transitions(&cleared), vec![(State::Firing, State::Resolved)], "round {i}: {cleared:?}");
    }
}

/// A subject's staleness is judged on ticks rounded up: at exactly
/// `stale_after` after its last sample it is still fresh; the next scan
/// after that finds it stale.
#[test]
fn staleness_is_never_declared_early() {
    let (mut ev, early, probe) = setup();
    step(&mut ev, early, T0, 0.0);
    let seen = T0 + 1_234_560_000;
    step(&mut ev, probe, seen, 0.0);
    let stale_after = ev.rules().next().unwrap().0.stale_after;
    let probe_stale = |events: &[EngineEvent]| {
        events
            .iter()
            .any(|e| matches!(e, EngineEvent::SensorStale { subject, .. } if subject.get("node") == Some("n1")))
    };
    let mut events = Vec::new();
    ev.evaluate(seen + stale_after, &mut events);
    assert!(!probe_stale(&events), "stale at exactly stale_after: {events:?}");
    assert!(events.iter().any(|e| matches!(e, EngineEvent::SensorStale { .. })), "the scan ran: {events:?}");
    // The next scan of this rule is a quarter of `stale_after` later.
    ev.evaluate(seen + stale_after + stale_after / 4 + 1, &mut events);
    assert!(probe_stale(&events), "not stale at the next scan: {events:?}");
}
