//! The fleet budget with a real etcd: a spine fault seen by 20 daemons, a
//! 3-member cluster losing its leader, a daemon killed while holding a
//! token, and etcd stopped and started again under a running daemon.
#![cfg(feature = "etcd")]

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{coordinator, dispatcher, etcd_available, proposal, settings, Cluster, Counting};
use engine::contracts::{Admission, Coordinator, Health, TokenRequest};
use engine::dispatch::Verdict;
use engine::policy::Impact;

const PROBE: &str = env!("CARGO_BIN_EXE_rocemend-fleet-probe");

fn probe(endpoints: &[String], identity: &str, max: u32, ttl: u64, hold: u64) -> Child {
    Command::new(PROBE)
        .args(["--etcd", &endpoints.join(","), "--identity", identity, "--node", identity])
        .args(["--max", &max.to_string(), "--window", "10m", "--ttl", &ttl.to_string(), "--hold", &hold.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting rocemend-fleet-probe")
}

/// The probe's decision line.
fn decision(child: &mut Child) -> serde_json::Value {
    let stdout = child.stdout.take().expect("the probe's stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("reading the probe's decision");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("probe printed {line:?}: {e}"))
}

fn request(decision: &str) -> TokenRequest {
    TokenRequest { decision: decision.into(), kind: "node.cordon".into(), impact: Impact::default(), at: 0 }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_daemons_see_one_spine_fault_and_cordon_exactly_three() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    // Ten daemons as processes of their own, ten in this process.
    let mut children: Vec<Child> = (0..10).map(|i| probe(&endpoints, &format!("p{i:02}"), 3, 10, 30)).collect();
    let mut tasks = Vec::new();
    for i in 0..10 {
        let endpoints = endpoints.clone();
        tasks.push(tokio::spawn(async move {
            let identity = format!("t{i:02}");
            let c = coordinator(settings(&endpoints, &identity, 3, 10)).await;
            let actuator = Arc::new(Counting::default());
            let mut d = dispatcher(actuator.clone(), c.clone());
            let decided = d.dispatch(proposal("node.cordon", &identity)).await;
            (decided, actuator.executed.load(Ordering::SeqCst), c)
        }));
    }
    let mut verdicts: Vec<(String, Option<String>)> = Vec::new();
    let mut keep = Vec::new();
    for t in tasks {
        let (decided, executed, c) = t.await.unwrap();
        assert_eq!(executed, usize::from(matches!(decided.verdict, Verdict::Executed { .. })));
        verdicts.push((decided.verdict.name().into(), decided.verdict.reason().map(str::to_string)));
        keep.push(c);
    }
    for child in &mut children {
        let line = decision(child);
        verdicts.push((line["verdict"].as_str().unwrap().into(), line["reason"].as_str().map(str::to_string)));
    }
    let executed = verdicts.iter().filter(|(v, _)| v == "executed").count();
    let held: Vec<&String> = verdicts.iter().filter(|(v, _)| v == "held").filter_map(|(_, r)| r.as_ref()).collect();
    assert_eq!(executed, 3, "{verdicts:#?}");
    assert_eq!(held.len(), 17, "{verdicts:#?}");
    for reason in &held {
        assert!(reason.starts_with("fleet budget cordon (3 per 10m) exhausted in all: 3 of 3 in use"), "{reason}");
    }
    assert_eq!(cluster.tokens("cordon").await.len(), 3);
    for mut child in children {
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_member_cluster_losing_its_leader_never_exceeds_the_budget() {
    if !etcd_available() {
        return;
    }
    let mut cluster = Cluster::start(3).await;
    let endpoints = cluster.endpoints();
    let mut daemons = Vec::new();
    for i in 0..8 {
        daemons.push(coordinator(settings(&endpoints, &format!("d{i}"), 4, 10)).await);
    }
    let mut granted = 0;
    for (i, d) in daemons.iter().take(2).enumerate() {
        // A loaded machine may make a session miss a keep-alive: that answer
        // is "unavailable" (fail safe), so ask again.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match d.acquire(&request(&format!("before-{i}"))).await {
                Admission::Granted(_) => break,
                Admission::Refused(r) => panic!("refused below the budget: {r}"),
                Admission::Unavailable(why) => assert!(Instant::now() < deadline, "unavailable: {why}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        granted += 1;
    }
    let leader = cluster.leader().await;
    cluster.kill(leader);
    // Every daemon keeps asking while the cluster elects a new leader.
    let started = Instant::now();
    let mut round = 0;
    while started.elapsed() < Duration::from_secs(6) {
        round += 1;
        let asks = daemons.iter().enumerate().map(|(i, d)| {
            let d = d.clone();
            let id = format!("r{round}-{i}");
            tokio::spawn(async move { d.acquire(&request(&id)).await })
        });
        for a in asks.collect::<Vec<_>>() {
            if let Admission::Granted(_) = a.await.unwrap() {
                granted += 1;
            }
        }
        assert!(granted <= 4, "{granted} tokens granted with a budget of 4");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stored = cluster.tokens("cordon").await.len();
    assert!(stored <= 4, "{stored} tokens in etcd with a budget of 4");
    assert!(granted <= stored, "{granted} granted but only {stored} stored");
    assert!(granted > 2, "no token was granted after the leader was killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_daemons_token_returns_after_its_lease_and_not_before() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let mut holder = probe(&endpoints, "holder", 1, 2, 60);
    let line = decision(&mut holder);
    assert_eq!(line["verdict"], "executed", "{line}");
    let other = coordinator(settings(&endpoints, "other", 1, 2)).await;
    assert!(matches!(other.acquire(&request("first")).await, Admission::Refused(_)));
    holder.kill().unwrap();
    holder.wait().unwrap();
    let killed = Instant::now();
    let mut tries = 0;
    let freed = loop {
        tries += 1;
        let live = cluster.tokens("cordon").await;
        assert!(live.len() <= 1, "over budget: {live:?}");
        match other.acquire(&request(&format!("try-{tries}"))).await {
            Admission::Granted(_) => break killed.elapsed(),
            Admission::Refused(reason) => {
                assert!(live.iter().any(|k| k.contains("/token/holder/")), "refused with no holder token: {reason}");
                assert!(reason.contains("held by holder"), "{reason}");
            }
            Admission::Unavailable(why) => panic!("etcd is up, yet: {why}"),
        }
        assert!(killed.elapsed() < Duration::from_secs(8), "the token did not return within 8 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // The 2 s lease was kept alive every ~0.7 s, so it lapses 1.3–2 s after the kill.
    assert!(freed >= Duration::from_millis(1000), "freed after {freed:?}: before the lease could expire");
    let live = cluster.tokens("cordon").await;
    assert_eq!(live.len(), 1, "{live:?}");
    assert!(live[0].contains("/token/other/"), "{live:?}");
    assert!(matches!(other.acquire(&request("after")).await, Admission::Refused(_)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_stopped_holds_fleet_actions_takes_local_ones_and_recovers_without_restart() {
    if !etcd_available() {
        return;
    }
    let mut cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let c = coordinator(settings(&endpoints, "n1", 100, 2)).await;
    let actuator = Arc::new(Counting::default());
    let mut d = dispatcher(actuator.clone(), c.clone());
    let before = d.dispatch(proposal("node.cordon", "a1")).await;
    assert!(matches!(before.verdict, Verdict::Executed { .. }), "{:?}", before.verdict);

    cluster.kill(0);
    let cordon = d.dispatch(proposal("node.cordon", "a2")).await;
    let reason = cordon.verdict.reason().unwrap_or_default().to_string();
    assert!(matches!(cordon.verdict, Verdict::Held { .. }), "{:?}", cordon.verdict);
    assert!(reason.starts_with("coordination unavailable: "), "{reason}");
    let started = Instant::now();
    let link = d.dispatch(proposal("link.isolate", "a3")).await;
    assert!(matches!(link.verdict, Verdict::Executed { .. }), "{:?}", link.verdict);
    assert!(started.elapsed() < Duration::from_millis(200), "a local action waited {:?}", started.elapsed());
    // Once the session knows, fleet actions are held at once, without waiting on etcd.
    let deadline = Instant::now() + Duration::from_secs(6);
    while c.health() == Health::Reachable {
        assert!(Instant::now() < deadline, "the session never noticed etcd was gone");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = Instant::now();
    let held = d.dispatch(proposal("node.cordon", "a4")).await;
    assert!(held.verdict.reason().is_some_and(|r| r.starts_with("coordination unavailable: ")), "{:?}", held.verdict);
    assert!(started.elapsed() < Duration::from_millis(50), "held after {:?}", started.elapsed());

    cluster.restart(0).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut n = 5;
    let recovered = loop {
        let decided = d.dispatch(proposal("node.cordon", &format!("a{n}"))).await;
        n += 1;
        if matches!(decided.verdict, Verdict::Executed { .. }) {
            break decided;
        }
        assert!(Instant::now() < deadline, "not recovered within 15 s: {:?}", decided.verdict);
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(recovered.steps.iter().any(|s| s.what.contains("fleet token taken from cordon (all) by n1")));
    assert_eq!(c.health(), Health::Reachable);
    // The token taken before the outage is back under the new session, with the new one.
    assert_eq!(cluster.tokens("cordon").await.len(), 2);
    assert_eq!(actuator.executed.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_member_is_skipped_not_asked_again() {
    if !etcd_available() {
        return;
    }
    let mut cluster = Cluster::start(3).await;
    let endpoints = cluster.endpoints();
    let mut daemons = Vec::new();
    for i in 0..4 {
        daemons.push(coordinator(settings(&endpoints, &format!("d{i}"), 1000, 10)).await);
    }
    // A follower: the two left keep their leader, so every failure below is
    // a request sent to the dead member.
    let leader = cluster.leader().await;
    cluster.kill((leader + 1) % 3);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut unavailable = Vec::new();
    for round in 0..10 {
        for (i, d) in daemons.iter().enumerate() {
            match d.acquire(&request(&format!("r{round}-{i}"))).await {
                Admission::Granted(_) => {}
                Admission::Refused(r) => panic!("refused below the budget: {r}"),
                Admission::Unavailable(why) => unavailable.push(why),
            }
        }
    }
    assert!(unavailable.is_empty(), "{} of 40 asks unavailable: {unavailable:#?}", unavailable.len());
}
