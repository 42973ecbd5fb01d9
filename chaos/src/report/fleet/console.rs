//! A game day's lines on the terminal, after the chaos table: the
//! decisions per fault, the budget cells, the kills, the fleet breaker and
//! what failed.

use std::fmt::Write as _;

use super::html::ms;
use super::{DaemonKillFigures, FleetFigures, LeaderKillFigures};

/// Every line, each ending in a newline.
pub fn lines(f: &FleetFigures) -> String {
    let mut out = faults(f);
    out.push_str(&budgets(f));
    for k in &f.leader_kills {
        out.push_str(&leader_kill(k));
    }
    for k in &f.daemon_kills {
        out.push_str(&daemon_kill(k));
    }
    let _ = writeln!(out, "  fleet breaker: {}", f.breaker.explanation);
    for failure in &f.failures {
        let _ = writeln!(out, "  FAILED: {failure}");
    }
    out
}

/// The decisions per fault, and what each column holds.
fn faults(f: &FleetFigures) -> String {
    let mut out = format!(
        "\n  {:<10} {:>7} {:>9} {:>8} {:>7} {:>7} {:>7} {:>7}   {:>11} {:>7} {:>7}\n",
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
    out
}

/// The budget cells, and the tokens over budget.
fn budgets(f: &FleetFigures) -> String {
    let mut out = String::from("\n  budget     cell         limit  most at once  over  tokens\n");
    for c in &f.budgets {
        let (cell, tokens) = (format!("{:<10} {:<12}", c.budget, c.cell), c.tokens.join(", "));
        let _ = writeln!(out, "  {cell} {:>5} {:>13} {:>5}  {tokens}", c.limit, c.max_concurrent, c.over);
    }
    let _ = writeln!(out, "  drains over budget: {}", f.over_budget);
    out
}

/// etcd's leader killed: who leads after, and what the daemons did.
fn leader_kill(k: &LeaderKillFigures) -> String {
    let mut out = format!(
        "  etcd leader {} killed: {} leads after {} ms; {} session(s) reopened; after it {} held as etcd unavailable, {} fleet-scoped executed\n",
        k.killed,
        k.elected.as_deref().unwrap_or("no member"),
        ms(k.elected_after_ms),
        k.sessions_reopened,
        k.held_unavailable_after,
        k.executed_after
    );
    // The two lists that differ from one game to the next, one per line.
    for (what, list, sep) in
        [("sessions reopened", &k.reopened_by, ", "), ("held as etcd unavailable", &k.unavailable, "; ")]
    {
        if !list.is_empty() {
            let _ = writeln!(out, "    {what}: {}", list.join(sep));
        }
    }
    out
}

/// A token holder killed: when its tokens were gone.
fn daemon_kill(k: &DaemonKillFigures) -> String {
    format!(
        "  {} killed holding {} token(s), {}'s among them: all gone from etcd after {} ms (lease TTL {:.0} ms, deadline {:.0} ms)\n",
        k.daemon.as_deref().unwrap_or("nobody"),
        k.tokens.len(),
        k.fault,
        ms(k.returned_after_ms),
        k.lease_ttl_ms,
        k.within_ms
    )
}
