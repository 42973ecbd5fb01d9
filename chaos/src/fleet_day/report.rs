//! A game day's report in the chaos reports' form: a [`Report`] of one
//! wall-clock run (faults, every daemon's decisions, the tokens in use and
//! the sessions over time as probes, each fault's detection and
//! mitigation), which `rocemend chaos report` renders like any other, with
//! the fleet's own figures beside it in the same JSON file
//! ([`FleetReport`]) and as a section of the HTML page and the console
//! table.

use std::fmt::Write as _;

use engine::Nanos;
use serde::{Deserialize, Serialize};

use super::figures::{FaultFigures, FleetFigures};
use super::game::{PhaseRecord, Played};
use super::plan::FleetPlan;
use crate::report::{html, table, FaultOutcome, FaultRecord, Moments, ProbeSeries, Report, RunOutcome, RunRecord};
use crate::run::lockstep::decision_record;
use crate::scenario::plan::Bound;
use render::escape;
use render::table::{table_head, Row};

/// A game day's report: the chaos report, and the fleet's figures. Read
/// as a [`Report`], the same file loses only `fleet`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetReport {
    /// The chaos report.
    #[serde(flatten)]
    pub report: Report,
    /// The fleet's figures.
    pub fleet: FleetFigures,
}

/// The probe of a budget cell's tokens in use.
fn cell_probe(budget: &str, cell: &str) -> String {
    format!("fleet tokens {budget} {cell}")
}

/// The report of `played`.
pub fn build(plan: &FleetPlan, played: &Played, fleet: FleetFigures, elapsed_ms: f64) -> FleetReport {
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
            let nodes = f.sites.iter().map(|s| s.node.clone()).collect::<std::collections::BTreeSet<_>>();
            Some(FaultRecord {
                label: format!("{}: {}", f.name, f.label),
                nodes: nodes.into_iter().collect(),
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
    let report = Report {
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
    };
    FleetReport { report, fleet }
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

fn ms(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into())
}

/// The HTML page: the chaos report's, with the fleet's section before the
/// timelines.
pub fn html(r: &FleetReport) -> String {
    let page = html::render(&r.report);
    let section = fleet_section(&r.fleet);
    match page.find("<h2>Timelines</h2>") {
        Some(at) => format!("{}{section}{}", &page[..at], &page[at..]),
        None => page.replace("</body>", &format!("{section}</body>")),
    }
}

fn fleet_section(f: &FleetFigures) -> String {
    let mut out = String::from("<h2>Fleet budget</h2><p>Tokens per budget cell, read from etcd (every put and delete the daemons made, in revision order).</p>");
    out.push_str(&table_head("fleet-budget", &["budget", "cell", "limit", "most at once", "over", "tokens"]));
    for c in &f.budgets {
        let row = Row::new()
            .cell(&c.budget)
            .cell(&c.cell)
            .cell(c.limit)
            .cell(c.max_concurrent)
            .cell(c.over)
            .fail_if(c.over > 0)
            .text(c.tokens.join(", "));
        let _ = write!(out, "{row}");
    }
    out.push_str("</table><h2>Decisions per fault, across every daemon</h2>");
    out.push_str(&table_head(
        "fleet-faults",
        &[
            "fault",
            "deciders",
            "proposals",
            "executed",
            "held: fleet budget",
            "held: own limits",
            "held: etcd unavailable",
            "held: breaker",
            "held: standby",
            "detect p50 / max ms",
            "TTD ms",
            "TTM ms",
            "executed by",
            "token",
        ],
    ));
    for x in &f.faults {
        let _ = write!(out, "{}", fault_row(x));
    }
    out.push_str("</table><h2>Kills</h2><ul>");
    for k in &f.leader_kills {
        let _ = write!(
            out,
            "<li>etcd leader {} SIGKILLed (term {}): {} leads after {} ms (deadline {:.0} ms); {} daemon(s) opened a new session ({}); {} proposal(s) held as coordination unavailable ({}) and {} fleet-scoped action(s) executed after it.</li>",
            escape(&k.killed),
            k.terms.0,
            escape(k.elected.as_deref().unwrap_or("no member")),
            ms(k.elected_after_ms),
            k.within_ms,
            k.sessions_reopened,
            escape(&k.reopened_by.join(", ")),
            k.held_unavailable_after,
            escape(&k.unavailable.join("; ")),
            k.executed_after
        );
    }
    for k in &f.daemon_kills {
        let _ = write!(
            out,
            "<li>{} SIGKILLed holding {} token(s), {}'s among them ({}): all gone from etcd after {} ms (lease TTL {:.0} ms, deadline {:.0} ms){}</li>",
            escape(k.daemon.as_deref().unwrap_or("nobody")),
            k.tokens.len(),
            escape(&k.fault),
            escape(k.decision.as_deref().unwrap_or("-")),
            ms(k.returned_after_ms),
            k.lease_ttl_ms,
            k.within_ms,
            k.problem.as_ref().map(|p| format!("; {}", escape(p))).unwrap_or_default()
        );
    }
    let _ = write!(out, "</ul><h2>Fleet breaker</h2><p id=\"fleet-breaker\">{}</p>", escape(&f.breaker.explanation));
    out.push_str("<h2>Daemons</h2>");
    out.push_str(&table_head(
        "fleet-daemons",
        &[
            "daemon",
            "decisions",
            "executed",
            "held: fleet budget",
            "held: own limits",
            "held: etcd unavailable",
            "own breaker",
            "killed at ms",
        ],
    ));
    for d in &f.daemons {
        let row = Row::new()
            .cell(&d.name)
            .cell(d.decisions)
            .cell(d.executed)
            .cell(d.held_fleet_budget)
            .cell(d.held_local_limit)
            .cell(d.held_unavailable)
            .cell(if d.breaker_tripped { "tripped" } else { "clear" })
            .cell(ms(d.killed_at_ms));
        let _ = write!(out, "{row}");
    }
    out.push_str("</table>");
    out
}

/// One fault's row of the decisions table.
fn fault_row(x: &FaultFigures) -> Row {
    let token = if x.token_holders.is_empty() { "none (local scope)".to_string() } else { x.token_holders.join(", ") };
    Row::new()
        .cell(format!("{}: {}", x.name, x.label))
        .cell(x.deciders)
        .cell(x.proposals)
        .cell(x.executed)
        .cell(x.held_fleet_budget)
        .cell(x.held_local_limit)
        .cell(x.held_unavailable)
        .cell(x.held_breaker)
        .cell(x.held_standby)
        .cell(format!("{} / {}", ms(x.detect_per_daemon.p50), ms(x.detect_per_daemon.max)))
        .cell(ms(x.ttd_ms))
        .cell(ms(x.ttm_ms))
        .text(x.executed_by.join(", "))
        .text(token)
}

/// The console table: the chaos table of the game, then the fleet's.
pub fn console(r: &FleetReport) -> String {
    let f = &r.fleet;
    let mut out = table::table(std::slice::from_ref(&r.report));
    let _ = writeln!(
        out,
        "\n  {:<10} {:>7} {:>9} {:>8} {:>7} {:>7} {:>7} {:>7}   {:>11} {:>7} {:>7}",
        "fault", "daemons", "proposals", "executed", "fleet", "local", "etcd?", "breaker", "detect p50", "max", "TTM"
    );
    for x in &f.faults {
        let _ = writeln!(
            out,
            "  {:<10} {:>7} {:>9} {:>8} {:>7} {:>7} {:>7} {:>7}   {:>11} {:>7} {:>7}   {}",
            x.name,
            x.deciders,
            x.proposals,
            x.executed,
            x.held_fleet_budget,
            x.held_local_limit,
            x.held_unavailable,
            x.held_breaker,
            ms(x.detect_per_daemon.p50),
            ms(x.detect_per_daemon.max),
            ms(x.ttm_ms),
            x.executed_by.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "  (held by: fleet = a fleet budget in etcd, local = the daemon's own limits, etcd? = coordination unavailable, \
         breaker = its own or the fleet's breaker)"
    );
    let _ = writeln!(out, "\n  budget     cell         limit  most at once  over  tokens");
    for c in &f.budgets {
        let _ = writeln!(
            out,
            "  {:<10} {:<12} {:>5} {:>13} {:>5}  {}",
            c.budget,
            c.cell,
            c.limit,
            c.max_concurrent,
            c.over,
            c.tokens.join(", ")
        );
    }
    let _ = writeln!(out, "  drains over budget: {}", f.over_budget);
    for k in &f.leader_kills {
        let _ = writeln!(
            out,
            "  etcd leader {} killed: {} leads after {} ms; {} session(s) reopened; after it {} held as etcd unavailable, {} fleet-scoped executed",
            k.killed,
            k.elected.as_deref().unwrap_or("no member"),
            ms(k.elected_after_ms),
            k.sessions_reopened,
            k.held_unavailable_after,
            k.executed_after
        );
        if !k.reopened_by.is_empty() {
            let _ = writeln!(out, "    sessions reopened: {}", k.reopened_by.join(", "));
        }
        if !k.unavailable.is_empty() {
            let _ = writeln!(out, "    held as etcd unavailable: {}", k.unavailable.join("; "));
        }
    }
    for k in &f.daemon_kills {
        let _ = writeln!(
            out,
            "  {} killed holding {} token(s), {}'s among them: all gone from etcd after {} ms (lease TTL {:.0} ms, deadline {:.0} ms)",
            k.daemon.as_deref().unwrap_or("nobody"),
            k.tokens.len(),
            k.fault,
            ms(k.returned_after_ms),
            k.lease_ttl_ms,
            k.within_ms
        );
    }
    let _ = writeln!(out, "  fleet breaker: {}", f.breaker.explanation);
    for failure in &f.failures {
        let _ = writeln!(out, "  FAILED: {failure}");
    }
    out
}
