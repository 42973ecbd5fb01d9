//! The node condition `RoceFabricHealthy` against the fake API server, which
//! checks each PATCH of the Node's status exactly: method, path, content
//! type, body and token.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actuators::node_condition::{self, Feed, Incidents, ReportError, Reporter};
use engine::playbook::KubernetesCondition;
use engine::runtime::DaemonEvent;
use engine::{EngineEvent, Labels, Nanos, Severity, State, SECOND};
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::common::kube::{exchange, fake_api_server, hanging, with_body, Exchange};

const MERGE: &str = "application/strategic-merge-patch+json";
const STATUS: &str = "/api/v1/nodes/gpu-01/status";
/// 2026-12-07T12:00:00Z: the fake clock's first reading; each reading is a
/// minute after the one before.
const T0: Nanos = 1_796_644_800 * SECOND;

/// The time of the clock's reading `n`, as Kubernetes writes it.
fn at(n: i64) -> String {
    node_condition::condition::kube_time(T0 + n * 60 * SECOND)
}

fn healthy(beat: i64, since: i64) -> Value {
    condition(
        "True",
        "RoceFabricHealthy",
        "no RoCE fabric incident of severity critical or above on node gpu-01",
        beat,
        since,
    )
}

fn storm(beat: i64, since: i64) -> Value {
    condition(
        "False",
        "PfcStorm",
        "1 RoCE fabric incident firing on node gpu-01: pfc-storm (critical) on netdev=eth3,node=gpu-01",
        beat,
        since,
    )
}

fn condition(status: &str, reason: &str, message: &str, beat: i64, since: i64) -> Value {
    json!({"status": {"conditions": [{
        "type": "RoceFabricHealthy", "status": status, "reason": reason, "message": message,
        "lastHeartbeatTime": at(beat), "lastTransitionTime": at(since),
    }]}})
}

fn patch(body: Value, status: u16) -> Exchange {
    with_body(exchange("PATCH", STATUS, status, json!({"kind": "Node"})), MERGE, body)
}

/// A reporter for node `gpu-01` of the fake server on `port`, with the
/// server's token in a file; its clock reads T0, T0 + 1 min, … and counts
/// its readings in `readings`.
fn reporter(
    port: u16,
    dir: &tempfile::TempDir,
    heartbeat: Duration,
    timeout: Duration,
) -> (Reporter, watch::Receiver<i64>) {
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let config: KubernetesCondition =
        toml::from_str(&format!("api_server = \"http://127.0.0.1:{port}\"\ntoken_file = \"{}\"\n", token.display()))
            .unwrap();
    // Below the playbook's bounds (a heartbeat of 10 s at least), which
    // `check` enforces: the loop's test runs in seconds.
    let config = KubernetesCondition { heartbeat, timeout, ..config };
    let (count, readings) = watch::channel(0i64);
    let next = Arc::new(AtomicI64::new(0));
    let clock = move || {
        let n = next.fetch_add(1, Ordering::SeqCst);
        count.send_replace(n + 1);
        T0 + n * 60 * SECOND
    };
    (node_condition::build(&config, "gpu-01").unwrap().with_clock(Arc::new(clock)), readings)
}

fn transition(node: &str, to: State) -> DaemonEvent {
    DaemonEvent::Engine(EngineEvent::Transition {
        rule: "pfc-storm".into(),
        subject: Labels::from_pairs([("node", node), ("netdev", "eth3")]),
        from: if to == State::Firing { State::Pending } else { State::Firing },
        to,
        at: 7,
        values: vec![],
        severity: Severity::Critical,
    })
}

async fn server(script: Vec<Exchange>) -> (u16, tokio::task::JoinHandle<Vec<String>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    (port, tokio::spawn(fake_api_server(listener, script)))
}

#[tokio::test]
async fn a_storm_makes_the_node_unhealthy_a_heartbeat_keeps_its_transition_and_its_end_makes_it_healthy() {
    let script =
        vec![patch(healthy(0, 0), 200), patch(storm(1, 1), 200), patch(storm(2, 1), 200), patch(healthy(3, 3), 200)];
    let (port, server) = server(script).await;
    let dir = tempfile::tempdir().unwrap();
    let (mut reporter, _) = reporter(port, &dir, Duration::from_secs(60), Duration::from_secs(5));
    let (feed, incidents) = Feed::new("gpu-01", Incidents::default());
    let written = reporter.report(&incidents.borrow().clone()).await.unwrap();
    assert_eq!((written.status(), written.reason.as_str()), ("True", "RoceFabricHealthy"));
    feed.observe(&transition("gpu-01", State::Firing));
    let written = reporter.report(&incidents.borrow().clone()).await.unwrap();
    assert_eq!((written.status(), written.reason.as_str()), ("False", "PfcStorm"));
    // The heartbeat: the same condition, lastTransitionTime unchanged.
    reporter.report(&incidents.borrow().clone()).await.unwrap();
    feed.observe(&transition("gpu-01", State::Resolved));
    reporter.report(&incidents.borrow().clone()).await.unwrap();
    assert_eq!(server.await.unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn a_refused_or_hanging_patch_is_an_error_and_the_next_write_keeps_when_the_status_changed() {
    let script = vec![
        patch(healthy(0, 0), 200),
        patch(storm(1, 1), 403),
        hanging(patch(storm(2, 1), 200)),
        patch(storm(3, 1), 200),
    ];
    let (port, server) = server(script).await;
    let dir = tempfile::tempdir().unwrap();
    let (mut reporter, _) = reporter(port, &dir, Duration::from_secs(60), Duration::from_millis(300));
    let (feed, incidents) = Feed::new("gpu-01", Incidents::default());
    reporter.report(&incidents.borrow().clone()).await.unwrap();
    feed.observe(&transition("gpu-01", State::Firing));
    let refused = reporter.report(&incidents.borrow().clone()).await.unwrap_err();
    assert!(matches!(refused, ReportError::Refused { status: 403, .. }), "{refused}");
    assert!(refused.to_string().contains(STATUS), "{refused}");
    let hung = reporter.report(&incidents.borrow().clone()).await.unwrap_err();
    assert!(matches!(&hung, ReportError::Http { source: actuators::http::HttpError::Timeout(_), .. }), "{hung}");
    // Written at last, the status is dated from when it changed.
    reporter.report(&incidents.borrow().clone()).await.unwrap();
    assert_eq!(server.await.unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn a_hanging_api_server_holds_neither_the_feed_nor_the_next_heartbeat() {
    let script = vec![
        hanging(patch(healthy(0, 0), 200)),
        // The heartbeat after the failure writes again.
        patch(healthy(1, 0), 200),
        // A change is written at once, then beats.
        patch(storm(2, 2), 200),
        patch(storm(3, 2), 200),
    ];
    let (port, server) = server(script).await;
    let dir = tempfile::tempdir().unwrap();
    let (reporter, mut readings) = reporter(port, &dir, Duration::from_secs(2), Duration::from_millis(500));
    let (feed, incidents) = Feed::new("gpu-01", Incidents::default());
    let (stop, shutdown) = watch::channel(false);
    let task = tokio::spawn(reporter.run(incidents, shutdown));
    readings.wait_for(|n| *n == 1).await.unwrap();
    // While the first PATCH hangs, the engine's side takes events in (another
    // node's: nothing to write) without waiting on it.
    feed.observe(&transition("gpu-02", State::Firing));
    readings.wait_for(|n| *n == 2).await.unwrap();
    feed.observe(&transition("gpu-01", State::Firing));
    let problems = tokio::time::timeout(Duration::from_secs(30), server).await.expect("four writes").unwrap();
    assert_eq!(problems, Vec::<String>::new());
    stop.send_replace(true);
    tokio::time::timeout(Duration::from_secs(5), task).await.expect("the reporter stops").unwrap();
    assert_eq!(*readings.borrow(), 4, "one write per heartbeat or change, no more");
}
