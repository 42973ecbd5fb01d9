//! A rail-optimized fabric simulator: nodes × NICs, one leaf per rail,
//! spines per plane, jobs on the nodes, and faults; its counters respond to
//! the faults *and* to what actuators change.
//!
//! The fabric is built from the daemon's own inventory ([`Topology`]): each
//! NIC is cabled to the leaf and port the inventory names; each leaf is a
//! [`switch::Model`](crate::switch::Model) with one port per node plus an
//! uplink, and each plane has a spine model. What the daemon reads is what
//! it reads on a real cluster:
//!
//! - per node, a sysfs tree ([`sysfs`]) for the `rdma_sysfs` sensor;
//! - per leaf, the simulated SONiC switch's databases (COUNTERS_DB with the
//!   leaf's ASIC family's counters, CONFIG_DB, APPL_DB, STATE_DB), served
//!   over gNMI as sonic-gnmi serves them by [`crate::switch`];
//! - per job, Prometheus text ([`prom`]) with its step time.
//!
//! What actuators change lands here too: the PFC watchdog and the WRED
//! thresholds in each leaf's CONFIG_DB (written through gNMI Set) reach the
//! leaf's ASIC as orchagent applies them, and the physics reads the ASIC at
//! every step;
//! [`Fabric::set_admin`], [`Fabric::drain`] and [`Fabric::cordon`] are the
//! host and scheduler side.
//!
//! The rules of thumb behind [`Fabric::step`] are in [`physics`] and
//! `docs/simulator.md`. Randomness (symbol errors, packet loss) comes from
//! one seeded generator, so a seed replays a run exactly.

pub mod ecmp;
mod effect;
pub mod egress;
pub mod nic;
pub mod physics;
pub mod prom;
pub mod sysfs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use engine::time::{Nanos, SECOND};
use engine::Topology;
use serde::{Deserialize, Serialize};

use crate::switch::{Model, Profile};
pub use effect::Effect;
pub use nic::{Counters, Flap, NetdevCounters, Nic};
use sonic::watchdog::Action;

/// Nominal line rate of a NIC port, bytes per second (400 Gb/s).
pub const LINE_BYTES_PER_S: f64 = 50e9;
/// The symbol-error rate per bit of a healthy link: 1e-15, a symbol error
/// every few hours at 400G.
pub const HEALTHY_BER: f64 = 1e-15;

/// A fabric could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FabricError {
    /// The inventory does not describe a fabric the simulator can build.
    #[error("inventory: {0}")]
    Inventory(String),
    /// A selector matched nothing.
    #[error("selector {0} matches no NIC of the inventory")]
    NoMatch(String),
    /// The sysfs trees could not be written.
    #[error(transparent)]
    Sysfs(#[from] sysfs::SysfsError),
}

/// A job running on some nodes, over all their NICs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Its name (the `job` label of its step-time gauge).
    pub name: String,
    /// The nodes it runs on.
    pub nodes: Vec<String>,
    /// Fraction of each NIC's line rate the job offers when all rails are
    /// up (0.6 by default).
    #[serde(default = "default_load")]
    pub load: f64,
    /// Fraction of a training step spent in collectives (0.3 by default):
    /// the part of the step the network slows down.
    #[serde(default = "default_comm")]
    pub comm_fraction: f64,
    /// The healthy step time, seconds.
    #[serde(default = "default_step")]
    pub step_seconds: f64,
    /// `NCCL_IB_QPS_PER_CONNECTION` at launch (NCCL's default, 1): the flows each connection
    /// between two NICs on different leaves hashes as ([`ecmp`]).
    #[serde(default = "default_qps")]
    pub qps_per_connection: u32,
    /// `NCCL_IB_SPLIT_DATA_ON_QPS` at launch (NCCL's default, off).
    #[serde(default)]
    pub split_data_on_qps: bool,
    /// When the job creates its communicators again, seconds from the start of the run (a
    /// restart from its checkpoint, an elastic re-rendezvous): NCCL settings written for its
    /// next launch meanwhile ([`Job::next_launch`]) take effect then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relaunch_seconds: Vec<f64>,
}

impl JobSpec {
    /// Job `name` on `nodes` with the defaults a scenario file gets.
    pub fn new(name: &str, nodes: &[String]) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            nodes: nodes.to_vec(),
            load: default_load(),
            comm_fraction: default_comm(),
            step_seconds: default_step(),
            qps_per_connection: default_qps(),
            split_data_on_qps: false,
            relaunch_seconds: Vec::new(),
        }
    }
}

fn default_load() -> f64 {
    0.6
}
fn default_comm() -> f64 {
    0.3
}
fn default_step() -> f64 {
    0.5
}
fn default_qps() -> u32 {
    1
}

/// Which NICs a fault or an expectation is about. Every field given must
/// match; an empty selector matches every NIC.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    /// Node name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Netdev (`eth3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netdev: Option<String>,
    /// RDMA device (`mlx5_3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma_dev: Option<String>,
    /// Rail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rail: Option<u32>,
    /// Plane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plane: Option<u32>,
    /// Leaf switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
}

impl Selector {
    /// Whether `nic` matches.
    pub fn matches(&self, nic: &Nic) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        eq(&self.node, &nic.node)
            && eq(&self.netdev, &nic.netdev)
            && eq(&self.rdma_dev, &nic.rdma_dev)
            && eq(&self.switch, &nic.switch)
            && self.rail.is_none_or(|r| r == nic.rail)
            && self.plane.is_none_or(|p| p == nic.plane)
    }
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        let mut add = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                parts.push(format!("{k}={v}"));
            }
        };
        add("node", self.node.clone());
        add("netdev", self.netdev.clone());
        add("rdma_dev", self.rdma_dev.clone());
        add("rail", self.rail.map(|r| r.to_string()));
        add("plane", self.plane.map(|p| p.to_string()));
        add("switch", self.switch.clone());
        write!(f, "{{{}}}", parts.join(", "))
    }
}

/// An XID event NVML delivered on a node, waiting for the node's nvml
/// sensor to read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XidEvent {
    /// The node.
    pub node: String,
    /// The GPU's NVML index.
    pub gpu: u32,
    /// Its PCI bus id.
    pub pci_bus_id: String,
    /// The XID.
    pub xid: u64,
    /// When NVML raised it (fabric time).
    pub at: Nanos,
}

/// The PCI bus id of GPU `gpu` on a simulated node: the eight GPUs of an
/// HGX board, one per PCIe switch.
pub fn gpu_bus_id(gpu: u32) -> String {
    const BUSES: [u8; 8] = [0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb];
    format!("00000000:{:02X}:00.0", BUSES[gpu as usize % BUSES.len()])
}

/// A leaf or spine switch of the fabric.
#[derive(Debug, Clone)]
pub struct Switch {
    /// Its name.
    pub name: String,
    /// Its rail (leaves) .
    pub rail: Option<u32>,
    /// Its plane.
    pub plane: u32,
    /// The model.
    pub model: Model,
    /// The ports facing the spines (leaves): one ECMP group. One port as wide as the leaf's NIC
    /// ports where the rail has one leaf; where a rail spans several leaves (scalable units),
    /// as many uplinks as NIC ports, each a NIC's width (a non-blocking leaf).
    pub uplinks: Vec<String>,
}

impl Switch {
    /// The first uplink (the one a fault on "the uplink" is about).
    pub fn uplink(&self) -> Option<&str> {
        self.uplinks.first().map(String::as_str)
    }
}

/// A job's training steps, run at the pace the fabric allows: what its
/// exporter can say is the duration of the last step that *ended*, not the
/// pace of the one running.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepClock {
    /// The running step's share done.
    pub done: f64,
    /// When the running step began.
    pub began: Nanos,
    /// How long the last finished step took, seconds (`None` before one ends).
    pub last: Option<f64>,
}

impl StepClock {
    /// Runs `dt` more at `pace` seconds per step, ending at `now`.
    pub fn run(&mut self, dt: Nanos, now: Nanos, pace: f64) {
        if !(pace.is_finite() && pace > 0.0) {
            return;
        }
        self.done += dt as f64 / SECOND as f64 / pace;
        // (Sums of fractions fall a hair short of 1: a step is not held back for it.)
        while self.done >= 1.0 - 1e-9 {
            self.done = (self.done - 1.0).max(0.0);
            // The step ended `done` paces before `now`.
            let ended = now - (self.done * pace * SECOND as f64) as Nanos;
            self.last = Some((ended - self.began) as f64 / SECOND as f64);
            self.began = ended;
        }
    }
}

/// A job's state.
#[derive(Debug, Clone)]
pub struct Job {
    /// What it is.
    pub spec: JobSpec,
    /// Node indices.
    pub nodes: Vec<usize>,
    /// The pace of its step now, over the healthy one.
    pub step_ratio: f64,
    /// The steps it has run, as a training loop knows them at each step's end.
    pub steps: StepClock,
    /// Its communicators' connections between NICs, as last created.
    pub connections: Vec<ecmp::Connection>,
    /// The QP settings its launcher would pass at its next launch: what the job's NCCL
    /// environment file says now (the daemon's `nccl.qps` writes it).
    pub next_launch: ecmp::QpUse,
    /// How many of its `relaunch_seconds` have passed.
    pub relaunched: usize,
}

/// The simulated fabric.
#[derive(Debug)]
pub struct Fabric {
    topology: Arc<Topology>,
    /// The nodes, in inventory order.
    pub nodes: Vec<String>,
    /// Every NIC port, node by node in inventory order.
    pub nics: Vec<Nic>,
    /// The leaves, by name.
    pub leaves: BTreeMap<String, Switch>,
    /// The spines, one per plane.
    pub spines: BTreeMap<u32, Switch>,
    /// The jobs.
    pub jobs: Vec<Job>,
    /// Extra load per rail from competing jobs.
    pub congestion: BTreeMap<u32, f64>,
    /// Extra load onto a NIC (by index) from the other NICs of its rail.
    pub incast: BTreeMap<usize, f64>,
    /// The load offered to a leaf's uplink, over what it can carry.
    pub uplink_load: BTreeMap<String, f64>,
    /// Per leaf, each uplink's utilisation by the jobs' flows at the last step, as its ECMP
    /// hash placed them ([`ecmp::Routes`]).
    pub ecmp_utilisation: BTreeMap<String, Vec<f64>>,
    /// Nodes whose sensors see nothing new.
    pub blind_nodes: BTreeSet<String>,
    /// Switches that do not answer gNMI.
    pub silent_switches: BTreeSet<String>,
    /// Cordoned nodes.
    pub cordoned: BTreeSet<String>,
    /// Nodes with a GPU lost to an XID.
    pub gpu_lost: BTreeSet<String>,
    /// XID events not yet read by the nodes' nvml sensors.
    pub xid_events: Vec<XidEvent>,
    /// Fabric time.
    pub now: Nanos,
    /// When the run began: the jobs' relaunch times count from it.
    pub started: Nanos,
    rng: fastrand::Rng,
    /// Where the NICs' QP numbers come from: a generator of its own, so that creating
    /// communicators does not move the draws a seed replays for errors and loss.
    qpns: fastrand::Rng,
    tree: Option<sysfs::Tree>,
}

/// Every NIC of the inventory, healthy and up; each must name its switch
/// and port (the simulator needs the cabling).
fn cabled_nics(inv: &engine::topology::Inventory) -> Result<Vec<Nic>, FabricError> {
    let mut nics = Vec::new();
    for node in &inv.node {
        for nic in &node.nic {
            let (Some(switch), Some(port)) = (&nic.switch, &nic.switch_port) else {
                return Err(FabricError::Inventory(format!(
                    "node {:?} NIC {} names no switch and switch_port; the simulator needs the cabling",
                    node.name, nic.rdma_dev
                )));
            };
            nics.push(Nic {
                node: node.name.clone(),
                rdma_dev: nic.rdma_dev.clone(),
                netdev: nic.netdev.clone(),
                rail: nic.rail,
                plane: nic.plane,
                switch: switch.clone(),
                switch_port: port.clone(),
                carrier: true,
                admin_up: true,
                wedged: false,
                switch_port_up: true,
                drained: false,
                ber: HEALTHY_BER,
                loss: 0.0,
                rate: 1.0,
                storm: None,
                flap: None,
                last_down: None,
                offered: 0.0,
                paused: 0.0,
                delivered: 1.0,
                counters: Counters::default(),
                netdev_counters: NetdevCounters { carrier_on: true, ..NetdevCounters::default() },
            });
        }
    }
    Ok(nics)
}

/// The leaves (by name) and spines (by plane) of the inventory, each of the
/// kind `profile_of` gives its name, their PFC watchdogs started in `alert`
/// mode. A leaf has one port per cabled NIC (Ethernet0, 4, …) and its uplink
/// after the last; a spine one port per leaf of its plane.
fn switches(
    inv: &engine::topology::Inventory,
    nics: &[Nic],
    profile_of: &dyn Fn(&str) -> Profile,
) -> (BTreeMap<String, Switch>, BTreeMap<u32, Switch>) {
    let model = |name: &str, ports: usize| {
        let profile = Profile { pfcwd_action: Action::Alert, ..profile_of(name) };
        Model::with_profile(ports, profile)
    };
    let mut leaves = BTreeMap::new();
    let mut spines = BTreeMap::new();
    for sw in &inv.switch {
        let plane = sw.plane.unwrap_or(0);
        if sw.role.as_str() == "spine" {
            let fan = inv.switch.iter().filter(|s| s.role.as_str() == "leaf" && s.plane == sw.plane).count();
            let model = model(&sw.name, fan.max(1));
            spines.insert(plane, Switch { name: sw.name.clone(), rail: None, plane, model, uplinks: Vec::new() });
            continue;
        }
        let highest = nics
            .iter()
            .filter(|n| n.switch == sw.name)
            .filter_map(|n| n.switch_port.strip_prefix("Ethernet")?.parse::<usize>().ok())
            .max();
        let rail_leaves = inv.switch.iter().filter(|s| s.role.as_str() == "leaf" && s.rail == sw.rail).count();
        let downlinks = nics.iter().filter(|n| n.switch == sw.name).count();
        let uplink_count = if rail_leaves > 1 { downlinks.max(1) } else { 1 };
        let first_uplink = highest.map(|h| h / 4 + 1).unwrap_or(0);
        let model = model(&sw.name, first_uplink + uplink_count);
        let uplinks = (0..uplink_count).map(|k| format!("Ethernet{}", (first_uplink + k) * 4)).collect();
        leaves.insert(sw.name.clone(), Switch { name: sw.name.clone(), rail: sw.rail, plane, model, uplinks });
    }
    (leaves, spines)
}

/// A job on the fabric: its spec, and its nodes by index.
fn placed_job(spec: &JobSpec, nodes: &[String]) -> Result<Job, FabricError> {
    let placed = spec
        .nodes
        .iter()
        .map(|n| {
            nodes.iter().position(|x| x == n).ok_or_else(|| {
                FabricError::Inventory(format!(
                    "job {:?} runs on node {n:?}, which the inventory does not list",
                    spec.name
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    let next_launch = ecmp::QpUse { qps_per_connection: spec.qps_per_connection.max(1), split: spec.split_data_on_qps };
    Ok(Job {
        spec: spec.clone(),
        nodes: placed,
        step_ratio: 1.0,
        // Running before the run began: its last step took the healthy time.
        steps: StepClock { last: Some(spec.step_seconds), ..StepClock::default() },
        connections: Vec::new(),
        next_launch,
        relaunched: 0,
    })
}

impl Fabric {
    /// The fabric of `topology` at time `start`, with `jobs` running and
    /// the random generator seeded with `seed`. The leaves start with the
    /// PFC watchdog in `alert` mode on every port (it reports storms but
    /// lets them spread) — the daemon's `pfcwd.escalate` is what turns
    /// `drop` on.
    pub fn new(topology: Arc<Topology>, jobs: &[JobSpec], seed: u64, start: Nanos) -> Result<Fabric, FabricError> {
        Fabric::with_profiles(topology, jobs, seed, start, &|_| Profile::default())
    }

    /// [`Fabric::new`] with each switch of the kind `profile_of` gives its
    /// name (an ASIC family per switch: Mellanox, Broadcom, Marvell); its
    /// watchdog starts in `alert` whatever the profile says.
    pub fn with_profiles(
        topology: Arc<Topology>,
        jobs: &[JobSpec],
        seed: u64,
        start: Nanos,
        profile_of: &dyn Fn(&str) -> Profile,
    ) -> Result<Fabric, FabricError> {
        let inv = topology.inventory();
        let nodes: Vec<String> = inv.node.iter().map(|n| n.name.clone()).collect();
        let nics = cabled_nics(inv)?;
        let (leaves, spines) = switches(inv, &nics, profile_of);
        for nic in &nics {
            let leaf = leaves.get(&nic.switch).ok_or_else(|| {
                FabricError::Inventory(format!(
                    "NIC {}/{} is cabled to {:?}, not a leaf",
                    nic.node, nic.rdma_dev, nic.switch
                ))
            })?;
            if leaf.model.read().port(&nic.switch_port).is_none() {
                return Err(FabricError::Inventory(format!(
                    "NIC {}/{}: switch port {:?} is not an EthernetN name",
                    nic.node, nic.rdma_dev, nic.switch_port
                )));
            }
        }
        let jobs = jobs.iter().map(|spec| placed_job(spec, &nodes)).collect::<Result<_, _>>()?;
        let mut fabric = Fabric {
            topology,
            nodes,
            nics,
            leaves,
            spines,
            jobs,
            congestion: BTreeMap::new(),
            incast: BTreeMap::new(),
            uplink_load: BTreeMap::new(),
            ecmp_utilisation: BTreeMap::new(),
            blind_nodes: BTreeSet::new(),
            silent_switches: BTreeSet::new(),
            cordoned: BTreeSet::new(),
            gpu_lost: BTreeSet::new(),
            xid_events: Vec::new(),
            now: start,
            started: start,
            rng: fastrand::Rng::with_seed(seed),
            qpns: fastrand::Rng::with_seed(seed ^ 0x51f1_ec3a_9e77_0001),
            tree: None,
        };
        for j in 0..fabric.jobs.len() {
            fabric.create_communicators(j);
        }
        Ok(fabric)
    }

    /// Creates job `j`'s communicators afresh with the QP settings of its spec: new
    /// connections, new QP numbers, so new UDP source ports and new ECMP choices. NCCL reads
    /// `NCCL_IB_QPS_PER_CONNECTION` when a communicator is created, so a changed setting takes
    /// effect here (a job's restart, or its next `ncclCommInitRank`).
    pub fn create_communicators(&mut self, j: usize) {
        let job = &self.jobs[j];
        let qps =
            ecmp::QpUse { qps_per_connection: job.spec.qps_per_connection.max(1), split: job.spec.split_data_on_qps };
        let connections = ecmp::ring_connections(&self.nics, &self.nodes, &job.nodes, qps, &mut self.qpns);
        self.jobs[j].connections = connections;
    }

    /// Relaunches each job whose next `relaunch_seconds` has come.
    fn relaunch_due(&mut self) {
        for j in 0..self.jobs.len() {
            let job = &mut self.jobs[j];
            let due = job
                .spec
                .relaunch_seconds
                .get(job.relaunched)
                .is_some_and(|&at| self.now - self.started >= (at * engine::time::SECOND as f64) as Nanos);
            if due {
                job.relaunched += 1;
                self.relaunch(j);
            }
        }
    }

    /// Relaunches job `j`: its spec takes the settings of its next launch and its
    /// communicators are created afresh.
    pub fn relaunch(&mut self, j: usize) {
        let job = &mut self.jobs[j];
        job.spec.qps_per_connection = job.next_launch.qps_per_connection;
        job.spec.split_data_on_qps = job.next_launch.split;
        self.create_communicators(j);
    }

    /// Job `name`'s index.
    pub fn job_index(&self, name: &str) -> Option<usize> {
        self.jobs.iter().position(|j| j.spec.name == name)
    }

    /// The inventory the fabric was built from.
    pub fn topology(&self) -> &Arc<Topology> {
        &self.topology
    }

    /// Writes the nodes' sysfs trees under `root` (`<root>/<node>/class/…`)
    /// and keeps them current at every step.
    pub fn export_sysfs(&mut self, root: &Path) -> Result<(), FabricError> {
        self.tree = Some(sysfs::Tree::create(root, &self.nics)?);
        Ok(())
    }

    /// The NICs `selector` matches, by index; an error when none does.
    pub fn select(&self, selector: &Selector) -> Result<Vec<usize>, FabricError> {
        let found: Vec<usize> = (0..self.nics.len()).filter(|&i| selector.matches(&self.nics[i])).collect();
        if found.is_empty() {
            return Err(FabricError::NoMatch(selector.to_string()));
        }
        Ok(found)
    }

    /// Puts `effect` in force.
    pub fn start(&mut self, effect: &Effect) {
        self.apply(effect, true);
    }

    /// Ends `effect`: the link or switch is healthy again.
    pub fn stop(&mut self, effect: &Effect) {
        self.apply(effect, false);
    }

    /// NIC `nic` starts (`on`) or stops storming PAUSE frames on `prio`: its leaf port's
    /// queue is stormed too.
    fn storm(&mut self, nic: usize, prio: u8, on: bool) {
        let n = &mut self.nics[nic];
        n.storm = on.then_some(prio);
        if let Some(leaf) = self.leaves.get(&n.switch) {
            let q = prio as usize;
            let result = if on {
                leaf.model.inject_pfc_storm(&n.switch_port, q)
            } else {
                leaf.model.clear_pfc_storm(&n.switch_port, q)
            };
            if let Err(error) = result {
                tracing::warn!(message = "Storm on a port the leaf lacks.", %error);
            }
        }
    }

    fn apply(&mut self, effect: &Effect, on: bool) {
        let now = self.now;
        match effect {
            Effect::PfcStorm { nic, prio } => self.storm(*nic, *prio, on),
            Effect::Wedged { nic } => self.nics[*nic].wedged = on,
            Effect::Ber { nic, ber } => self.nics[*nic].ber = if on { *ber } else { HEALTHY_BER },
            Effect::Flap { nic, period, down } => {
                let n = &mut self.nics[*nic];
                n.flap = on.then_some(Flap { period: *period, down: *down, since: now });
                if !on && !n.carrier {
                    n.carrier = true;
                }
            }
            Effect::Degraded { nic, rate } => self.nics[*nic].rate = if on { *rate } else { 1.0 },
            Effect::Loss { nic, loss } => self.nics[*nic].loss = if on { *loss } else { 0.0 },
            Effect::Congestion { rail, load } => {
                if on {
                    *self.congestion.entry(*rail).or_default() += load;
                } else {
                    self.congestion.remove(rail);
                }
            }
            Effect::Incast { nic, load } => {
                if on {
                    *self.incast.entry(*nic).or_default() += load;
                } else {
                    self.incast.remove(nic);
                }
            }
            Effect::UplinkCongestion { switch, load } => {
                if on {
                    self.uplink_load.insert(switch.clone(), *load);
                } else {
                    self.uplink_load.remove(switch);
                }
            }
            Effect::GpuXid { node, gpu, xid } => {
                if on {
                    self.gpu_lost.insert(node.clone());
                    let pci_bus_id = gpu_bus_id(*gpu);
                    self.xid_events.push(XidEvent { node: node.clone(), gpu: *gpu, pci_bus_id, xid: *xid, at: now });
                } else {
                    self.gpu_lost.remove(node);
                }
            }
            Effect::JobRelaunch { job, qps } => {
                if on && *job < self.jobs.len() {
                    if let Some(qps) = qps {
                        self.jobs[*job].next_launch.qps_per_connection = (*qps).max(1);
                    }
                    self.relaunch(*job);
                }
            }
            Effect::HashChange { switch, fields } => {
                if on {
                    self.push_hash(switch, fields);
                }
            }
            Effect::SensorOutage { node } => {
                if on {
                    self.blind_nodes.insert(node.clone());
                } else {
                    self.blind_nodes.remove(node);
                }
            }
            Effect::GnmiSilent { switch } => {
                if let Some(leaf) = self.leaves.get(switch) {
                    leaf.model.write(|s| s.silent = on);
                }
                if on {
                    self.silent_switches.insert(switch.clone());
                } else {
                    self.silent_switches.remove(switch);
                }
            }
        }
    }

    /// The NIC of `node` named `dev` (a netdev or an RDMA device).
    pub fn nic_index(&self, node: &str, dev: &str) -> Option<usize> {
        self.nics.iter().position(|n| n.node == node && (n.netdev == dev || n.rdma_dev == dev))
    }

    /// Sets a host link administratively up or down (what `ip link set`
    /// does). Returns the previous state, or `None` for an unknown link.
    pub fn set_admin(&mut self, node: &str, dev: &str, up: bool) -> Option<bool> {
        let i = self.nic_index(node, dev)?;
        Some(std::mem::replace(&mut self.nics[i].admin_up, up))
    }

    /// Drains (or restores) `rail` on `node`: the scheduler stops placing
    /// collective traffic on it. Returns how many NICs changed.
    pub fn drain(&mut self, node: &str, rail: u32, drained: bool) -> usize {
        let mut changed = 0;
        for n in self.nics.iter_mut().filter(|n| n.node == node && n.rail == rail) {
            if n.drained != drained {
                n.drained = drained;
                changed += 1;
            }
        }
        changed
    }

    /// Cordons (or uncordons) a node. Returns whether it changed; `None`
    /// for an unknown node.
    pub fn cordon(&mut self, node: &str, cordoned: bool) -> Option<bool> {
        if !self.nodes.iter().any(|n| n == node) {
            return None;
        }
        Some(if cordoned { self.cordoned.insert(node.to_string()) } else { self.cordoned.remove(node) })
    }

    /// The leaf called `name`.
    pub fn leaf(&self, name: &str) -> Option<&Switch> {
        self.leaves.get(name)
    }

    /// Moves the fabric by `dt` nanoseconds and writes the sysfs trees.
    pub fn step(&mut self, dt: Nanos) -> Result<(), FabricError> {
        self.relaunch_due();
        physics::step(self, dt);
        if let Some(tree) = &mut self.tree {
            tree.write(&self.nics)?;
        }
        Ok(())
    }

    /// A steady-state probe: see [`physics::PROBES`].
    pub fn probe(&self, name: &str) -> Option<f64> {
        physics::probe(self, name)
    }

    pub(crate) fn rng(&mut self) -> &mut fastrand::Rng {
        &mut self.rng
    }
}
