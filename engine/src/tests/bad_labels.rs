//! A label value no netdev, port or host could carry is refused at intake:
//! the forged netdev of a recording never reaches an action's target, its
//! samples are counted by reason and in its sensor's health, and the
//! sensor's other series go on.

use super::run_loop::{daemon, dispatcher, run_within};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::runtime::{self, DaemonEvent};
use engine::testing::{Knobs, Scripted};
use engine::{EngineEvent, HealthBoard, Labels, SampleKind, SeriesSpec, Value, SECOND};
use tokio::sync::watch;

/// The value a recorded netdev held: a quote to close the label, a second
/// label, a path out of its directory, a flag and a newline.
const FORGED: &str = "eth6\",\"switch=\"leaf-rail0|x/../y --help\n{node}";

const ISOLATE: &str = r#"
fn fire(w) { w.level > 0.5 }
#{
    name: "isolate",
    select: ["flap_gauge"],
    group_by: ["node", "netdev"],
    stale_after: "36500d",
    windows: #{ level: last("flap_gauge") },
    actions: [ #{ action: "link.isolate", target: #{ node: "{node}", netdev: "{netdev}" } } ],
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_netdev_is_refused_at_intake_and_never_reaches_a_target() {
    let spec = |netdev: &str| SeriesSpec {
        metric: "flap_gauge".into(),
        labels: Labels::from_pairs([("node", "n0"), ("netdev", netdev)]),
        kind: SampleKind::Gauge,
    };
    let mut sensor = Scripted::new("recorded", vec![spec(FORGED), spec("eth7")]);
    for k in 0..3 {
        let t = super::common::T0 + k * SECOND;
        sensor = sensor.batch(vec![(0, t, Value::Real(1.0)), (1, t, Value::Real(1.0))]);
    }
    let knobs = Arc::new(Knobs::default());
    let mut daemon = daemon(
        &[("isolate.rhai", ISOLATE)],
        sensor,
        dispatcher(knobs.clone(), Duration::from_secs(5)),
        runtime::DEFAULT_SHUTDOWN_GRACE,
    );
    let health = HealthBoard::default();
    daemon.health = health.clone();
    let targets = Arc::new(Mutex::new(Vec::new()));
    let seen = targets.clone();
    let observe = move |event: &DaemonEvent| {
        if let DaemonEvent::Engine(EngineEvent::Proposal(p)) = event {
            seen.lock().unwrap().push(p.action.target.clone());
        }
    };
    let (_stop, shutdown) = watch::channel(false);
    let summary = run_within(Duration::from_secs(60), daemon, shutdown, observe).await;
    let targets = targets.lock().unwrap().clone();
    assert_eq!(
        targets,
        vec![Labels::from_pairs([("node", "n0"), ("netdev", "eth7")])],
        "only the real port is acted on"
    );
    assert_eq!(knobs.executes(), 1);
    assert_eq!(summary.stats.refused.bad_label, 3, "each sample of the forged series refused and counted");
    let sensor = health.snapshot().into_iter().find(|h| h.name == "recorded").expect("the sensor reported");
    assert_eq!(sensor.errors.get("refused"), Some(&3));
    let why = sensor.last_error.unwrap_or_default();
    assert!(why.contains("label netdev: a control character"), "{why}");
}
