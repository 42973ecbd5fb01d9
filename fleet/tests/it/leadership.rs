//! Switch aggregators under leader election, and the fleet breaker, with a
//! real etcd and the simulated SONiC switch.
#![cfg(feature = "etcd")]

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{coordinator, dispatcher, etcd_available, proposal, settings, Cluster, Counting};
use engine::contracts::Coordinator;
use engine::dispatch::Verdict;
use fleet::election::{leader, Candidate, Leadership};
use gnmi_proto::gnmi::Update;
use gnmi_proto::{parse_path, value, ClientConfig, GnmiClient, SetOps};
use sim::switch::{spawn, Model, Options};
use tokio::sync::Mutex;

const ELECTION: &str = "switch-aggregator/pod-a";
const PREFIX: &str = "/rocemend/fleet/";

/// An aggregator of one switch set: it sees every PFC storm, and only while
/// it leads does it escalate the port's watchdog, writing its own
/// detection time so the switch shows who changed it.
struct Aggregator {
    identity: String,
    detection_ms: &'static str,
    leadership: Arc<Mutex<Option<Leadership>>>,
    campaign: tokio::task::JoinHandle<()>,
    switch: GnmiClient,
}

impl Aggregator {
    async fn start(endpoints: &[String], identity: &str, detection_ms: &'static str, switch: GnmiClient) -> Aggregator {
        let s = settings(endpoints, identity, 1, 2);
        let client = fleet::connect_election_client(&s).await.unwrap();
        let leadership = Arc::new(Mutex::new(None));
        let slot = leadership.clone();
        let candidate = Candidate::new(client, PREFIX, ELECTION, identity, Duration::from_secs(2));
        let campaign = tokio::spawn(async move {
            let won = candidate.campaign().await.expect("campaign");
            *slot.lock().await = Some(won);
        });
        Aggregator { identity: identity.into(), detection_ms, leadership, campaign, switch }
    }

    /// A storm on `port`: returns whether this aggregator changed the switch.
    async fn on_storm(&mut self, port: &str) -> bool {
        let leads = match &*self.leadership.lock().await {
            Some(l) => l.confirm().await,
            None => false,
        };
        if !leads {
            return false;
        }
        // As sonic-gnmi takes a write: origin sonic-db with the instance, a JSON_IETF string.
        let update = |field: &str, v: &str| Update {
            path: Some(parse_path(&format!("sonic-db:/CONFIG_DB/localhost/PFC_WD/{port}/{field}")).unwrap()),
            val: Some(value::json_ietf(&serde_json::Value::from(v))),
            ..Default::default()
        };
        let ops = SetOps {
            update: vec![update("action", "drop"), update("detection_time", self.detection_ms)],
            ..Default::default()
        };
        self.switch.set(ops).await.expect("gNMI Set");
        true
    }

    /// As if the process died: no resign, the lease lapses on its own.
    async fn kill(self) {
        self.campaign.abort();
        drop(self.leadership.lock().await.take());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_changes_the_switch_and_the_standby_takes_over() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let sw = spawn("leaf-1", ([127, 0, 0, 1], 0).into(), Model::new(8), Options::default()).await.unwrap();
    let gnmi = || async { GnmiClient::connect(&ClientConfig::plain(sw.addr.to_string())).await.unwrap() };
    let status_client = fleet::connect_client(&settings(&endpoints, "status", 1, 2)).await.unwrap();

    let mut a = Aggregator::start(&endpoints, "agg-a", "300", gnmi().await).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while leader(&status_client, PREFIX, ELECTION).await.unwrap().as_deref() != Some("agg-a") {
        assert!(Instant::now() < deadline, "agg-a never led");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut b = Aggregator::start(&endpoints, "agg-b", "700", gnmi().await).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Both see the storm on Ethernet0; only the leader acts.
    assert!(a.on_storm("Ethernet0").await);
    assert!(!b.on_storm("Ethernet0").await);
    let entry = sw.model.config_entry("PFC_WD", "Ethernet0").unwrap();
    assert_eq!((entry["action"].as_str(), entry["detection_time"].as_str()), ("drop", "300"));

    let identity = a.identity.clone();
    a.kill().await;
    let killed = Instant::now();
    let deadline = killed + Duration::from_secs(8);
    while leader(&status_client, PREFIX, ELECTION).await.unwrap().as_deref() != Some("agg-b") {
        assert!(Instant::now() < deadline, "agg-b did not take over from {identity}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took_over = killed.elapsed();
    assert!(took_over >= Duration::from_millis(500), "took over after {took_over:?}: before the lease could lapse");
    let deadline = Instant::now() + Duration::from_secs(3);
    while b.leadership.lock().await.is_none() {
        assert!(Instant::now() < deadline, "agg-b's campaign did not return");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(b.on_storm("Ethernet4").await);
    let e4 = sw.model.config_entry("PFC_WD", "Ethernet4").unwrap();
    assert_eq!((e4["action"].as_str(), e4["detection_time"].as_str()), ("drop", "700"));
    // What the dead leader set is as it left it.
    assert_eq!(sw.model.config_entry("PFC_WD", "Ethernet0").unwrap()["detection_time"], "300");
    sw.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breaker_tripped_by_one_daemon_holds_every_daemon_within_a_second_until_one_reset() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let mut daemons = Vec::new();
    for i in 0..5 {
        daemons.push(coordinator(settings(&endpoints, &format!("n{i}"), 100, 5)).await);
    }
    daemons[0].trip("5 limit hits in 10m").await.unwrap();
    let tripped = Instant::now();
    for d in &daemons {
        while !d.breaker().tripped {
            assert!(tripped.elapsed() < Duration::from_secs(1), "{} did not see the trip within 1 s", d.identity());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(d.breaker().by, "n0");
    }
    let actuator = Arc::new(Counting::default());
    let mut d4 = dispatcher(actuator, daemons[4].clone());
    let held = d4.dispatch(proposal("link.isolate", "x1")).await;
    assert_eq!(held.verdict.reason(), Some("fleet circuit breaker tripped by n0: 5 limit hits in 10m"));

    let was = daemons[3].reset("operator").await.unwrap();
    assert!(was.tripped && was.by == "n0");
    let reset = Instant::now();
    for d in &daemons {
        while d.breaker().tripped {
            assert!(reset.elapsed() < Duration::from_secs(1), "{} did not see the reset within 1 s", d.identity());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let acted = d4.dispatch(proposal("node.cordon", "x2")).await;
    assert!(matches!(acted.verdict, Verdict::Executed { .. }), "{:?}", acted.verdict);
    let client = fleet::connect_client(daemons[0].settings()).await.unwrap();
    let status = fleet::status::read(&client, daemons[0].settings(), &[ELECTION.to_string()]).await.unwrap();
    let text = status.render();
    assert!(text.contains("fleet breaker: clear"), "{text}");
    assert!(text.contains("last reset by operator"), "{text}");
    assert!(text.contains("n4 (node.cordon"), "{text}");
    assert_eq!(status.members.len(), 5);
}
