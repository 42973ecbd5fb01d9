//! The `[[fault]]` table of both harnesses. One table with every key: a
//! scenario's fault is timed by its own keys (`at`, `duration`,
//! `repeats`, …) and may act on real links (`link`, `peer`); a game day's
//! is named, started by the script's phases, and says what the daemons
//! must do about it (`expect`). Each harness refuses, where it was
//! written, a key that is the other's
//! ([`Keyed::first_key_not`](super::Keyed::first_key_not)).

use serde::{Deserialize, Serialize};
use toml::Spanned;

use sim::fabric::Selector;

use super::Dur;

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// A NIC storms PAUSE frames on `prio` (default 3).
    PfcStorm,
    /// A NIC's firmware no longer answers its driver: `ip link set down`
    /// (`link.isolate`) leaves its port lit, so a storm it sends goes on
    /// until the switch takes the port down (`rail.drain`).
    WedgedNic,
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
    /// Job `job` (every job when absent) is relaunched: it creates its
    /// communicators afresh, with new QP numbers and so new ECMP paths,
    /// from its NCCL environment file, which the launch sets to `qps`
    /// queue pairs per connection when given (a resubmission whose
    /// environment no longer sets them gets NCCL's default, 1).
    JobRelaunch,
    /// A configuration push sets the ECMP hash (`SWITCH_HASH|GLOBAL`
    /// `ecmp_hash`) of the selected leaves (`select.switch`; every leaf when
    /// absent) to `hash` (CONFIG_DB's comma-separated field names). A push
    /// has no end: stopping it changes nothing.
    HashChange,
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

    /// Its name as files write it (`pfc_storm`).
    pub fn name(self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
    }
}

/// One fault, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Its name, for the script's phases and the report (game day).
    #[serde(default)]
    pub name: Option<Spanned<String>>,
    /// What.
    pub kind: Spanned<FaultKind>,
    /// Where: the NICs it hits (node, netdev, rail, plane, switch); every
    /// NIC when absent.
    #[serde(default)]
    pub select: Option<Spanned<Selector>>,
    /// When, from the start of the run (scenario).
    #[serde(default)]
    pub at: Option<Dur>,
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
    /// The job (job_relaunch; default: every job).
    #[serde(default)]
    pub job: Option<Spanned<String>>,
    /// Queue pairs per connection its environment gives the relaunched job (job_relaunch).
    #[serde(default)]
    pub qps: Option<u32>,
    /// The ECMP hash field list a hash_change pushes (`"SRC_IP,DST_IP,L4_DST_PORT"`).
    #[serde(default)]
    pub hash: Option<Spanned<String>>,
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
    /// What the daemons must do about it (game day).
    #[serde(default)]
    pub expect: Option<FaultExpectSpec>,
}

fn one() -> u32 {
    1
}

impl FaultSpec {
    /// Where the fault is, for errors about it as a whole: its `at` when
    /// written, else its `kind`.
    pub fn place(&self) -> std::ops::Range<usize> {
        self.at.as_ref().map(Dur::span).unwrap_or_else(|| self.kind.span())
    }
}

/// Which daemons decide about a game day's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum By {
    /// The node daemon of each NIC the fault hits.
    Nodes,
    /// The switch aggregator, for the leaf port of each NIC.
    Aggregator,
}

/// What the daemons of a game day must do about one fault.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultExpectSpec {
    /// The action kind the daemons propose for it (`rail.drain`).
    pub action: Spanned<String>,
    /// Who proposes it.
    pub by: By,
    /// Exactly this many executed, across every daemon (the budget held:
    /// not fewer, the daemons worked; not more, no token was spent twice).
    #[serde(default)]
    pub executed: Option<usize>,
    /// The first daemon detects it within this long of its start.
    #[serde(default)]
    pub detect_within: Option<Dur>,
    /// Its first action is executed within this long of its start.
    #[serde(default)]
    pub mitigate_within: Option<Dur>,
}
