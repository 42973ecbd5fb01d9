//! Data no sensor should send never makes the engine act: counter
//! decreases, values outside a counter's width, fractions, jumps no port
//! can count, and rules that cost more than their share of a core. Each
//! case is the regression test of a phantom action or a stall seen with the
//! release build.

use super::common;

use common::{proposals_of, secs, storm, Rig, PAUSE};
use engine::{CounterSpec, EngineEvent, RuleHealth, Sample, SeriesId, Value};

/// A port pausing 5 % of the time, read once a second, from `start` µs.
fn healthy_readings(start: u64, n: i64) -> Vec<(i64, u64)> {
    (0..n).map(|t| (t, start + t as u64 * 50_000)).collect()
}

fn rig_with_storm_rule() -> (Rig, SeriesId) {
    let rig = Rig::new(&[("pfc-storm.rhai", &storm(""))]);
    // 32 bits wide, like a counter read through a 32-bit register.
    let id = rig.counter(PAUSE, &[("node", "n1"), ("netdev", "eth0"), ("prio", "3")], CounterSpec::U32_WRAP);
    (rig, id)
}

fn ingest(rig: &mut Rig, id: SeriesId, t: i64, value: Value) -> Vec<EngineEvent> {
    rig.ev.ingest(&[Sample { series: id, ts: secs(t), value }]);
    let mut events = Vec::new();
    rig.ev.evaluate(secs(t), &mut events);
    events
}

#[test]
fn a_pause_counter_read_one_lower_fires_nothing() {
    let (mut rig, id) = rig_with_storm_rule();
    let top = u32::MAX as u64 - 400_000; // near the top: a wrap would be "plausible" by position alone
    let mut all = Vec::new();
    for (t, reading) in healthy_readings(top - 200_000, 4) {
        all.extend(rig.step(secs(t), &[(id, reading)]));
    }
    // A driver re-read returns one less than before.
    let last = top - 200_000 + 3 * 50_000;
    all.extend(rig.step(secs(4), &[(id, last - 1)]));
    all.extend(rig.step(secs(5), &[(id, last - 1 + 50_000)]));
    assert!(proposals_of(&all, "pfc-storm").is_empty(), "{all:?}");
    assert_eq!(rig.ev.stats().counter_resets, 1);
    assert_eq!(rig.ev.stats().counter_wraps, 0, "no port pauses 4,295 s in a second");
}

#[test]
fn values_no_counter_of_the_width_can_hold_are_refused_and_counted() {
    let (mut rig, id) = rig_with_storm_rule();
    let byte = rig.counter("rdma_link_downed", &[("node", "n1"), ("rdma_dev", "mlx5_0")], CounterSpec::saturating(8));
    rig.step(secs(0), &[(id, 0)]);
    let mut all = Vec::new();
    for (t, value) in [(1, Value::Real(1e30)), (2, Value::Real(2f64.powi(64))), (3, Value::Real(1.5))] {
        all.extend(ingest(&mut rig, id, t, value));
    }
    all.extend(ingest(&mut rig, byte, 4, Value::Count(100_000)));
    all.extend(rig.step(secs(5), &[(id, 50_000)]));
    assert!(proposals_of(&all, "pfc-storm").is_empty(), "{all:?}");
    let stats = rig.ev.stats();
    assert_eq!(stats.refused.bad_counter, 4);
    let refused = rig.ev.take_refusals();
    assert_eq!(refused.len(), 4);
    assert_eq!(refused[3].refusal.to_string(), "100000 is outside the counter's 8-bit range (0..=255)");
    assert_eq!(refused[2].refusal.to_string(), "1.5 is not a count (a counter reads a whole number from 0 up)");
}

#[test]
fn a_jump_no_port_can_count_is_refused_and_becomes_the_baseline() {
    let (mut rig, id) = rig_with_storm_rule();
    let mut all = rig.step(secs(0), &[(id, 1_000)]);
    // 3 s of pause in 1 s, then back to a healthy 5 % from the new value.
    all.extend(rig.step(secs(1), &[(id, 3_001_000)]));
    all.extend(rig.step(secs(2), &[(id, 3_051_000)]));
    all.extend(rig.step(secs(3), &[(id, 3_101_000)]));
    assert!(proposals_of(&all, "pfc-storm").is_empty(), "{all:?}");
    assert_eq!(rig.ev.stats().refused.implausible, 1);
}

#[test]
fn a_real_storm_still_fires() {
    // The guard must not hide what it guards: 90 % paused is physics.
    let (mut rig, id) = rig_with_storm_rule();
    let mut all = Vec::new();
    for t in 0..4 {
        all.extend(rig.step(secs(t), &[(id, t as u64 * 900_000)]));
    }
    assert_eq!(proposals_of(&all, "pfc-storm").len(), 1, "{all:?}");
}

#[test]
fn a_rule_that_costs_more_than_its_share_of_a_core_is_quarantined_with_its_figures() {
    // Within the operation limit per call (about 40k of 100k), but called
    // every second for every port: far more than 5 % of a core.
    let heavy = r#"
fn fire(w) { let x = 0; let i = 0; while i < 5000 { x += i; i += 1; } w.paused > 500000.0 }
#{
    name: "heavy",
    select: ["ethtool_tx_prio_pause_duration_us"],
    group_by: ["node", "netdev"],
    windows: #{ paused: rate("ethtool_tx_prio_pause_duration_us", "1s") },
}
"#;
    let mut rig = Rig::new(&[("heavy.rhai", heavy), ("pfc-storm.rhai", &storm(""))]);
    rig.ev.set_cost_budget(0.001);
    let ports: Vec<SeriesId> = (0..8)
        .map(|p| rig.counter(PAUSE, &[("node", "n1"), ("netdev", &format!("eth{p}")), ("prio", "3")], CounterSpec::U64))
        .collect();
    let mut quarantined = None;
    for t in 0..=11 {
        let samples: Vec<(SeriesId, u64)> = ports.iter().map(|id| (*id, t as u64 * 50_000)).collect();
        for e in rig.step(secs(t), &samples) {
            if let EngineEvent::Quarantined { rule, error, at } = e {
                quarantined = Some((rule, error, at));
            }
        }
    }
    let (rule, error, at) = quarantined.expect("the heavy rule is quarantined");
    assert_eq!(rule, "heavy");
    assert!(error.message.starts_with("over its cost budget: its scripts took"), "{error}");
    assert!(error.message.ends_with("more than the 0.1% a rule may spend"), "{error}");
    assert_eq!(at, secs(10), "at the end of the first 10 s window");
    let health: Vec<(String, RuleHealth)> = rig.ev.rules().map(|(r, h)| (r.name.clone(), h.clone())).collect();
    assert!(matches!(&health[0].1, RuleHealth::Quarantined { .. }));
    assert_eq!(health[1].1, RuleHealth::Ok, "the cheap rule runs on");
}
