//! The schema of a scenario file (see `docs/chaos.md`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use sim::fabric::{JobSpec, Selector};

/// A duration as written (`"300ms"`), with where it was written.
pub type Dur = Spanned<String>;

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
    /// The faults.
    #[serde(default)]
    pub fault: Vec<FaultSpec>,
    /// What the daemon must achieve.
    #[serde(default)]
    pub expect: Expect,
    /// Stop a run early when a probe crosses a line.
    #[serde(default)]
    pub abort: Vec<Abort>,
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

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// A NIC storms PAUSE frames on `prio` (default 3).
    PfcStorm,
    /// A symbol-error burst: the link's BER rises to `ber` (default 1e-9).
    SymbolErrors,
    /// The carrier goes down every `period` (default 2 s) for `down`
    /// (default 200 ms).
    LinkFlap,
    /// The link trains at `rate` of its speed (default 0.5).
    DegradedLink,
    /// `loss` of packets is lost (default 0.01).
    PacketLoss,
    /// A competing job offers `load` (default 0.8 of line rate) on the rail.
    Congestion,
    /// The other NICs of each selected NIC's rail send it `load` more
    /// (default 1.0 of its line rate): an incast onto a receiver.
    Incast,
    /// The selected leaf's (`select.switch`) uplink toward the spine is
    /// offered `load` times what it carries (default 1.5).
    UplinkCongestion,
    /// The node's sensors see nothing new.
    SensorOutage,
    /// The switch stops answering gNMI.
    GnmiSilent,
    /// GPU `gpu` (default 0) of each selected node raises XID `xid`
    /// (default 79, fallen off the bus) and stays lost until the fault ends.
    GpuXid,
    /// Real link in a network namespace: `ip link set down`, then up after
    /// `down`, every `period` (wall clock only).
    VethFlap,
    /// Real link: `tc qdisc … netem` with `loss`, `delay` (wall clock only).
    Netem,
    /// Real link: `tc qdisc … tbf` at `rate_mbit` (wall clock only).
    Tbf,
}

impl FaultKind {
    /// Whether the fault needs real links (the wall clock).
    pub fn needs_real_links(self) -> bool {
        matches!(self, FaultKind::VethFlap | FaultKind::Netem | FaultKind::Tbf)
    }
}

/// One fault.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// What.
    pub kind: FaultKind,
    /// Where: the NICs it hits (node, netdev, rail, plane, switch); every
    /// NIC when absent.
    #[serde(default)]
    pub select: Option<Spanned<Selector>>,
    /// When, from the start of the run.
    pub at: Dur,
    /// A random delay up to this much is added to `at`, per run (seeded),
    /// so runs do not all line up with the sensor's poll.
    #[serde(default)]
    pub jitter: Option<Dur>,
    /// How long it lasts (default: until the end of the run).
    #[serde(default)]
    pub duration: Option<Dur>,
    /// How many times it happens (default 1).
    #[serde(default = "one")]
    pub repeats: u32,
    /// Time between repeats' starts.
    #[serde(default)]
    pub every: Option<Dur>,
    /// PFC priority (pfc_storm).
    #[serde(default)]
    pub prio: Option<u8>,
    /// Bit error rate (symbol_errors).
    #[serde(default)]
    pub ber: Option<f64>,
    /// Flap period (link_flap, veth_flap).
    #[serde(default)]
    pub period: Option<Dur>,
    /// Time down per flap (link_flap, veth_flap).
    #[serde(default)]
    pub down: Option<Dur>,
    /// Fraction of the link rate (degraded_link).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Fraction lost (packet_loss, netem).
    #[serde(default)]
    pub loss: Option<f64>,
    /// Offered load (congestion).
    #[serde(default)]
    pub load: Option<f64>,
    /// The GPU's NVML index (gpu_xid).
    #[serde(default)]
    pub gpu: Option<u32>,
    /// The XID (gpu_xid).
    #[serde(default)]
    pub xid: Option<u64>,
    /// Added delay (netem).
    #[serde(default)]
    pub delay: Option<Dur>,
    /// Rate in Mbit/s (tbf).
    #[serde(default)]
    pub rate_mbit: Option<u64>,
    /// The veth link (veth_flap, netem, tbf): the end the daemon watches.
    #[serde(default)]
    pub link: Option<Spanned<String>>,
    /// The veth's other end (veth_flap, netem, tbf): the end `veth_flap`
    /// sets down and up, so `link` loses carrier. Default `<link>p`
    /// (`rcv0` → `rcv0p`).
    #[serde(default)]
    pub peer: Option<Spanned<String>>,
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
