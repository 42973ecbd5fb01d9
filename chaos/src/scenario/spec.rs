//! The schema of a scenario file (see `docs/chaos.md`). Its faults are the
//! [`FaultSpec`]s a game day writes too (`crate::spec`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use sim::fabric::JobSpec;

use crate::spec::{Dur, FaultSpec, Keyed};

/// Which clock a scenario runs on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// The simulator's virtual clock, in lockstep with the daemon: fast and
    /// deterministic.
    #[default]
    Virtual,
    /// The wall clock: real links in network namespaces, or a game day.
    Wall,
}

/// A scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name.
    pub name: String,
    /// What it shows.
    #[serde(default)]
    pub description: String,
    /// The inventory: a path relative to the scenario, or `"example"` for
    /// `docs/examples/inventory.toml`.
    #[serde(default = "default_inventory")]
    pub inventory: Spanned<String>,
    /// The rule directory (default `../rules`, the chaos rules).
    #[serde(default)]
    pub rules: Option<Spanned<String>>,
    /// The playbook (default `playbooks/chaos.toml`).
    #[serde(default)]
    pub playbook: Option<Spanned<String>>,
    /// Virtual or wall clock.
    #[serde(default)]
    pub clock: Clock,
    /// The sensor interval: one lockstep step (default 100 ms).
    #[serde(default)]
    pub step: Option<Dur>,
    /// How long one run lasts.
    pub duration: Dur,
    /// Runs (default 1); `--runs` overrides.
    #[serde(default = "one")]
    pub runs: u32,
    /// Seed of run 0 (default 1); run i uses seed + i. `--seed` overrides.
    #[serde(default = "one_u64")]
    pub seed: u64,
    /// Jobs running during the scenario.
    #[serde(default)]
    pub job: Vec<JobSpec>,
    /// The steady-state hypothesis.
    #[serde(default)]
    pub steady_state: SteadyState,
    /// The faults, each with where its keys were written.
    #[serde(default)]
    pub fault: Vec<Keyed<FaultSpec>>,
    /// What the daemon must achieve.
    #[serde(default)]
    pub expect: Expect,
    /// Stop a run early when a probe crosses a line.
    #[serde(default)]
    pub abort: Vec<Abort>,
    /// A human approving what waits for approval, as on call would.
    #[serde(default)]
    pub approve: Vec<Approve>,
}

/// `[[approve]]`: every request of `action` is approved `after` it was made.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approve {
    /// Action kind or pattern (`ecmp.widen_hash`, `ecmp.*`).
    pub action: String,
    /// How long the request waits first (a human's reaction).
    pub after: Dur,
}

fn default_inventory() -> Spanned<String> {
    Spanned::new(0..0, "example".to_string())
}
fn one() -> u32 {
    1
}
fn one_u64() -> u64 {
    1
}

/// Probes and the bounds they hold before the faults and after recovery.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SteadyState {
    /// The probes.
    #[serde(default)]
    pub probe: Vec<Probe>,
    /// How long the bounds must hold for the fabric to count as recovered
    /// (default 500 ms).
    #[serde(default)]
    pub hold: Option<Dur>,
}

/// One probe and its bounds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// One of the fabric's probes (`step_time_ratio`, `paused_fraction`, …).
    pub name: Spanned<String>,
    /// Lowest value in steady state.
    #[serde(default)]
    pub min: Option<f64>,
    /// Highest value in steady state.
    #[serde(default)]
    pub max: Option<f64>,
}

/// An action the daemon took, to match.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionMatch {
    /// Action kind, or a pattern (`rail.*`, `*`).
    pub action: String,
    /// Target labels that must match (a subset).
    #[serde(default)]
    pub target: BTreeMap<String, String>,
    /// The verdict to match (default `executed`); `any` matches all.
    #[serde(default)]
    pub verdict: Option<String>,
    /// How many times at least (`must`, default 1).
    #[serde(default)]
    pub count: Option<usize>,
    /// A canary's judgement to match (`promoted`, `reverted`, `kept`,
    /// `unread`, `open`): the decision's latest record counts.
    #[serde(default)]
    pub canary: Option<String>,
    /// An outcome check's judgement to match (`effective`, `ineffective`,
    /// `harmful`, `unread`, `open`): the decision's latest record counts.
    #[serde(default)]
    pub outcome: Option<String>,
}

/// Within how long a rule must fire.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Detect {
    /// The rule.
    pub rule: String,
    /// From the first fault's start.
    pub within: Dur,
}

/// Within how long an action must be executed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mitigate {
    /// The action kind (or pattern).
    pub action: String,
    /// From the first fault's start.
    pub within: Dur,
}

/// What the daemon must achieve.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// A rule fires within this long of the first fault.
    #[serde(default)]
    pub detect: Option<Detect>,
    /// An action is executed within this long of the first fault.
    #[serde(default)]
    pub mitigate: Option<Mitigate>,
    /// The steady state holds again within this long of the first fault.
    #[serde(default)]
    pub recover_within: Option<Dur>,
    /// Where `detect` and `mitigate` deadlines count from: `"fault"` (the
    /// first fault's start, the default) or `"trigger"` (the last fault
    /// occurrence before detection: the flap that made the count).
    #[serde(default)]
    pub from: Option<Spanned<String>>,
    /// Actions that must happen.
    #[serde(default)]
    pub must: Vec<ActionMatch>,
    /// Actions that must not happen.
    #[serde(default)]
    pub must_not: Vec<ActionMatch>,
    /// At most this many actions executed in all (0: the daemon must stay
    /// still).
    #[serde(default)]
    pub max_actions: Option<usize>,
    /// At most this many rails drained per plane at once.
    #[serde(default)]
    pub max_rails_drained_per_plane: Option<usize>,
    /// No node that no fault touched is cordoned (default true).
    #[serde(default = "yes")]
    pub no_healthy_node_cordoned: bool,
    /// At least this many proposals held by a blast-radius limit.
    #[serde(default)]
    pub min_held: Option<usize>,
    /// The jobs' step time comes back: `{ within = 0.05, after = "2s" }`.
    #[serde(default)]
    pub step_time: Option<Spanned<StepTimeExpect>>,
}

/// The jobs' step time must come back near its pre-fault baseline: for
/// each fault, the `step_time_ratio` probe is back within `within` of its
/// mean before the first fault, and stays there, at most `after` after the
/// fault's end — or after its mitigation when it does not end within the
/// run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepTimeExpect {
    /// How far from the baseline still counts as back, a fraction in
    /// (0, 1] (default 0.05: within 5 %).
    #[serde(default = "five_percent")]
    pub within: Spanned<f64>,
    /// The deadline, from the fault's end (or its mitigation).
    pub after: Dur,
}

fn five_percent() -> Spanned<f64> {
    Spanned::new(0..0, 0.05)
}

fn yes() -> bool {
    true
}

/// Stop the run when a probe goes past a line: the experiment is hurting
/// more than it may.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Abort {
    /// The probe.
    pub probe: Spanned<String>,
    /// Abort above this.
    #[serde(default)]
    pub above: Option<f64>,
    /// Abort below this.
    #[serde(default)]
    pub below: Option<f64>,
    /// … for at least this long (default: at once).
    #[serde(default, rename = "for")]
    pub for_: Option<Dur>,
}
