//! A game day's report in the one report shape: a [`Report`] of one
//! wall-clock run (faults, every daemon's decisions, the tokens in use and
//! the sessions over time as probes, each fault's detection and
//! mitigation) with the fleet's own figures in [`Report::fleet`], which
//! the report's page and table draw like any other.

use engine::Nanos;

use super::game::Played;
use super::plan::FleetPlan;
use crate::plan::Bound;
use crate::report::fleet::{FaultFigures, FleetFigures, PhaseRecord};
use crate::report::{FaultOutcome, FaultRecord, Moments, ProbeSeries, Report, RunOutcome, RunRecord};
use crate::run::lockstep::decision_record;

/// The probe of a budget cell's tokens in use.
fn cell_probe(budget: &str, cell: &str) -> String {
    format!("fleet tokens {budget} {cell}")
}

/// The report of `played`.
pub fn build(plan: &FleetPlan, played: &Played, fleet: FleetFigures, elapsed_ms: f64) -> Report {
    let mut decisions: Vec<_> = played
        .daemons
        .iter()
        .flat_map(|d| {
            d.decisions.iter().map(move |dec| {
                let mut r = decision_record(dec.finished_at.max(dec.proposal.decided_at), dec);
                // Ids are per daemon: the record names whose.
                r.id = format!("{}/{}", d.name, dec.id);
                r
            })
        })
        .collect();
    decisions.sort_by_key(|d| d.at);
    let faults: Vec<FaultRecord> = plan
        .faults
        .iter()
        .zip(&played.fault_starts)
        .filter_map(|(f, start)| {
            Some(FaultRecord {
                label: format!("{}: {}", f.name, f.fault.label),
                nodes: f.nodes(),
                start: (*start)?,
                end: None,
            })
        })
        .collect();
    let mut faults = faults;
    faults.extend(kills(played));
    faults.sort_by_key(|f| f.start);
    let (probes, bounds) = probes(plan, played);
    let outcomes: Vec<FaultOutcome> =
        fleet.faults.iter().enumerate().map(|(i, f)| fault_outcome(i, f, played.fault_starts[i])).collect();
    let passed = fleet.failures.is_empty();
    let outcome = RunOutcome {
        passed,
        aborted: None,
        failures: fleet.failures.clone(),
        moments: first_fault(&outcomes),
        faults: outcomes,
        step_time: None,
    };
    let run = RunRecord {
        run: 0,
        seed: plan.seed,
        start: played.start,
        end: played.end,
        faults,
        transitions: Vec::new(),
        decisions,
        probes,
        outcome,
    };
    let runs = vec![run];
    Report {
        scenario: plan.name.clone(),
        description: plan.description.clone(),
        file: plan.file.display().to_string(),
        clock: "wall".into(),
        step: plan.step,
        passed: usize::from(passed),
        failed: usize::from(!passed),
        elapsed_ms,
        summary: Report::summarize(&runs),
        bounds,
        runs,
        fleet: Some(fleet),
    }
}

/// The kills, as faults on the timeline: from the SIGKILL until the
/// cluster led again, or the dead daemon's tokens were gone.
fn kills(played: &Played) -> Vec<FaultRecord> {
    played
        .phases
        .iter()
        .filter_map(|p| match p {
            PhaseRecord::KillEtcdLeader { at, killed, elected_at, .. } => Some(FaultRecord {
                label: format!("SIGKILL etcd leader {killed}"),
                nodes: Vec::new(),
                start: *at,
                end: *elected_at,
            }),
            PhaseRecord::KillTokenHolder { at, daemon: Some(daemon), returned_at, problem: None, .. } => {
                Some(FaultRecord {
                    label: format!("SIGKILL {daemon} (token holder)"),
                    nodes: vec![daemon.clone()],
                    start: *at,
                    end: *returned_at,
                })
            }
            _ => None,
        })
        .collect()
}

/// The run's moments: those of the fault that started first, its start
/// as the trigger too (a game's faults start once, and nothing recovers
/// them within the game).
fn first_fault(outcomes: &[FaultOutcome]) -> Moments {
    let first = outcomes.iter().map(|o| o.moments).filter(|m| m.fault_at.is_some()).min_by_key(|m| m.fault_at);
    first.map(|m| Moments { trigger_at: m.fault_at, recovered_at: None, ..m }).unwrap_or_default()
}

/// A fault's detection and mitigation, in the chaos report's terms.
fn fault_outcome(i: usize, f: &FaultFigures, start: Option<Nanos>) -> FaultOutcome {
    let at = |ms: Option<f64>| Some(start? + (ms? * 1e6) as Nanos);
    FaultOutcome {
        fault: i,
        label: format!("{}: {}", f.name, f.label),
        occurrences: usize::from(start.is_some()),
        moments: Moments {
            fault_at: start,
            trigger_at: start,
            detected_at: at(f.ttd_ms),
            mitigated_at: at(f.ttm_ms),
            recovered_at: None,
        },
        ended_at: None,
        detected_by: f.detected_by.clone(),
        mitigated_by: f.mitigated_by.clone(),
        step_worst: None,
        step_back_at: None,
    }
}

/// The tokens in use per budget cell (bounded by its limit, so the page
/// draws the line a budget must never cross) and the daemons with a
/// session, over the game.
fn probes(plan: &FleetPlan, played: &Played) -> (Vec<ProbeSeries>, Vec<Bound>) {
    let clip = |series: Vec<(Nanos, usize)>| -> Vec<(Nanos, f64)> {
        // From the game's start to its end: the level then, and every change
        // as a step (the timeline joins points with lines; a count does not
        // slide from one value to the next).
        let mut level = series.iter().rfind(|(t, _)| *t < played.start).map(|(_, v)| *v).unwrap_or(0);
        let mut points = vec![(played.start, level as f64)];
        for (t, v) in series.into_iter().filter(|(t, _)| (played.start..=played.end).contains(t)) {
            points.push((t, level as f64));
            points.push((t, v as f64));
            level = v;
        }
        points.push((played.end, level as f64));
        points
    };
    let mut probes = Vec::new();
    let mut bounds = Vec::new();
    for ((budget, cell), history) in super::state::cells(&played.events) {
        let name = cell_probe(&budget, &cell);
        if let Some(b) = plan.fleet.budgets.iter().find(|b| b.config.name == budget) {
            bounds.push(Bound { probe: name.clone(), min: None, max: Some(f64::from(b.limit)) });
        }
        probes.push(ProbeSeries { name, points: clip(history.series) });
    }
    probes.push(ProbeSeries {
        name: "daemons with an etcd session".into(),
        points: clip(super::state::member_series(&played.events)),
    });
    (probes, bounds)
}
