//! What a case is made of, as drawn: the job and its placement, the tenant
//! jobs on the neighbouring nodes, the one injected cause and its window, the
//! tenants' own incidents, and the sensors' cadences. Plain data: the
//! drawing is in `draw`, the physics in `fabric`, `pace` and `job`, the
//! sensors in `nic`, `gpu`, `switch` and `record`.

use super::FieldKind;

/// Line rate of every port (a NIC, a leaf port, an uplink): 400 Gb/s.
pub(super) const LINK_BYTES: f64 = 50e9;
/// Bits a 400G PHY receives per second whether or not frames flow (four
/// 106.25 Gb/s PAM4 lanes): what `rx_bits_phy` counts.
pub(super) const PHY_BITS: f64 = 4.25e11;
/// A RoCE frame on the wire with a 4096-byte MTU, headers included.
pub(super) const ROCE_FRAME: f64 = 4150.0;
/// Seconds between a node's `job_node_info` pushes.
pub(super) const INFO_EVERY: f64 = 10.0;
/// Seconds between two heartbeats of the netlink sensor.
pub(super) const HEARTBEAT: f64 = 1.0;
/// SONiC's flex-counter poll of port counters (PFC, octets), seconds.
pub(super) const PORT_REFRESH: f64 = 1.0;
/// SONiC's flex-counter poll of queue counters (`counterpoll queue`), seconds.
pub(super) const QUEUE_REFRESH: f64 = 10.0;

/// One rank's place in a job's ring: a recorded node, or a node of `unit`
/// whose daemon is not in the recording (a tenant's other nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Member {
    /// A recorded node.
    Node(usize),
    /// An unrecorded node of this unit.
    Remote(usize),
}

/// Every Nth step takes longer: an evaluation (GPUs busy, no traffic) or a
/// checkpoint (GPUs idle).
#[derive(Debug, Clone, Copy)]
pub(super) struct Bursty {
    /// Every this many steps.
    pub every: usize,
    /// That step lasts this many nominal steps.
    pub factor: f64,
    /// An evaluation (busy) rather than a checkpoint (idle).
    pub busy: bool,
}

/// A training job: where it runs and how it paces itself.
#[derive(Debug, Clone)]
pub(super) struct JobSpec {
    /// Its id, the `job` label.
    pub name: String,
    /// Its ranks' nodes in rank order: each rank's NIC `r` sends half its
    /// collective traffic to the next rank's NIC `r` and half to the previous
    /// one's (NCCL's rings, two channels per NIC, in both directions).
    pub members: Vec<Member>,
    /// Nominal step time, seconds.
    pub step: f64,
    /// Share of a step spent in the exposed collective at its end.
    pub comm_frac: f64,
    /// Relative noise of each phase of each step.
    pub jitter: f64,
    /// Bytes per second each NIC offers during the collective.
    pub rate: f64,
    /// Queue pairs per connection (`NCCL_IB_QPS_PER_CONNECTION`): each is
    /// hashed onto the uplinks on its own.
    pub qps: usize,
    /// Bytes per RDMA WRITE request.
    pub msg: f64,
    /// Periodic long steps, if any.
    pub bursty: Option<Bursty>,
    /// Watts a busy GPU of the job draws.
    pub power: f64,
    /// When its first step started (before the recording: it was running).
    pub phase: f64,
}

impl JobSpec {
    /// The recorded nodes of the job, in rank order.
    pub(super) fn nodes(&self) -> Vec<usize> {
        self.members
            .iter()
            .filter_map(|m| match m {
                Member::Node(k) => Some(*k),
                Member::Remote(_) => None,
            })
            .collect()
    }
}

/// On/off bursts of a cause (an incast that comes and goes).
#[derive(Debug, Clone, Copy)]
pub(super) struct Bursts {
    /// Seconds from one burst's start to the next.
    pub period: f64,
    /// Share of the period it is on.
    pub duty: f64,
    /// Where the first period starts, seconds after the onset.
    pub phase: f64,
}

/// What was injected, with its physical parameters.
#[derive(Debug, Clone)]
pub(super) enum Cause {
    /// NIC (`node`, `rail`) pauses its leaf port `duty` of the time; the
    /// leaf's full buffer pauses its other ingress ports `hol` × `duty`.
    PfcStorm { node: usize, rail: usize, duty: f64, hol: f64 },
    /// `extra` bytes/s of other traffic through the uplinks of leaf
    /// (`unit`, `rail`): toward the spines, or from them when `down`.
    UplinkCongestion { unit: usize, rail: usize, down: bool, extra: f64 },
    /// GPU (`node`, `gpu`) loses cooling: its compute slows by `slow` at full
    /// throttle, its temperature rises `rise` °C.
    GpuThermal { node: usize, gpu: usize, slow: f64, rise: f64 },
    /// An XID on GPU (`node`, `gpu`): 79/48/94 stop its rank (the job
    /// hangs), 63 slows its compute by `slow`.
    GpuXid { node: usize, gpu: usize, xid: u32, slow: f64 },
    /// The job's queue pairs through leaf (`unit`, `rail`) rehash: `share` of
    /// them land on the uplinks `hot`.
    EcmpCollision { unit: usize, rail: usize, hot: Vec<usize>, share: f64 },
    /// `senders` send `rate` bytes/s in all to NIC (`node`, `rail`).
    Incast { node: usize, rail: usize, senders: Vec<Member>, rate: f64 },
    /// NIC (`node`, `rail`) loses carrier: (down, up) times.
    LinkFlap { node: usize, rail: usize, flaps: Vec<(f64, f64)> },
    /// NIC (`node`, `rail`) receives at pre-FEC BER `ber`, with `errors`
    /// uncorrectable symbols a second; the losses stretch collectives `slow`.
    Ber { node: usize, rail: usize, ber: f64, errors: f64, slow: f64 },
    /// The input pipeline makes each step wait `wait` nominal steps, on
    /// average.
    LoaderStall { wait: f64 },
    /// Every `every` steps a checkpoint to slow storage: the first takes
    /// `first` nominal steps, each next one `growth` more.
    CheckpointStall { every: usize, first: f64, growth: f64 },
    /// Node `node`'s CPU feeds its GPUs `slow` times slower.
    HostStraggler { node: usize, slow: f64 },
    /// The input pipeline hangs: of one rank (its node), or of all.
    LoaderHang { node: Option<usize> },
}

/// The cause and when it acts.
#[derive(Debug, Clone)]
pub(super) struct Fault {
    /// What.
    pub cause: Cause,
    /// Seconds after the start.
    pub onset: f64,
    /// When it stops acting (the case's end when it lasts).
    pub until: f64,
    /// Seconds it takes to reach full strength.
    pub ramp: f64,
    /// On/off bursts within the window, if it comes and goes.
    pub bursts: Option<Bursts>,
}

/// A tenant's own trouble, unrelated to the job.
#[derive(Debug, Clone, Copy)]
pub(super) enum Incident {
    /// Other traffic converges on a tenant NIC for a while (`rate` bytes/s).
    Congestion { node: usize, rail: usize, start: f64, len: f64, rate: f64 },
    /// An XID on a tenant GPU.
    Xid { node: usize, gpu: usize, at: f64, xid: u32 },
    /// A burst of symbol errors on a tenant NIC (`rate` a second).
    Symbols { node: usize, rail: usize, start: f64, len: f64, rate: f64 },
    /// One carrier loss on a tenant NIC.
    Flap { node: usize, rail: usize, at: f64, down: f64 },
    /// A tenant job's own steps slow by `factor` for a while.
    Slow { tenant: usize, start: f64, len: f64, factor: f64 },
}

/// The sensors' cadences, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Plan {
    /// `rdma_sysfs`.
    pub rdma: f64,
    /// `ethtool`.
    pub ethtool: f64,
    /// `nvml` gauges.
    pub nvml: f64,
    /// The DCGM exporter, through the `prometheus` sensor.
    pub dcgm: f64,
    /// The gNMI sample interval.
    pub gnmi: f64,
}

/// Everything drawn for one case.
#[derive(Debug, Clone)]
pub(super) struct Scenario {
    /// The seed.
    pub seed: u64,
    /// What slows the job.
    pub kind: FieldKind,
    /// Seconds recorded.
    pub duration: f64,
    /// The job.
    pub job: JobSpec,
    /// The tenants' jobs on the other recorded nodes.
    pub tenants: Vec<JobSpec>,
    /// Every node whose daemon is in the recording, sorted.
    pub recorded: Vec<usize>,
    /// Tenants' nodes whose daemons are not in the recording but whose leaf
    /// ports are (the aggregator records every port of a leaf), sorted.
    pub ports_only: Vec<usize>,
    /// The units the job runs in (their leaves are recorded).
    pub units: Vec<usize>,
    /// The cause.
    pub fault: Fault,
    /// The tenants' incidents.
    pub incidents: Vec<Incident>,
    /// The sensors' cadences.
    pub plan: Plan,
    /// The switches are Broadcom (no pause-duration counters).
    pub broadcom: bool,
}

impl Scenario {
    /// Every node with its leaf ports recorded: the recorded nodes and the
    /// ports-only ones, sorted.
    pub(super) fn ported(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.recorded.iter().chain(&self.ports_only).copied().collect();
        all.sort_unstable();
        all
    }

    /// Whether node `k` runs the job.
    pub(super) fn in_job(&self, k: usize) -> bool {
        self.job.members.contains(&Member::Node(k))
    }
}
