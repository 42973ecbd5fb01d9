//! What a played game measured ([`super::figures`]), every figure from
//! what the daemons and etcd did: the daemons' decisions (their ledgers)
//! and the keys they wrote in etcd (the watch). Also the game's verdict:
//! each expectation that failed, in words.

use std::collections::BTreeMap;

use super::about::of_fault;
use super::game::Played;
use super::plan::{FleetPlan, GameFault};
use super::spec::BreakerExpect;
use super::state;
use crate::report::fleet::{
    BreakerFigures, CellFigures, DaemonFigures, DaemonKillFigures, FaultFigures, FleetFigures, LeaderKillFigures,
    PhaseRecord, Role,
};
use crate::report::Stats;
use engine::dispatch::{Decision, Verdict};
use engine::Nanos;

/// Why a proposal was held, by who held it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// A fleet budget was exhausted (etcd said no).
    FleetBudget,
    /// The daemon's own blast-radius limits: a hit of its breaker.
    LocalLimit,
    /// etcd could not be asked: held, fail safe.
    Unavailable,
    /// A breaker, local or fleet.
    Breaker,
    /// A standby aggregator.
    Standby,
}

/// The holder of a held verdict's reason (the words the dispatcher and the
/// coordinator write).
fn held(reason: &str) -> Held {
    if reason.starts_with("fleet budget ") {
        Held::FleetBudget
    } else if reason.starts_with("coordination unavailable") {
        Held::Unavailable
    } else if reason.starts_with("fleet circuit breaker") || reason.starts_with("circuit breaker tripped") {
        Held::Breaker
    } else if reason.starts_with("standby aggregator") {
        Held::Standby
    } else {
        Held::LocalLimit
    }
}

/// A time since the game's start, ms.
fn ms(t: Nanos, start: Nanos) -> f64 {
    (t - start) as f64 / 1e6
}

/// Every decision of the game with its daemon.
fn all(played: &Played) -> impl Iterator<Item = (&str, Role, &Decision)> {
    played.daemons.iter().flat_map(|d| d.decisions.iter().map(move |dec| (d.name.as_str(), d.role, dec)))
}

/// The figures of `played`.
pub fn figures(plan: &FleetPlan, played: &Played) -> FleetFigures {
    let cells = state::cells(&played.events);
    let tokens: Vec<state::TokenKey> = cells.values().flat_map(|c| c.tokens.iter().map(|(k, _)| k.clone())).collect();
    let daemons = played.daemons.iter().map(|d| daemon_figures(d, played.start)).collect::<Vec<_>>();
    let faults: Vec<FaultFigures> =
        plan.faults.iter().enumerate().map(|(i, f)| fault_figures(plan, played, i, f, &tokens)).collect();
    let budgets: Vec<CellFigures> = cells
        .iter()
        .map(|((budget, cell), h)| {
            let limit = plan.fleet.budgets.iter().find(|b| &b.config.name == budget).map(|b| b.limit).unwrap_or(0);
            CellFigures {
                budget: budget.clone(),
                cell: cell.clone(),
                limit,
                max_concurrent: h.max_concurrent,
                over: h.max_concurrent.saturating_sub(limit as usize),
                tokens: h.tokens.iter().map(|(k, kind)| format!("{} {} ({kind})", k.holder, k.decision)).collect(),
            }
        })
        .collect();
    let over_budget = budgets.iter().map(|c| c.over).sum();
    let mut figures = FleetFigures {
        etcd_members: played.members.len(),
        setup_ms: played.setup_ms,
        leader_kills: leader_kills(plan, played),
        daemon_kills: daemon_kills(plan, played),
        breaker: breaker(plan, played, &daemons),
        daemons,
        faults,
        budgets,
        over_budget,
        phases: played.phases.clone(),
        failures: Vec::new(),
    };
    figures.failures = failures(plan, &figures);
    figures
}

fn daemon_figures(d: &super::game::DaemonRun, start: Nanos) -> DaemonFigures {
    let mut f = DaemonFigures {
        name: d.name.clone(),
        role: d.role,
        decisions: d.decisions.len(),
        executed: 0,
        held_fleet_budget: 0,
        held_local_limit: 0,
        held_unavailable: 0,
        breaker_tripped: false,
        killed_at_ms: d.killed_at.map(|t| ms(t, start)),
    };
    for dec in &d.decisions {
        match &dec.verdict {
            Verdict::Executed { .. } => f.executed += 1,
            Verdict::Held { reason } => match held(reason) {
                Held::FleetBudget => f.held_fleet_budget += 1,
                Held::LocalLimit => f.held_local_limit += 1,
                Held::Unavailable => f.held_unavailable += 1,
                Held::Breaker | Held::Standby => {}
            },
            _ => {}
        }
        if dec.steps.iter().any(|s| s.what.starts_with("circuit breaker tripped:")) {
            f.breaker_tripped = true;
        }
    }
    f
}

fn fault_figures(
    plan: &FleetPlan,
    played: &Played,
    i: usize,
    f: &GameFault,
    tokens: &[state::TokenKey],
) -> FaultFigures {
    let start = played.fault_starts[i];
    let mut out = FaultFigures {
        name: f.name.clone(),
        label: f.fault.label.clone(),
        action: f.action.clone(),
        by: f.by,
        started_at_ms: start.map(|s| ms(s, played.start)),
        deciders: f.deciders().len(),
        proposals: 0,
        executed: 0,
        executed_by: Vec::new(),
        held_fleet_budget: 0,
        held_local_limit: 0,
        held_unavailable: 0,
        held_breaker: 0,
        held_standby: 0,
        other: BTreeMap::new(),
        token_holders: Vec::new(),
        executed_without_token: 0,
        detect_per_daemon: Stats::default(),
        ttd_ms: None,
        detected_by: None,
        ttm_ms: None,
        mitigated_by: None,
    };
    if let Some(start) = start {
        count_decisions(&mut out, plan, played, f, start, tokens);
    }
    out
}

/// Counts into `out` every decision about `f` (started at `start`): its
/// verdicts, who executed it and with which token, and the first
/// detection and execution.
fn count_decisions(
    out: &mut FaultFigures,
    plan: &FleetPlan,
    played: &Played,
    f: &GameFault,
    start: Nanos,
    tokens: &[state::TokenKey],
) {
    let mut first_per_daemon: BTreeMap<&str, Nanos> = BTreeMap::new();
    let mut first: Option<(Nanos, String)> = None;
    let mut mitigated: Option<(Nanos, String)> = None;
    for (who, role, d) in all(played).filter(|(_, _, d)| of_fault(f, start, d)) {
        out.proposals += 1;
        let fired = d.proposal.decided_at;
        let e = first_per_daemon.entry(who).or_insert(fired);
        *e = (*e).min(fired);
        if first.as_ref().is_none_or(|(t, _)| fired < *t) {
            first = Some((fired, format!("{} {} on {who}", d.proposal.rule, d.proposal.subject)));
        }
        match &d.verdict {
            Verdict::Executed { .. } => {
                out.executed += 1;
                out.executed_by.push(format!("{who} {}", d.id));
                if let Some(t) = tokens.iter().find(|t| t.holder == who && t.decision == d.id) {
                    out.token_holders.push(format!("{} {} ({} {})", t.holder, t.decision, t.budget, t.cell));
                } else if plan.takes_token(role, &d.proposal.action.kind) {
                    out.executed_without_token += 1;
                }
                if mitigated.as_ref().is_none_or(|(t, _)| d.finished_at < *t) {
                    mitigated = Some((
                        d.finished_at,
                        format!("{} {} by {who}", d.proposal.action.kind, d.proposal.action.target),
                    ));
                }
            }
            Verdict::Held { reason } => match held(reason) {
                Held::FleetBudget => out.held_fleet_budget += 1,
                Held::LocalLimit => out.held_local_limit += 1,
                Held::Unavailable => out.held_unavailable += 1,
                Held::Breaker => out.held_breaker += 1,
                Held::Standby => out.held_standby += 1,
            },
            other => *out.other.entry(other.name().to_string()).or_default() += 1,
        }
    }
    let detect: Vec<Nanos> = first_per_daemon.values().map(|t| t - start).collect();
    out.detect_per_daemon = Stats::of(&detect);
    if let Some((t, by)) = first {
        out.ttd_ms = Some(ms(t, start));
        out.detected_by = Some(by);
    }
    if let Some((t, by)) = mitigated {
        out.ttm_ms = Some(ms(t, start));
        out.mitigated_by = Some(by);
    }
}

fn leader_kills(plan: &FleetPlan, played: &Played) -> Vec<LeaderKillFigures> {
    played
        .phases
        .iter()
        .filter_map(|p| match p {
            PhaseRecord::KillEtcdLeader { at, killed, term, elected, new_term, elected_at, within } => {
                let after = all(played).filter(|(_, _, d)| d.dispatched_at >= *at);
                let (mut unavailable, mut executed) = (Vec::new(), 0);
                for (who, role, d) in after {
                    match &d.verdict {
                        Verdict::Held { reason } if held(reason) == Held::Unavailable => {
                            // "coordination unavailable: reading a budget at URLS: …": what failed.
                            let what = reason.trim_start_matches("coordination unavailable: ");
                            unavailable.push(format!("{who}: {}", what.split(" at ").next().unwrap_or(what)));
                        }
                        Verdict::Executed { .. } if plan.takes_token(role, &d.proposal.action.kind) => executed += 1,
                        _ => {}
                    }
                }
                let reopened = state::sessions_opened_since(&played.events, *at);
                Some(LeaderKillFigures {
                    killed: killed.clone(),
                    elected: elected.clone(),
                    terms: (*term, *new_term),
                    elected_after_ms: elected_at.map(|t| ms(t, *at)),
                    within_ms: *within as f64 / 1e6,
                    sessions_reopened: reopened.len(),
                    reopened_by: reopened.into_iter().collect(),
                    held_unavailable_after: unavailable.len(),
                    unavailable,
                    executed_after: executed,
                })
            }
            _ => None,
        })
        .collect()
}

fn daemon_kills(plan: &FleetPlan, played: &Played) -> Vec<DaemonKillFigures> {
    played
        .phases
        .iter()
        .filter_map(|p| match p {
            PhaseRecord::KillTokenHolder { at, fault, daemon, decision, tokens, returned_at, within, problem } => {
                Some(DaemonKillFigures {
                    fault: fault.clone(),
                    daemon: daemon.clone(),
                    decision: decision.clone(),
                    tokens: tokens.clone(),
                    lease_ttl_ms: plan.fleet.lease_ttl as f64 / 1e6,
                    returned_after_ms: returned_at.map(|t| ms(t, *at)),
                    within_ms: *within as f64 / 1e6,
                    problem: problem.clone(),
                })
            }
            _ => None,
        })
        .collect()
}

fn breaker(plan: &FleetPlan, played: &Played, daemons: &[DaemonFigures]) -> BreakerFigures {
    let most = daemons.iter().max_by_key(|d| d.held_local_limit).map(|d| (d.name.clone(), d.held_local_limit));
    let trip_after = plan.trip_after.0;
    match state::breaker(&played.events) {
        Some((at, b)) => BreakerFigures {
            tripped: true,
            explanation: format!("tripped by {}: {}", b.by, b.reason),
            by: Some(b.by),
            reason: Some(b.reason),
            seen_at_ms: Some(ms(at, played.start)),
            most_local_hits: most,
            trip_after,
        },
        None => BreakerFigures {
            tripped: false,
            by: None,
            reason: None,
            seen_at_ms: None,
            explanation: format!(
                "not tripped: a daemon trips the fleet breaker when its own breaker trips, after {trip_after} holds by \
                 its own blast-radius limits within the playbook's breaker window; a refusal by a fleet budget is not \
                 one. The most any daemon had: {}",
                most.as_ref().map(|(who, n)| format!("{n} ({who})")).unwrap_or_else(|| "none".into())
            ),
            most_local_hits: most,
            trip_after,
        },
    }
}

/// Each expectation that failed, in words: the budget, each fault, the
/// settle phases, the kills, the breaker.
fn failures(plan: &FleetPlan, f: &FleetFigures) -> Vec<String> {
    let mut out = Vec::new();
    for c in f.budgets.iter().filter(|c| c.over > 0) {
        out.push(format!(
            "budget {} {}: {} tokens at once, over its limit of {} ({})",
            c.budget,
            c.cell,
            c.max_concurrent,
            c.limit,
            c.tokens.join(", ")
        ));
    }
    for (fault, figures) in plan.faults.iter().zip(&f.faults) {
        out.extend(fault_failures(fault, figures));
    }
    out.extend(f.phases.iter().filter_map(settle_failure));
    out.extend(kill_failures(f));
    match (plan.breaker, f.breaker.tripped) {
        (Some(BreakerExpect::Clear), true) => out.push(format!("the fleet breaker tripped: {}", f.breaker.explanation)),
        (Some(BreakerExpect::Tripped), false) => {
            out.push(format!("the fleet breaker did not trip: {}", f.breaker.explanation))
        }
        _ => {}
    }
    out
}

/// What the daemons did wrong about one fault: not exactly the executions
/// expected, one without a token, a detection or mitigation late.
fn fault_failures(fault: &GameFault, figures: &FaultFigures) -> Vec<String> {
    let name = &fault.name;
    let mut out = Vec::new();
    if let Some(n) = fault.executed {
        if figures.executed != n {
            out.push(format!(
                "{name}: {} {} executed across the fleet; expected exactly {n} ({})",
                figures.executed,
                fault.action,
                figures.executed_by.join(", ")
            ));
        }
    }
    if figures.executed_without_token > 0 {
        out.push(format!(
            "{name}: {} fleet-scoped action(s) executed with no token in etcd",
            figures.executed_without_token
        ));
    }
    let late = |what: &str, got: Option<f64>, within: Option<Nanos>| -> Option<String> {
        let within = within? as f64 / 1e6;
        match got {
            Some(t) if t <= within => None,
            Some(t) => Some(format!("{name}: {what} after {t:.0} ms; expected within {within:.0} ms")),
            None => Some(format!("{name}: never {what}; expected within {within:.0} ms")),
        }
    };
    out.extend(late("detected", figures.ttd_ms, fault.detect_within));
    out.extend(late("mitigated", figures.ttm_ms, fault.mitigate_within));
    out
}

/// A settle phase whose deadline passed with daemons still undecided.
fn settle_failure(p: &PhaseRecord) -> Option<String> {
    let PhaseRecord::Settle { faults, done_at: None, within, missing, .. } = p else { return None };
    let shown: Vec<&str> = missing.iter().take(8).map(String::as_str).collect();
    Some(format!(
        "{}: not every daemon decided within {} ms: {}{}",
        faults.join(", "),
        within / 1_000_000,
        shown.join(", "),
        if missing.len() > shown.len() { format!(" and {} more", missing.len() - shown.len()) } else { String::new() }
    ))
}

/// etcd electing no new leader in time, and a dead daemon's tokens not
/// gone in time.
fn kill_failures(f: &FleetFigures) -> Vec<String> {
    let mut out = Vec::new();
    for k in &f.leader_kills {
        match k.elected_after_ms {
            Some(t) if t <= k.within_ms => {}
            Some(t) => out.push(format!("etcd: a new leader after {t:.0} ms; expected within {:.0} ms", k.within_ms)),
            None => out.push(format!("etcd: no new leader after {} was killed", k.killed)),
        }
    }
    for k in &f.daemon_kills {
        let who = k.daemon.as_deref().unwrap_or("nobody");
        match (&k.problem, k.returned_after_ms) {
            (Some(p), _) => out.push(format!("kill-token-holder {}: {p}", k.fault)),
            (None, Some(t)) if t <= k.within_ms => {}
            (None, Some(t)) => out.push(format!(
                "{who}'s token(s) gone from etcd {t:.0} ms after its SIGKILL; expected within {:.0} ms (lease TTL {:.0} ms)",
                k.within_ms, k.lease_ttl_ms
            )),
            (None, None) => out.push(format!("{who}'s token(s) still in etcd after its SIGKILL")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_is_told_by_its_reason() {
        assert_eq!(
            held("fleet budget rail (1 at once per plane) exhausted in plane=0: 1 of 1 in use, held by node-07"),
            Held::FleetBudget
        );
        assert_eq!(held("coordination unavailable: no session with etcd"), Held::Unavailable);
        assert_eq!(held("fleet circuit breaker tripped by n07: x"), Held::Breaker);
        assert_eq!(held("max_rails_per_plane: plane 0 already has 1 rail drained"), Held::LocalLimit);
    }
}
