//! A fleet game day's own part of its report, [`Report::fleet`]: per
//! daemon, per fault, per budget cell, per kill, the fleet breaker, the
//! phases as played and the failures. Times are ms, from the game's start
//! or from the event they follow. The rest of a game's report is a chaos
//! report of one wall-clock run, drawn as any other; this part is drawn
//! by [`html`] (a section of the page) and [`console`] (lines after the
//! recovery table).
//!
//! [`Report::fleet`]: super::Report::fleet

pub mod console;
pub mod html;

use std::collections::BTreeMap;

use engine::Nanos;
use serde::{Deserialize, Serialize};

use super::stats::Stats;
use crate::spec::By;

/// What a daemon of a game is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The daemon of one node.
    Node,
    /// The switch aggregator.
    Aggregator,
}

/// What one phase did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "kebab-case")]
pub enum PhaseRecord {
    /// Faults put in force.
    Start {
        /// When.
        at: Nanos,
        /// Which.
        faults: Vec<String>,
    },
    /// Waited for the daemons' decisions.
    Settle {
        /// When it began.
        at: Nanos,
        /// Which faults.
        faults: Vec<String>,
        /// When every daemon had decided; `None`: not within the deadline.
        done_at: Option<Nanos>,
        /// The deadline, ns.
        within: Nanos,
        /// Who had not decided on what, at the deadline.
        missing: Vec<String>,
    },
    /// Waited.
    Pause {
        /// When.
        at: Nanos,
        /// How long, ns.
        ns: Nanos,
    },
    /// etcd's leader killed.
    KillEtcdLeader {
        /// When.
        at: Nanos,
        /// The member killed.
        killed: String,
        /// The raft term it led.
        term: u64,
        /// The member that leads next.
        elected: Option<String>,
        /// Its term.
        new_term: Option<u64>,
        /// When the live members agreed on it.
        elected_at: Option<Nanos>,
        /// The deadline, ns.
        within: Nanos,
    },
    /// The daemon holding a fault's token killed.
    KillTokenHolder {
        /// When.
        at: Nanos,
        /// The fault.
        fault: String,
        /// The daemon killed.
        daemon: Option<String>,
        /// The decision whose token it held.
        decision: Option<String>,
        /// Every token key it held in etcd when it was killed (the fault's
        /// and any other).
        tokens: Vec<String>,
        /// When the last of them was gone from etcd.
        returned_at: Option<Nanos>,
        /// The deadline, ns.
        within: Nanos,
        /// Why nothing could be killed or measured, if so.
        problem: Option<String>,
    },
}

/// One daemon's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonFigures {
    /// Its identity.
    pub name: String,
    /// What it is.
    pub role: Role,
    /// Decisions it made during the game.
    pub decisions: usize,
    /// Executed.
    pub executed: usize,
    /// Held by a fleet budget.
    pub held_fleet_budget: usize,
    /// Held by its own limits (each one a hit of its breaker).
    pub held_local_limit: usize,
    /// Held because etcd could not be asked.
    pub held_unavailable: usize,
    /// Whether its own breaker tripped.
    pub breaker_tripped: bool,
    /// When the game killed it, ms from the game's start.
    pub killed_at_ms: Option<f64>,
}

/// One fault's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultFigures {
    /// Its name.
    pub name: String,
    /// What and where.
    pub label: String,
    /// The action the daemons propose.
    pub action: String,
    /// Who proposes it.
    pub by: By,
    /// When it started, ms from the game's start.
    pub started_at_ms: Option<f64>,
    /// Daemons expected to decide.
    pub deciders: usize,
    /// Proposals decided, across every daemon.
    pub proposals: usize,
    /// Executed, across every daemon: the drains the budget let through.
    pub executed: usize,
    /// Who executed what: `node-07 d000000001f`.
    pub executed_by: Vec<String>,
    /// Held by a fleet budget.
    pub held_fleet_budget: usize,
    /// Held by a daemon's own limits.
    pub held_local_limit: usize,
    /// Held because etcd could not be asked.
    pub held_unavailable: usize,
    /// Held by a breaker: the daemon's own, or the fleet's.
    pub held_breaker: usize,
    /// Held as a standby aggregator (only the leader changes switches).
    pub held_standby: usize,
    /// Any other verdict (duplicate, failed, …), by name.
    pub other: BTreeMap<String, usize>,
    /// Who held the tokens of the executed actions, read from etcd.
    pub token_holders: Vec<String>,
    /// Executed fleet-scoped actions with no token in etcd (must be 0).
    pub executed_without_token: usize,
    /// Each deciding daemon's time to detect (its first proposal's firing),
    /// ms from the fault's start.
    pub detect_per_daemon: Stats,
    /// The first detection, ms from the fault's start, and by what.
    pub ttd_ms: Option<f64>,
    /// What detected it first.
    pub detected_by: Option<String>,
    /// The first execution, ms from the fault's start.
    pub ttm_ms: Option<f64>,
    /// What mitigated it first.
    pub mitigated_by: Option<String>,
}

/// One budget cell's figures, from etcd.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellFigures {
    /// The budget.
    pub budget: String,
    /// The cell (`plane=0`).
    pub cell: String,
    /// Its limit.
    pub limit: u32,
    /// The most tokens it held at once.
    pub max_concurrent: usize,
    /// Tokens over the limit at that moment (must be 0).
    pub over: usize,
    /// Every token it held: `node-07 d000000001f (rail.drain)`.
    pub tokens: Vec<String>,
}

/// etcd's leader killed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderKillFigures {
    /// The member killed, and the one elected.
    pub killed: String,
    /// The member that leads after it.
    pub elected: Option<String>,
    /// Raft terms before and after.
    pub terms: (u64, Option<u64>),
    /// From the kill until the live members agreed on a new leader, ms.
    pub elected_after_ms: Option<f64>,
    /// The deadline, ms.
    pub within_ms: f64,
    /// Daemons that opened a new session after the kill (their lease's
    /// keep-alive went through the dead member).
    pub sessions_reopened: usize,
    /// Which.
    pub reopened_by: Vec<String>,
    /// Proposals held as "coordination unavailable" after the kill.
    pub held_unavailable_after: usize,
    /// Which daemon held which, and what failed: `node-02: reading a budget`.
    pub unavailable: Vec<String>,
    /// Fleet-scoped actions executed after the kill (the daemons kept
    /// working).
    pub executed_after: usize,
}

/// A token holder killed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonKillFigures {
    /// The fault whose token it held.
    pub fault: String,
    /// The daemon.
    pub daemon: Option<String>,
    /// The decision the token was for.
    pub decision: Option<String>,
    /// Every token key it held when it was killed.
    pub tokens: Vec<String>,
    /// The lease TTL, ms.
    pub lease_ttl_ms: f64,
    /// From the SIGKILL until the last token was gone from etcd, ms.
    pub returned_after_ms: Option<f64>,
    /// The deadline, ms.
    pub within_ms: f64,
    /// Why nothing was measured, if so.
    pub problem: Option<String>,
}

/// The fleet breaker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerFigures {
    /// Whether it tripped.
    pub tripped: bool,
    /// Who tripped it, why, and when (ms from the game's start).
    pub by: Option<String>,
    /// Why.
    pub reason: Option<String>,
    /// When the game saw it, ms from the game's start.
    pub seen_at_ms: Option<f64>,
    /// The daemon with the most holds by its own limits, and how many.
    pub most_local_hits: Option<(String, usize)>,
    /// Holds within the breaker's window that trip a node daemon's breaker.
    pub trip_after: u32,
    /// In words: why it tripped or did not.
    pub explanation: String,
}

/// Everything a fleet game day measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetFigures {
    /// etcd members.
    pub etcd_members: usize,
    /// Starting etcd and every daemon, ms.
    pub setup_ms: f64,
    /// Per daemon.
    pub daemons: Vec<DaemonFigures>,
    /// Per fault.
    pub faults: Vec<FaultFigures>,
    /// Per budget cell that held a token.
    pub budgets: Vec<CellFigures>,
    /// Tokens over a limit, summed over the cells (must be 0).
    pub over_budget: usize,
    /// Each etcd leader killed.
    pub leader_kills: Vec<LeaderKillFigures>,
    /// Each token holder killed.
    pub daemon_kills: Vec<DaemonKillFigures>,
    /// The fleet breaker.
    pub breaker: BreakerFigures,
    /// The phases, as played.
    pub phases: Vec<PhaseRecord>,
    /// Each expectation that failed.
    pub failures: Vec<String>,
}
