//! The evaluator through the engine's public API: counters that misbehave,
//! the instance state machine stepped through time, hot reload, runaway
//! rules, cross-series helpers and the series cap. Restarts are in
//! `restarts.rs`; rule files that must not load in `rule_errors.rs`.

use super::common;

use std::sync::Arc;

use common::{
    load, pause_counter, proposals, proposals_of, secs, storm, storm_with, transitions, window, Rig, BETWEEN, HEALTHY,
    PAUSE, STORMING,
};
use engine::series::SeriesError;
use engine::topology::EXAMPLE_INVENTORY;
use engine::{
    rule, CounterSpec, EngineEvent, Helpers, Labels, RuleHealth, SampleKind, SeriesSpec, SeriesTable, State, Topology,
};

const OOS: &str = "rdma_out_of_sequence";

/// A rule over `rdma_out_of_sequence` firing when the increase over 10 s
/// reaches `threshold`; its proposals carry `inc`, `per_s` and `peak`.
fn oos_rule(name: &str, threshold: &str) -> String {
    r#"
fn fire(w) { w.inc >= THRESHOLD }
#{
    name: "NAME",
    select: ["rdma_out_of_sequence"],
    group_by: ["node", "rdma_dev"],
    windows: #{
        inc: increase("rdma_out_of_sequence", "10s"),
        per_s: rate("rdma_out_of_sequence", "10s"),
        peak: max_over("rdma_out_of_sequence", "10s"),
    },
    actions: [ #{ action: "notify.page", target: #{ node: "{node}", rdma_dev: "{rdma_dev}" } } ],
}
"#
    .replace("NAME", name)
    .replace("THRESHOLD", threshold)
}

/// Fires on what no NIC can do: a negative increase or rate, or more than
/// a million events per window or per second. Counter decoding must never
/// make it fire.
fn absurd_rule(name: &str, metric: &str, bits: u32) -> String {
    r#"
fn fire(w) { w.inc < 0.0 || w.peak < 0.0 || w.inc > LIMIT || w.peak > LIMIT }
#{
    name: "NAME",
    select: ["METRIC"],
    group_by: ["node", "rdma_dev"],
    windows: #{ inc: increase("METRIC", "10s"), peak: max_over("METRIC", "10s") },
}
"#
    .replace("NAME", name)
    .replace("METRIC", metric)
    .replace("LIMIT", if bits >= 20 { "1000000.0" } else { "1000.0" })
}

const MLX5_0: &[(&str, &str)] = &[("node", "n1"), ("rdma_dev", "mlx5_0"), ("rdma_port", "1")];

// ---------------------------------------------------------------------------
// Counters that wrap, saturate and reset.

#[test]
fn a_wrapping_32_bit_q_counter_gives_the_exact_increase_not_a_negative_or_huge_one() {
    let seen = oos_rule("oos-seen", "100.0");
    let absurd = absurd_rule("oos-absurd", OOS, 32);
    let mut rig = Rig::new(&[("oos-seen.rhai", &seen), ("oos-absurd.rhai", &absurd)]);
    let id = rig.counter(OOS, MLX5_0, CounterSpec::U32_WRAP);

    // 100 out-of-sequence packets a second; the second reading wraps past
    // 2^32: 4294967246 → 50 is +100.
    let readings = [u32::MAX as u64 - 49, 50, 150, 250];
    let mut events = Vec::new();
    for (t, reading) in readings.iter().enumerate() {
        events.push(rig.step(secs(t as i64), &[(id, *reading)]));
    }

    assert!(proposals(&events[0]).is_empty(), "the first reading has no increase");
    let fired = proposals_of(&events[1], "oos-seen");
    assert_eq!(fired.len(), 1, "the wrapped reading is +100: {:?}", events[1]);
    assert_eq!(window(fired[0], "inc"), 100.0);
    assert_eq!(window(fired[0], "per_s"), 10.0, "100 over a 10 s window");
    assert_eq!(window(fired[0], "peak"), 100.0, "100 in one second");
    let all: Vec<EngineEvent> = events.concat();
    assert!(proposals_of(&all, "oos-absurd").is_empty(), "{all:?}");
    assert_eq!(rig.state("oos-absurd", MLX5_0), Some(State::Inactive));
    let stats = rig.ev.stats();
    assert_eq!((stats.samples, stats.counter_wraps, stats.counter_resets), (4, 1, 0));
}

#[test]
fn a_saturated_16_bit_pma_counter_stuck_at_0xffff_adds_nothing_and_is_counted() {
    let metric = "rdma_symbol_error";
    let seen = oos_rule("symbol-errors", "500.0").replace(OOS, metric);
    let absurd = absurd_rule("symbol-absurd", metric, 16);
    let mut rig = Rig::new(&[("symbol-errors.rhai", &seen), ("symbol-absurd.rhai", &absurd)]);
    let id = rig.counter(metric, MLX5_0, CounterSpec::saturating(16));

    // +400, then +135 up to 0xffff where it sticks; then `perfquery -x`
    // clears it and two new errors are counted.
    let readings = [65_000, 65_400, 65_535, 65_535, 65_535, 2];
    let mut all = Vec::new();
    for (t, reading) in readings.iter().enumerate() {
        let events = rig.step(secs(t as i64), &[(id, *reading)]);
        if t == 2 {
            let fired = proposals_of(&events, "symbol-errors");
            assert_eq!(fired.len(), 1, "400 + 135 > 500 at the saturating reading: {events:?}");
            assert_eq!(window(fired[0], "inc"), 535.0, "the increase up to all-ones is kept");
            assert_eq!(window(fired[0], "peak"), 400.0, "the fastest second was the first");
        }
        all.extend(events);
    }
    assert_eq!(proposals_of(&all, "symbol-errors").len(), 1);
    assert!(proposals_of(&all, "symbol-absurd").is_empty(), "{all:?}");
    let stats = rig.ev.stats();
    assert_eq!(stats.counter_saturated, 3, "three readings at all-ones");
    assert_eq!(stats.counter_resets, 1, "the clear is a reset, not a wrap");
    assert_eq!(stats.counter_wraps, 0);
}

#[test]
fn a_counter_reset_starts_afresh_and_does_not_fire_a_burst_rule() {
    let burst = oos_rule("oos-burst", "1000.0");
    let total = oos_rule("oos-total", "35.0");
    let absurd = absurd_rule("oos-absurd", OOS, 32);
    let mut rig = Rig::new(&[("oos-burst.rhai", &burst), ("oos-total.rhai", &total), ("oos-absurd.rhai", &absurd)]);
    let id = rig.counter(OOS, MLX5_0, CounterSpec::U32_WRAP);

    // +10, +10, +10, then a driver reload restarts the counter at 5, and it
    // counts +5 from there. Read as a 32-bit wrap the reload would be
    // ~4.29e9 packets; read as "counted since zero" it would count 5 events
    // nobody saw. A reset counts nothing: the counter starts afresh.
    let readings = [1_000_000, 1_000_010, 1_000_020, 1_000_030, 5, 10];
    let mut all = Vec::new();
    for (t, reading) in readings.iter().enumerate() {
        let events = rig.step(secs(t as i64), &[(id, *reading)]);
        let total = proposals_of(&events, "oos-total");
        if t == 5 {
            assert_eq!(total.len(), 1, "30 before the reset and 5 after make 35: {events:?}");
            assert_eq!(window(total[0], "inc"), 35.0);
            assert_eq!(window(total[0], "peak"), 10.0);
        } else {
            assert!(total.is_empty(), "at t={t}: {events:?}");
        }
        all.extend(events);
    }
    assert!(proposals_of(&all, "oos-burst").is_empty(), "{all:?}");
    assert!(proposals_of(&all, "oos-absurd").is_empty(), "{all:?}");
    assert_eq!(rig.state("oos-burst", MLX5_0), Some(State::Inactive));
    let stats = rig.ev.stats();
    assert_eq!((stats.counter_resets, stats.counter_wraps, stats.counter_saturated), (1, 0, 0));
}

// ---------------------------------------------------------------------------
// The state machine, stepped through time.

#[test]
fn for_delays_firing_and_a_break_in_the_condition_restarts_it() {
    let rule = storm(r#""for": "3s","#);
    let mut rig = Rig::new(&[("pfc-storm.rhai", &rule)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    let port = &[("node", "n1"), ("netdev", "eth0")];

    // Storming at 1 and 2, healthy at 3, storming from 4 on.
    let per_second = [0, STORMING, STORMING, HEALTHY, STORMING, STORMING, STORMING, STORMING, STORMING];
    let expect = [
        State::Inactive,
        State::Pending,
        State::Pending,
        State::Inactive,
        State::Pending,
        State::Pending,
        State::Pending,
        State::Firing,
        State::Firing,
    ];
    let mut fired = Vec::new();
    for (t, delta) in per_second.iter().enumerate() {
        let events = rig.step(secs(t as i64), &[eth0.add(*delta)]);
        assert_eq!(rig.state("pfc-storm", port), Some(expect[t]), "at t={t}: {events:?}");
        fired.extend(proposals(&events).into_iter().cloned());
    }
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0].active_at, secs(4), "the episode restarted after the break");
    assert_eq!(fired[0].decided_at, secs(7), "3 s of `for` after it went pending");
    assert_eq!(fired[0].action.target.get("netdev"), Some("eth0"));
    assert_eq!(window(&fired[0], "paused"), STORMING as f64);
}

/// A daemon on a quiet fabric sleeps between stale scans instead of
/// ticking: it may only do so while nothing time-driven is under way.
#[test]
fn the_evaluator_is_idle_only_while_no_sample_or_instance_waits_on_time() {
    let rule = storm(r#""for": "3s","#);
    let mut rig = Rig::new(&[("pfc-storm.rhai", &rule)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    // Freshly loaded, every rule is visited once: not idle.
    assert_eq!(rig.ev.idle_until(), None);
    rig.step(secs(0), &[eth0.add(0)]);
    rig.step(secs(1), &[eth0.add(HEALTHY)]);
    // Healthy and evaluated: idle until the next stale scan, a quarter
    // second after the scan of this evaluation.
    let scan = secs(1) + engine::evaluator::STALE_SCAN_INTERVAL;
    assert_eq!(rig.ev.idle_until(), Some(scan));
    // A sample not yet evaluated ends the idleness.
    rig.ev.ingest(&[engine::Sample {
        series: eth0.id,
        ts: secs(2),
        value: engine::Value::Count(eth0.add(STORMING).1),
    }]);
    assert_eq!(rig.ev.idle_until(), None);
    // Evaluated, it starts a pending instance, whose `for` runs on time.
    let mut events = Vec::new();
    rig.ev.evaluate(secs(2), &mut events);
    assert_eq!(rig.state("pfc-storm", &[("node", "n1"), ("netdev", "eth0")]), Some(State::Pending));
    assert_eq!(rig.ev.idle_until(), None, "a pending instance needs every tick");
    // Healthy again: the instance is gone, and so is the need.
    rig.step(secs(3), &[eth0.add(HEALTHY)]);
    assert_eq!(rig.state("pfc-storm", &[("node", "n1"), ("netdev", "eth0")]), Some(State::Inactive));
    rig.step(secs(4), &[eth0.add(HEALTHY)]);
    assert_eq!(rig.ev.idle_until(), Some(secs(4) + engine::evaluator::STALE_SCAN_INTERVAL));
}

#[test]
fn keep_firing_for_holds_a_firing_instance_after_clear_holds() {
    let rule = storm(r#"keep_firing_for: "3s","#);
    let mut rig = Rig::new(&[("pfc-storm.rhai", &rule)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    let port = &[("node", "n1"), ("netdev", "eth0")];

    rig.step(secs(0), &[eth0.add(0)]);
    let events = rig.step(secs(1), &[eth0.add(STORMING)]);
    assert_eq!(proposals(&events).len(), 1);
    // Clear holds from t=2; the instance stays firing for 3 s of it.
    for t in 2..=4 {
        let events = rig.step(secs(t), &[eth0.add(HEALTHY)]);
        assert!(transitions(&events).is_empty(), "at t={t}: {events:?}");
        assert_eq!(rig.state("pfc-storm", port), Some(State::Firing), "at t={t}");
    }
    let events = rig.step(secs(5), &[eth0.add(HEALTHY)]);
    assert_eq!(transitions(&events), vec![(State::Firing, State::Resolved)]);
}

#[test]
fn hysteresis_a_value_between_clear_and_fire_keeps_firing_but_does_not_start_it() {
    let rule = storm("");
    let mut rig = Rig::new(&[("pfc-storm.rhai", &rule)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    let mut eth1 = pause_counter(&rig, "n1", "eth1");

    rig.step(secs(0), &[eth0.add(0), eth1.add(0)]);
    let events = rig.step(secs(1), &[eth0.add(STORMING), eth1.add(BETWEEN)]);
    let fired = proposals(&events);
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].subject.get("netdev"), Some("eth0"));
    for t in 2..=10 {
        let events = rig.step(secs(t), &[eth0.add(BETWEEN), eth1.add(BETWEEN)]);
        assert!(events.is_empty(), "at t={t}: {events:?}");
    }
    assert_eq!(rig.state("pfc-storm", &[("netdev", "eth0")]), Some(State::Firing));
    assert_eq!(rig.state("pfc-storm", &[("netdev", "eth1")]), Some(State::Inactive));
    let events = rig.step(secs(11), &[eth0.add(HEALTHY), eth1.add(HEALTHY)]);
    assert_eq!(transitions(&events), vec![(State::Firing, State::Resolved)]);
}

#[test]
fn cooldown_ignores_the_fire_condition_then_lets_it_fire_again() {
    let rule = storm(r#"cooldown: "10s","#);
    let mut rig = Rig::new(&[("pfc-storm.rhai", &rule)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");

    // Storm at 1, healthy at 2 (resolved, cooldown until 12), storming again
    // from 3: only the storm still going at 12 fires again.
    rig.step(secs(0), &[eth0.add(0)]);
    let mut fired_at = Vec::new();
    for t in 1..=13 {
        let delta = if t == 2 { HEALTHY } else { STORMING };
        let events = rig.step(secs(t), &[eth0.add(delta)]);
        fired_at.extend(proposals(&events).iter().map(|p| (p.decided_at - secs(0)) / 1_000_000_000));
        if (3..12).contains(&t) {
            assert_eq!(rig.state("pfc-storm", &[("netdev", "eth0")]), Some(State::Resolved), "at t={t}");
        }
    }
    assert_eq!(fired_at, vec![1, 12]);
}

#[test]
fn a_stale_pending_subject_drops_to_inactive_and_never_fires_on_old_window_values() {
    // max_over 30 s keeps the storm in the window long after samples stop:
    // only staleness keeps it from firing.
    let rule = storm_with("max_over", "30s", r#""for": "5s", stale_after: "2s","#);
    let mut rig = Rig::new(&[("pfc-storm.rhai", &rule)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    let port = &[("node", "n1"), ("netdev", "eth0")];

    rig.step(secs(0), &[eth0.add(0)]);
    rig.step(secs(1), &[eth0.add(STORMING)]);
    rig.step(secs(2), &[eth0.add(STORMING)]);
    assert_eq!(rig.state("pfc-storm", port), Some(State::Pending));
    for t in 3..=4 {
        let events = rig.step(secs(t), &[]);
        assert!(events.is_empty(), "2 s without samples is not yet stale; at t={t}: {events:?}");
    }
    let events = rig.step(secs(5), &[]);
    let stale: Vec<_> = events.iter().filter(|e| matches!(e, EngineEvent::SensorStale { .. })).collect();
    assert_eq!(stale.len(), 1, "{events:?}");
    match stale[0] {
        EngineEvent::SensorStale { rule, subject, last_seen, at } => {
            assert_eq!(rule, "pfc-storm");
            assert_eq!(subject.get("netdev"), Some("eth0"));
            assert_eq!((*last_seen, *at), (secs(2), secs(5)));
        }
        _ => unreachable!(),
    }
    assert_eq!(transitions(&events), vec![(State::Pending, State::Inactive)]);
    // `for` would have run out at t=6; the window still says "storm".
    for t in 6..=12 {
        let events = rig.step(secs(t), &[]);
        assert!(events.is_empty(), "at t={t}: {events:?}");
    }
    assert_eq!(rig.state("pfc-storm", port), Some(State::Inactive));

    let events = rig.step(secs(13), &[eth0.add(STORMING)]);
    assert!(events.iter().any(|e| matches!(e, EngineEvent::SensorFresh { at, .. } if *at == secs(13))), "{events:?}");
    assert_eq!(transitions(&events), vec![(State::Inactive, State::Pending)]);
    let mut fired = Vec::new();
    for t in 14..=18 {
        fired.extend(proposals(&rig.step(secs(t), &[eth0.add(STORMING)])).into_iter().cloned());
    }
    assert_eq!(fired.len(), 1);
    assert_eq!((fired[0].active_at, fired[0].decided_at), (secs(13), secs(18)), "a new episode, a full `for`");
}

#[test]
fn a_stale_firing_subject_stays_firing_and_resolves_only_on_fresh_data() {
    let rule = storm_with("max_over", "30s", r#"stale_after: "2s","#);
    let mut rig = Rig::new(&[("pfc-storm.rhai", &rule)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    let port = &[("netdev", "eth0")];

    rig.step(secs(0), &[eth0.add(0)]);
    assert_eq!(proposals(&rig.step(secs(1), &[eth0.add(STORMING)])).len(), 1);
    let mut all = Vec::new();
    // Past the window's 30 s too: the clear condition would hold by then.
    for t in 2..=40 {
        all.extend(rig.step(secs(t), &[]));
    }
    assert_eq!(all.len(), 1, "one SensorStale and nothing else: {all:?}");
    assert!(matches!(&all[0], EngineEvent::SensorStale { at, .. } if *at == secs(4)), "{all:?}");
    assert_eq!(rig.state("pfc-storm", port), Some(State::Firing));
    let view = rig.ev.instances();
    assert_eq!(view.len(), 1);
    assert!(view[0].instance.stale);

    let events = rig.step(secs(41), &[eth0.add(0)]);
    assert!(matches!(events[0], EngineEvent::SensorFresh { .. }), "{events:?}");
    assert_eq!(transitions(&events), vec![(State::Firing, State::Resolved)]);
}

// ---------------------------------------------------------------------------
// Hot reload.

#[test]
fn reloading_an_unchanged_rule_keeps_a_firing_instance_without_a_second_proposal() {
    let rule = storm("");
    let mut rig = Rig::new(&[("pfc-storm.rhai", &rule)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    rig.step(secs(0), &[eth0.add(0)]);
    assert_eq!(proposals(&rig.step(secs(1), &[eth0.add(STORMING)])).len(), 1);

    let report = rig.ev.reload(load(&[("pfc-storm.rhai", &rule)], rig.ev.helpers().clone()));
    assert_eq!(report.unchanged, vec!["pfc-storm".to_string()]);
    assert!(report.changed.is_empty() && report.added.is_empty() && report.removed.is_empty(), "{report:?}");
    assert_eq!(rig.state("pfc-storm", &[("netdev", "eth0")]), Some(State::Firing));
    for t in 2..=4 {
        let events = rig.step(secs(t), &[eth0.add(STORMING)]);
        assert!(events.is_empty(), "at t={t}: {events:?}");
    }
    let events = rig.step(secs(5), &[eth0.add(HEALTHY)]);
    assert_eq!(transitions(&events), vec![(State::Firing, State::Resolved)]);
}

#[test]
fn reloading_a_changed_rule_keeps_instance_state_by_subject() {
    let old = storm("");
    let new = old.replace("w.paused < 100000.0", "w.paused < 200000.0");
    let mut rig = Rig::new(&[("pfc-storm.rhai", &old)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    let mut eth1 = pause_counter(&rig, "n1", "eth1");
    rig.step(secs(0), &[eth0.add(0), eth1.add(0)]);
    assert_eq!(proposals(&rig.step(secs(1), &[eth0.add(STORMING), eth1.add(HEALTHY)])).len(), 1);
    let old_hash = rig.ev.rules().next().unwrap().0.hash.clone();

    let report = rig.ev.reload(load(&[("pfc-storm.rhai", &new)], rig.ev.helpers().clone()));
    assert_eq!(report.changed, vec!["pfc-storm".to_string()]);
    let new_hash = rig.ev.rules().next().unwrap().0.hash.clone();
    assert_ne!(old_hash, new_hash);

    let events = rig.step(secs(2), &[eth0.add(BETWEEN), eth1.add(HEALTHY)]);
    assert!(events.is_empty(), "eth0 is still firing, eth1 still quiet: {events:?}");
    assert_eq!(rig.state("pfc-storm", &[("netdev", "eth0")]), Some(State::Firing));
    assert_eq!(rig.state("pfc-storm", &[("netdev", "eth1")]), Some(State::Inactive));
    // 150 000 µs/s clears under the new rule (< 200 000), not under the old.
    let events = rig.step(secs(3), &[eth0.add(150_000), eth1.add(HEALTHY)]);
    assert_eq!(transitions(&events), vec![(State::Firing, State::Resolved)]);
}

#[test]
fn a_broken_reload_is_rejected_with_its_position_and_the_old_rules_keep_firing() {
    let rule = storm("");
    let mut rig = Rig::new(&[("pfc-storm.rhai", &rule)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    let mut eth1 = pause_counter(&rig, "n1", "eth1");
    rig.step(secs(0), &[eth0.add(0), eth1.add(0)]);
    assert_eq!(proposals(&rig.step(secs(1), &[eth0.add(STORMING), eth1.add(0)])).len(), 1);

    // An editor saved half a line: `fn clear(w) { w.paused < }` on line 3.
    let broken = rule.replace("w.paused < 100000.0", "w.paused <");
    let errors = rule::load_sources(&common::sources(&[("pfc-storm.rhai", &broken)]), rig.ev.helpers().clone())
        .expect_err("a syntax error is rejected");
    assert_eq!(errors.len(), 1);
    assert_eq!((errors[0].line, errors[0].column), (3, 26), "{}", errors[0]);
    assert!(errors[0].to_string().starts_with("pfc-storm.rhai:3:26: "), "{}", errors[0]);

    let events = rig.step(secs(2), &[eth0.add(STORMING), eth1.add(STORMING)]);
    let fired = proposals(&events);
    assert_eq!(fired.len(), 1, "the old rule fires for the new storm: {events:?}");
    assert_eq!(fired[0].subject.get("netdev"), Some("eth1"));
    assert_eq!(fired[0].rule_hash, rig.ev.rules().next().unwrap().0.hash);
}

// ---------------------------------------------------------------------------
// A runaway rule.

#[test]
fn a_runaway_rule_is_quarantined_and_its_neighbour_keeps_firing() {
    // The load-time trial run calls fire with zeros; the loop starts only
    // once a port really pauses.
    let runaway = r#"
fn fire(w) { if w.paused > 0.0 { loop {} } false }
#{
    name: "runaway",
    select: ["ethtool_tx_prio_pause_duration_us"],
    group_by: ["node", "netdev"],
    windows: #{ paused: rate("ethtool_tx_prio_pause_duration_us", "1s") },
}
"#;
    let rule = storm("");
    let mut rig = Rig::new(&[("a-runaway.rhai", runaway), ("pfc-storm.rhai", &rule)]);
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    let mut eth1 = pause_counter(&rig, "n1", "eth1");
    rig.step(secs(0), &[eth0.add(0), eth1.add(0)]);

    let events = rig.step(secs(1), &[eth0.add(STORMING), eth1.add(0)]);
    let quarantined: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Quarantined { rule, error, at } => Some((rule.clone(), error.clone(), *at)),
            _ => None,
        })
        .collect();
    assert_eq!(quarantined.len(), 1, "{events:?}");
    assert_eq!(quarantined[0].0, "runaway");
    assert!(quarantined[0].1.over_budget, "{:?}", quarantined[0].1);
    assert_eq!(quarantined[0].2, secs(1));
    assert_eq!(proposals_of(&events, "pfc-storm").len(), 1, "the neighbour fires on the same sample");

    let events = rig.step(secs(2), &[eth0.add(STORMING), eth1.add(STORMING)]);
    assert!(!events.iter().any(|e| matches!(e, EngineEvent::Quarantined { .. })), "{events:?}");
    let fired = proposals_of(&events, "pfc-storm");
    assert_eq!(fired.len(), 1, "{events:?}");
    assert_eq!(fired[0].subject.get("netdev"), Some("eth1"));

    let health: Vec<(String, RuleHealth)> = rig.ev.rules().map(|(r, h)| (r.name.clone(), h.clone())).collect();
    match &health[0] {
        (name, RuleHealth::Quarantined { error, at }) => {
            assert_eq!(name, "runaway");
            assert!(error.over_budget);
            assert_eq!(*at, secs(1));
        }
        other => panic!("runaway is not quarantined: {other:?}"),
    }
    assert_eq!(health[1], ("pfc-storm".to_string(), RuleHealth::Ok));
}

// ---------------------------------------------------------------------------
// Cross-series helpers.

fn fabric() -> (SeriesTable, Helpers) {
    let topology = Arc::new(Topology::parse(EXAMPLE_INVENTORY, "inventory.toml").expect("example inventory"));
    let series = SeriesTable::new(Some(topology.clone()), Labels::default());
    let helpers = Helpers::new(Some(series.clone()), Some(topology));
    (series, helpers)
}

const SWITCH_STORM: &str = r#"
// Two storming ports on one leaf: escalate on the switch instead.
fn fire(w) { firing_on("pfc-storm", "switch") >= 2 }
#{
    name: "switch-storm",
    select: ["ethtool_tx_prio_pause_duration_us"],
    group_by: ["switch"],
    windows: #{ paused: rate("ethtool_tx_prio_pause_duration_us", "1s") },
    actions: [ #{ action: "pfcwd.escalate", target: #{ "switch": "{switch}" } } ],
}
"#;

#[test]
fn firing_on_fires_only_when_two_ports_of_one_switch_fire() {
    let (series, helpers) = fabric();
    let rule = storm("");
    let rules = load(&[("pfc-storm.rhai", &rule), ("switch-storm.rhai", SWITCH_STORM)], helpers);
    let mut rig = Rig::with(series, rules, None).unwrap();
    // eth3 of every node is cabled to leaf-rail3, eth2 to leaf-rail2.
    let mut a = pause_counter(&rig, "node-01", "eth3");
    let mut b = pause_counter(&rig, "node-02", "eth3");
    let mut c = pause_counter(&rig, "node-03", "eth2");
    let mut quiet = pause_counter(&rig, "node-04", "eth3");
    assert_eq!(rig.series.read().labels(a.id).get("switch"), Some("leaf-rail3"));

    rig.step(secs(0), &[a.add(0), b.add(0), c.add(0), quiet.add(0)]);
    let events = rig.step(secs(1), &[a.add(STORMING), b.add(HEALTHY), c.add(STORMING), quiet.add(0)]);
    assert_eq!(proposals_of(&events, "pfc-storm").len(), 2);
    assert!(proposals_of(&events, "switch-storm").is_empty(), "one port per switch: {events:?}");

    let events = rig.step(secs(2), &[a.add(STORMING), b.add(STORMING), c.add(STORMING), quiet.add(0)]);
    let ports = proposals_of(&events, "pfc-storm");
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].subject.get("node"), Some("node-02"));
    let switches = proposals_of(&events, "switch-storm");
    assert_eq!(switches.len(), 1, "{events:?}");
    assert_eq!(switches[0].action.target, Labels::from_pairs([("switch", "leaf-rail3")]));
    assert_eq!(rig.state("switch-storm", &[("switch", "leaf-rail2")]), Some(State::Inactive));
}

#[test]
fn peer_returns_the_far_end_of_a_nic_port_and_of_a_switch_port() {
    let (series, helpers) = fabric();
    // `switch` is a Rhai keyword, so the far end is read with `get`.
    let nic_end = r#"
fn fire(w) { let p = peer(); p.get("switch") == "leaf-rail5" && p.get("port") == "Ethernet4" }
#{
    name: "nic-peer",
    select: ["rdma_np_cnp_sent"],
    group_by: ["node", "rdma_dev"],
    windows: #{ cnp: rate("rdma_np_cnp_sent", "1s") },
}
"#;
    let switch_end = r#"
fn fire(w) { let p = peer(); p.get("node") == "node-02" && p.get("rdma_dev") == "mlx5_5" && p.get("netdev") == "eth5" }
#{
    name: "switch-peer",
    select: ["switch_port_rx_pause"],
    group_by: ["switch", "port"],
    windows: #{ pauses: rate("switch_port_rx_pause", "1s") },
}
"#;
    let rules = load(&[("nic-peer.rhai", nic_end), ("switch-peer.rhai", switch_end)], helpers);
    let mut rig = Rig::with(series, rules, None).unwrap();
    let cnp = |rig: &Rig, node: &str, dev: &str| {
        rig.counter("rdma_np_cnp_sent", &[("node", node), ("rdma_dev", dev)], CounterSpec::U64)
    };
    let right = cnp(&rig, "node-02", "mlx5_5");
    let other_node = cnp(&rig, "node-01", "mlx5_5");
    let other_rail = cnp(&rig, "node-02", "mlx5_4");
    let sw = |rig: &Rig, port: &str| {
        rig.counter("switch_port_rx_pause", &[("switch", "leaf-rail5"), ("port", port)], CounterSpec::U64)
    };
    let sw_right = sw(&rig, "Ethernet4");
    let sw_other = sw(&rig, "Ethernet0");

    rig.step(secs(0), &[(right, 1), (other_node, 1), (other_rail, 1), (sw_right, 1), (sw_other, 1)]);
    let firing: Vec<(String, Option<String>, Option<String>)> = rig
        .ev
        .instances()
        .into_iter()
        .filter(|v| v.instance.state == State::Firing)
        .map(|v| {
            let key = |k: &str| v.subject.get(k).map(str::to_string);
            let (a, b) =
                if v.rule == "nic-peer" { (key("node"), key("rdma_dev")) } else { (key("switch"), key("port")) };
            (v.rule, a, b)
        })
        .collect();
    assert_eq!(
        firing,
        vec![
            ("nic-peer".to_string(), Some("node-02".into()), Some("mlx5_5".into())),
            ("switch-peer".to_string(), Some("leaf-rail5".into()), Some("Ethernet4".into())),
        ]
    );
}

#[test]
fn job_nodes_lists_the_nodes_seen_with_a_job_label() {
    let (series, helpers) = fabric();
    let rule = r#"
fn fire(w) { job_nodes(job()) == ["node-01", "node-02", "node-03"] }
#{
    name: "job-span",
    select: ["rdma_np_cnp_sent"],
    group_by: ["job"],
    windows: #{ cnp: rate("rdma_np_cnp_sent", "1s") },
    actions: [ #{ action: "notify.page", target: #{ job: "{job}" } } ],
}
"#;
    let rules = load(&[("job-span.rhai", rule)], helpers);
    let mut rig = Rig::with(series, rules, None).unwrap();
    let mut samples = Vec::new();
    for (node, job) in [("node-03", "train-7"), ("node-01", "train-7"), ("node-02", "train-7"), ("node-04", "eval-2")] {
        let labels = [("node", node), ("rdma_dev", "mlx5_0"), ("job", job)];
        samples.push((rig.counter("rdma_np_cnp_sent", &labels, CounterSpec::U64), 0));
    }
    let events = rig.step(secs(0), &samples);
    let fired = proposals(&events);
    assert_eq!(fired.len(), 1, "{events:?}");
    assert_eq!(fired[0].action.target, Labels::from_pairs([("job", "train-7")]));
    assert_eq!(rig.state("job-span", &[("job", "eval-2")]), Some(State::Inactive));
}

#[test]
fn an_action_for_each_job_is_proposed_once_per_job_behind_the_subject() {
    let (series, helpers) = fabric();
    let per_switch = r#"
fn fire(w) { true }
#{
    name: "leaf-jobs",
    select: ["rdma_np_cnp_sent"],
    group_by: ["switch"],
    windows: #{ cnp: rate("rdma_np_cnp_sent", "1s") },
    actions: [
        #{ action: "notify.page", target: #{ "switch": "{switch}" } },
        #{ action: "nccl.qps", each: "job", target: #{ job: "{job}", via: "{switch}" }, params: #{ qps: "4" } },
    ],
}
"#;
    let per_node = per_switch
        .replace("leaf-jobs", "node-jobs")
        .replace(r#"["switch"]"#, r#"["node"]"#)
        .replace(r#"#{ action: "notify.page", target: #{ "switch": "{switch}" } },"#, "");
    let per_node = per_node.replace(r#"via: "{switch}""#, r#"via: "{node}""#);
    let rules = load(&[("leaf-jobs.rhai", per_switch), ("node-jobs.rhai", &per_node)], helpers);
    let mut rig = Rig::with(series, rules, None).unwrap();
    let mut samples = Vec::new();
    // Every node of the example inventory has a NIC on every leaf: both jobs are behind leaf-rail0.
    for (node, job) in [("node-01", "train-7"), ("node-02", "train-7"), ("node-04", "eval-2")] {
        let labels = [("node", node), ("rdma_dev", "mlx5_0"), ("job", job)];
        samples.push((rig.counter("rdma_np_cnp_sent", &labels, CounterSpec::U64), 0));
    }
    let events = rig.step(secs(0), &samples);
    let targets = |rule: &str, kind: &str| -> Vec<String> {
        let mut t: Vec<String> = proposals_of(&events, rule)
            .iter()
            .filter(|p| p.action.kind == kind)
            .map(|p| p.action.target.to_string())
            .collect();
        t.sort();
        t
    };
    assert_eq!(targets("leaf-jobs", "notify.page"), [r#"{switch="leaf-rail0"}"#], "once for the subject");
    // A NIC's subject names its node (and its leaf): the jobs on that node only.
    assert_eq!(
        targets("leaf-jobs", "nccl.qps"),
        [r#"{job="eval-2",via="leaf-rail0"}"#, r#"{job="train-7",via="leaf-rail0"}"#],
        "{events:?}"
    );
    assert_eq!(
        targets("node-jobs", "nccl.qps"),
        [r#"{job="eval-2",via="node-04"}"#, r#"{job="train-7",via="node-01"}"#, r#"{job="train-7",via="node-02"}"#],
        "a node's own jobs only"
    );
}

// ---------------------------------------------------------------------------
// The per-sensor series cap.

#[test]
fn a_sensor_over_its_series_cap_gets_a_cardinality_error_and_known_series_keep_working() {
    let rule = storm("");
    let series = SeriesTable::default();
    let mut rig = Rig::with(series.clone(), load(&[("pfc-storm.rhai", &rule)], Helpers::default()), None).unwrap();
    // A broken exporter puts a sequence number in a label.
    let noisy = series.add_sensor("noisy-exporter", 3);
    let spec = |seq: &str| SeriesSpec {
        metric: PAUSE.into(),
        labels: Labels::from_pairs([("node", "n1"), ("netdev", "eth0"), ("prio", "3"), ("seq", seq)]),
        kind: SampleKind::Counter(CounterSpec::U64),
    };
    let ids: Vec<_> = ["1", "2", "3"].iter().map(|s| series.register(noisy, &spec(s)).unwrap()).collect();
    match series.register(noisy, &spec("4")) {
        Err(SeriesError::Cardinality { sensor, cap, metric, labels }) => {
            assert_eq!((sensor.as_str(), cap, metric.as_str()), ("noisy-exporter", 3, PAUSE));
            assert_eq!(labels.get("seq"), Some("4"));
        }
        other => panic!("expected a cardinality error, got {other:?}"),
    }
    assert_eq!(series.register(noisy, &spec("2")), Ok(ids[1]), "a known series still resolves");
    // Another sensor's quota is its own.
    let mut eth1 = pause_counter(&rig, "n1", "eth1");

    rig.step(secs(0), &[(ids[0], 0), (ids[1], 0), eth1.add(0)]);
    let events = rig.step(secs(1), &[(ids[0], STORMING), (ids[1], STORMING), eth1.add(STORMING)]);
    let fired = proposals(&events);
    assert_eq!(fired.len(), 2, "{events:?}");
    // The seq series share one subject (node, netdev), so its rate is the sum.
    let eth0 = fired.iter().find(|p| p.subject.get("netdev") == Some("eth0")).expect("eth0 fired");
    assert_eq!(window(eth0, "paused"), 2.0 * STORMING as f64);
    assert_eq!(series.read().sensor_usage().iter().find(|u| u.0 == "noisy-exporter").map(|u| (u.1, u.2)), Some((3, 3)));
}

// ---------------------------------------------------------------------------
// Regressions: each of these failed on the first evaluator.

#[test]
fn editing_a_rule_does_not_resolve_its_firing_instances_on_restarted_windows() {
    let flap = r#"
fn fire(w) { w.flaps >= 3.0 }
#{
    name: "link-flap",
    select: ["link_carrier_down_count"],
    group_by: ["node", "netdev"],
    windows: #{ flaps: increase("link_carrier_down_count", "60s") },
    actions: [ #{ action: "link.isolate", target: #{ node: "{node}", netdev: "{netdev}" } } ],
}
"#;
    let mut rig = Rig::new(&[("link-flap.rhai", flap)]);
    let id = rig.counter("link_carrier_down_count", &[("node", "n1"), ("netdev", "eth0")], CounterSpec::U32_WRAP);
    let mut fired = 0;
    for t in 0..=3 {
        fired += proposals(&rig.step(secs(t), &[(id, t as u64)])).len();
    }
    assert_eq!(fired, 1, "three flaps in 60 s isolate the link");
    // Only the description changes; the link flapped 3 times within the
    // last 60 s, so un-isolating it now would be wrong.
    let edited = flap.replace("name:", "description: \"Isolate a flapping link.\",\n    name:");
    let report = rig.ev.reload(load(&[("link-flap.rhai", &edited)], rig.ev.helpers().clone()));
    assert_eq!(report.changed, vec!["link-flap".to_string()]);
    for t in 4..=10 {
        let events = rig.step(secs(t), &[(id, 3)]);
        assert!(transitions(&events).is_empty(), "at t={t}: {events:?}");
    }
}

#[test]
fn firing_on_is_reevaluated_when_only_the_other_rules_firing_set_changed() {
    let (series, helpers) = fabric();
    let rule = storm("");
    // The switch rule sorts first, so it runs before the ports fire; after
    // that its window is flat and only firing_on() changes.
    let rules = load(&[("a-switch-storm.rhai", SWITCH_STORM), ("pfc-storm.rhai", &rule)], helpers);
    let mut rig = Rig::with(series, rules, None).unwrap();
    let mut a = pause_counter(&rig, "node-01", "eth3");
    let mut b = pause_counter(&rig, "node-02", "eth3");
    rig.step(secs(0), &[a.add(0), b.add(0)]);
    let mut all = Vec::new();
    for t in 1..=5 {
        all.extend(rig.step(secs(t), &[a.add(STORMING), b.add(STORMING)]));
    }
    assert_eq!(proposals_of(&all, "pfc-storm").len(), 2);
    let switches = proposals_of(&all, "switch-storm");
    assert_eq!(switches.len(), 1, "two ports of leaf-rail3 fire from t=1 on: {all:?}");
    assert!(switches[0].decided_at <= secs(2), "one evaluation late at most: {:?}", switches[0]);
}
