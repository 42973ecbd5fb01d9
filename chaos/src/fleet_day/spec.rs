//! The schema of a fleet game day file (`chaos/scenarios/fleet/*.toml`,
//! `docs/chaos.md`, "Fleet game day"), as written: its faults are the
//! [`FaultSpec`]s a scenario writes too (`crate::spec`). [`super::plan`]
//! checks it and resolves it into what the runner needs.
//!
//! A game is a script: `[[phase]]` tables run in order, each one a `do`
//! (start faults, wait until the daemons have decided on them, pause, kill
//! etcd's leader, kill the daemon holding a token). The phases are one flat
//! table resolved into an enum by the plan, because `toml::Spanned` (which
//! every error's `file:line:col` comes from) does not survive serde's
//! buffering of internally tagged enums.

use serde::Deserialize;
use toml::Spanned;

use fleet::settings::BudgetConfig;

use crate::spec::{Dur, FaultSpec, Keyed};

/// A fleet game day file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetScenario {
    /// Its name: the report's file names.
    pub name: String,
    /// What it shows.
    #[serde(default)]
    pub description: String,
    /// The inventory (one node daemon per node): from this file's folder,
    /// then from the current directory.
    pub inventory: Spanned<String>,
    /// The node daemons' playbook.
    pub playbook: Spanned<String>,
    /// A rule directory for every daemon instead of each playbook's.
    #[serde(default)]
    pub rules: Option<Spanned<String>>,
    /// The fabric's step on the wall clock, and the node daemons' sysfs
    /// poll interval (default 100 ms).
    #[serde(default)]
    pub step: Option<Dur>,
    /// Seed of the fabric's randomness (symbol errors are drawn from it).
    #[serde(default = "one")]
    pub seed: u64,
    /// How long the daemons may take to start, all of them (default 60 s).
    #[serde(default)]
    pub startup_within: Option<Dur>,
    /// The etcd cluster.
    #[serde(default)]
    pub etcd: EtcdSpec,
    /// Every daemon's `[fleet]` table, less what the runner fills in
    /// (`etcd`, `identity`, `fleet_size`, `aggregator`).
    pub fleet: FleetSpec,
    /// The switch aggregator.
    pub aggregator: AggregatorSpec,
    /// The faults, started by `start` phases, each with where its keys
    /// were written.
    #[serde(default)]
    pub fault: Vec<Keyed<FaultSpec>>,
    /// The script, in order.
    #[serde(default)]
    pub phase: Vec<PhaseSpec>,
    /// Expectations about the whole game.
    #[serde(default)]
    pub expect: ExpectSpec,
}

fn one() -> u64 {
    1
}

/// The etcd cluster: real `etcd` members on loopback ports.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtcdSpec {
    /// Members (default 3: one may die and the cluster keeps its quorum).
    #[serde(default)]
    pub members: Option<Spanned<usize>>,
    /// Raft heartbeat interval (default 50 ms).
    #[serde(default)]
    pub heartbeat: Option<Dur>,
    /// Raft election timeout (default 500 ms): how long followers wait for
    /// a dead leader before electing another.
    #[serde(default)]
    pub election_timeout: Option<Dur>,
}

/// What every daemon's `[fleet]` table says (the keys of
/// `fleet::FleetConfig` a game chooses).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetSpec {
    /// Session lease TTL: a dead daemon's tokens free after this.
    pub lease_ttl: Dur,
    /// How long one etcd call may take (default 2 s).
    #[serde(default)]
    pub request_timeout: Option<Dur>,
    /// The budgets, given to every daemon as its `[[fleet.budget]]`, and
    /// what the game checks the tokens in etcd against.
    #[serde(default)]
    pub budget: Vec<BudgetSpec>,
}

/// One `[[fleet.budget]]`: the daemons' own schema, with where its name
/// was written for the plan's errors.
pub type BudgetSpec = Keyed<BudgetConfig>;

/// The switch aggregator: one daemon reading every leaf over gNMI.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AggregatorSpec {
    /// Its playbook.
    pub playbook: Spanned<String>,
    /// The aggregator election it campaigns in (`[fleet] aggregator`).
    #[serde(default)]
    pub election: Option<String>,
    /// The gNMI sensor's presets (default `["sonic_pfc"]`).
    #[serde(default)]
    pub presets: Option<Vec<String>>,
    /// The gNMI sensor's sample interval (default 1 s, as SONiC refreshes).
    #[serde(default)]
    pub sample_interval: Option<Dur>,
}

/// One `[[phase]]`, as written: `do` says which keys apply.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// `start`, `settle`, `pause`, `kill-etcd-leader` or
    /// `kill-token-holder`.
    #[serde(rename = "do")]
    pub action: Spanned<String>,
    /// `start`, `settle`: the faults.
    #[serde(default)]
    pub faults: Option<Spanned<Vec<String>>>,
    /// `settle`: at most this long (default 20 s).
    #[serde(default)]
    pub within: Option<Dur>,
    /// `pause`: how long.
    #[serde(default, rename = "for")]
    pub for_: Option<Dur>,
    /// `kill-etcd-leader`: another member leads within this long (default
    /// 5 s).
    #[serde(default)]
    pub elect_within: Option<Dur>,
    /// `kill-token-holder`: the fault whose executed action's daemon is
    /// killed.
    #[serde(default)]
    pub fault: Option<Spanned<String>>,
    /// `kill-token-holder`: its tokens are gone from etcd within this long
    /// of the kill (default the lease TTL + 2 s).
    #[serde(default)]
    pub return_within: Option<Dur>,
}

/// Whether the fleet breaker must trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BreakerExpect {
    /// It must stay clear.
    Clear,
    /// It must trip.
    Tripped,
}

/// Expectations about the whole game. The fleet budget is always checked:
/// no budget cell ever holds more tokens than its limit.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectSpec {
    /// The fleet breaker's state at the end; unchecked (only reported)
    /// when absent.
    #[serde(default)]
    pub fleet_breaker: Option<BreakerExpect>,
}
