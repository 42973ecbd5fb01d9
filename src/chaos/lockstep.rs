//! One run on the virtual clock, in lockstep: each step advances the
//! fabric by one sensor interval (splitting it at fault boundaries), reads
//! it through the daemon's ordinary readers stamped with the step's time,
//! evaluates, and lets the dispatcher decide (and the actuators act) before
//! the next step. So every decision lands at a deterministic virtual time,
//! and a run of a minute takes milliseconds.
//!
//! This is the daemon's run loop (`engine::runtime`) on the samples' clock
//! with the channel hops taken out: the same evaluator, the same
//! dispatcher with its policy and undo, the same order of calls.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use chaos::fabric::{sysfs, Fabric};
use chaos::report::{DecisionRecord, FaultRecord, ProbeSeries, RunRecord, TransitionRecord};
use chaos::scenario::{check, Plan};
use engine::dispatch::{ActuatorRoute, Decision, DispatchConfig, Dispatcher, Mode, Verdict};
use engine::ledger::{Ledger, Retention};
use engine::playbook::Playbook;
use engine::rule::{self, Helpers};
use engine::{EngineEvent, Evaluator, Labels, Nanos, SeriesTable, State, Store};

use super::actuator::{lock, FabricActuator, SharedFabric};
use super::readers::{NodeReader, PromReader, SwitchReader};
use super::switches::{point_gnmi, speaks_gnmi, LeafServers};

/// Where virtual time starts: 2026-01-01T00:00:00Z. Fixed, so a seed always
/// gives the same record.
pub const VIRTUAL_EPOCH: Nanos = 1_767_225_600 * engine::SECOND;

/// How a simulated leaf's gNMI address appears in a run's record.
pub const LEAF_ADDRESS: &str = "simulated leaf on loopback";

/// What a run needs besides the plan.
pub struct Setup<'a> {
    /// The rule sources, `(path, text)`.
    pub rules: &'a [(String, String)],
    /// The playbook.
    pub playbook: &'a Playbook,
    /// Per-rule mode overrides (`--rule-mode`).
    pub rule_modes: &'a [(String, Mode)],
    /// A scratch directory for the sysfs trees.
    pub scratch: &'a Path,
}

/// The dispatcher of `playbook` on the simulated fabric: actuators with a
/// `[gnmi]` table (`pfcwd`, `ecn`, the switch side of `rail`) are the real
/// ones, pointed at the leaves' gNMI servers (`leaves`: name → address);
/// host and scheduler actuators are replaced by the fabric's. The undo of
/// an action needs the ledger's record of what it changed, so each run
/// keeps one, in its scratch directory.
fn dispatcher(
    playbook: &Playbook,
    overrides: &[(String, Mode)],
    plan: &Plan,
    fabric: &SharedFabric,
    leaves: &BTreeMap<String, String>,
    ledger: Ledger,
) -> anyhow::Result<Dispatcher> {
    let mut pointed = playbook.clone();
    point_gnmi(&mut pointed, leaves);
    let mut routes = Vec::new();
    for entry in &pointed.actuator {
        let actuator: Arc<dyn engine::Actuator> = if speaks_gnmi(entry) {
            actuators::build(&entry.kind, &entry.name, entry.settings.clone())
                .map_err(|e| anyhow::anyhow!("playbook {:?}: {e}", playbook.name))?
        } else {
            Arc::new(FabricActuator::new(&entry.name, fabric.clone()))
        };
        for pattern in &entry.handles {
            routes.push(ActuatorRoute {
                pattern: pattern.clone(),
                actuator: actuator.clone(),
                destructive: entry.destructive,
            });
        }
    }
    let mut rule_modes = playbook.rule_modes();
    for (rule, mode) in overrides {
        rule_modes.insert(rule.clone(), *mode);
    }
    let policy = playbook.policy().map_err(|e| anyhow::anyhow!("playbook {:?}: {e}", playbook.name))?;
    Ok(Dispatcher::new(
        DispatchConfig {
            mode: playbook.mode,
            rule_modes,
            routes,
            timeout: playbook.timeout(),
            policy,
            topology: Some(plan.topology.clone()),
        },
        Some(ledger),
    ))
}

fn record(at: Nanos, d: &Decision, out: &mut Vec<DecisionRecord>) {
    out.push(decision_record(at, d));
}

/// What a run's report keeps of a decision, stamped `at`.
pub(super) fn decision_record(at: Nanos, d: &Decision) -> DecisionRecord {
    DecisionRecord {
        at,
        id: d.id.clone(),
        rule: d.proposal.rule.clone(),
        action: d.proposal.action.kind.clone(),
        target: d.proposal.action.target.0.clone(),
        verdict: d.verdict.name().to_string(),
        reason: d.verdict.reason().map(String::from),
        undo_of: d.undo_of.clone(),
        requests: match &d.verdict {
            Verdict::Executed { outcome } => outcome.requests.clone(),
            Verdict::DryRun { plan } => plan.requests.clone(),
            _ => Vec::new(),
        },
    }
}

/// Runs `plan` once with `seed`.
pub async fn run(plan: &Plan, setup: &Setup<'_>, index: u32, seed: u64) -> anyhow::Result<RunRecord> {
    let start = VIRTUAL_EPOCH;
    let end = start + plan.duration;
    let mut fabric = Fabric::new(plan.topology.clone(), &plan.jobs, seed, start)?;
    let root = setup.scratch.join(format!("run-{index}"));
    if root.exists() {
        std::fs::remove_dir_all(&root)?;
    }
    fabric.export_sysfs(&root)?;
    let schedule = plan.schedule(&fabric, seed);
    let nodes = fabric.nodes.clone();
    let leaves: Vec<String> = fabric.leaves.keys().cloned().collect();
    let servers = LeafServers::start(&fabric).await?;
    let shared: SharedFabric = Arc::new(Mutex::new(fabric));

    let series = SeriesTable::new(Some(plan.topology.clone()), Labels::default());
    let helpers = Helpers::new(Some(series.clone()), Some(plan.topology.clone()));
    let rules = rule::load_sources(setup.rules, helpers)
        .map_err(|errors| anyhow::anyhow!(errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")))?;
    let rules = crate::wiring::without_disabled(rules, setup.playbook);
    let mut evaluator = Evaluator::new(series.clone(), rules, None)?;
    let store = Store::open(&root.join("state.sled"))?;
    let ledger = Ledger::open(&store, Retention::default())?;
    let mut dispatcher = dispatcher(setup.playbook, setup.rule_modes, plan, &shared, &servers.addresses, ledger)?;

    let mut node_readers: Vec<NodeReader> =
        nodes.iter().map(|n| NodeReader::new(n, &sysfs::Tree::node_root(&root, n), &series)).collect();
    let mut switch_readers: Vec<SwitchReader> =
        leaves.iter().map(|l| SwitchReader::new(l, &series)).collect::<anyhow::Result<_>>()?;
    let mut prom = PromReader::new(&series);

    // Fault boundaries in time order: (when, start?, which).
    let mut edges: Vec<(Nanos, bool, usize)> = Vec::new();
    for (i, s) in schedule.iter().enumerate() {
        edges.push((start + s.start, true, i));
        if let Some(e) = s.end {
            edges.push((start + e, false, i));
        }
    }
    edges.sort_by_key(|e| (e.0, e.1));
    let mut next_edge = 0;
    let faults: Vec<FaultRecord> = schedule
        .iter()
        .map(|s| FaultRecord {
            label: s.label.clone(),
            nodes: s.nodes.clone(),
            start: start + s.start,
            end: s.end.map(|e| start + e),
        })
        .collect();

    let mut probes: Vec<ProbeSeries> =
        plan.probes.iter().map(|b| ProbeSeries { name: b.probe.clone(), points: Vec::new() }).collect();
    for a in &plan.aborts {
        if !probes.iter().any(|p| p.name == a.bound.probe) {
            probes.push(ProbeSeries { name: a.bound.probe.clone(), points: Vec::new() });
        }
    }
    let mut transitions = Vec::new();
    let mut decisions = Vec::new();
    let mut events = Vec::new();
    let mut samples = Vec::new();
    let mut abort_since: Vec<Option<Nanos>> = vec![None; plan.aborts.len()];
    let mut aborted = None;
    let mut now = start;
    while now < end && aborted.is_none() {
        let target = (now + plan.step).min(end);
        samples.clear();
        {
            let mut f = lock(&shared);
            while next_edge < edges.len() && edges[next_edge].0 <= target {
                let (at, on, i) = edges[next_edge];
                if at > f.now {
                    let dt = at - f.now;
                    f.step(dt)?;
                }
                for effect in &schedule[i].effects {
                    if on {
                        f.start(effect);
                    } else {
                        f.stop(effect);
                    }
                }
                next_edge += 1;
            }
            if target > f.now {
                let dt = target - f.now;
                f.step(dt)?;
            }
            now = f.now;
            for r in node_readers.iter_mut().filter(|r| !f.blind_nodes.contains(&r.node)) {
                r.poll(now, &mut samples);
            }
            for r in switch_readers.iter_mut().filter(|r| !f.silent_switches.contains(&r.name)) {
                if let Some(leaf) = f.leaf(&r.name) {
                    let model = leaf.model.clone();
                    r.poll(&model, now, &mut samples);
                }
            }
            prom.poll(&f, now, &mut samples);
        }
        evaluator.ingest(&samples);
        evaluator.evaluate(now, &mut events);
        for event in std::mem::take(&mut events) {
            match event {
                EngineEvent::Transition { rule, subject, from, to, at, .. } => {
                    transitions.push(TransitionRecord {
                        at,
                        rule: rule.clone(),
                        subject: subject.0.clone(),
                        from: from.as_str().to_string(),
                        to: to.as_str().to_string(),
                    });
                    if from == State::Firing {
                        for d in dispatcher.instance_resolved(&rule, &subject, at).await {
                            record(now, &d, &mut decisions);
                        }
                    }
                }
                EngineEvent::Proposal(p) => {
                    let d = dispatcher.dispatch(p).await;
                    record(now, &d, &mut decisions);
                }
                _ => {}
            }
        }
        for d in dispatcher.expire(now) {
            record(now, &d, &mut decisions);
        }
        let f = lock(&shared);
        for p in &mut probes {
            if let Some(v) = f.probe(&p.name) {
                p.points.push((now, v));
            }
        }
        for (i, a) in plan.aborts.iter().enumerate() {
            let v = f.probe(&a.bound.probe).unwrap_or(0.0);
            if a.bound.holds(v) {
                abort_since[i] = None;
                continue;
            }
            let since = *abort_since[i].get_or_insert(now);
            if now - since >= a.for_ {
                aborted = Some(format!("{} = {v:.3} at +{:.0} ms", a.bound.probe, (now - start) as f64 / 1e6));
            }
        }
    }
    drop(node_readers);
    drop(dispatcher);
    // The leaves listen on ports the OS picked: named instead, so a seed
    // gives the same record byte for byte.
    for d in &mut decisions {
        for r in &mut d.requests {
            for address in servers.addresses.values() {
                *r = r.replace(address.as_str(), LEAF_ADDRESS);
            }
        }
    }
    servers.stop().await;
    drop(store);
    let _ = std::fs::remove_dir_all(&root);
    let mut record = RunRecord {
        run: index,
        seed,
        start,
        end: now,
        faults,
        transitions,
        decisions,
        probes,
        outcome: Default::default(),
    };
    let mut outcome = check(plan, &record);
    if let Some(why) = aborted {
        outcome.passed = false;
        outcome.failures.insert(0, format!("aborted: {why}"));
        outcome.aborted = Some(why);
    }
    record.outcome = outcome;
    Ok(record)
}
