//! A switch that restarts mid-incident and comes back with its saved
//! configuration has lost the daemon's change: the daemon finds it at the
//! next re-verification (`[verify] every`), records the drift, re-applies
//! the escalation through the policy while the storm goes on, and undoes it
//! when the storm ends.

use crate::common;

use std::time::{Duration, Instant};

use common::storms::{self, Entry};
use common::Daemon;

/// node-01's NIC 0 storms from 0.3 s to 12 s; the others are quiet.
fn storm(nic: usize) -> std::ops::Range<u64> {
    if nic == 0 {
        300..12_000
    } else {
        0..0
    }
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "gave up after {limit:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed()
}

#[test]
fn a_switch_restarted_mid_storm_gets_its_escalation_back_within_the_verify_period() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut leaves = storms::leaves(&rt);
    let original: Entry = leaves[0].now();
    let dir = tempfile::tempdir().unwrap();
    storms::recording(&dir.path().join("storm.jsonl"), 150, storm);
    let config = storms::configure(dir.path(), &leaves, "storm.jsonl", "1s");
    let mut daemon = Daemon::start(&config, &dir.path().join("control.sock"), &dir.path().join("daemon.log"));

    // The escalation replaces the entry as `pfcwd start` does: a Set deleting it, then one
    // writing it; the escalation is there once it is written.
    wait_until("the escalation", Duration::from_secs(20), || {
        let now = leaves[0].now();
        now.is_some() && now != original
    });
    // Restarted once the escalation is recorded (it counts once the watchdog shows it), so the
    // restart is found by re-verification, not by the escalation's own effect check.
    daemon.wait_for("the escalation recorded", |d| {
        d.decisions().iter().any(|d| d.verdict.name() == "executed").then_some(())
    });
    let escalated = leaves[0].now();
    leaves[0].restart(&rt);
    assert_eq!(leaves[0].now(), original, "the restart lost the escalation");
    let regained = wait_until("the escalation back", Duration::from_secs(5), || leaves[0].now() == escalated);
    println!("drift: the escalation was back {} ms after the switch restarted", regained.as_millis());
    assert!(regained <= Duration::from_millis(2500), "within the 1 s period and one actuator call: {regained:?}");

    // The switch holds the escalation as soon as the Set lands; its outcome
    // is recorded a moment later.
    let decisions = daemon.wait_for("the re-applied escalation recorded", |d| {
        let decisions = d.decisions();
        let done =
            decisions.iter().any(|d| d.steps[0].what.starts_with("re-applying") && d.verdict.name() == "executed");
        done.then_some(decisions)
    });
    let drifted: Vec<_> = decisions.iter().filter(|d| d.drift.is_some()).collect();
    assert_eq!(drifted.len(), 1, "{decisions:#?}");
    assert_eq!(drifted[0].drift.as_ref().unwrap().kind, engine::dispatch::DriftKind::Reverted);
    assert!(
        decisions.iter().any(|d| d.steps[0].what.starts_with(&format!("re-applying {}", drifted[0].id))),
        "the re-applied decision names the drifted one: {decisions:#?}"
    );
    let status = daemon.status();
    assert_eq!(status["drifted"][0]["id"], drifted[0].id.as_str(), "{status}");

    assert!(daemon.wait_exit(Duration::from_secs(30)), "the run ends with its recording:\n{}", daemon.log());
    assert_eq!(leaves[0].now(), original, "undone when the storm ended; history {:?}", leaves[0].history);
}
