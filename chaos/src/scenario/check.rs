//! A run's record against the scenario's expectations: the harness's
//! verdict, and the times (detected, mitigated, recovered) that become
//! MTTD, time to mitigate and MTTR — for the scenario as a whole (its
//! `[expect]` deadlines) and for each of its faults ([`per_fault`]) — and
//! what the faults cost the jobs' step time ([`step_time`]).

mod per_fault;
mod step_time;

use std::collections::{BTreeMap, BTreeSet};

use engine::policy::kind_matches;
use engine::time::Nanos;

use super::plan::{ExpectPlan, ScenarioPlan};
use super::spec::ActionMatch;
use crate::plan::Bound;
use crate::report::record::{DecisionRecord, Moments, ProbeSeries, RunOutcome, RunRecord};

fn ms(ns: Nanos) -> String {
    format!("{:.0} ms", ns as f64 / 1e6)
}

/// A stretch of a run: from `from` up to `to`, `to` itself included when
/// it is the run's end (the last step's probes are taken at the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    from: Nanos,
    to: Nanos,
    closed: bool,
}

impl Window {
    /// From `from` to the end of `record`.
    fn to_end(from: Nanos, record: &RunRecord) -> Window {
        Window { from, to: record.end, closed: true }
    }

    fn contains(&self, t: Nanos) -> bool {
        t >= self.from && (t < self.to || (self.closed && t == self.to))
    }
}

/// When a condition observed at `points` (`(time, good)`) settled within
/// `w`: the first point after the last bad one, provided the window then
/// still has `hold` to run; `w.from` when no point in it is bad. `None`
/// when it never settled, or when nothing was observed in `w` (no probe,
/// no steady state: never a made-up 0).
fn settled(points: impl Iterator<Item = (Nanos, bool)>, w: Window, hold: Nanos) -> Option<Nanos> {
    let mut seen: Vec<(Nanos, bool)> = points.filter(|p| w.contains(p.0)).collect();
    if seen.is_empty() {
        return None;
    }
    seen.sort_by_key(|p| p.0);
    let Some(bad) = seen.iter().filter(|p| !p.1).map(|p| p.0).max() else { return Some(w.from) };
    seen.iter().map(|p| p.0).find(|t| *t > bad).filter(|t| w.to - t >= hold)
}

/// `labels` as `{k=v, …}`.
fn labels_text(labels: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", parts.join(", "))
}

fn matches(m: &ActionMatch, d: &DecisionRecord) -> bool {
    let verdict = m.verdict.as_deref().unwrap_or("executed");
    kind_matches(&m.action, &d.action)
        && (verdict == "any" || verdict == d.verdict)
        && m.target.iter().all(|(k, v)| d.target.get(k) == Some(v))
        && d.undo_of.is_none()
        && m.canary.as_ref().is_none_or(|c| d.canary.as_ref() == Some(c))
        && m.outcome.as_ref().is_none_or(|o| d.outcome.as_ref() == Some(o))
}

fn describe(m: &ActionMatch) -> String {
    let target: Vec<String> = m.target.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let canary = m.canary.as_ref().map(|c| format!(", canary {c}")).unwrap_or_default();
    let outcome = m.outcome.as_ref().map(|o| format!(", outcome {o}")).unwrap_or_default();
    let verdict = m.verdict.as_deref().unwrap_or("executed");
    format!("{} {{{}}} ({verdict}{canary}{outcome})", m.action, target.join(", "))
}

/// The outcome of `record` against `plan`'s expectations (`aborted` is the
/// runner's to set).
pub fn check(plan: &ScenarioPlan, record: &RunRecord) -> RunOutcome {
    let mut outcome = milestones(plan, record);
    outcome.step_time = step_time::of_run(plan, record, outcome.moments.fault_at);
    outcome.faults = per_fault::outcomes(plan, record, outcome.step_time.as_ref());
    // The order of the failures is the order the report lists them in: the
    // steady state first, then the deadlines, the jobs' step time, then
    // what the daemon did.
    let mut failures = Vec::new();
    failures.extend(steady_state_before_fault(plan, record, outcome.moments.fault_at));
    failures.extend(deadline_failures(&plan.expect, &outcome.moments));
    failures.extend(step_time::failures(plan, &outcome));
    failures.extend(action_failures(plan, record));
    outcome.passed = failures.is_empty();
    outcome.failures = failures;
    outcome
}

/// The run's times (fault, trigger, detection, mitigation, recovery),
/// with no verdict yet.
fn milestones(plan: &ScenarioPlan, record: &RunRecord) -> RunOutcome {
    let e = &plan.expect;
    let fault_at = record.faults.iter().map(|f| f.start).min();
    // Without a fault, anything the daemon did counts from the start.
    let after = fault_at.unwrap_or(record.start);
    let detected_at = e.detect.as_ref().and_then(|(rule, _)| first_firing(record, rule, after));
    let mitigated_at = e.mitigate.as_ref().and_then(|(action, _)| first_executed(record, action, after));
    let trigger_at = detected_at.and_then(|d| last_fault_start_by(record, d)).or(fault_at);
    let recovered_at = fault_at.and_then(|f| recovered_at(plan, record, f));
    let moments = Moments { fault_at, trigger_at, detected_at, mitigated_at, recovered_at };
    RunOutcome { moments, ..RunOutcome::default() }
}

/// When `rule` first fired at or after `after`.
fn first_firing(record: &RunRecord, rule: &str, after: Nanos) -> Option<Nanos> {
    record.transitions.iter().find(|t| t.at >= after && t.rule == rule && t.to == "firing").map(|t| t.at)
}

/// When an action of kind `action` (or pattern) was first executed at or
/// after `after`; undos do not count.
fn first_executed(record: &RunRecord, action: &str, after: Nanos) -> Option<Nanos> {
    executed(record).find(|d| d.at >= after && kind_matches(action, &d.action)).map(|d| d.at)
}

/// The start of the last fault occurrence at or before `detected_at`: the
/// one that made the rule fire.
fn last_fault_start_by(record: &RunRecord, detected_at: Nanos) -> Option<Nanos> {
    record.faults.iter().map(|f| f.start).filter(|s| *s <= detected_at).max()
}

/// Recovered: from the first point after the last one out of bounds,
/// provided the bounds then hold for `hold` until the end; at the fault's
/// start if the bounds never broke; never when the scenario bounds no
/// probe (nothing says it recovered).
fn recovered_at(plan: &ScenarioPlan, record: &RunRecord, fault_at: Nanos) -> Option<Nanos> {
    recovered_within(plan, record, Window::to_end(fault_at, record))
}

/// When the steady state held again within `w` (see [`settled`]).
fn recovered_within(plan: &ScenarioPlan, record: &RunRecord, w: Window) -> Option<Nanos> {
    let points = bounded_probes(plan, record)
        .flat_map(|(series, bound)| series.points.iter().map(move |&(t, v)| (t, bound.holds(v))));
    settled(points, w, plan.hold)
}

/// The recorded probes that the steady state bounds, each with its bound
/// (a probe recorded only for the report bounds nothing, and is left out).
fn bounded_probes<'a>(
    plan: &'a ScenarioPlan,
    record: &'a RunRecord,
) -> impl Iterator<Item = (&'a ProbeSeries, &'a Bound)> {
    record
        .probes
        .iter()
        .filter_map(|series| Some((series, plan.probes.iter().find(|b| b.probe == series.name && b.bounds())?)))
}

/// The decisions that executed an action (undos left out), each once: a
/// canary or an outcome check is recorded again when it is judged.
fn executed(record: &RunRecord) -> impl Iterator<Item = &DecisionRecord> {
    let mut seen = std::collections::HashSet::new();
    record.decisions.iter().filter(move |d| d.verdict == "executed" && d.undo_of.is_none() && seen.insert(&d.id))
}

/// The first point out of bounds before the first fault (before the end
/// when there is none), if any: the hypothesis did not hold to begin with.
fn steady_state_before_fault(plan: &ScenarioPlan, record: &RunRecord, fault_at: Option<Nanos>) -> Option<String> {
    let before_end = fault_at.unwrap_or(record.end);
    bounded_probes(plan, record).find_map(|(series, bound)| {
        let &(t, v) = series.points.iter().take_while(|p| p.0 < before_end).find(|p| !bound.holds(p.1))?;
        Some(format!(
            "steady state did not hold before the fault: {} = {v:.3} at +{}",
            series.name,
            ms(t - record.start)
        ))
    })
}

/// The detection, mitigation and recovery deadlines that were missed.
fn deadline_failures(e: &ExpectPlan, times: &Moments) -> Vec<String> {
    let origin = if e.from_trigger { times.trigger_at } else { times.fault_at };
    let what = if e.from_trigger { "the trigger" } else { "the fault" };
    let mut failures = Vec::new();
    if let (Some((rule, within)), Some(f)) = (&e.detect, origin) {
        let never = || format!("{rule} never fired");
        failures.extend(missed(times.detected_at, f, *within, &format!("{rule} fired"), what, never));
    }
    if let (Some((action, within)), Some(f)) = (&e.mitigate, origin) {
        let never = || format!("{action} was never executed");
        failures.extend(missed(times.mitigated_at, f, *within, &format!("{action} executed"), what, never));
    }
    if let (Some(within), Some(f)) = (e.recover_within, times.fault_at) {
        let never = || "the steady state never held again".to_string();
        failures.extend(missed(times.recovered_at, f, within, "steady state back", "the fault", never));
    }
    failures
}

/// The failure if `at` is not within `within` of `from`: `late` says what
/// happened late ("r fired"), `what` what the deadline counts from;
/// `never` words the failure when it did not happen at all.
fn missed(
    at: Option<Nanos>,
    from: Nanos,
    within: Nanos,
    late: &str,
    what: &str,
    never: impl FnOnce() -> String,
) -> Option<String> {
    match at {
        Some(t) if t - from <= within => None,
        Some(t) => Some(format!("{late} {} after {what}; expected within {}", ms(t - from), ms(within))),
        None => Some(never()),
    }
}

/// What the daemon did (or did not do) against `must`, `must_not` and the
/// limits on actions.
fn action_failures(plan: &ScenarioPlan, record: &RunRecord) -> Vec<String> {
    let e = &plan.expect;
    let executed: Vec<&DecisionRecord> = executed(record).collect();
    let mut failures = missing_actions(e, record);
    failures.extend(forbidden_actions(e, record));
    failures.extend(e.max_actions.and_then(|max| too_many_actions(&executed, max)));
    if let Some(max) = e.max_rails_drained_per_plane {
        failures.extend(too_many_rails_drained(plan, &executed, max));
    }
    if e.no_healthy_node_cordoned {
        failures.extend(healthy_nodes_cordoned(record, &executed));
    }
    failures.extend(e.min_held.and_then(|min| too_few_held(record, min)));
    failures
}

/// Each `must` that happened fewer times than it should.
fn missing_actions(e: &ExpectPlan, record: &RunRecord) -> Vec<String> {
    let mut failures = Vec::new();
    for m in &e.must {
        let n = record
            .decisions
            .iter()
            .filter(|d| matches(m, d))
            .map(|d| &d.id)
            .collect::<std::collections::HashSet<_>>()
            .len();
        let want = m.count.unwrap_or(1);
        if n < want {
            failures.push(format!("expected {} at least {want} time(s), saw {n}", describe(m)));
        }
    }
    failures
}

/// Each `must_not` that happened, with the first decision that did it.
fn forbidden_actions(e: &ExpectPlan, record: &RunRecord) -> Vec<String> {
    let mut failures = Vec::new();
    for m in &e.must_not {
        if let Some(d) = record.decisions.iter().find(|d| matches(m, d)) {
            failures.push(format!(
                "{} must not happen; decision {} did at +{}",
                describe(m),
                d.id,
                ms(d.at - record.start)
            ));
        }
    }
    failures
}

/// More actions executed than `max`, listed.
fn too_many_actions(executed: &[&DecisionRecord], max: usize) -> Option<String> {
    if executed.len() <= max {
        return None;
    }
    let kinds: Vec<&str> = executed.iter().map(|d| d.action.as_str()).collect();
    Some(format!("{} action(s) executed, at most {max} expected: {}", executed.len(), kinds.join(", ")))
}

/// Each plane with more than `max` rails drained.
fn too_many_rails_drained(plan: &ScenarioPlan, executed: &[&DecisionRecord], max: usize) -> Vec<String> {
    let mut rails: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for d in executed.iter().filter(|d| d.action == "rail.drain") {
        let Some(rail) = d.target.get("rail") else { continue };
        let plane = d.target.get("plane").cloned().or_else(|| plane_of_rail(plan, rail));
        rails.entry(plane.unwrap_or_else(|| "?".into())).or_default().insert(rail.clone());
    }
    let mut failures = Vec::new();
    for (plane, set) in rails {
        if set.len() > max {
            let list: Vec<&str> = set.iter().map(String::as_str).collect();
            failures.push(format!("plane {plane}: rails {} drained, at most {max} expected", list.join(", ")));
        }
    }
    failures
}

/// The plane of `rail`, from the inventory's switch on that rail: for a
/// drain whose target does not name it.
fn plane_of_rail(plan: &ScenarioPlan, rail: &str) -> Option<String> {
    let r: u32 = rail.parse().ok()?;
    let sw = plan.topology.inventory().switch.iter().find(|s| s.rail == Some(r))?;
    sw.plane.map(|p| p.to_string())
}

/// Each cordon of a node that no fault touched.
fn healthy_nodes_cordoned(record: &RunRecord, executed: &[&DecisionRecord]) -> Vec<String> {
    let touched: BTreeSet<&str> = record.faults.iter().flat_map(|f| f.nodes.iter().map(String::as_str)).collect();
    let mut failures = Vec::new();
    for d in executed.iter().filter(|d| d.action == "node.cordon") {
        if let Some(node) = d.target.get("node").filter(|n| !touched.contains(n.as_str())) {
            failures.push(format!("healthy node {node} cordoned (decision {})", d.id));
        }
    }
    failures
}

/// Fewer proposals held by the safety policy than `min`.
fn too_few_held(record: &RunRecord, min: usize) -> Option<String> {
    let held = record.decisions.iter().filter(|d| d.verdict == "held").count();
    (held < min).then(|| format!("{held} proposal(s) held by the safety policy, at least {min} expected"))
}
