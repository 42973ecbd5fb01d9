//! A game day's section of the report page, before the timelines: the
//! budget cells as etcd saw them, the decisions per fault across every
//! daemon, the kills, the fleet breaker and the daemons.

use std::fmt::Write as _;

use render::escape;
use render::table::{table, Row};

use super::{DaemonFigures, DaemonKillFigures, FaultFigures, FleetFigures, LeaderKillFigures};

/// A figure in ms, or `-`.
pub(super) fn ms(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into())
}

/// The section.
pub fn section(f: &FleetFigures) -> String {
    let mut out = budget_table(f);
    out.push_str(&faults_table(f));
    out.push_str("<h2>Kills</h2><ul>");
    for k in &f.leader_kills {
        out.push_str(&leader_kill(k));
    }
    for k in &f.daemon_kills {
        out.push_str(&daemon_kill(k));
    }
    let _ = write!(out, "</ul><h2>Fleet breaker</h2><p id=\"fleet-breaker\">{}</p>", escape(&f.breaker.explanation));
    out.push_str(&daemons_table(&f.daemons));
    out
}

/// Tokens per budget cell, from etcd.
fn budget_table(f: &FleetFigures) -> String {
    let head = "<h2>Fleet budget</h2><p>Tokens per budget cell, read from etcd (every put and delete the daemons made, in revision order).</p>";
    let names = ["budget", "cell", "limit", "most at once", "over", "tokens"];
    let rows = table("fleet-budget", &names, &f.budgets, |c| {
        let over = Row::new().cell(&c.budget).cell(&c.cell).cell(c.limit).cell(c.max_concurrent).cell(c.over);
        over.fail_if(c.over > 0).text(c.tokens.join(", "))
    });
    format!("{head}{rows}")
}

/// The decisions per fault, across every daemon.
fn faults_table(f: &FleetFigures) -> String {
    let names = [
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
    ];
    format!("<h2>Decisions per fault, across every daemon</h2>{}", table("fleet-faults", &names, &f.faults, fault_row))
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

/// etcd's leader killed, as a list item.
fn leader_kill(k: &LeaderKillFigures) -> String {
    format!(
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
    )
}

/// A token holder killed, as a list item.
fn daemon_kill(k: &DaemonKillFigures) -> String {
    format!(
        "<li>{} SIGKILLed holding {} token(s), {}'s among them ({}): all gone from etcd after {} ms (lease TTL {:.0} ms, deadline {:.0} ms){}</li>",
        escape(k.daemon.as_deref().unwrap_or("nobody")),
        k.tokens.len(),
        escape(&k.fault),
        escape(k.decision.as_deref().unwrap_or("-")),
        ms(k.returned_after_ms),
        k.lease_ttl_ms,
        k.within_ms,
        k.problem.as_ref().map(|p| format!("; {}", escape(p))).unwrap_or_default()
    )
}

/// One row per daemon.
fn daemons_table(daemons: &[DaemonFigures]) -> String {
    let names = [
        "daemon",
        "decisions",
        "executed",
        "held: fleet budget",
        "held: own limits",
        "held: etcd unavailable",
        "own breaker",
        "killed at ms",
    ];
    let rows = table("fleet-daemons", &names, daemons, |d| {
        Row::new()
            .cell(&d.name)
            .cell(d.decisions)
            .cell(d.executed)
            .cell(d.held_fleet_budget)
            .cell(d.held_local_limit)
            .cell(d.held_unavailable)
            .cell(if d.breaker_tripped { "tripped" } else { "clear" })
            .cell(ms(d.killed_at_ms))
    });
    format!("<h2>Daemons</h2>{rows}")
}
