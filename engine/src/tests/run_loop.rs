//! The run loop as a daemon runs it, sensors to actuators: it never waits
//! for ever on its own dispatcher, and a stop asked for ends it within the
//! shutdown grace whatever the dispatcher is doing. Each test guards its
//! run with a timeout that fails it instead of hanging the suite.

use super::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine::dispatch::{ActuatorRoute, DispatchConfig, Dispatcher, Verdict};
use engine::ledger::{Ledger, Retention};
use engine::policy::{BreakerConfig, Limits, PolicySettings, RetryConfig, TargetLimits, UndoConfig};
use engine::runtime::{self, ClockMode, Daemon, DaemonEvent, RunSummary, SensorSlot};
use engine::testing::{Knobs, Scripted};
use engine::{
    Action, ActionKindDecl, Actuator, ActuatorError, Evaluator, HealthBoard, Helpers, Labels, Mode, Nanos, Outcome,
    RequestPlan, SampleKind, SeriesSpec, SeriesTable, Store, Value, SECOND,
};
use tokio::sync::{mpsc, watch};

/// A gauge per port; the port is isolated while it reads above 0.5, and
/// the isolation undone once it reads 0.5 or less.
const FLAP: &str = r#"
fn fire(w) { w.level > 0.5 }
fn clear(w) { w.level <= 0.5 }
#{
    name: "flap",
    select: ["flap_gauge"],
    group_by: ["node", "netdev"],
    stale_after: "36500d",
    windows: #{ level: last("flap_gauge") },
    actions: [ #{ action: "link.isolate", target: #{ node: "{node}", netdev: "{netdev}" } } ],
}
"#;

/// A dispatcher in enforce mode sending everything to `actuator`, undoing
/// `link.isolate` when its instance resolves, with no cooldown or rate
/// limit in the way and one attempt per call. Its ledger is in memory: an
/// undo needs the record of what the action changed.
pub(super) fn dispatcher(actuator: Arc<dyn Actuator>, timeout: Duration) -> Dispatcher {
    let policy = PolicySettings::new(
        &Limits::default(),
        &BreakerConfig { trip_after: 0, window: Duration::from_secs(600) },
        &TargetLimits { cooldown: Duration::ZERO, max_per_window: 1_000_000, window: Duration::from_secs(3600) },
        &[],
        &UndoConfig { on_resolve: vec!["link.isolate".into()] },
        &RetryConfig { attempts: 1, backoff: Duration::from_millis(10) },
    )
    .expect("the test policy parses");
    Dispatcher::new(
        DispatchConfig {
            mode: Mode::Enforce,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute { pattern: "*".into(), actuator, destructive: true }],
            timeout,
            policy,
            topology: None,
        },
        Some(Ledger::open(&Store::temporary().expect("a store in memory"), Retention::default()).expect("a ledger")),
    )
}

/// A daemon on the recording's clock over `rules`, reading `sensor`,
/// acting through `dispatcher`, ending when the sensor does.
pub(super) fn daemon(rules: &[(&str, &str)], sensor: Scripted, dispatcher: Dispatcher, grace: Duration) -> Daemon {
    let series = SeriesTable::default();
    let rules = common::load(rules, Helpers::new(Some(series.clone()), None));
    Daemon {
        evaluator: Evaluator::new(series, rules, None).expect("no store"),
        dispatcher,
        sensors: vec![SensorSlot { sensor: Box::new(sensor), max_series: 100_000 }],
        loader: None,
        clock: ClockMode::Samples,
        max_ahead: runtime::DEFAULT_MAX_AHEAD,
        tick: Duration::from_millis(20),
        record: None,
        sink: None,
        stop_when_sensors_end: true,
        shutdown_grace: grace,
        health: HealthBoard::default(),
    }
}

/// `ports` gauges on `ports / 8` nodes, flapping `periods` times: each
/// period reads 0, 1, 1, 0, 0 a second apart, every port in one batch.
fn flapping(ports: usize, periods: usize) -> Scripted {
    let series = (0..ports)
        .map(|i| SeriesSpec {
            metric: "flap_gauge".into(),
            labels: Labels::from_pairs([
                ("node", format!("n{}", i / 8).as_str()),
                ("netdev", &format!("eth{}", i % 8)),
            ]),
            kind: SampleKind::Gauge,
        })
        .collect();
    let mut sensor = Scripted::new("flapping", series);
    let mut t: Nanos = common::T0;
    for _ in 0..periods {
        for level in [0.0, 1.0, 1.0, 0.0, 0.0] {
            sensor = sensor.batch((0..ports).map(|i| (i, t, Value::Real(level))).collect());
            t += SECOND;
        }
    }
    sensor
}

/// Runs `daemon` to its end, or fails the test after `limit`.
pub(super) async fn run_within(
    limit: Duration,
    daemon: Daemon,
    shutdown: watch::Receiver<bool>,
    observe: impl FnMut(&DaemonEvent) + Send + 'static,
) -> RunSummary {
    let (_commands, rx) = mpsc::channel(16);
    let running = tokio::spawn(runtime::run(daemon, shutdown, rx, observe));
    match tokio::time::timeout(limit, running).await {
        Ok(joined) => joined.expect("the loop does not panic").expect("the loop ends without an I/O error"),
        Err(_) => panic!("the run loop did not end within {limit:?}: it waits for ever"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_speed_replay_whose_decisions_outrun_the_dispatcher_never_deadlocks() {
    // 800 ports × 2 periods: 1,600 isolations and 1,600 undos, more than
    // the channels between the loop and the dispatcher hold (1,024 each).
    // Before, the loop waited for room in the dispatcher's inbox while the
    // dispatcher waited for room to hand back its decisions: it stopped at
    // about a thousand decisions and never ended.
    let knobs = Arc::new(Knobs::default());
    let daemon = daemon(
        &[("flap.rhai", FLAP)],
        flapping(800, 2),
        dispatcher(knobs.clone(), Duration::from_secs(5)),
        runtime::DEFAULT_SHUTDOWN_GRACE,
    );
    let (_stop, shutdown) = watch::channel(false);
    let decided = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = decided.clone();
    let observe = move |event: &DaemonEvent| {
        if let DaemonEvent::Decision(d) = event {
            seen.lock().unwrap().push((d.id.clone(), d.verdict.clone()));
        }
    };
    let summary = run_within(Duration::from_secs(120), daemon, shutdown, observe).await;
    // Each isolation is said again when its outcome is judged (effective: its port recovered).
    assert_eq!(summary.decisions, 3_200 + 1_600, "every isolation and every undo is decided");
    let executed: std::collections::HashSet<String> = decided
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, v)| matches!(v, Verdict::Executed { .. }))
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(executed.len(), 3_200);
    assert_eq!((knobs.executes(), knobs.undos()), (1_600, 1_600));
}

/// An actuator whose every call waits for ever: a switch that accepts the
/// connection and never answers, with an `action_timeout` of an hour.
#[derive(Debug)]
struct NeverAnswers(Vec<ActionKindDecl>);

#[async_trait]
impl Actuator for NeverAnswers {
    fn name(&self) -> &str {
        "never-answers"
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.0
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan { actuator: "never-answers".into(), requests: vec![format!("isolate {}", action.target)] })
    }

    async fn execute(&self, _: &Action) -> Result<Outcome, ActuatorError> {
        std::future::pending().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_ends_the_loop_within_its_grace_while_the_dispatcher_waits_on_an_actuator() {
    // The first isolation hangs; the loop goes on evaluating until the
    // dispatcher's inbox is full and the loop itself waits on it. Before, a
    // stop asked for then was never seen: SIGTERM was ignored.
    let hangs = Arc::new(NeverAnswers(vec![ActionKindDecl::new("*", &[])]));
    let grace = Duration::from_millis(300);
    let daemon = daemon(&[("flap.rhai", FLAP)], flapping(800, 2), dispatcher(hangs, Duration::from_secs(3600)), grace);
    let (stop, shutdown) = watch::channel(false);
    // Each proposal and each resolution is a message to the dispatcher,
    // observed once the inbox took it.
    let (sent_tx, mut sent) = mpsc::unbounded_channel();
    let observe = move |event: &DaemonEvent| match event {
        DaemonEvent::Engine(engine::EngineEvent::Proposal(_))
        | DaemonEvent::Engine(engine::EngineEvent::Transition { from: engine::State::Firing, .. }) => {
            let _ = sent_tx.send(());
        }
        _ => {}
    };
    let (_commands, rx) = mpsc::channel(16);
    let running = tokio::spawn(runtime::run(daemon, shutdown, rx, observe));
    // Close to what the inbox holds (1,024 behind the one in hand)…
    for _ in 0..1_000 {
        tokio::time::timeout(Duration::from_secs(60), sent.recv())
            .await
            .expect("the rule proposes and resolves")
            .expect("the loop runs");
    }
    // …and the loop, at full speed, fills the rest and waits on it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let asked = std::time::Instant::now();
    stop.send(true).unwrap();
    let summary = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .unwrap_or_else(|_| panic!("the loop ignored the stop for 30 s"))
        .expect("the loop does not panic")
        .expect("the loop ends without an I/O error");
    assert!(asked.elapsed() >= grace, "the dispatcher was given its grace: {:?}", asked.elapsed());
    assert_eq!(summary.decisions, 0, "the hung isolation was never decided");
}
