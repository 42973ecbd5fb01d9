//! A daemon configured as a switch aggregator (`[fleet] aggregator`):
//! while standby its switch changes are held, once it leads they go through.
#![cfg(feature = "etcd")]

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{coordinator, dispatcher, etcd_available, proposal, Cluster, Counting};
use engine::dispatch::Verdict;

const PREFIX: &str = "/rocemend/fleet/";

/// How the aggregators of a group divide their switches.
enum Group<'a> {
    /// `aggregator = …`: one leader changes them all.
    Elects(&'a str),
    /// `shard = …`: each changes the switches it owns.
    Shares(&'a str),
}

/// The `[fleet]` settings of aggregator `identity` of `group`: a lease of
/// 2 s (a dead leader's switches move quickly), etcd calls of at most 1 s,
/// the default budgets.
fn settings(endpoints: &[String], identity: &str, group: Group<'_>) -> fleet::FleetSettings {
    let (aggregator, shard) = match group {
        Group::Elects(name) => (Some(name.to_string()), None),
        Group::Shares(name) => (None, Some(name.to_string())),
    };
    let config = fleet::FleetConfig {
        etcd: endpoints.to_vec(),
        identity: Some(identity.into()),
        lease_ttl: Duration::from_secs(2),
        request_timeout: Duration::from_secs(1),
        prefix: PREFIX.into(),
        fleet_size: None,
        aggregator,
        shard,
        budget: fleet::settings::default_budgets(),
    };
    fleet::FleetSettings::new(&config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aggregator_daemon_holds_switch_changes_while_standby_and_takes_them_once_it_leads() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let aggregator = |identity: &str| settings(&endpoints, identity, Group::Elects("pod-b"));
    let first = coordinator(aggregator("agg-1")).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !first.leads().await {
        assert!(Instant::now() < deadline, "agg-1 never led");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = coordinator(aggregator("agg-2")).await;
    let (a1, a2) = (Arc::new(Counting::default()), Arc::new(Counting::default()));
    let mut d1 = dispatcher(a1.clone(), first.clone());
    let mut d2 = dispatcher(a2.clone(), second.clone());
    let storm = || {
        let mut p = proposal("pfcwd.escalate", "x");
        p.action.target = engine::Labels::from_pairs([("switch", "leaf-1"), ("port", "Ethernet8"), ("queue", "3")]);
        p
    };
    assert!(matches!(d1.dispatch(storm()).await.verdict, Verdict::Executed { .. }));
    let standby = d2.dispatch(storm()).await;
    assert_eq!(
        standby.verdict.reason(),
        Some("standby aggregator of pod-b: agg-1 leads, and only the leader changes switch configuration")
    );
    // A host-side action is not a switch change: the standby takes it.
    assert!(matches!(d2.dispatch(proposal("link.isolate", "h1")).await.verdict, Verdict::Executed { .. }));
    drop(d1);
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(8);
    while !second.leads().await {
        assert!(Instant::now() < deadline, "agg-2 did not take over");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut p = storm();
    p.action.target = engine::Labels::from_pairs([("switch", "leaf-1"), ("port", "Ethernet12"), ("queue", "3")]);
    // Leadership is confirmed with etcd before the change; on a loaded
    // machine the first try may find the session briefly unavailable.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let taken = d2.dispatch(p.clone()).await;
        if matches!(taken.verdict, Verdict::Executed { .. }) {
            break;
        }
        assert!(Instant::now() < deadline, "{:?}", taken.verdict);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        (a1.executed.load(std::sync::atomic::Ordering::SeqCst), a2.executed.load(std::sync::atomic::Ordering::SeqCst)),
        (1, 2)
    );
}

/// Sharded aggregators (`[fleet] shard`): each changes only the switches it
/// owns, whatever the action's scope; a switch it does not own is held with
/// the owner's name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_aggregators_change_only_the_switches_they_own() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let switches = ["leaf-1", "leaf-2", "leaf-3", "leaf-4", "leaf-5", "leaf-6"];
    let mut members = Vec::new();
    for identity in ["agg-1", "agg-2"] {
        let settings = settings(&endpoints, identity, Group::Shares("pod-c"));
        let shard = Arc::new(fleet::shard::Shard::start(&settings, "pod-c", switches).await.unwrap());
        let c = fleet::EtcdCoordinator::start(settings).await.unwrap().with_shard(shard.clone(), identity);
        c.ready(Duration::from_secs(10)).await.unwrap();
        members.push((identity, shard, Arc::new(c)));
    }
    // Both have joined and every switch is claimed by one of them.
    let deadline = Instant::now() + Duration::from_secs(10);
    while members.iter().map(|(_, shard, _)| shard.owned().len()).sum::<usize>() != switches.len()
        || members.iter().any(|(_, shard, _)| shard.members().len() != 2)
    {
        assert!(Instant::now() < deadline, "the switches were not shared out");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let storm = |switch: &str| {
        let mut p = proposal("pfcwd.escalate", "x");
        p.action.target = engine::Labels::from_pairs([("switch", switch), ("port", "Ethernet8"), ("queue", "3")]);
        p
    };
    let mut executed = 0;
    for (identity, shard, coordinator) in &members {
        let counting = Arc::new(Counting::default());
        let mut d = dispatcher(counting.clone(), coordinator.clone());
        for switch in switches {
            let decided = d.dispatch(storm(switch)).await;
            if shard.owns(switch) {
                assert!(matches!(decided.verdict, Verdict::Executed { .. }), "{identity} {switch}: {decided:?}");
                executed += 1;
            } else {
                let other = if *identity == "agg-1" { "agg-2" } else { "agg-1" };
                assert_eq!(
                    decided.verdict.reason(),
                    Some(
                        format!(
                            "switch {switch} is not this aggregator's to change: shard group pod-c gives it to {other}"
                        )
                        .as_str()
                    ),
                    "{identity}"
                );
            }
        }
        // A host-side action names no switch: nothing to own.
        assert!(matches!(d.dispatch(proposal("link.isolate", "h1")).await.verdict, Verdict::Executed { .. }));
        assert_eq!(counting.executed.load(std::sync::atomic::Ordering::SeqCst), shard.owned().len() + 1, "{identity}");
    }
    assert_eq!(executed, switches.len(), "each switch changed once, by its owner");
}
