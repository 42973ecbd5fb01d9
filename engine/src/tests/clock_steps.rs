//! A clock that steps, through the run loop on a recording's clock: a day
//! back on every series is followed (the series resynchronized, the storm
//! it ends undone, the next one acted on); one node a day back or ahead
//! makes its own subjects stale and no other node's.

use super::common;
use super::run_loop::{daemon, dispatcher, run_within};

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::runtime::{self, DaemonEvent};
use engine::testing::{Knobs, Scripted};
use engine::{EngineEvent, HealthBoard, Labels, Nanos, SampleKind, SeriesSpec, Value, SECOND};
use tokio::sync::watch;

const DAY: Nanos = 86_400 * SECOND;

/// A gauge per port; the port is isolated while it reads above 0.5; a
/// subject quiet for 10 s is stale.
const FLAP: &str = r#"
fn fire(w) { w.level > 0.5 }
fn clear(w) { w.level <= 0.5 }
#{
    name: "flap",
    select: ["flap_gauge"],
    group_by: ["node", "netdev"],
    stale_after: "10s",
    windows: #{ level: last("flap_gauge") },
    actions: [ #{ action: "link.isolate", target: #{ node: "{node}", netdev: "{netdev}" } } ],
}
"#;

/// Two nodes of four ports each.
const NODES: usize = 2;
const PORTS: usize = 4;

/// A sensor reading every port of both nodes once a second: each step is
/// (level, the clock offset of n0, of n1), from [`common::T0`] on.
fn script(steps: &[(f64, Nanos, Nanos)]) -> Scripted {
    let series = (0..NODES * PORTS)
        .map(|i| SeriesSpec {
            metric: "flap_gauge".into(),
            labels: Labels::from_pairs([
                ("node", format!("n{}", i / PORTS).as_str()),
                ("netdev", &format!("eth{}", i % PORTS)),
            ]),
            kind: SampleKind::Gauge,
        })
        .collect();
    let mut sensor = Scripted::new("clocks", series);
    for (k, (level, n0, n1)) in steps.iter().enumerate() {
        let t = common::T0 + k as Nanos * SECOND;
        let at = |i: usize| t + if i < PORTS { *n0 } else { *n1 };
        sensor = sensor.batch((0..NODES * PORTS).map(|i| (i, at(i), Value::Real(*level))).collect());
    }
    sensor
}

/// What a run made of `steps`: isolations, undos, the nodes whose
/// subjects went stale, and the sensor's `clock_step` count.
struct Outcome {
    executes: usize,
    undos: usize,
    stale: BTreeSet<String>,
    clock_steps: u64,
}

async fn run(steps: &[(f64, Nanos, Nanos)]) -> Outcome {
    let knobs = Arc::new(Knobs::default());
    let mut daemon = daemon(
        &[("flap.rhai", FLAP)],
        script(steps),
        dispatcher(knobs.clone(), Duration::from_secs(5)),
        runtime::DEFAULT_SHUTDOWN_GRACE,
    );
    let health = HealthBoard::default();
    daemon.health = health.clone();
    let stale = Arc::new(Mutex::new(BTreeSet::new()));
    let seen = stale.clone();
    let observe = move |event: &DaemonEvent| {
        if let DaemonEvent::Engine(EngineEvent::SensorStale { subject, .. }) = event {
            seen.lock().unwrap().insert(subject.get("node").unwrap_or("?").to_string());
        }
    };
    let (_stop, shutdown) = watch::channel(false);
    run_within(Duration::from_secs(60), daemon, shutdown, observe).await;
    let clock_steps = health
        .snapshot()
        .iter()
        .find(|h| h.name == "clocks")
        .and_then(|h| h.errors.get("clock_step").copied())
        .unwrap_or(0);
    let stale = stale.lock().unwrap().clone();
    Outcome { executes: knobs.executes(), undos: knobs.undos(), stale, clock_steps }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_clock_a_day_back_is_followed_the_storm_it_ends_undone_and_the_next_acted_on() {
    // A storm at T0 isolates every port; then every clock steps back a
    // day, the storm ends, a second one comes and ends. Before, every
    // sample after the step was dropped without a word: the first storm
    // was never undone and the second never seen.
    let mut steps = vec![(0.0, 0, 0), (1.0, 0, 0), (1.0, 0, 0)];
    steps.extend([0.0, 0.0, 1.0, 1.0, 0.0, 0.0].map(|level| (level, -DAY, -DAY)));
    let out = run(&steps).await;
    let ports = NODES * PORTS;
    assert_eq!((out.executes, out.undos), (2 * ports, 2 * ports), "both storms acted on and undone");
    assert_eq!(out.clock_steps, ports as u64, "each series' step counted once in its sensor's health");
    assert!(out.stale.is_empty(), "nothing went stale: {:?}", out.stale);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_nodes_clock_a_day_back_makes_its_subjects_stale_and_no_others() {
    // Both nodes fire; then n1's clock steps back a day while n0 goes on.
    let mut steps = vec![(0.0, 0, 0), (1.0, 0, 0)];
    steps.extend(std::iter::repeat_n((1.0, 0, -DAY), 30));
    let out = run(&steps).await;
    assert_eq!(out.stale, BTreeSet::from(["n1".to_string()]), "only the node with the wrong clock is stale");
    assert_eq!(out.clock_steps, PORTS as u64, "n1's series stepped back, each counted once");
    assert_eq!((out.executes, out.undos), (NODES * PORTS, 0), "no action was taken on the stepped samples");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_nodes_clock_a_day_ahead_never_makes_other_nodes_stale() {
    // Both nodes fire; then n1's clock runs a day ahead while n0 goes on.
    // Before, n1's series confirmed each other's "gap": the recording's
    // clock jumped a day and every subject of n0 went stale.
    let mut steps = vec![(0.0, 0, 0), (1.0, 0, 0)];
    steps.extend(std::iter::repeat_n((1.0, 0, DAY), 30));
    let out = run(&steps).await;
    assert_eq!(out.stale, BTreeSet::from(["n1".to_string()]), "n1's samples are refused; n0 is not stale");
    assert_eq!(out.clock_steps, 0);
}
