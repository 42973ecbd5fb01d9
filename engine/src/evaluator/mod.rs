//! The evaluator: samples in, window state updated, rules evaluated,
//! instance transitions and action proposals out.
//!
//! The hot path ([`Evaluator::ingest`]) is native and allocation-free for
//! known series: a sample is an index into a `Vec` of series state, a
//! counter decode, and a handful of fixed-size window updates along routes
//! computed when the series was first seen. Scripts run only in
//! [`Evaluator::evaluate`], only for subjects whose window values changed
//! (or whose state is time-driven), so a quiet fabric costs almost nothing.
//!
//! Samples in, from routing a new series to marking its subjects dirty, are
//! in `intake`; a rule's state in `rule_state`, a subject's in `subject`.

use std::collections::HashMap;
use std::sync::Arc;

use crate::contracts::{Proposal, Severity};
use crate::instance::{self, Instance, State};
use crate::labels::{Labels, Sym};
use crate::mode::Mode;
use crate::rule::{self, Condition, Helpers, Rule, RuleScripts, RuleSet, ScriptError};
use crate::series::SeriesTable;
use crate::store::{Store, StoreError};
use crate::time::{Nanos, MS};
use crate::window::Column;

/// How often subjects that receive no samples are checked for staleness.
/// Staleness is measured in seconds; a quarter second is precise enough and
/// keeps the scan (one comparison per subject) off every evaluation.
pub const STALE_SCAN_INTERVAL: Nanos = 250 * MS;

/// How long after the last new series the evaluator trims the slack from
/// its per-series and per-subject vectors. New series come in bursts (a
/// sensor's first poll, a node joining); trimming once the burst is over
/// keeps memory at what the series need without copying on every arrival.
pub const ROUTING_SETTLES_AFTER: Nanos = 1_000 * MS;

pub mod cost;
mod events;
mod intake;
mod job_signals;
mod predicate;
mod reading;
mod refusal;
mod rule_state;
mod subject;

pub use events::{EngineEvent, EngineStats, InstanceView, RefusedCounts, ReloadReport, RuleHealth, StateBytes};
/// How much older than its series' last sample a sample may be and still
/// be taken for one reordered on the way (dropped, counted as out of
/// order); an older one means the series' clock stepped back, as far as a
/// sample may be ahead of the clock ([`crate::runtime::DEFAULT_MAX_AHEAD`]).
pub const STEP_BACK_AFTER: Nanos = 5 * crate::time::SECOND;

pub use job_signals::{is_job_signal, JOB_SIGNALS, STEP_TIME};
pub use reading::{Observation, ObserveRequest, Reading};
pub use refusal::{Refusal, Refusals, Refused, SteppedBack};
use rule_state::{Route, RuleRuntime, SeriesState};
use subject::{Epoch, Subject, NEVER};

/// The instances firing at one moment, by rule (see
/// [`Evaluator::firing_snapshot`]).
#[derive(Debug, Clone, Default)]
pub struct FiringSnapshot {
    /// Rule → its `group_by` and the subject keys firing.
    rules: HashMap<String, (Vec<String>, std::collections::HashSet<String>)>,
}

impl FiringSnapshot {
    /// Whether `rule` fires for `subject` (a rule no longer loaded does not).
    pub fn is_firing(&self, rule: &str, subject: &Labels) -> bool {
        let Some((group_by, keys)) = self.rules.get(rule) else { return false };
        keys.contains(&rule_state::subject_key(group_by, subject))
    }
}

/// The evaluator. One per daemon; not shared between threads.
pub struct Evaluator {
    series: SeriesTable,
    scripts: RuleScripts,
    rules: Vec<RuleRuntime>,
    /// Metric → (rule index, selector indices with that metric).
    by_metric: HashMap<Sym, Vec<(u16, Vec<u16>)>>,
    states: Vec<SeriesState>,
    routes: Vec<Route>,
    store: Option<Store>,
    last_stale_scan: Nanos,
    proposal_seq: u64,
    newest_sample: Nanos,
    /// The jobs' placement and step-time series.
    job_series: job_signals::JobSeries,
    /// Origin of subject times: the first sample's time.
    epoch: Option<Epoch>,
    /// Rules with dirty subjects since the last `evaluate` (each once).
    pending_rules: Vec<u16>,
    /// Rules that had instances after the last `evaluate`: their state is
    /// time-driven, so they are evaluated even without new samples.
    live_rules: Vec<u16>,
    /// Time of the newest sample that routed a new series since the
    /// vectors were last trimmed.
    routed_at: Option<Nanos>,
    stats: EngineStats,
    /// Samples refused since the caller last took them (bounded).
    refusals: Refusals,
    /// Series whose clock stepped back since the caller last took them
    /// (the first [`Refusals::KEPT`]; [`EngineStats::steps_back`] counts all).
    steps_back: Vec<SteppedBack>,
    /// The share of a core one rule may spend (see [`Evaluator::set_cost_budget`]).
    cost_budget: f64,
    /// Whether conditions with a native predicate use it (see
    /// [`Evaluator::set_native_predicates`]).
    native_predicates: bool,
    /// The window values of the subject being evaluated (kept for its
    /// capacity: one allocation per evaluator, not per evaluation).
    values: Vec<f64>,
}

impl Evaluator {
    /// An evaluator for `rules` over the series of `series`, restoring
    /// instance state from `store` if given.
    pub fn new(series: SeriesTable, rules: RuleSet, store: Option<Store>) -> Result<Evaluator, StoreError> {
        rules.scripts.helpers().set_series(series.clone());
        let job_series = job_signals::JobSeries::new(&series);
        let mut ev = Evaluator {
            series,
            scripts: rules.scripts.clone(),
            rules: Vec::new(),
            by_metric: HashMap::new(),
            states: Vec::new(),
            routes: Vec::new(),
            store,
            last_stale_scan: Nanos::MIN,
            proposal_seq: 0,
            newest_sample: 0,
            job_series,
            epoch: None,
            pending_rules: Vec::new(),
            live_rules: Vec::new(),
            routed_at: None,
            stats: EngineStats::default(),
            refusals: Refusals::default(),
            steps_back: Vec::new(),
            cost_budget: cost::DEFAULT_COST_BUDGET,
            native_predicates: true,
            values: Vec::new(),
        };
        for rule in &rules.rules {
            let mut rt = RuleRuntime::new(rule.clone(), &ev.series);
            if let Some(store) = &ev.store {
                rt.restored = store.instances_of(&rule.name)?;
                rt.from_store =
                    rt.restored.iter().filter(|(_, i)| i.state == State::Firing).map(|(k, _)| k.clone()).collect();
            }
            ev.rules.push(rt);
        }
        ev.rebuild_index();
        Ok(ev)
    }

    /// The series table.
    pub fn series(&self) -> &SeriesTable {
        &self.series
    }

    /// The helper state shared with the scripts (and with reloaded rule sets:
    /// load new rules with these helpers so the firing index carries over).
    pub fn helpers(&self) -> &Helpers {
        self.scripts.helpers()
    }

    /// Counters about the evaluator's work.
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// The samples refused since the last call (the first few of each
    /// ingest; [`EngineStats::refused`] counts them all), for the sensors'
    /// health and the log.
    pub fn take_refusals(&mut self) -> Vec<Refused> {
        self.refusals.take()
    }

    /// The series whose clock stepped back since the last call (the first
    /// few; [`EngineStats::steps_back`] counts them all), for the log and
    /// the sensors' health.
    pub fn take_steps_back(&mut self) -> Vec<SteppedBack> {
        std::mem::take(&mut self.steps_back)
    }

    /// The rules loaded, with their health.
    pub fn rules(&self) -> impl Iterator<Item = (&Arc<Rule>, &RuleHealth)> {
        self.rules.iter().map(|r| (&r.rule, &r.health))
    }

    /// Time of the newest sample ingested.
    pub fn newest_sample(&self) -> Nanos {
        self.newest_sample
    }

    /// Every instance that is not idle.
    pub fn instances(&self) -> Vec<InstanceView> {
        let reg = self.series.read();
        let mut out = Vec::new();
        for rt in &self.rules {
            for (s, inst) in &rt.instances {
                out.push(InstanceView {
                    rule: rt.rule.name.clone(),
                    subject: rt.labels_of(*s, &reg).to_labels(reg.interner()),
                    instance: *inst,
                });
            }
        }
        out.sort_by(|a, b| (&a.rule, &a.subject).cmp(&(&b.rule, &b.subject)));
        out
    }

    /// Which instances are firing now, those restored from the store and not
    /// yet seen again included: what the dispatcher needs at start to tell
    /// an action still wanted from one that outlived its incident.
    pub fn firing_snapshot(&self) -> FiringSnapshot {
        let reg = self.series.read();
        let mut rules = HashMap::new();
        for rt in &self.rules {
            let mut keys: std::collections::HashSet<String> =
                rt.restored.iter().filter(|(_, i)| i.state == State::Firing).map(|(k, _)| k.clone()).collect();
            for (s, inst) in &rt.instances {
                if inst.state == State::Firing {
                    keys.insert(rt.subject_key(&rt.labels_of(*s, &reg).to_labels(reg.interner())));
                }
            }
            rules.insert(rt.rule.name.clone(), (rt.rule.group_by.clone(), keys));
        }
        FiringSnapshot { rules }
    }

    /// The instances firing now whose subject has `label = value`, restored
    /// ones not yet seen again included, as (rule, its severity, subject
    /// key `name=value,…`): what a consumer of transitions starts from, since
    /// an instance restored firing emits no transition until it ends. A
    /// subject whose rule does not group by `label` is none of them.
    pub fn firing_where(&self, label: &str, value: &str) -> Vec<(String, Severity, String)> {
        let wanted = format!("{label}={value}");
        let snapshot = self.firing_snapshot();
        let mut out: Vec<(String, Severity, String)> = self
            .rules
            .iter()
            .filter_map(|rt| Some((rt, snapshot.rules.get(&rt.rule.name)?)))
            .flat_map(|(rt, (_, keys))| {
                // Label values are names (nodes, netdevs, ports): none holds
                // the `,` that separates a key's pairs.
                keys.iter()
                    .filter(|key| key.split(',').any(|pair| pair == wanted))
                    .map(|key| (rt.rule.name.clone(), rt.rule.severity, key.clone()))
            })
            .collect();
        out.sort();
        out
    }

    /// The state of `rule` for the subject whose labels include `subject`.
    pub fn state_of(&self, rule: &str, subject: &Labels) -> Option<State> {
        let rt = self.rules.iter().find(|r| r.rule.name == rule)?;
        let reg = self.series.read();
        (0..rt.subjects.len() as u32).find_map(|i| {
            let labels = rt.labels_of(i, &reg).to_labels(reg.interner());
            labels.contains_all(subject).then(|| rt.instances.get(&i).map(|x| x.state).unwrap_or(State::Inactive))
        })
    }

    /// Bytes of evaluator state (series state, routes, subjects, windows,
    /// subject index, instances), for the per-series memory budget.
    pub fn state_bytes(&self) -> usize {
        self.state_breakdown().total()
    }

    /// [`Evaluator::state_bytes`] by part, counted at capacity.
    pub fn state_breakdown(&self) -> StateBytes {
        let mut bytes = StateBytes {
            series: self.states.capacity() * std::mem::size_of::<SeriesState>(),
            routes: self.routes.capacity() * std::mem::size_of::<Route>(),
            ..StateBytes::default()
        };
        for rt in &self.rules {
            bytes.subjects += rt.subjects.capacity() * std::mem::size_of::<Subject>()
                + rt.narrowed.iter().map(|l| 16 + l.pairs().len() * 8).sum::<usize>();
            bytes.windows += rt.columns.iter().map(|c| c.capacity() * c.bytes_per_subject()).sum::<usize>();
            bytes.subject_index += rt.subject_index.bytes();
            bytes.instances += rt.instances.capacity() * (std::mem::size_of::<(u32, Instance)>() + 1);
            bytes.dirty += rt.dirty.capacity() * 4;
        }
        bytes
    }

    /// Until when `evaluate` has nothing to do that time alone brings, for a
    /// caller evaluating on a wall clock that would rather not wake for
    /// nothing: `None` while there is work on every tick (samples not yet
    /// evaluated, or instances, whose `for`, clearing and windows move with
    /// time); otherwise the next stale scan, or the trim after new series
    /// if that comes first. Samples arriving end the idleness: ask again
    /// after each ingest.
    pub fn idle_until(&self) -> Option<Nanos> {
        if !self.pending_rules.is_empty() || !self.live_rules.is_empty() {
            return None;
        }
        let scan = self.last_stale_scan.saturating_add(STALE_SCAN_INTERVAL);
        let trim = self.routed_at.map_or(Nanos::MAX, |t| t.saturating_add(ROUTING_SETTLES_AFTER));
        Some(scan.min(trim))
    }

    /// Evaluates every rule at `now`: subjects whose windows changed, and
    /// instances whose state is time-driven (pending, firing, cooldown).
    /// Events are appended to `out`.
    pub fn evaluate(&mut self, now: Nanos, out: &mut Vec<EngineEvent>) {
        if now < self.last_stale_scan {
            // The clock stepped back: scans are due from the new time, not
            // once it is back where it was.
            self.last_stale_scan = Nanos::MIN;
            self.rules.iter_mut().for_each(|rt| rt.last_stale_scan = Nanos::MIN);
        }
        let scan_stale = now.saturating_sub(self.last_stale_scan) >= STALE_SCAN_INTERVAL;
        // Only rules with work: new samples or time-driven instances, so an
        // evaluation costs what changed, not the size of the rule set. The
        // stale scan, a few times a second, visits every rule.
        let mut todo = std::mem::take(&mut self.pending_rules);
        if scan_stale {
            self.last_stale_scan = now;
            todo.clear();
            todo.extend(0..self.rules.len() as u16);
            self.live_rules.clear();
        } else {
            todo.append(&mut self.live_rules);
            todo.sort_unstable();
            todo.dedup();
        }
        for &ri in &todo {
            self.evaluate_rule(ri as usize, now, scan_stale, out);
            if !self.rules[ri as usize].instances.is_empty() {
                self.live_rules.push(ri);
            }
        }
        todo.clear();
        self.pending_rules = todo;
        if self.routed_at.is_some_and(|t| now.saturating_sub(t) >= ROUTING_SETTLES_AFTER) {
            self.routed_at = None;
            self.trim();
        }
    }

    /// Gives back the vectors' spare capacity.
    #[cold]
    fn trim(&mut self) {
        self.states.shrink_to_fit();
        self.routes.shrink_to_fit();
        for rt in &mut self.rules {
            rt.subjects.shrink_to_fit();
            rt.narrowed.shrink_to_fit();
            rt.columns.iter_mut().for_each(Column::shrink_to_fit);
        }
    }

    fn evaluate_rule(&mut self, ri: usize, now: Nanos, scan_due: bool, out: &mut Vec<EngineEvent>) {
        let rt = &mut self.rules[ri];
        if rt.health != RuleHealth::Ok || rt.rule.mode == Mode::Off {
            rt.dirty.clear();
            return;
        }
        // Staleness is measured in seconds: scanning every subject four times
        // per `stale_after` is precise enough and keeps the scan off most calls.
        let scan_stale = scan_due && now.saturating_sub(rt.last_stale_scan) >= rt.rule.stale_after / 4;
        if scan_stale {
            rt.last_stale_scan = now;
        }
        // Instances found firing in the store at start propose again once:
        // a crash may have lost their proposals between the instance being
        // written and the decision (the dispatcher drops what it had decided).
        for s in std::mem::take(&mut rt.repropose) {
            let Some(inst) = self.rules[ri].instances.get(&s).copied() else { continue };
            if inst.state != State::Firing {
                continue;
            }
            let labels = self.labels_of(ri, s);
            let values = self.rules[ri].values(s, now);
            let named = self.rules[ri].named_values(&values);
            self.propose(ri, &labels, &named, inst.active_at, now, true, out);
        }
        let rt = &mut self.rules[ri];
        if rt.dirty.is_empty() && rt.instances.is_empty() && !scan_stale {
            return;
        }
        let mut candidates = std::mem::take(&mut rt.dirty);
        candidates.extend(rt.instances.keys().copied().filter(|s| !rt.subjects[*s as usize].dirty()));
        if scan_stale {
            // Stale: the newest sample is older than `stale_after`, i.e. its
            // tick is below the newest tick that is still stale.
            let stale_below = self.epoch.map_or(NEVER, |e| e.tick(now.saturating_sub(rt.rule.stale_after)));
            for (i, s) in rt.subjects.iter().enumerate() {
                // Stale means seen, then quiet: a subject never fed (its
                // first sample refused, say) has nothing to go stale.
                let is_stale = s.polled() && s.first_seen != NEVER && s.last_seen < stale_below;
                if is_stale && !s.dirty() && !rt.instances.get(&(i as u32)).is_some_and(|x| x.stale) {
                    candidates.push(i as u32);
                }
            }
        }
        for &s in &candidates {
            self.rules[ri].subjects[s as usize].set_dirty(false);
        }
        candidates.sort_unstable();
        candidates.dedup();
        for s in candidates {
            if let Err(error) = self.evaluate_subject(ri, s, now, out) {
                self.quarantine(ri, error, now, out);
                return;
            }
        }
        if let Some(error) = self.rules[ri].cost.over_budget(now, self.cost_budget) {
            self.quarantine(ri, error, now, out);
        }
    }

    /// Stops evaluating rule `ri` until a reload brings a new version.
    #[cold]
    fn quarantine(&mut self, ri: usize, error: ScriptError, now: Nanos, out: &mut Vec<EngineEvent>) {
        let rt = &mut self.rules[ri];
        tracing::error!(message = "Rule quarantined.", rule = %rt.rule.name, %error);
        out.push(EngineEvent::Quarantined { rule: rt.rule.name.clone(), error: error.clone(), at: now });
        rt.health = RuleHealth::Quarantined { error, at: now };
        rt.dirty.clear();
    }

    /// Sets the share of a core one rule's scripts may spend, measured over
    /// [`cost::COST_WINDOW`] of the evaluation clock, before it is
    /// quarantined ([`cost::DEFAULT_COST_BUDGET`] unless set).
    pub fn set_cost_budget(&mut self, share_of_a_core: f64) {
        self.cost_budget = share_of_a_core;
    }

    fn evaluate_subject(
        &mut self,
        ri: usize,
        s: u32,
        now: Nanos,
        out: &mut Vec<EngineEvent>,
    ) -> Result<(), ScriptError> {
        let epoch = self.epoch.unwrap_or(Epoch(now));
        let rt = &mut self.rules[ri];
        let subj = rt.subjects[s as usize];
        // One lookup: most subjects have no instance (inactive and fresh).
        let existing = rt.instances.get(&s).copied();
        let mut inst = existing.unwrap_or_else(|| Instance::new(now));
        let mut transitions = Vec::new();
        // The window values, in a buffer reused from subject to subject.
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        let quiet = subj.last_seen < epoch.tick(now.saturating_sub(rt.rule.stale_after));
        if subj.polled() && subj.first_seen != NEVER && quiet {
            rt.values_into(s, now, &mut values);
            let (newly, t) = instance::mark_stale(&mut inst, now);
            if newly {
                out.push(EngineEvent::SensorStale {
                    rule: rt.rule.name.clone(),
                    subject: self.labels_of(ri, s),
                    last_seen: epoch.time(subj.last_seen),
                    at: now,
                });
            }
            transitions.extend(t);
        } else {
            if inst.stale {
                inst.stale = false;
                inst.stale_since = None;
                out.push(EngineEvent::SensorFresh {
                    rule: rt.rule.name.clone(),
                    subject: self.labels_of(ri, s),
                    at: now,
                });
            }
            let rt = &mut self.rules[ri];
            rt.values_into(s, now, &mut values);
            // `first_seen` is rounded up to a tick: a rule without ranged
            // windows has nothing to warm up and must not wait for the tick.
            let warming = rt.warm_up > 0 && now.saturating_sub(epoch.time(subj.first_seen)) < rt.warm_up;
            let cond = match inst.needs(now) {
                Some(Condition::Clear) if warming => None,
                other => other,
            };
            let result = match cond.map(|cond| self.condition(ri, s, cond, &values)).transpose() {
                Ok(result) => result,
                Err(error) => {
                    self.values = values;
                    return Err(error);
                }
            };
            let timing = self.rules[ri].timing;
            transitions.extend(instance::step(&mut inst, &timing, now, result));
        }
        let rt = &mut self.rules[ri];
        let was_stale = existing.is_some_and(|x| x.stale);
        let changed = !transitions.is_empty() || was_stale != inst.stale;
        if inst.is_idle() {
            if existing.is_some() {
                rt.instances.remove(&s);
            }
        } else if existing != Some(inst) {
            rt.instances.insert(s, inst);
        }
        if changed {
            self.record_transitions(ri, s, &inst, &transitions, &values, now, out);
        }
        self.values = values;
        Ok(())
    }

    fn labels_of(&self, ri: usize, s: u32) -> Labels {
        let reg = self.series.read();
        self.rules[ri].labels_of(s, &reg).to_labels(reg.interner())
    }

    #[allow(clippy::too_many_arguments)]
    fn record_transitions(
        &mut self,
        ri: usize,
        s: u32,
        inst: &Instance,
        transitions: &[instance::Transition],
        values: &[f64],
        now: Nanos,
        out: &mut Vec<EngineEvent>,
    ) {
        let labels = self.labels_of(ri, s);
        let rule = self.rules[ri].rule.clone();
        let named = self.rules[ri].named_values(values);
        if let Some(store) = &self.store {
            let key = self.rules[ri].subject_key(&labels);
            match store.put_instance(&rule.name, &key, inst) {
                // An unwritable store says so itself, once, then sums up
                // the writes it refused: not once per instance per sample.
                Ok(()) | Err(crate::store::StoreError::Unwritable { .. } | crate::store::StoreError::Reopening) => {}
                Err(error) => tracing::error!(message = "Could not persist instance state.", rule = %rule.name, %error),
            }
        }
        for t in transitions {
            out.push(EngineEvent::Transition {
                rule: rule.name.clone(),
                subject: labels.clone(),
                from: t.from,
                to: t.to,
                at: t.at,
                values: named.clone(),
                severity: rule.severity,
            });
            if t.from == State::Firing {
                self.scripts.helpers().firing_stopped(&rule.name, &labels);
            }
            if t.to == State::Firing {
                self.scripts.helpers().firing_started(&rule.name, labels.clone());
                self.propose(ri, &labels, &named, inst.active_at, now, false, out);
            }
        }
    }

    /// Emits the proposals of rule `ri` for `labels`. `restored`: the
    /// instance was found firing in the store at start, so these may already
    /// have been decided before a crash; the dispatcher looks in the ledger.
    #[allow(clippy::too_many_arguments)]
    fn propose(
        &mut self,
        ri: usize,
        labels: &Labels,
        named: &[(String, f64)],
        active_at: Nanos,
        now: Nanos,
        restored: bool,
        out: &mut Vec<EngineEvent>,
    ) {
        let rt = &self.rules[ri];
        let helpers = self.scripts.helpers();
        let resolved = rt.rule.actions.iter().flat_map(|template| match template.each {
            None => vec![rule::template::resolve(template, labels)],
            Some(rule::Each::Job) => helpers
                .jobs_behind(labels)
                .into_iter()
                .map(|job| {
                    let mut with_job = labels.clone();
                    with_job.0.insert("job".into(), job);
                    rule::template::resolve(template, &with_job)
                })
                .collect(),
        });
        for resolved in resolved {
            match resolved {
                Ok(action) => {
                    self.proposal_seq += 1;
                    let jobs = helpers.jobs_touched(&action.target);
                    let mut values = named.to_vec();
                    values.extend(self.job_values(&jobs));
                    out.push(EngineEvent::Proposal(Proposal {
                        id: format!("{:012x}-{:06x}", now / MS, self.proposal_seq & 0xff_ffff),
                        rule: rt.rule.name.clone(),
                        rule_hash: rt.rule.hash.clone(),
                        rule_mode: rt.rule.mode,
                        severity: rt.rule.severity,
                        subject: labels.clone(),
                        action,
                        jobs,
                        values,
                        active_at,
                        sample_at: self.newest_sample,
                        decided_at: now,
                        restored,
                    }));
                }
                Err(message) => out.push(EngineEvent::ActionError {
                    rule: rt.rule.name.clone(),
                    subject: labels.clone(),
                    message: message.to_string(),
                }),
            }
        }
    }

    /// Swaps in a new rule set. Rules whose content is unchanged keep their
    /// windows and instances; changed rules keep instance state by subject
    /// and restart their windows; removed rules are dropped. Load the new set
    /// with [`Evaluator::helpers`] so scripts see one firing index.
    pub fn reload(&mut self, rules: RuleSet) -> ReloadReport {
        let mut report = ReloadReport::default();
        let mut old: HashMap<String, RuleRuntime> = self.rules.drain(..).map(|r| (r.rule.name.clone(), r)).collect();
        let reg_labels = |rt: &RuleRuntime, s: u32, series: &SeriesTable| {
            let reg = series.read();
            rt.labels_of(s, &reg).to_labels(reg.interner())
        };
        for rule in &rules.rules {
            match old.remove(&rule.name) {
                Some(mut rt) if rt.rule.hash == rule.hash => {
                    rt.rule = rule.clone();
                    report.unchanged.push(rule.name.clone());
                    self.rules.push(rt);
                }
                Some(prev) => {
                    let mut rt = RuleRuntime::new(rule.clone(), &self.series);
                    rt.restored = prev.restored.clone();
                    for (s, inst) in &prev.instances {
                        let labels = reg_labels(&prev, *s, &self.series);
                        rt.restored.insert(prev.subject_key(&labels), *inst);
                        if inst.state == State::Firing {
                            self.scripts.helpers().firing_stopped(&prev.rule.name, &labels);
                        }
                    }
                    report.changed.push(rule.name.clone());
                    self.rules.push(rt);
                }
                None => {
                    let mut rt = RuleRuntime::new(rule.clone(), &self.series);
                    if let Some(store) = &self.store {
                        rt.restored = store.instances_of(&rule.name).unwrap_or_default();
                    }
                    report.added.push(rule.name.clone());
                    self.rules.push(rt);
                }
            }
        }
        for (name, rt) in old {
            for (s, inst) in &rt.instances {
                if inst.state == State::Firing {
                    self.scripts.helpers().firing_stopped(&name, &reg_labels(&rt, *s, &self.series));
                }
            }
            report.removed.push(name);
        }
        report.removed.sort();
        self.scripts = rules.scripts;
        self.scripts.helpers().set_series(self.series.clone());
        self.rebuild_index();
        report
    }

    /// Flushes instance state to disk (the store batches writes otherwise).
    pub fn flush(&self) -> Result<(), StoreError> {
        match &self.store {
            Some(store) => store.flush(),
            None => Ok(()),
        }
    }
}
