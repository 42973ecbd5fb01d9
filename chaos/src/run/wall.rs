//! Scenarios on the wall clock, on real Linux links: a veth pair per
//! faulted link (the link and its `peer`) in a private network namespace, the daemon's ordinary
//! run loop (`engine::runtime::run`) with the `netlink_link` sensor and the
//! playbook's real actuators (the `link` actuator takes the veth down), and
//! the faults applied from another thread ([`super::faults`]).
//!
//! Attached to a running daemon ([`Options::daemon`], `--daemon SOCKET`)
//! no daemon is started: the faults are applied to links of the host's own
//! namespace and the decisions are read afterwards from the running
//! daemon (a game day).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::rule::{self, Helpers};
use engine::runtime::{self, ClockMode, Daemon, DaemonEvent, SensorSlot};
use engine::time::wall_clock_now;
use engine::{EngineEvent, Evaluator, HealthBoard, Labels, SeriesTable};
use net::netns::Netns;
use sensors::NetlinkLinkConfig;
use tokio::sync::{mpsc, watch};

use super::faults::{self, LinkNamespace, NODE};
use super::lockstep::decision_record;
use super::{AttachedDaemon, Options, Sources};
use crate::report::{DecisionRecord, RunRecord, TransitionRecord};
use crate::scenario::{check, ScenarioPlan};
use crate::ChaosError;

/// Why wall-clock scenarios cannot run here, if they cannot.
pub fn missing_part() -> Option<String> {
    net::netns::missing_part(&["ip", "tc"])
}

/// The faulted links of `plan`, each with its peer (the load checked that
/// the faults on one link agree on its peer).
fn veth_pairs(plan: &ScenarioPlan) -> BTreeMap<String, String> {
    plan.faults.iter().filter_map(|f| Some((f.link.clone()?, f.peer.clone()?))).collect()
}

/// A namespace `name` with one veth pair per link (the link and its peer),
/// the kernel able to add every qdisc the faults use.
fn namespace(name: &str, plan: &ScenarioPlan, pairs: &BTreeMap<String, String>) -> Result<Netns, ChaosError> {
    let ns = Netns::create(name)?;
    for (link, peer) in pairs {
        ns.add_veth(link, peer)?;
    }
    faults::probe_qdiscs(plan, &LinkNamespace { netns: Some(ns.name.clone()) })?;
    Ok(ns)
}

type Seen = Arc<Mutex<(Vec<TransitionRecord>, Vec<DecisionRecord>)>>;

fn observe(seen: &Seen, event: &DaemonEvent) {
    let mut s = seen.lock().unwrap_or_else(|p| p.into_inner());
    match event {
        DaemonEvent::Engine(EngineEvent::Transition { rule, subject, from, to, at, .. }) => {
            s.0.push(TransitionRecord {
                at: *at,
                rule: rule.clone(),
                subject: subject.0.clone(),
                from: from.as_str().into(),
                to: to.as_str().into(),
            })
        }
        DaemonEvent::Decision(d) => s.1.push(decision_record(wall_clock_now(), d)),
        _ => {}
    }
}

/// The thread of the daemon under test: it may fail to enter the
/// namespace, or the daemon may fail.
type DaemonThread = std::thread::JoinHandle<Result<Result<(), ChaosError>, net::NetError>>;

/// The daemon under test, in the namespace `ns`, until `stop`: the
/// ordinary run loop on its own thread, every socket it opens in `ns`.
fn daemon_in(
    ns: &Netns,
    plan: &ScenarioPlan,
    sources: &Sources,
    options: &Options,
    links: Vec<String>,
    seen: Seen,
    stop: watch::Receiver<bool>,
) -> Result<DaemonThread, ChaosError> {
    let topology = plan.topology.clone();
    let rules_src = sources.rules.clone();
    let playbook = super::with_modes(&sources.playbook, &options.rule_modes)?;
    Ok(ns.spawn_in(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ChaosError::io("starting the daemon's runtime", e))?;
        rt.block_on(async move {
            let series = SeriesTable::new(Some(topology.clone()), Labels::from_pairs([("node", NODE)]));
            let helpers = Helpers::new(Some(series.clone()), Some(topology.clone()));
            let rules = rule::load_sources(&rules_src, helpers)?.without_disabled(&playbook.disabled_rules());
            let evaluator = Evaluator::new(series, rules, None)?;
            let dispatcher = actuators::registry::dispatcher(&playbook, Some(topology), None)?;
            let sensor = NetlinkLinkConfig { include: links, ..NetlinkLinkConfig::default() }
                .build("netlink_link")
                .map_err(|e| ChaosError::Daemon(format!("the netlink_link sensor: {e}")))?;
            let daemon = Daemon {
                evaluator,
                dispatcher,
                sensors: vec![SensorSlot { sensor: Box::new(sensor), max_series: 1_000 }],
                loader: None,
                clock: ClockMode::Wall,
                max_ahead: engine::runtime::DEFAULT_MAX_AHEAD,
                tick: Duration::from_millis(10),
                record: None,
                sink: None,
                stop_when_sensors_end: false,
                shutdown_grace: engine::runtime::DEFAULT_SHUTDOWN_GRACE,
                health: HealthBoard::default(),
            };
            let (_commands_tx, commands) = mpsc::channel(1);
            runtime::run(daemon, stop, commands, move |e| observe(&seen, e))
                .await
                .map_err(|e| ChaosError::Daemon(format!("the run loop: {e}")))?;
            Ok(())
        })
    }))
}

/// Runs `plan` once on the wall clock.
pub async fn run(
    plan: &ScenarioPlan,
    sources: &Sources,
    options: &Options,
    index: u32,
    seed: u64,
) -> Result<RunRecord, ChaosError> {
    if let Some(reason) = missing_part() {
        return Err(ChaosError::CannotRunHere {
            scenario: plan.name.clone(),
            reason: format!("{reason}; wall-clock scenarios need real links"),
        });
    }
    if let Some(daemon) = &options.daemon {
        return attached(plan, daemon.as_ref(), index, seed).await;
    }
    let pairs = veth_pairs(plan);
    let ns = namespace(&format!("rm-chaos-{}-{index}", std::process::id()), plan, &pairs)?;
    let seen: Seen = Arc::default();
    let (stop_tx, stop) = watch::channel(false);
    // The daemon watches every faulted link, not only the first.
    let daemon = daemon_in(&ns, plan, sources, options, pairs.keys().cloned().collect(), seen.clone(), stop)?;
    // Let the sensor subscribe and read every link once before the faults.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start = wall_clock_now();
    let faults = faults::apply(plan, LinkNamespace { netns: Some(ns.name.clone()) }, start, seed).await;
    // The last decisions of a fault at the end of the run.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = stop_tx.send(true);
    let ended = tokio::task::spawn_blocking(move || daemon.join()).await;
    drop(ns);
    match ended {
        Ok(Ok(Ok(Ok(())))) => {}
        Ok(Ok(Ok(Err(e)))) => return Err(e),
        Ok(Ok(Err(e))) => return Err(e.into()),
        _ => return Err(ChaosError::Daemon("the daemon thread panicked".into())),
    }
    let (transitions, decisions) = std::mem::take(&mut *seen.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(record(plan, index, seed, start, faults?, transitions, decisions))
}

/// The record of a run, checked against the plan.
fn record(
    plan: &ScenarioPlan,
    index: u32,
    seed: u64,
    start: engine::Nanos,
    faults: Vec<crate::report::FaultRecord>,
    transitions: Vec<TransitionRecord>,
    decisions: Vec<DecisionRecord>,
) -> RunRecord {
    let mut record = RunRecord {
        run: index,
        seed,
        start,
        end: wall_clock_now(),
        faults,
        transitions,
        decisions,
        probes: Vec::new(),
        outcome: Default::default(),
    };
    record.outcome = check(plan, &record);
    record
}

/// A game day: faults on the host's links, decisions from `daemon`.
async fn attached(
    plan: &ScenarioPlan,
    daemon: &dyn AttachedDaemon,
    index: u32,
    seed: u64,
) -> Result<RunRecord, ChaosError> {
    let start = wall_clock_now();
    let faults = faults::apply(plan, LinkNamespace { netns: None }, start, seed).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let found =
        daemon.decisions_since(start).await.map_err(|source| ChaosError::Attached { at: daemon.address(), source })?;
    let mut decisions = Vec::new();
    let mut transitions = Vec::new();
    for d in found {
        // The ledger keeps when the instance fired: that is the detection.
        transitions.push(TransitionRecord {
            at: d.proposal.active_at,
            rule: d.proposal.rule.clone(),
            subject: d.proposal.subject.0.clone(),
            from: "pending".into(),
            to: "firing".into(),
        });
        decisions.push(decision_record(d.steps.last().map(|s| s.at).unwrap_or(d.proposal.decided_at), &d));
    }
    Ok(record(plan, index, seed, start, faults, transitions, decisions))
}
