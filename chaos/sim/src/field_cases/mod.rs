//! Field cases: recordings of a GPU training cluster in which one job is
//! slowed by one cause (or by nothing the fabric did), with the answer, for
//! testing `rocemend why` ("why is this job slow?") against what daemons
//! really see.
//!
//! The generator models the world, not the analysis: a cluster of two
//! scalable units ([`inventory_toml`]), a job on 4–16 of its 32 nodes with
//! steps of its own pace and noise, tenant jobs beside it with their own
//! traffic and their own troubles, a fabric whose queue pairs are hashed onto
//! uplinks, and a cause injected at a random onset whose effects follow from
//! its physics: a storming NIC pauses its leaf port and, through the leaf's
//! full buffer, everyone sending through that leaf; a collective runs at its
//! slowest rank's pace; a GPU that falls off the bus hangs the job. What is
//! recorded is what the sensors would have written, at their own cadences,
//! with their names, labels, widths and quirks (SONiC's 10 s queue counters,
//! Broadcom's missing pause durations, DCGM's noisy fields, step times
//! pushed once per step).
//!
//! ```
//! use sim::field_cases::{case, record, FieldKind};
//!
//! let c = case(7);
//! assert!(FieldKind::ALL.contains(&c.kind));
//! assert!(!c.truth.is_empty());
//! assert_eq!(record(&c), record(&case(7)), "a seed is a recording");
//! ```
//!
//! | file | concern |
//! |---|---|
//! | `mod.rs` | the API: kinds, cases, their truth and description |
//! | `inventory.rs` | the cluster's names and cabling, its inventory TOML |
//! | `world.rs` | what a case is made of (plain data) |
//! | `draw.rs` | drawing a case from its seed |
//! | `fabric.rs` | flows, paths, loads; the cause's congestion and pauses |
//! | `pace.rs` | what the cause does to the job's steps, and when |
//! | `job.rs` | steps, traffic and GPU busy profiles |
//! | `state.rs` | the world over time, queried by the sensors |
//! | `profile.rs` | rates as running integrals |
//! | `noise.rs` | seeded randomness |
//! | `plan.rs` | sensor cadences and the sample budget |
//! | `nic.rs`, `gpu.rs`, `switch.rs` | the sensors |
//! | `series.rs`, `record.rs` | series, clocks, and writing in time order |

mod draw;
mod fabric;
mod gpu;
mod inventory;
mod job;
mod nic;
mod noise;
mod pace;
mod plan;
mod profile;
mod record;
mod series;
mod state;
mod switch;
#[cfg(test)]
mod tests;
mod world;

pub use inventory::inventory_toml;

use fabric::Fabric;
use inventory::{leaf_name, netdev, node_name, node_port, plane_of, rdma_dev, unit_of};
use pace::Pace;
use world::{Cause, Scenario};

/// What slowed the job (or did not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FieldKind {
    /// A NIC pauses its leaf port nearly all the time.
    PfcStorm,
    /// A leaf's uplinks carry more than they can.
    UplinkCongestion,
    /// A GPU loses its cooling and throttles.
    GpuThermal,
    /// A GPU reports a critical XID.
    GpuXid,
    /// The job's queue pairs collide on a few uplinks.
    EcmpCollision,
    /// Many senders converge on one of the job's NICs.
    Incast,
    /// A NIC's link goes down and up.
    LinkFlap,
    /// A NIC's link has a high bit error rate.
    Ber,
    /// Negative control: the input pipeline is slow.
    LoaderStall,
    /// Negative control: checkpoints to slow storage.
    CheckpointStall,
    /// Negative control: one node's CPU is slow.
    HostStraggler,
    /// Negative control: the input pipeline hangs.
    LoaderHang,
}

impl FieldKind {
    /// Every kind.
    pub const ALL: [FieldKind; 12] = [
        FieldKind::PfcStorm,
        FieldKind::UplinkCongestion,
        FieldKind::GpuThermal,
        FieldKind::GpuXid,
        FieldKind::EcmpCollision,
        FieldKind::Incast,
        FieldKind::LinkFlap,
        FieldKind::Ber,
        FieldKind::LoaderStall,
        FieldKind::CheckpointStall,
        FieldKind::HostStraggler,
        FieldKind::LoaderHang,
    ];

    /// Its name, as in reports (`pfc_storm`).
    pub fn name(self) -> &'static str {
        match self {
            FieldKind::PfcStorm => "pfc_storm",
            FieldKind::UplinkCongestion => "uplink_congestion",
            FieldKind::GpuThermal => "gpu_thermal",
            FieldKind::GpuXid => "gpu_xid",
            FieldKind::EcmpCollision => "ecmp_collision",
            FieldKind::Incast => "incast",
            FieldKind::LinkFlap => "link_flap",
            FieldKind::Ber => "ber",
            FieldKind::LoaderStall => "loader_stall",
            FieldKind::CheckpointStall => "checkpoint_stall",
            FieldKind::HostStraggler => "host_straggler",
            FieldKind::LoaderHang => "loader_hang",
        }
    }

    /// Whether the fabric or a GPU is to blame (false for the four negative
    /// controls, whose fabric is healthy).
    pub fn is_fabric_or_gpu(self) -> bool {
        !matches!(
            self,
            FieldKind::LoaderStall | FieldKind::CheckpointStall | FieldKind::HostStraggler | FieldKind::LoaderHang
        )
    }

    /// Cases of this kind per 100 seeds.
    fn weight(self) -> u32 {
        match self {
            FieldKind::PfcStorm => 11,
            FieldKind::UplinkCongestion => 9,
            FieldKind::GpuThermal => 8,
            FieldKind::GpuXid | FieldKind::EcmpCollision => 12,
            FieldKind::Incast | FieldKind::Ber => 9,
            FieldKind::LinkFlap => 10,
            FieldKind::LoaderStall => 6,
            FieldKind::CheckpointStall | FieldKind::HostStraggler => 5,
            FieldKind::LoaderHang => 4,
        }
    }
}

/// One case: what was injected, and what counts as the right answer.
#[derive(Debug, Clone)]
pub struct FieldCase {
    /// Its seed.
    pub seed: u64,
    /// What slowed the job.
    pub kind: FieldKind,
    /// The job's id (its `job` label).
    pub job: String,
    /// The job's nodes, sorted.
    pub nodes: Vec<String>,
    /// The acceptable first answers, in `why`'s element vocabulary:
    /// `rail R of NODE`, `GPU G of NODE`, `spine/plane P`, `switch NAME`, or
    /// `not the fabric`.
    pub truth: Vec<String>,
    /// One line: what was injected where, when, how strong.
    pub description: String,
    scenario: Scenario,
    fabric: Fabric,
    pace: Pace,
}

/// Case `seed`, reproducible: the same seed gives the same case and the same
/// bytes.
pub fn case(seed: u64) -> FieldCase {
    let mut attempt = 0;
    loop {
        let mut scenario = draw::draw(seed, attempt);
        let mut fabric = Fabric::build(&scenario);
        // The job's collectives run as fast as its busiest link allows: where
        // the hash loads one past line rate, every rank goes at that pace.
        for _ in 0..3 {
            let over = fabric.job_base_mult();
            if over <= 1.0 {
                break;
            }
            scenario.job.rate /= over * 1.02;
            fabric = Fabric::build(&scenario);
        }
        let pace = Pace::of(&scenario, &fabric);
        // A steady cause drawn too weak to slow its job (a collision on a leaf
        // that carries little of it, a storm beside a job that sends little)
        // is drawn again, a few times at most.
        let ratio = pace.step_ratio(&scenario.job);
        let steady =
            scenario.kind.is_fabric_or_gpu() && !matches!(scenario.kind, FieldKind::LinkFlap | FieldKind::GpuXid);
        let slows = !steady || ratio >= 1.06;
        if slows || attempt >= 11 {
            return assemble(scenario, fabric, pace);
        }
        attempt += 1;
    }
}

/// The recording a daemon (node daemons + the switch aggregator, merged)
/// would have written.
pub fn record(case: &FieldCase) -> Vec<u8> {
    record::record(case).0
}

fn assemble(scenario: Scenario, fabric: Fabric, pace: Pace) -> FieldCase {
    let mut nodes: Vec<usize> = scenario.job.nodes();
    nodes.sort_unstable();
    FieldCase {
        seed: scenario.seed,
        kind: scenario.kind,
        job: scenario.job.name.clone(),
        nodes: nodes.into_iter().map(node_name).collect(),
        truth: truth(&scenario),
        description: describe(&scenario, &pace),
        scenario,
        fabric,
        pace,
    }
}

fn truth(sc: &Scenario) -> Vec<String> {
    let rail = |node: usize, rail: usize| format!("rail {rail} of {}", node_name(node));
    match &sc.fault.cause {
        Cause::PfcStorm { node, rail: r, .. }
        | Cause::LinkFlap { node, rail: r, .. }
        | Cause::Ber { node, rail: r, .. }
        | Cause::Incast { node, rail: r, .. } => vec![rail(*node, *r)],
        Cause::UplinkCongestion { unit, rail, .. } | Cause::EcmpCollision { unit, rail, .. } => {
            vec![format!("spine/plane {}", plane_of(*rail)), format!("switch {}", leaf_name(*unit, *rail))]
        }
        Cause::GpuThermal { node, gpu, .. } | Cause::GpuXid { node, gpu, .. } => {
            vec![format!("GPU {gpu} of {}", node_name(*node))]
        }
        _ => vec!["not the fabric".to_string()],
    }
}

/// `rail 3 of node-07 (mlx5_3/enp94s0np0, leaf-su0-rail3 Ethernet28)`.
fn nic(node: usize, rail: usize) -> String {
    format!(
        "rail {rail} of {} ({}/{}, {} {})",
        node_name(node),
        rdma_dev(rail),
        netdev(rail),
        leaf_name(unit_of(node), rail),
        node_port(node)
    )
}

fn describe(sc: &Scenario, pace: &Pace) -> String {
    let f = &sc.fault;
    let when = if f.until >= sc.duration {
        format!("from t+{:.1} s to the end ({:.0} s)", f.onset, sc.duration)
    } else {
        format!("from t+{:.1} s to t+{:.1} s (of {:.0} s)", f.onset, f.until, sc.duration)
    };
    let what = match &f.cause {
        Cause::PfcStorm { node, rail, duty, hol } => {
            let whose = if sc.in_job(*node) { "the job's" } else { "a tenant's" };
            format!(
                "PFC storm: {whose} NIC {} pauses its port {:.0} % of the time (head-of-line {:.0} %)",
                nic(*node, *rail),
                duty * 100.0,
                hol * 100.0
            )
        }
        Cause::UplinkCongestion { unit, rail, down, extra } => format!(
            "uplink congestion: {:.0} GB/s of other traffic {} the uplinks of {} (plane {})",
            extra / 1e9,
            if *down { "from the spines into" } else { "out through" },
            leaf_name(*unit, *rail),
            plane_of(*rail)
        ),
        Cause::GpuThermal { node, gpu, rise, .. } => {
            format!("thermal throttling: GPU {gpu} of {} loses cooling, +{rise:.0} °C", node_name(*node))
        }
        Cause::GpuXid { node, gpu, xid, .. } => format!("XID {xid} on GPU {gpu} of {}", node_name(*node)),
        Cause::EcmpCollision { unit, rail, hot, share } => format!(
            "ECMP collision: {:.0} % of the job's queue pairs leaving {} land on uplinks {hot:?}",
            share * 100.0,
            leaf_name(*unit, *rail)
        ),
        Cause::Incast { node, rail, senders, rate } => {
            format!("incast: {} senders, {:.0} GB/s, into {}", senders.len(), rate / 1e9, nic(*node, *rail))
        }
        Cause::LinkFlap { node, rail, flaps } => {
            format!("link flap: {} loses carrier {} times", nic(*node, *rail), flaps.len())
        }
        Cause::Ber { node, rail, ber, errors, .. } => {
            format!("BER: {} at pre-FEC BER {ber:.1e}, {errors:.0} uncorrectable symbols/s", nic(*node, *rail))
        }
        Cause::LoaderStall { wait } => format!("loader stall: each step waits {wait:.2} steps for input on average"),
        Cause::CheckpointStall { every, first, growth } => {
            format!(
                "checkpoint stall: every {every} steps a checkpoint of {first:.1} steps, each {:.0} % longer",
                growth * 100.0
            )
        }
        Cause::HostStraggler { node, .. } => {
            format!("host straggler: {}'s CPU feeds its GPUs slowly", node_name(*node))
        }
        Cause::LoaderHang { node } => match node {
            Some(k) => format!("loader hang: the input pipeline of {} hangs", node_name(*k)),
            None => "loader hang: every rank's input pipeline hangs".to_string(),
        },
    };
    let strength = match pace.step_ratio(&sc.job) {
        r if r.is_infinite() => "the job stops".to_string(),
        r => format!("steps ×{r:.2} (collectives ×{:.2}, compute ×{:.2})", pace.comm, pace.compute),
    };
    format!(
        "{what}, {when}; {strength}; job {} on {} nodes, step {:.2} s",
        sc.job.name,
        sc.job.members.len(),
        sc.job.step
    )
}
