//! Running one case: a fresh series table and evaluator with only the rule
//! under test, stepped through the case's samples one interval at a time.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::case::{Case, Locator};
use super::report::{CaseReport, Failure};
use super::shadow::Shadow;
use super::{TestFileError, CASE_EPOCH};
use crate::contracts::Proposal;
use crate::evaluator::{EngineEvent, Evaluator};
use crate::instance::State;
use crate::labels::Labels;
use crate::rule::{self, Helpers, Rule, RuleError};
use crate::series::{Sample, SeriesTable};
use crate::time::Nanos;
use crate::topology::Topology;

/// How many of a subject's transitions a state failure shows: enough to see
/// how it got where it is, few enough to read.
const HISTORY_SHOWN: usize = 4;

/// A subject's identity: its values of the rule's `group_by` labels, as the
/// evaluator keys subjects.
type Key = Vec<Option<String>>;

fn key_of(rule: &Rule, labels: &Labels) -> Key {
    rule.group_by.iter().map(|g| labels.get(g).map(str::to_string)).collect()
}

/// The `group_by` labels of a subject, for reports.
fn short(rule: &Rule, labels: &Labels) -> Labels {
    Labels(rule.group_by.iter().filter_map(|g| Some((g.clone(), labels.get(g)?.to_string()))).collect())
}

/// A subject of the rule as the case's series define it.
struct Subject {
    key: Key,
    /// The labels every series of the subject shares (what the rule sees).
    labels: Labels,
}

/// Runs `case` against the rule `rule_source`; `loc` places errors in the
/// test file.
pub(super) fn run_case(
    rule_path: &str,
    rule_source: &str,
    topology: Option<Arc<Topology>>,
    case: &Case,
    loc: &Locator<'_>,
) -> Result<CaseReport, TestFileError> {
    let mut run = CaseRun::start(rule_path, rule_source, topology, case, loc)?;
    let expected = run.expectations(loc)?;
    let mut samples = Vec::new();
    for step in 0..case.steps {
        let now = CASE_EPOCH + step as Nanos * case.interval;
        samples.clear();
        for (i, s) in case.series.iter().enumerate() {
            if let Some(Some(value)) = s.values.get(step) {
                let sample = Sample { series: run.ids[i], ts: now, value: *value };
                run.shadow.observe(i, &sample);
                samples.push(sample);
            }
        }
        run.step(now, &samples);
        run.check_states(step, now, &expected);
    }
    let CaseRun { rule, proposals, mut failures, .. } = run;
    failures.extend(compare_actions(&rule, case, proposals));
    Ok(CaseReport { name: case.name.clone(), steps: case.steps, failures })
}

/// One case in progress: the evaluator with the rule alone, the case's
/// series and the rule's subjects among them, and what was seen so far.
struct CaseRun<'a> {
    case: &'a Case,
    rule: Arc<Rule>,
    ev: Evaluator,
    ids: Vec<crate::series::SeriesId>,
    subjects: Vec<Subject>,
    /// The windows as the rule sees them, for failure reports.
    shadow: Shadow,
    proposals: Vec<Proposal>,
    history: HashMap<Key, Vec<(Nanos, State, State)>>,
    failures: Vec<Failure>,
    events: Vec<EngineEvent>,
}

impl<'a> CaseRun<'a> {
    /// Loads the rule alone and registers the case's series.
    fn start(
        rule_path: &str,
        rule_source: &str,
        topology: Option<Arc<Topology>>,
        case: &'a Case,
        loc: &Locator<'_>,
    ) -> Result<CaseRun<'a>, TestFileError> {
        let table = SeriesTable::new(topology.clone(), Labels::default());
        let helpers = Helpers::new(Some(table.clone()), topology);
        let rules = rule::load_sources(&[(rule_path.to_string(), rule_source.to_string())], helpers)
            .map_err(TestFileError::Rule)?;
        let rule = rules.rules[0].clone();
        let ev = Evaluator::new(table.clone(), rules, None).map_err(|e| {
            let message = format!("the engine could not start: {e}");
            TestFileError::Rule(RuleError { path: rule_path.to_string(), line: 0, column: 0, message }.into())
        })?;
        let sensor = table.add_sensor("rule-test", super::case::MAX_SERIES_PER_CASE);
        let mut ids = Vec::new();
        let mut subjects: Vec<Subject> = Vec::new();
        let mut routes = Vec::new();
        for s in &case.series {
            let id = table.register(sensor, &s.spec).map_err(|e| loc.at(s.pos, e.to_string()))?;
            ids.push(id);
            let labels = table.read().labels(id);
            let selected = rule.selectors.iter().any(|sel| sel.metric == s.spec.metric && sel.matches(&labels));
            let subject = selected.then(|| subject_of(&rule, &mut subjects, labels));
            // The kind as registered: a counter gets its metric's rate bound.
            let kind = table.read().info(id).kind;
            routes.push((subject, s.spec.metric.clone(), kind));
        }
        let shadow = Shadow::new(&rule, &routes, subjects.len());
        Ok(CaseRun {
            case,
            rule,
            ev,
            ids,
            subjects,
            shadow,
            proposals: Vec::new(),
            history: HashMap::new(),
            failures: Vec::new(),
            events: Vec::new(),
        })
    }

    /// Which subjects each expectation is about, checked before anything
    /// runs.
    fn expectations(&self, loc: &Locator<'_>) -> Result<Vec<Vec<usize>>, TestFileError> {
        let (rule, subjects) = (&self.rule, &self.subjects);
        let list = || subjects.iter().map(|s| short(rule, &s.labels).to_string()).collect::<Vec<_>>().join(", ");
        let mut expected = Vec::new();
        for e in &self.case.expects {
            let wanted = e.subject.clone().unwrap_or_default();
            let matching: Vec<usize> =
                (0..subjects.len()).filter(|&i| subjects[i].labels.contains_all(&wanted)).collect();
            if subjects.is_empty() {
                return Err(loc.at(e.pos, format!("rule {} selects none of this case's series", rule.name)).into());
            }
            if e.subject.is_none() && subjects.len() > 1 {
                let why = format!(
                    "`subject` is needed: this case has {} subjects of {}: {}",
                    subjects.len(),
                    rule.name,
                    list()
                );
                return Err(loc.at(e.pos, why).into());
            }
            if matching.is_empty() {
                let why = format!("subject {wanted} matches none of the subjects of {}: {}", rule.name, list());
                return Err(loc.at(e.pos, why).into());
            }
            expected.push(matching);
        }
        Ok(expected)
    }

    /// Ingests one step's samples and evaluates at `now`.
    fn step(&mut self, now: Nanos, samples: &[Sample]) {
        self.ev.ingest(samples);
        self.events.clear();
        self.ev.evaluate(now, &mut self.events);
        let t = now - CASE_EPOCH;
        for event in self.events.drain(..) {
            match event {
                EngineEvent::Transition { subject, from, to, at, .. } => {
                    self.history.entry(key_of(&self.rule, &subject)).or_default().push((at - CASE_EPOCH, from, to));
                }
                EngineEvent::Proposal(p) => self.proposals.push(p),
                EngineEvent::ActionError { subject, message, .. } => {
                    self.failures.push(Failure::ActionError { at: t, subject: short(&self.rule, &subject), message });
                }
                EngineEvent::Quarantined { error, at, .. } => {
                    self.failures.push(Failure::Quarantined { at: at - CASE_EPOCH, error: error.to_string() });
                }
                EngineEvent::SensorStale { .. } | EngineEvent::SensorFresh { .. } => {}
            }
        }
    }

    /// Compares each subject's state with what the case expects at `step`.
    fn check_states(&mut self, step: usize, now: Nanos, expected: &[Vec<usize>]) {
        let rule = &self.rule;
        let states: BTreeMap<Key, (State, bool)> = self
            .ev
            .instances()
            .into_iter()
            .filter(|v| v.rule == rule.name)
            .map(|v| (key_of(rule, &v.subject), (v.instance.state, v.instance.stale)))
            .collect();
        for (e, matching) in self.case.expects.iter().zip(expected).filter(|(e, _)| e.step == step) {
            for &i in matching {
                let subject = &self.subjects[i];
                let (got, got_stale) = states.get(&subject.key).copied().unwrap_or((State::Inactive, false));
                if got == e.state && e.stale.is_none_or(|s| s == got_stale) {
                    continue;
                }
                let values = self.shadow.values(i, now);
                let shown = self.history.get(&subject.key).map(|h| &h[h.len().saturating_sub(HISTORY_SHOWN)..]);
                self.failures.push(Failure::State {
                    at: now - CASE_EPOCH,
                    rule: rule.name.clone(),
                    subject: short(rule, &subject.labels),
                    expected: e.state,
                    expected_stale: e.stale,
                    got,
                    got_stale,
                    windows: rule.windows.iter().map(|(n, _)| n.clone()).zip(values).collect(),
                    history: shown.map(<[_]>::to_vec).unwrap_or_default(),
                });
            }
        }
    }
}

/// The index of the subject `labels` belong to, added if new; a subject's
/// labels are those every one of its series shares.
fn subject_of(rule: &Rule, subjects: &mut Vec<Subject>, labels: Labels) -> usize {
    let key = key_of(rule, &labels);
    match subjects.iter().position(|x| x.key == key) {
        Some(i) => {
            subjects[i].labels.0.retain(|k, v| labels.get(k) == Some(v.as_str()));
            i
        }
        None => {
            subjects.push(Subject { key, labels });
            subjects.len() - 1
        }
    }
}

/// Pairs every listed action with a proposal of the same time, kind and
/// target (and parameters, when listed). Rows that give parameters are
/// paired first, so a row without them cannot take the proposal a more
/// precise row needs.
fn compare_actions(rule: &Rule, case: &Case, proposals: Vec<Proposal>) -> Vec<Failure> {
    let mut left: Vec<Option<Proposal>> = proposals.into_iter().map(Some).collect();
    let mut rows: Vec<_> = case.actions.iter().collect();
    rows.sort_by_key(|a| a.params.is_none());
    let mut failures = Vec::new();
    for row in rows {
        let at = row.step as Nanos * case.interval;
        let found = left.iter_mut().find(|p| {
            p.as_ref().is_some_and(|p| {
                p.decided_at - CASE_EPOCH == at
                    && p.action.kind == row.kind
                    && p.action.target == row.target
                    && row.params.as_ref().is_none_or(|params| *params == p.action.params)
            })
        });
        match found {
            Some(slot) => *slot = None,
            None => failures.push(Failure::MissingAction {
                at,
                kind: row.kind.clone(),
                target: row.target.clone(),
                params: row.params.clone(),
            }),
        }
    }
    for p in left.into_iter().flatten() {
        failures.push(Failure::UnexpectedAction {
            at: p.decided_at - CASE_EPOCH,
            subject: short(rule, &p.subject),
            action: p.action,
        });
    }
    failures.sort_by_key(|f| match f {
        Failure::MissingAction { at, .. } | Failure::UnexpectedAction { at, .. } => *at,
        _ => 0,
    });
    failures
}
