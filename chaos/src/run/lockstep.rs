//! One run on the virtual clock, in lockstep: each step advances the
//! fabric by one sensor interval (splitting it at fault boundaries), reads
//! it through the daemon's ordinary readers stamped with the step's time
//! (the leaves once a second, as SONiC refreshes its counters),
//! evaluates, and lets the dispatcher decide (and the actuators act) before
//! the next step. So every decision lands at a deterministic virtual time,
//! and a run of a minute takes milliseconds.
//!
//! This is the daemon's run loop (`engine::runtime`) on the samples' clock
//! with the channel hops taken out: the same evaluator, the same
//! dispatcher with its policy and undo, the same order of calls.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use engine::dispatch::{Decision, Dispatcher, Mode, Verdict};
use engine::ledger::{Ledger, Retention};
use engine::playbook::Playbook;
use engine::rule::{self, Helpers};
use engine::{EngineEvent, Evaluator, Labels, Nanos, SeriesTable, State, Store};
use sim::fabric::{sysfs, Fabric};
use sim::leaves::{speaks_gnmi, LeafServers};

use super::fabric_actuator::{lock, FabricActuator, SharedFabric};
use super::readers::{NodeReader, PromReader, SwitchReader};
use crate::report::{DecisionRecord, FaultRecord, ProbeSeries, RunRecord, TransitionRecord};
use crate::scenario::{check, ScenarioPlan, Scheduled};
use crate::ChaosError;

/// Where virtual time starts: 2026-01-01T00:00:00Z. Fixed, so a seed always
/// gives the same record.
pub const VIRTUAL_EPOCH: Nanos = 1_767_225_600 * engine::SECOND;

/// How often the leaves are read: the gNMI sensor's sample interval over
/// SONiC, which refreshes port counters in COUNTERS_DB once a second (the
/// flex counter's default). The standard switch rules are written for it.
pub const SWITCH_SAMPLE: Nanos = engine::SECOND;

/// How often the jobs' exporter is scraped: a Prometheus scrape interval
/// (the step time it holds is the last finished step's, `sim::fabric::prom`).
pub const JOB_SCRAPE: Nanos = 5 * engine::SECOND;

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
/// ones, finding the leaves' gNMI servers in the inventory
/// ([`LeafServers::inventory`]); host and scheduler actuators
/// are replaced by the fabric's. The undo of an action needs the ledger's
/// record of what it changed, so each run keeps one, in its scratch
/// directory.
fn dispatcher(
    playbook: &Playbook,
    overrides: &[(String, Mode)],
    plan: &ScenarioPlan,
    fabric: &SharedFabric,
    leaves: &LeafServers,
    ledger: Ledger,
) -> Result<Dispatcher, ChaosError> {
    let playbook = super::with_modes(playbook, overrides)?;
    let served = Arc::new(leaves.inventory(&plan.topology));
    let mut build = |entry: &engine::playbook::ActuatorEntry| {
        if speaks_gnmi(entry) {
            actuators::registry::build_entry(entry, Some(&served))
        } else {
            let kinds = actuators::registry::declarations(entry)?;
            Ok(Arc::new(FabricActuator::new(&entry.name, kinds, fabric.clone())) as Arc<dyn engine::Actuator>)
        }
    };
    Ok(actuators::registry::dispatcher_with(&playbook, Some(served.clone()), Some(ledger), &mut build)?)
}

/// What a run's report keeps of a decision, stamped `at`.
pub(crate) fn decision_record(at: Nanos, d: &Decision) -> DecisionRecord {
    DecisionRecord {
        at,
        id: d.id.clone(),
        rule: d.proposal.rule.clone(),
        action: d.proposal.action.kind.clone(),
        target: d.proposal.action.target.0.clone(),
        verdict: d.verdict.name().to_string(),
        reason: d.verdict.reason().map(String::from).or_else(|| d.canary.as_ref().map(|c| c.describe())),
        canary: d.canary.as_ref().map(|c| c.judged.as_ref().map_or("open", |j| j.outcome.name()).to_string()),
        outcome: d.outcome.as_ref().map(|o| o.judged.as_ref().map_or("open", |j| j.result.name()).to_string()),
        judgement: d.outcome.as_ref().filter(|o| !o.is_open()).map(|o| o.describe()),
        undo_of: d.undo_of.clone(),
        requests: match &d.verdict {
            Verdict::Executed { outcome } => outcome.requests.clone(),
            Verdict::DryRun { plan } => plan.requests.clone(),
            _ => Vec::new(),
        },
    }
}

/// One run in progress: the fabric, the daemon's parts reading and acting
/// on it, and what the run's record keeps.
struct Run<'a> {
    plan: &'a ScenarioPlan,
    start: Nanos,
    root: PathBuf,
    schedule: Vec<Scheduled>,
    /// Fault boundaries in time order: (when, start?, which).
    edges: Vec<(Nanos, bool, usize)>,
    next_edge: usize,
    fabric: SharedFabric,
    servers: LeafServers,
    store: Store,
    evaluator: Evaluator,
    dispatcher: Dispatcher,
    node_readers: Vec<NodeReader>,
    switch_readers: Vec<SwitchReader>,
    /// When the leaves were last read.
    switches_read: Option<Nanos>,
    prom: PromReader,
    /// When the jobs' exporter was last scraped.
    jobs_read: Option<Nanos>,
    transitions: Vec<TransitionRecord>,
    decisions: Vec<DecisionRecord>,
    probes: Vec<ProbeSeries>,
    abort_since: Vec<Option<Nanos>>,
    aborted: Option<String>,
}

impl<'a> Run<'a> {
    async fn new(plan: &'a ScenarioPlan, setup: &Setup<'_>, index: u32, seed: u64) -> Result<Run<'a>, ChaosError> {
        let start = VIRTUAL_EPOCH;
        let mut fabric = Fabric::new(plan.topology.clone(), &plan.jobs, seed, start)?;
        let root = setup.scratch.join(format!("run-{index}"));
        if root.exists() {
            std::fs::remove_dir_all(&root).map_err(|e| ChaosError::io(format!("clearing {}", root.display()), e))?;
        }
        fabric.export_sysfs(&root)?;
        let schedule = plan.schedule(&fabric, seed);
        let servers = LeafServers::serve(&fabric).await?;
        let series = SeriesTable::new(Some(plan.topology.clone()), Labels::default());
        let node_readers =
            fabric.nodes.iter().map(|n| NodeReader::new(n, &sysfs::Tree::node_root(&root, n), &series)).collect();
        let switch_readers = fabric.leaves.keys().map(|l| SwitchReader::new(l, &series)).collect::<Result<_, _>>()?;
        let fabric: SharedFabric = Arc::new(Mutex::new(fabric));

        let helpers = Helpers::new(Some(series.clone()), Some(plan.topology.clone()));
        let rules = rule::load_sources(setup.rules, helpers)?.without_disabled(&setup.playbook.disabled_rules());
        let evaluator = Evaluator::new(series.clone(), rules, None)?;
        let store = Store::open(&root.join("state.sled"))?;
        let ledger = Ledger::open(&store, Retention::default())?;
        let dispatcher = dispatcher(setup.playbook, setup.rule_modes, plan, &fabric, &servers, ledger)?;
        let mut probes: Vec<ProbeSeries> =
            plan.probes.iter().map(|b| ProbeSeries { name: b.probe.clone(), points: Vec::new() }).collect();
        for a in &plan.aborts {
            if !probes.iter().any(|p| p.name == a.bound.probe) {
                probes.push(ProbeSeries { name: a.bound.probe.clone(), points: Vec::new() });
            }
        }
        Ok(Run {
            plan,
            start,
            root,
            edges: edges(&schedule, start),
            schedule,
            next_edge: 0,
            fabric,
            servers,
            store,
            evaluator,
            dispatcher,
            node_readers,
            switch_readers,
            switches_read: None,
            jobs_read: None,
            prom: PromReader::new(&series),
            transitions: Vec::new(),
            decisions: Vec::new(),
            probes,
            abort_since: vec![None; plan.aborts.len()],
            aborted: None,
        })
    }

    /// Advances the fabric to `target`, starting and stopping faults at
    /// their boundaries, and reads it as the daemon's sensors would.
    fn advance(&mut self, target: Nanos, samples: &mut Vec<engine::Sample>) -> Result<Nanos, ChaosError> {
        let mut f = lock(&self.fabric);
        while self.next_edge < self.edges.len() && self.edges[self.next_edge].0 <= target {
            let (at, on, i) = self.edges[self.next_edge];
            if at > f.now {
                let dt = at - f.now;
                f.step(dt)?;
            }
            for effect in &self.schedule[i].effects {
                if on {
                    f.start(effect);
                } else {
                    f.stop(effect);
                }
            }
            self.next_edge += 1;
        }
        if target > f.now {
            let dt = target - f.now;
            f.step(dt)?;
        }
        let now = f.now;
        for r in &mut self.node_readers {
            if !f.blind_nodes.contains(&r.node) {
                r.poll(&mut f, now, samples);
            }
        }
        if self.switches_read.is_none_or(|t| now - t >= SWITCH_SAMPLE) {
            self.switches_read = Some(now);
            for r in self.switch_readers.iter_mut().filter(|r| !f.silent_switches.contains(&r.name)) {
                if let Some(leaf) = f.leaf(&r.name) {
                    let model = leaf.model.clone();
                    r.poll(&model, now, samples);
                }
            }
        }
        if self.jobs_read.is_none_or(|t| now - t >= JOB_SCRAPE) {
            self.jobs_read = Some(now);
            self.prom.poll(&f, now, samples);
        }
        Ok(now)
    }

    /// Ingests `samples`, evaluates at `now` and lets the dispatcher decide
    /// on what the rules proposed and resolved.
    async fn decide(&mut self, now: Nanos, samples: &[engine::Sample], events: &mut Vec<EngineEvent>) {
        self.evaluator.ingest(samples);
        self.evaluator.evaluate(now, events);
        for event in std::mem::take(events) {
            match event {
                EngineEvent::Transition { rule, subject, from, to, at, .. } => {
                    self.transitions.push(TransitionRecord {
                        at,
                        rule: rule.clone(),
                        subject: subject.0.clone(),
                        from: from.as_str().to_string(),
                        to: to.as_str().to_string(),
                    });
                    if from == State::Firing {
                        for d in self.dispatcher.instance_resolved(&rule, &subject, at).await {
                            self.decisions.push(decision_record(now, &d));
                        }
                    }
                }
                EngineEvent::Proposal(p) => {
                    let d = self.dispatcher.dispatch(p).await;
                    self.decisions.push(decision_record(now, &d));
                }
                _ => {}
            }
        }
        for d in self.dispatcher.maintain(now) {
            self.decisions.push(decision_record(now, &d));
        }
        self.approve_due(now).await;
        for due in self.dispatcher.canary_board().take_due(now) {
            let reading = self.evaluator.reading(&due.rule, &due.subject, &due.signal, now);
            for d in self.dispatcher.judge_canary(&due.id, reading, now).await {
                self.decisions.push(decision_record(now, &d));
            }
        }
        let evaluator = &mut self.evaluator;
        let judged = self.dispatcher.judge_due(now, |w| evaluator.observe(&w.request(), now)).await;
        for d in judged {
            self.decisions.push(decision_record(now, &d));
        }
    }

    /// The scenario's `[[approve]]`: a human approving each request of a
    /// kind once it waited long enough.
    async fn approve_due(&mut self, now: Nanos) {
        let plan = self.plan;
        let due: Vec<String> = self
            .dispatcher
            .pending()
            .filter(|d| {
                plan.approve.iter().any(|(pattern, after)| {
                    engine::policy::kind_matches(pattern, &d.proposal.action.kind)
                        && d.proposal.decided_at + after <= now
                })
            })
            .map(|d| d.id.clone())
            .collect();
        for id in due {
            match self.dispatcher.approve(&id, "on call (the scenario's [[approve]])", now).await {
                Ok(d) => self.decisions.push(decision_record(now, &d)),
                Err(error) => tracing::warn!(message = "The scenario's approval was refused.", %id, %error),
            }
        }
    }

    /// Samples the probes at `now` and checks the abort conditions.
    fn observe(&mut self, now: Nanos) {
        let f = lock(&self.fabric);
        for p in &mut self.probes {
            if let Some(v) = f.probe(&p.name) {
                p.points.push((now, v));
            }
        }
        for (i, a) in self.plan.aborts.iter().enumerate() {
            let v = f.probe(&a.bound.probe).unwrap_or(0.0);
            if a.bound.holds(v) {
                self.abort_since[i] = None;
                continue;
            }
            let since = *self.abort_since[i].get_or_insert(now);
            if now - since >= a.for_ {
                self.aborted =
                    Some(format!("{} = {v:.3} at +{:.0} ms", a.bound.probe, (now - self.start) as f64 / 1e6));
            }
        }
    }

    /// Stops the run's servers, removes its scratch and checks the record.
    async fn finish(self, index: u32, seed: u64, end: Nanos) -> RunRecord {
        let Run {
            plan,
            start,
            root,
            schedule,
            servers,
            store,
            dispatcher,
            node_readers,
            mut decisions,
            transitions,
            probes,
            aborted,
            ..
        } = self;
        // The readers hold the sysfs tree open and the dispatcher the
        // ledger: closed before the scratch directory goes.
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
        let faults = schedule
            .iter()
            .map(|s| FaultRecord {
                label: s.label.clone(),
                nodes: s.nodes.clone(),
                start: start + s.start,
                end: s.end.map(|e| start + e),
            })
            .collect();
        let mut record = RunRecord {
            run: index,
            seed,
            start,
            end,
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
        record
    }
}

/// The fault boundaries of `schedule` from `start`, in time order (a stop
/// before a start at the same instant): (when, start?, which).
fn edges(schedule: &[Scheduled], start: Nanos) -> Vec<(Nanos, bool, usize)> {
    let mut edges = Vec::new();
    for (i, s) in schedule.iter().enumerate() {
        edges.push((start + s.start, true, i));
        if let Some(e) = s.end {
            edges.push((start + e, false, i));
        }
    }
    edges.sort_by_key(|e| (e.0, e.1));
    edges
}

/// Runs `plan` once with `seed`.
pub async fn run(plan: &ScenarioPlan, setup: &Setup<'_>, index: u32, seed: u64) -> Result<RunRecord, ChaosError> {
    let mut run = Run::new(plan, setup, index, seed).await?;
    let end = run.start + plan.duration;
    let mut now = run.start;
    let mut samples = Vec::new();
    let mut events = Vec::new();
    while now < end && run.aborted.is_none() {
        samples.clear();
        now = run.advance((now + plan.step).min(end), &mut samples)?;
        run.decide(now, &samples, &mut events).await;
        run.observe(now);
    }
    Ok(run.finish(index, seed, now).await)
}
