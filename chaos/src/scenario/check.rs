//! A run's record against the scenario's expectations: the harness's
//! verdict, and the times (detected, mitigated, recovered) that become
//! MTTD, time to mitigate and MTTR.

use std::collections::{BTreeMap, BTreeSet};

use engine::policy::kind_matches;
use engine::time::Nanos;

use super::plan::ScenarioPlan;
use super::spec::ActionMatch;
use crate::report::record::{DecisionRecord, RunOutcome, RunRecord};

fn ms(ns: Nanos) -> String {
    format!("{:.0} ms", ns as f64 / 1e6)
}

fn matches(m: &ActionMatch, d: &DecisionRecord) -> bool {
    let verdict = m.verdict.as_deref().unwrap_or("executed");
    kind_matches(&m.action, &d.action)
        && (verdict == "any" || verdict == d.verdict)
        && m.target.iter().all(|(k, v)| d.target.get(k) == Some(v))
        && d.undo_of.is_none()
}

fn describe(m: &ActionMatch) -> String {
    let target: Vec<String> = m.target.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{} {{{}}} ({})", m.action, target.join(", "), m.verdict.as_deref().unwrap_or("executed"))
}

/// The outcome of `record` against `plan`'s expectations (`aborted` is the
/// runner's to set).
pub fn check(plan: &ScenarioPlan, record: &RunRecord) -> RunOutcome {
    let mut failures = Vec::new();
    let fault_at = record.faults.iter().map(|f| f.start).min();
    let origin = record.start;
    let rel = |t: Nanos| ms(t - origin);
    let e = &plan.expect;

    // The steady state before the first fault.
    let before_end = fault_at.unwrap_or(record.end);
    'probes: for series in &record.probes {
        let Some(bound) = plan.probes.iter().find(|b| b.probe == series.name) else { continue };
        for &(t, v) in &series.points {
            if t >= before_end {
                break;
            }
            if !bound.holds(v) {
                failures.push(format!(
                    "steady state did not hold before the fault: {} = {v:.3} at +{}",
                    series.name,
                    rel(t)
                ));
                break 'probes;
            }
        }
    }

    let after = fault_at.unwrap_or(origin);
    let detected_at = e.detect.as_ref().and_then(|(rule, _)| {
        record.transitions.iter().find(|t| t.at >= after && &t.rule == rule && t.to == "firing").map(|t| t.at)
    });
    let mitigated_at = e.mitigate.as_ref().and_then(|(action, _)| {
        record
            .decisions
            .iter()
            .find(|d| {
                d.at >= after && d.verdict == "executed" && d.undo_of.is_none() && kind_matches(action, &d.action)
            })
            .map(|d| d.at)
    });
    let trigger_at =
        detected_at.and_then(|d| record.faults.iter().map(|f| f.start).filter(|s| *s <= d).max()).or(fault_at);
    // Recovered: from the first point after the last one out of bounds,
    // provided the bounds then hold for `hold` until the end.
    let mut last_bad: Option<Nanos> = None;
    for series in &record.probes {
        let Some(bound) = plan.probes.iter().find(|b| b.probe == series.name) else { continue };
        for &(t, v) in &series.points {
            if t >= after && !bound.holds(v) {
                last_bad = Some(last_bad.map_or(t, |b: Nanos| b.max(t)));
            }
        }
    }
    let recovered_at = match (fault_at, last_bad) {
        (None, _) => None,
        (Some(f), None) => Some(f),
        (Some(_), Some(bad)) => record
            .probes
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .filter(|t| *t > bad)
            .min()
            .filter(|t| record.end - t >= plan.hold),
    };

    let origin_of_deadlines = if e.from_trigger { trigger_at } else { fault_at };
    let what = if e.from_trigger { "the trigger" } else { "the fault" };
    if let (Some((rule, within)), Some(f)) = (&e.detect, origin_of_deadlines) {
        match detected_at {
            Some(t) if t - f <= *within => {}
            Some(t) => {
                failures.push(format!("{rule} fired {} after {what}; expected within {}", ms(t - f), ms(*within)))
            }
            None => failures.push(format!("{rule} never fired")),
        }
    }
    if let (Some((action, within)), Some(f)) = (&e.mitigate, origin_of_deadlines) {
        match mitigated_at {
            Some(t) if t - f <= *within => {}
            Some(t) => {
                failures.push(format!("{action} executed {} after {what}; expected within {}", ms(t - f), ms(*within)))
            }
            None => failures.push(format!("{action} was never executed")),
        }
    }
    if let (Some(within), Some(f)) = (e.recover_within, fault_at) {
        match recovered_at {
            Some(t) if t - f <= within => {}
            Some(t) => failures.push(format!(
                "steady state back {} after the fault; expected within {}",
                ms(t - f),
                ms(within)
            )),
            None => failures.push("the steady state never held again".to_string()),
        }
    }
    for m in &e.must {
        let n = record.decisions.iter().filter(|d| matches(m, d)).count();
        let want = m.count.unwrap_or(1);
        if n < want {
            failures.push(format!("expected {} at least {want} time(s), saw {n}", describe(m)));
        }
    }
    for m in &e.must_not {
        if let Some(d) = record.decisions.iter().find(|d| matches(m, d)) {
            failures.push(format!("{} must not happen; decision {} did at +{}", describe(m), d.id, rel(d.at)));
        }
    }
    let executed: Vec<&DecisionRecord> =
        record.decisions.iter().filter(|d| d.verdict == "executed" && d.undo_of.is_none()).collect();
    if let Some(max) = e.max_actions {
        if executed.len() > max {
            let kinds: Vec<&str> = executed.iter().map(|d| d.action.as_str()).collect();
            failures.push(format!(
                "{} action(s) executed, at most {max} expected: {}",
                executed.len(),
                kinds.join(", ")
            ));
        }
    }
    if let Some(max) = e.max_rails_drained_per_plane {
        let mut rails: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for d in executed.iter().filter(|d| d.action == "rail.drain") {
            let Some(rail) = d.target.get("rail") else { continue };
            let plane = d.target.get("plane").cloned().or_else(|| {
                let r: u32 = rail.parse().ok()?;
                let sw = plan.topology.inventory().switch.iter().find(|s| s.rail == Some(r))?;
                sw.plane.map(|p| p.to_string())
            });
            rails.entry(plane.unwrap_or_else(|| "?".into())).or_default().insert(rail.clone());
        }
        for (plane, set) in rails {
            if set.len() > max {
                let list: Vec<&str> = set.iter().map(String::as_str).collect();
                failures.push(format!("plane {plane}: rails {} drained, at most {max} expected", list.join(", ")));
            }
        }
    }
    if e.no_healthy_node_cordoned {
        let touched: BTreeSet<&str> = record.faults.iter().flat_map(|f| f.nodes.iter().map(String::as_str)).collect();
        for d in executed.iter().filter(|d| d.action == "node.cordon") {
            if let Some(node) = d.target.get("node").filter(|n| !touched.contains(n.as_str())) {
                failures.push(format!("healthy node {node} cordoned (decision {})", d.id));
            }
        }
    }
    if let Some(min) = e.min_held {
        let held = record.decisions.iter().filter(|d| d.verdict == "held").count();
        if held < min {
            failures.push(format!("{held} proposal(s) held by the safety policy, at least {min} expected"));
        }
    }
    RunOutcome {
        passed: failures.is_empty(),
        aborted: None,
        failures,
        fault_at,
        trigger_at,
        detected_at,
        mitigated_at,
        recovered_at,
    }
}
