//! A canary judged in the run loop as a daemon runs it: the dispatcher's
//! task cannot read the rules, so the loop reads the canary's rule when it
//! is due and hands the reading over. Sensors to actuator, on the
//! samples' clock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::contracts::CanaryOutcome;
use engine::dispatch::{ActuatorRoute, DispatchConfig, Dispatcher, Verdict};
use engine::ledger::{Ledger, Retention};
use engine::policy::{CanaryRule, PolicySettings};
use engine::runtime::{self, DaemonEvent};
use engine::testing::{Knobs, Scripted};
use engine::{Labels, Mode, SampleKind, SeriesSpec, Store, Value};
use tokio::sync::watch;

use super::common;
use super::run_loop::{daemon, run_within};

/// A switch's spread as a gauge: fires above 1.5, clears under 1.2, and
/// widens the switch's hash.
const SPREAD: &str = r#"
fn fire(w) { w.spread > 1.5 }
fn clear(w) { w.spread < 1.2 }
#{
    name: "spread",
    select: ["spread_gauge"],
    group_by: ["switch"],
    stale_after: "36500d",
    windows: #{ spread: last("spread_gauge") },
    actions: [ #{ action: "ecmp.widen_hash", target: #{ "switch": "{switch}" } } ],
}
"#;

fn dispatcher(knobs: Arc<Knobs>) -> Dispatcher {
    let canary = CanaryRule {
        actions: vec!["ecmp.widen_hash".into()],
        after: Duration::from_secs(10),
        worse: "spread".into(),
        margin: 0.1,
        hold: Duration::from_secs(3600),
    };
    Dispatcher::new(
        DispatchConfig {
            mode: Mode::Enforce,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute { pattern: "*".into(), actuator: knobs, destructive: true }],
            timeout: Duration::from_secs(5),
            policy: PolicySettings::defaults().with_canaries(&[canary]).unwrap(),
            topology: None,
        },
        Some(Ledger::open(&Store::temporary().unwrap(), Retention::default()).unwrap()),
    )
}

/// Two switches, one sample each a second for 20 s, sent as a live sensor
/// sends them (a replay at full speed ends before the dispatcher's task
/// has decided its first proposal): both at `before` from the start;
/// `canary_after` on leaf-a from 5 s.
fn spreads(before: f64, canary_after: f64) -> Scripted {
    let series = ["leaf-a", "leaf-b"]
        .iter()
        .map(|s| SeriesSpec {
            metric: "spread_gauge".into(),
            labels: Labels::from_pairs([("switch", *s)]),
            kind: SampleKind::Gauge,
        })
        .collect();
    let mut sensor = Scripted::new("spreads", series);
    for s in 0..20 {
        let a = if s >= 5 { canary_after } else { before };
        sensor = sensor.batch(vec![(0, common::secs(s), Value::Real(a)), (1, common::secs(s), Value::Real(before))]);
    }
    sensor.paced(Duration::from_millis(20))
}

/// Runs the loop over `sensor`; returns its decisions as (switch, verdict, canary outcome).
async fn run(knobs: Arc<Knobs>, sensor: Scripted) -> Vec<(String, &'static str, Option<CanaryOutcome>)> {
    let daemon = daemon(&[("spread.rhai", SPREAD)], sensor, dispatcher(knobs), runtime::DEFAULT_SHUTDOWN_GRACE);
    let (_stop, shutdown) = watch::channel(false);
    let decided = Arc::new(Mutex::new(Vec::new()));
    let seen = decided.clone();
    let observe = move |event: &DaemonEvent| {
        if let DaemonEvent::Decision(d) = event {
            let switch = d.proposal.action.target.get("switch").unwrap_or_default().to_string();
            let judged = d.canary.as_ref().and_then(|c| c.judged.as_ref()).map(|j| j.outcome);
            // An action is said again when its outcome check is judged: listed as that.
            let outcome = d.outcome.as_ref().and_then(|o| o.judged.as_ref()).map(|o| o.result.name());
            let mut seen = seen.lock().unwrap();
            let said = seen.iter().any(|(s, _, _): &(String, &str, _)| *s == format!("{switch} outcome"));
            match outcome {
                Some(result) if !said && judged.is_none() => seen.push((format!("{switch} outcome"), result, None)),
                _ => seen.push((switch, d.verdict.name(), judged)),
            }
        }
    };
    run_within(Duration::from_secs(60), daemon, shutdown, observe).await;
    let out = decided.lock().unwrap().clone();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_reads_the_canarys_rule_when_due_and_the_waiting_switch_follows() {
    let knobs = Arc::new(Knobs::default());
    let decisions = run(knobs.clone(), spreads(2.0, 1.0)).await;
    let a = |verdict: &str, judged| ("leaf-a".to_string(), verdict.to_string(), judged);
    let b = |verdict: &str| ("leaf-b".to_string(), verdict.to_string(), None);
    let got: Vec<(String, String, Option<CanaryOutcome>)> =
        decisions.into_iter().map(|(s, v, j)| (s, v.to_string(), j)).collect();
    assert_eq!(
        got,
        vec![
            a("executed", None),
            b("held"),
            ("leaf-a outcome".to_string(), "effective".to_string(), None),
            a("executed", Some(CanaryOutcome::Promoted)),
            b("executed")
        ],
        "the canary first, leaf-b waits, the canary effective as its spread falls, promoted at 10 s, then leaf-b"
    );
    assert_eq!(knobs.executes(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_whose_spread_rose_is_undone_in_the_loop() {
    let knobs = Arc::new(Knobs::default());
    let decisions = run(knobs.clone(), spreads(2.0, 3.0)).await;
    assert!(
        decisions.iter().any(|(s, v, j)| s == "leaf-a" && *v == "executed" && *j == Some(CanaryOutcome::Reverted)),
        "{decisions:?}"
    );
    assert!(decisions.iter().any(|(s, v, _)| s == "leaf-b" && *v == "expired"), "{decisions:?}");
    assert_eq!((knobs.executes(), knobs.undos()), (1, 1));
    assert!(!decisions.iter().any(|(_, v, _)| *v == Verdict::Shadowed.name()));
}
