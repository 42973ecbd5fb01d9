//! Each fault's own recovery: for every `[[fault]]` of the scenario, its
//! first occurrence's start, the first rule that went firing on a subject
//! at its location, the first action executed on a target there, and when
//! the steady state held again after it.
//!
//! A run's fault records carry the fault's label, unique within the
//! scenario ([`FaultPlan::label`]), which ties each occurrence to its
//! fault; where a fault lands is [`FaultPlan::locations`], and what is *at*
//! a location is [`site::at`].
//!
//! The probes are fabric-wide: they cannot say whose damage they see. A
//! fault's recovery (and its step time) is therefore judged from its start
//! up to the start of the first fault that began after it ended (or the
//! run's end): damage done while two faults overlap counts for both.
//!
//! [`FaultPlan::label`]: crate::plan::FaultPlan::label
//! [`FaultPlan::locations`]: crate::plan::FaultPlan::locations

use std::collections::BTreeMap;

use engine::time::Nanos;

use super::{executed, labels_text, recovered_within, step_time, Window};
use crate::plan::{site, FaultPlan};
use crate::report::record::{FaultOutcome, FaultRecord, RunRecord, StepTime};
use crate::scenario::plan::ScenarioPlan;

/// The index of the fault whose occurrence `r` is.
fn fault_of(plan: &ScenarioPlan, r: &FaultRecord) -> Option<usize> {
    plan.faults.iter().position(|f| f.label == r.label)
}

/// Every fault's outcome in `record`, in the scenario's order; `step` is
/// the run's step time, when it was recorded.
pub(super) fn outcomes(plan: &ScenarioPlan, record: &RunRecord, step: Option<&StepTime>) -> Vec<FaultOutcome> {
    let owners: Vec<Option<usize>> = record.faults.iter().map(|r| fault_of(plan, r)).collect();
    plan.faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mine: Vec<&FaultRecord> =
                record.faults.iter().zip(&owners).filter(|(_, o)| **o == Some(i)).map(|(r, _)| r).collect();
            outcome(plan, record, i, f, &mine, &first_starts(record, &owners, i), step)
        })
        .collect()
}

/// The labels of a subject or target worth reading in a report: where
/// ([`site::KEYS`]) and the priority or queue; the inventory's rack, zone
/// or GPU of a NIC only make the line long.
fn shown(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .filter(|(k, _)| site::KEYS.contains(&k.as_str()) || matches!(k.as_str(), "prio" | "queue" | "gpu"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// When each fault other than `index` began: its first occurrence's start
/// (a record tied to no fault counts on its own).
fn first_starts(record: &RunRecord, owners: &[Option<usize>], index: usize) -> Vec<Nanos> {
    let mut first: BTreeMap<usize, Nanos> = BTreeMap::new();
    let mut out = Vec::new();
    for (r, owner) in record.faults.iter().zip(owners) {
        match owner {
            Some(o) if *o == index => {}
            Some(o) => {
                let at = first.entry(*o).or_insert(r.start);
                *at = (*at).min(r.start);
            }
            None => out.push(r.start),
        }
    }
    out.extend(first.into_values());
    out
}

/// The outcome of fault `index` (`f`), whose occurrences are `mine`;
/// `others` are when the other faults began.
fn outcome(
    plan: &ScenarioPlan,
    record: &RunRecord,
    index: usize,
    f: &FaultPlan,
    mine: &[&FaultRecord],
    others: &[Nanos],
    step: Option<&StepTime>,
) -> FaultOutcome {
    let mut out = FaultOutcome { fault: index, label: f.label.clone(), occurrences: mine.len(), ..Default::default() };
    let Some(from) = mine.iter().map(|r| r.start).min() else { return out };
    out.moments.fault_at = Some(from);
    // Ended only when every occurrence ended: an open one lasts the run.
    out.ended_at = if mine.iter().all(|r| r.end.is_some()) { mine.iter().filter_map(|r| r.end).max() } else { None };
    // The earliest, whatever the record's order (a game day's come from
    // the ledger, decision by decision).
    if let Some(t) = record
        .transitions
        .iter()
        .filter(|t| t.at >= from && t.to == "firing" && site::at_any(&t.subject, &f.locations))
        .min_by_key(|t| t.at)
    {
        out.moments.detected_at = Some(t.at);
        out.detected_by = Some(format!("{} {}", t.rule, labels_text(&shown(&t.subject))));
        out.moments.trigger_at = mine.iter().map(|r| r.start).filter(|s| *s <= t.at).max();
    }
    // A notification changes nothing in the fabric: it is not a mitigation.
    if let Some(d) = executed(record)
        .filter(|d| d.at >= from && !d.action.starts_with("webhook.") && site::at_any(&d.target, &f.locations))
        .min_by_key(|d| d.at)
    {
        out.moments.mitigated_at = Some(d.at);
        out.mitigated_by = Some(format!("{} {}", d.action, labels_text(&shown(&d.target))));
    }
    let window = window(from, out.ended_at, others, record);
    out.moments.recovered_at = recovered_within(plan, record, window);
    if let Some(step) = step {
        (out.step_worst, _) = step_time::worst(record, window).unzip();
        out.step_back_at = step.baseline.and_then(|b| step_time::back_at(plan, record, b, step.within, window));
    }
    out
}

/// Where a fault's recovery is judged: from its start to the start of the
/// first fault that began at or after its end, or to the run's end when it
/// did not end or no fault began after it. A fault that began while this
/// one was in force (its later flaps, repeats) does not cut it short:
/// their damage is mixed.
fn window(from: Nanos, ended_at: Option<Nanos>, others: &[Nanos], record: &RunRecord) -> Window {
    let next = ended_at.and_then(|end| others.iter().copied().filter(|s| *s >= end).min());
    match next {
        Some(to) if to < record.end => Window { from, to, closed: false },
        _ => Window::to_end(from, record),
    }
}
