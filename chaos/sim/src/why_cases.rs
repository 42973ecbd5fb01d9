//! Recordings of a job slowed down by one fault on the simulated fabric,
//! for testing and benchmarking `rocemend why`.
//!
//! A [`Case`] is a job on some nodes of an inventory, a fault (one of the
//! chaos library's kinds, at a place), optionally a second small fault that
//! should not be blamed, and benign jitter on every counter. [`record`]
//! steps a [`Fabric`] through it every 100 ms — the simulator's own
//! physics decide what moves and how much the step time rises — and writes
//! what a daemon would record: NIC counters (ethtool, RDMA) every 100 ms,
//! leaf-port counters (PFC, queue marks, watchdog, oper-status; bytes sent
//! on the uplinks) and the job's step time every 500 ms, GPU XIDs as events, and the job → nodes
//! mapping (`job_node_info`). No daemon acts: the fault runs its course.
//!
//! [`random_case`] draws a case from a seed: kind, place, strength and
//! timing of the fault, the job's nodes, and a distractor.

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::recording::Writer;
use engine::{CounterSpec, Labels, Nanos, Note, SampleKind, SeriesSpec, Topology, Value, MS, SECOND};

use crate::fabric::{Effect, Fabric, JobSpec, Selector};

/// When every case starts, ns since the epoch (2023-11-14T22:13:20Z).
pub const START: Nanos = 1_700_000_000 * SECOND;
/// The fabric's step, and the NIC counters' period.
pub const TICK: Nanos = 100 * MS;
/// The switch counters' and the step time's period.
pub const SLOW_TICK: Nanos = 500 * MS;
/// The lossless priority.
const PRIO: usize = 3;

/// The kind of a case's fault: one of the chaos library's
/// (`chaos/scenarios/*.toml`) that slows a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaseKind {
    /// A NIC storms PFC pause frames (`prio`).
    PfcStorm,
    /// Symbol errors at `ber` on the selected NICs.
    SymbolErrors,
    /// The carrier is lost every `period` for `down`.
    LinkFlap,
    /// A GPU raises XID `xid`.
    GpuXid,
    /// The other NICs of the rail send `load` more to the NIC.
    Incast,
    /// The leaf's uplink is offered `load` times what it carries.
    UplinkCongestion,
    /// Another job offers `load` on every port of a rail.
    Congestion,
    /// The job is relaunched with `qps` queue pairs per connection (an ECMP collision where
    /// its leaves have several uplinks: `chaos/scenarios/ecmp_collision.toml`). Not drawn by
    /// [`random_case`]: it needs an inventory of scalable units.
    JobRelaunch,
    /// Not the fabric: the job's own input pipeline (a data loader, a
    /// checkpoint to slow storage) makes its steps `factor` times longer,
    /// and the fabric only carries less. The negative control: `why` must
    /// not blame a fabric element. Not drawn by [`random_case`]
    /// ([`not_the_fabric`] draws it).
    LoaderStall,
}

impl CaseKind {
    /// Every kind.
    pub const ALL: [CaseKind; 7] = [
        CaseKind::PfcStorm,
        CaseKind::SymbolErrors,
        CaseKind::LinkFlap,
        CaseKind::GpuXid,
        CaseKind::Incast,
        CaseKind::UplinkCongestion,
        CaseKind::Congestion,
    ];

    /// The name the chaos scenarios use.
    pub fn name(self) -> &'static str {
        match self {
            CaseKind::PfcStorm => "pfc_storm",
            CaseKind::SymbolErrors => "symbol_errors",
            CaseKind::LinkFlap => "link_flap",
            CaseKind::GpuXid => "gpu_xid",
            CaseKind::Incast => "incast",
            CaseKind::UplinkCongestion => "uplink_congestion",
            CaseKind::Congestion => "congestion",
            CaseKind::JobRelaunch => "job_relaunch",
            CaseKind::LoaderStall => "loader_stall",
        }
    }

    /// The kind a scenario names, if it slows a job.
    pub fn parse(name: &str) -> Option<CaseKind> {
        CaseKind::ALL.into_iter().chain([CaseKind::JobRelaunch]).find(|k| k.name() == name)
    }
}

/// One fault: what, where, how strong, when.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// Its kind.
    pub kind: CaseKind,
    /// Which NICs (or, for a GPU XID, the node; for uplink congestion, the
    /// `switch`; for congestion, the `rail`).
    pub select: Selector,
    /// Offset from the case's start.
    pub at: Nanos,
    /// How long; `None`: to the end.
    pub duration: Option<Nanos>,
    /// BER (symbol errors), load (incast, congestion), XID, GPU, prio…
    pub params: BTreeMap<String, f64>,
}

impl Fault {
    fn param(&self, name: &str, default: f64) -> f64 {
        self.params.get(name).copied().unwrap_or(default)
    }

    /// The fabric effects of this fault.
    fn effects(&self, fabric: &Fabric) -> Vec<Effect> {
        let nics = || fabric.select(&self.select).unwrap_or_default();
        match self.kind {
            CaseKind::PfcStorm => {
                nics().into_iter().map(|nic| Effect::PfcStorm { nic, prio: self.param("prio", 3.0) as u8 }).collect()
            }
            CaseKind::SymbolErrors => {
                nics().into_iter().map(|nic| Effect::Ber { nic, ber: self.param("ber", 1e-9) }).collect()
            }
            CaseKind::LinkFlap => nics()
                .into_iter()
                .map(|nic| Effect::Flap {
                    nic,
                    period: (self.param("period", 0.7) * 1e9) as Nanos,
                    down: (self.param("down", 0.15) * 1e9) as Nanos,
                })
                .collect(),
            CaseKind::GpuXid => vec![Effect::GpuXid {
                node: self.select.node.clone().unwrap_or_default(),
                gpu: self.param("gpu", 0.0) as u32,
                xid: self.param("xid", 79.0) as u64,
            }],
            CaseKind::Incast => {
                nics().into_iter().map(|nic| Effect::Incast { nic, load: self.param("load", 1.0) }).collect()
            }
            CaseKind::UplinkCongestion => vec![Effect::UplinkCongestion {
                switch: self.select.switch.clone().unwrap_or_default(),
                load: self.param("load", 1.5),
            }],
            CaseKind::Congestion => {
                vec![Effect::Congestion { rail: self.select.rail.unwrap_or(0), load: self.param("load", 0.8) }]
            }
            CaseKind::JobRelaunch => vec![Effect::JobRelaunch { job: 0, qps: Some(self.param("qps", 1.0) as u32) }],
            CaseKind::LoaderStall => Vec::new(),
        }
    }
}

/// A job, a fault, maybe a distractor, and how long to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The job's name.
    pub job: String,
    /// Its nodes.
    pub nodes: Vec<String>,
    /// The fault that slows the job.
    pub fault: Fault,
    /// A second, small fault that should not be blamed.
    pub distractor: Option<Fault>,
    /// How long the recording lasts.
    pub length: Nanos,
    /// Seed of the fabric and the jitter.
    pub seed: u64,
    /// `NCCL_IB_QPS_PER_CONNECTION` the job was launched with.
    pub qps_per_connection: u32,
}

/// Every series of a recording, by id.
struct Table {
    specs: Vec<SeriesSpec>,
}

impl Table {
    fn add(&mut self, metric: &str, labels: &[(&str, &str)], kind: SampleKind) -> u32 {
        self.specs.push(SeriesSpec { metric: metric.into(), labels: Labels::from_pairs(labels.iter().copied()), kind });
        self.specs.len() as u32 - 1
    }
}

const GAUGE: SampleKind = SampleKind::Gauge;
const C64: SampleKind = SampleKind::Counter(CounterSpec::U64);

/// The series of one NIC and the jitter they carry (per 100 ms, uniform
/// from 0 to it): a healthy fabric is never perfectly still.
const NIC_SERIES: [(&str, f64); 6] = [
    ("ethtool_tx_prio_pause_duration_us", 300.0),
    ("ethtool_rx_prio_pause_duration_us", 300.0),
    ("ethtool_rx_pcs_symbol_err_phy", 0.0),
    ("rdma_port_xmit_wait", 2e4),
    ("rdma_np_cnp_sent", 50.0),
    ("link_carrier_down_count", 0.0),
];

/// The series of one leaf port and their jitter (per 500 ms).
const PORT_SERIES: [(&str, f64); 3] = [
    ("switch_pfc_rx_pause_duration_us", 1500.0),
    ("switch_pfc_tx_pause_duration_us", 1500.0),
    ("switch_queue_ecn_marked_packets", 500.0),
];

/// Records `case` on the fabric of `topology`: the recording's bytes.
pub fn record(case: &Case, topology: Arc<Topology>) -> Vec<u8> {
    let job = JobSpec { qps_per_connection: case.qps_per_connection, ..JobSpec::new(&case.job, &case.nodes) };
    let mut fabric = Fabric::new(topology, &[job], case.seed, START).expect("the inventory builds a fabric");
    let mut rng = fastrand::Rng::with_seed(case.seed ^ 0x5eed);
    let mut rec = Recorder::declare(&fabric, case);
    let faults: Vec<&Fault> = std::iter::once(&case.fault).chain(case.distractor.as_ref()).collect();
    let effects: Vec<Vec<Effect>> = faults.iter().map(|f| f.effects(&fabric)).collect();
    let steps = case.length / TICK;
    for k in 0..=steps {
        let offset = k * TICK;
        for (f, fx) in faults.iter().zip(&effects) {
            rec.fault(&mut fabric, f, fx, offset);
        }
        if k > 0 {
            fabric.step(TICK).expect("no sysfs tree to write");
        }
        let t = START + offset;
        rec.nics(&fabric, &mut rng, t);
        rec.xids(&mut fabric, t);
        if offset % SLOW_TICK == 0 {
            rec.ports(&fabric, &mut rng, t);
            rec.job(&fabric, &mut rng, t);
        }
    }
    rec.w.flush().expect("writing to memory");
    rec.w.inner().clone()
}

/// The recording being written: its series, the jitter each has gathered,
/// and the writer. Every write is to memory: it cannot fail.
struct Recorder {
    table: Table,
    w: Writer<Vec<u8>>,
    /// Per NIC, its [`NIC_SERIES`].
    nic_ids: Vec<[u32; 6]>,
    nic_jitter: Vec<[u64; 6]>,
    /// Every leaf port, (switch, port).
    ports: Vec<(String, String)>,
    /// Per port, its [`PORT_SERIES`], the watchdog's state and oper-status.
    port_ids: Vec<[u32; 5]>,
    /// Per port, its bytes sent (`SAI_PORT_STAT_IF_OUT_OCTETS`) if it is an uplink: what an
    /// ECMP collision shows in.
    uplink_tx: Vec<Option<u32>>,
    port_jitter: Vec<[u64; 3]>,
    step_id: u32,
    /// The job → node mapping, one series per node.
    info: Vec<u32>,
    /// XID series, declared when first raised.
    xid_ids: BTreeMap<(String, u32, u64), u32>,
    /// How many times longer the job's steps are for reasons of its own (a loader stall).
    own_slowdown: f64,
}

impl Recorder {
    /// Every series of `case` on `fabric`, declared.
    fn declare(fabric: &Fabric, case: &Case) -> Recorder {
        let mut table = Table { specs: Vec::new() };
        let prio = PRIO.to_string();
        let nic_ids: Vec<[u32; 6]> = fabric
            .nics
            .iter()
            .map(|n| {
                let dev: [(&str, &str); 3] = [("node", &n.node), ("rdma_dev", &n.rdma_dev), ("rdma_port", "1")];
                let net: [(&str, &str); 2] = [("node", &n.node), ("netdev", &n.netdev)];
                let pause: [(&str, &str); 3] = [("node", &n.node), ("netdev", &n.netdev), ("prio", &prio)];
                [
                    table.add(NIC_SERIES[0].0, &pause, C64),
                    table.add(NIC_SERIES[1].0, &pause, C64),
                    table.add(NIC_SERIES[2].0, &net, C64),
                    table.add(NIC_SERIES[3].0, &dev, SampleKind::Counter(CounterSpec::saturating(32))),
                    table.add(NIC_SERIES[4].0, &dev, C64),
                    table.add(NIC_SERIES[5].0, &net, SampleKind::Counter(CounterSpec::U32_WRAP)),
                ]
            })
            .collect();
        let ports: Vec<(String, String)> = fabric
            .leaves
            .values()
            .flat_map(|l| l.model.port_names().into_iter().map(move |p| (l.name.clone(), p)))
            .collect();
        let port_ids: Vec<[u32; 5]> = ports
            .iter()
            .map(|(s, p)| {
                let q: [(&str, &str); 4] = [("switch", s), ("port", p), ("queue", &prio), ("prio", &prio)];
                let pfc: [(&str, &str); 3] = [("switch", s), ("port", p), ("prio", &prio)];
                [
                    table.add(PORT_SERIES[0].0, &pfc, C64),
                    table.add(PORT_SERIES[1].0, &pfc, C64),
                    table.add(PORT_SERIES[2].0, &q, C64),
                    table.add("switch_pfcwd_stormed", &q, GAUGE),
                    table.add("switch_oper_up", &[("switch", s), ("port", p)], GAUGE),
                ]
            })
            .collect();
        let uplink_tx: Vec<Option<u32>> = ports
            .iter()
            .map(|(s, p)| {
                let uplink = fabric.leaves[s].uplinks.contains(p);
                uplink.then(|| table.add("switch_port_tx_bytes", &[("switch", s), ("port", p)], C64))
            })
            .collect();
        let step_id = table.add("job_step_time_seconds", &[("job", &case.job)], GAUGE);
        let info: Vec<u32> =
            case.nodes.iter().map(|n| table.add("job_node_info", &[("job", &case.job), ("node", n)], GAUGE)).collect();
        let mut w = Writer::new(Vec::new());
        for (id, spec) in table.specs.iter().enumerate() {
            w.declare(id as u32, spec).expect("writing to memory");
        }
        Recorder {
            nic_jitter: vec![[0u64; 6]; fabric.nics.len()],
            port_jitter: vec![[0u64; 3]; ports.len()],
            table,
            w,
            nic_ids,
            ports,
            port_ids,
            uplink_tx,
            step_id,
            info,
            xid_ids: BTreeMap::new(),
            own_slowdown: 1.0,
        }
    }

    /// Starts fault `f` (its effects `fx`) at its time, with a `fault`
    /// note, and stops it at its end.
    fn fault(&mut self, fabric: &mut Fabric, f: &Fault, fx: &[Effect], offset: Nanos) {
        if offset == f.at {
            if f.kind == CaseKind::LoaderStall {
                self.own_slowdown = f.param("factor", 1.5);
            }
            fx.iter().for_each(|e| fabric.start(e));
            let what = format!("{} on {}", f.kind.name(), f.select);
            let note = Note { ts: START + offset, kind: "fault".into(), text: what, labels: Labels::default() };
            self.w.note(&note).expect("writing to memory");
        }
        if f.duration.is_some_and(|d| offset == f.at + d) {
            if f.kind == CaseKind::LoaderStall {
                self.own_slowdown = 1.0;
            }
            fx.iter().for_each(|e| fabric.stop(e));
        }
    }

    /// Every NIC's counters at `t`, with their jitter.
    fn nics(&mut self, fabric: &Fabric, rng: &mut fastrand::Rng, t: Nanos) {
        for (i, nic) in fabric.nics.iter().enumerate() {
            let c = &nic.netdev_counters;
            let values = [
                c.tx_pause_us[PRIO],
                c.rx_pause_us[PRIO],
                c.rx_pcs_symbol_err_phy,
                nic.counters.xmit_wait.min(u32::MAX as u64),
                nic.counters.np_cnp_sent,
                c.carrier_down as u64,
            ];
            for (j, v) in values.iter().enumerate() {
                self.nic_jitter[i][j] += (rng.f64() * NIC_SERIES[j].1) as u64;
                let jitter = self.nic_jitter[i][j];
                // xmit_wait saturates at 32 bits, as the kernel's does.
                let v = if j == 3 { (v + jitter).min(u32::MAX as u64) } else { v + jitter };
                self.w.write_raw_sample(self.nic_ids[i][j], t, Value::Count(v)).expect("writing to memory");
            }
        }
    }

    /// The XIDs the GPUs raised since the last step, each series declared
    /// when first raised.
    fn xids(&mut self, fabric: &mut Fabric, t: Nanos) {
        for x in std::mem::take(&mut fabric.xid_events) {
            let key = (x.node.clone(), x.gpu, x.xid);
            let (table, w) = (&mut self.table, &mut self.w);
            let id = *self.xid_ids.entry(key).or_insert_with(|| {
                let gpu = x.gpu.to_string();
                let xid = x.xid.to_string();
                let labels = [("node", x.node.as_str()), ("gpu", &gpu), ("xid", &xid), ("pci_bus_id", &x.pci_bus_id)];
                let id = table.add("gpu_xid", &labels, SampleKind::Event);
                w.declare(id, &table.specs[id as usize]).expect("writing to memory");
                id
            });
            self.w.write_raw_sample(id, t, Value::Real(x.xid as f64)).expect("writing to memory");
        }
    }

    /// Every leaf port's counters and states at `t`, with their jitter.
    fn ports(&mut self, fabric: &Fabric, rng: &mut fastrand::Rng, t: Nanos) {
        for (i, (s, p)) in self.ports.iter().enumerate() {
            let state = fabric.leaves[s].model.read();
            let Some(index) = state.index(p) else { continue };
            let port = &state.ports[index];
            let q = &port.queues[PRIO];
            let values = [port.pfc[PRIO].rx_pause_us, port.pfc[PRIO].tx_pause_us, q.ecn_marked_packets];
            let stormed = state.watchdog.queues.get(&(index, PRIO as u8)).is_some_and(|w| w.stormed);
            for (j, v) in values.iter().enumerate() {
                self.port_jitter[i][j] += (rng.f64() * PORT_SERIES[j].1) as u64;
                let v = Value::Count(v + self.port_jitter[i][j]);
                self.w.write_raw_sample(self.port_ids[i][j], t, v).expect("writing to memory");
            }
            let gauges = [stormed, port.oper_up];
            for (j, g) in gauges.iter().enumerate() {
                let v = Value::Real(f64::from(u8::from(*g)));
                self.w.write_raw_sample(self.port_ids[i][3 + j], t, v).expect("in memory");
            }
            if let Some(id) = self.uplink_tx[i] {
                self.w.write_raw_sample(id, t, Value::Count(port.out_octets)).expect("in memory");
            }
        }
    }

    /// The job's step time (±3 %) and its nodes at `t`.
    fn job(&mut self, fabric: &Fabric, rng: &mut fastrand::Rng, t: Nanos) {
        let ratio = fabric.jobs[0].step_ratio * self.own_slowdown * (1.0 + 0.03 * (2.0 * rng.f64() - 1.0));
        self.w.write_raw_sample(self.step_id, t, Value::Real(0.5 * ratio)).expect("writing to memory");
        for id in &self.info {
            self.w.write_raw_sample(*id, t, Value::Real(1.0)).expect("writing to memory");
        }
    }
}

fn pick<'a, T>(rng: &mut fastrand::Rng, items: &'a [T]) -> &'a T {
    &items[rng.usize(..items.len())]
}

/// A NIC selector.
fn nic(node: &str, netdev: &str) -> Selector {
    Selector { node: Some(node.into()), netdev: Some(netdev.into()), ..Selector::default() }
}

/// A random case on `topology` from `seed`: a fault of a random kind at a
/// random place of the job's path, strong enough to slow the job by more
/// than 15 %, starting 15–25 s in and lasting 8–15 s (an XID: to the end),
/// and in most cases a second small fault (a few symbol errors a second,
/// one link flap, or an XID on a node outside the job).
pub fn random_case(topology: &Topology, seed: u64) -> Case {
    let mut rng = fastrand::Rng::with_seed(seed);
    let inv = topology.inventory();
    let all: Vec<String> = inv.node.iter().map(|n| n.name.clone()).collect();
    let mut nodes = all.clone();
    rng.shuffle(&mut nodes);
    nodes.truncate(rng.usize(2..=all.len()));
    nodes.sort();
    let netdevs: Vec<String> = inv.node[0].nic.iter().map(|n| n.netdev.clone()).collect();
    let leaves: Vec<(String, u32)> = inv.switch.iter().filter_map(|s| Some((s.name.clone(), s.rail?))).collect();
    let kind = *pick(&mut rng, &CaseKind::ALL);
    let at = (15 + rng.i64(0..=10)) * SECOND;
    let duration = (8 + rng.i64(0..=7)) * SECOND;
    let job_node = pick(&mut rng, &nodes).clone();
    let any_node = pick(&mut rng, &all).clone();
    let dev = pick(&mut rng, &netdevs).clone();
    let places = Places { job_node: &job_node, any_node: &any_node, dev: &dev, leaves: &leaves };
    let (select, params) = strong(kind, &places, &mut rng);
    let duration = (kind != CaseKind::GpuXid).then_some(duration);
    let fault = Fault { kind, select, at, duration, params };
    let distractor = distractor(&mut rng, &all, &nodes, &netdevs);
    let end = at + duration.unwrap_or(12 * SECOND) + 5 * SECOND;
    Case { job: "train-a".into(), nodes, fault, distractor, length: end.max(42 * SECOND), seed, qps_per_connection: 1 }
}

/// A negative control on `topology` from `seed`: the job slows by 30 to
/// 100 % for reasons of its own (its data loader), 15–25 s in, for 8–15 s,
/// on a healthy fabric with, in most cases, the small distractors of
/// [`random_case`]. The right answer is "not the fabric".
pub fn not_the_fabric(topology: &Topology, seed: u64) -> Case {
    let mut case = random_case(topology, seed);
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x10ad);
    let (select, params) =
        strong(CaseKind::LoaderStall, &Places { job_node: "", any_node: "", dev: "", leaves: &[] }, &mut rng);
    case.fault = Fault { kind: CaseKind::LoaderStall, select, params, ..case.fault };
    case.fault.duration = Some(case.fault.duration.unwrap_or((8 + rng.i64(0..=7)) * SECOND));
    case
}

/// The places a case's fault may be drawn at.
struct Places<'a> {
    /// A node of the job.
    job_node: &'a str,
    /// Any node.
    any_node: &'a str,
    /// A NIC's netdev.
    dev: &'a str,
    /// The leaves, with their rails.
    leaves: &'a [(String, u32)],
}

/// Where a fault of `kind` lands and how strong it is: enough to slow the
/// job by more than 15 %. A storm or an incast may be anywhere (its
/// pauses spread); errors and flaps are on the job's own NICs.
fn strong(kind: CaseKind, at: &Places, rng: &mut fastrand::Rng) -> (Selector, BTreeMap<String, f64>) {
    let mut params = BTreeMap::new();
    let select = match kind {
        CaseKind::PfcStorm => {
            params.insert("prio".into(), 3.0);
            nic(at.any_node, at.dev)
        }
        CaseKind::SymbolErrors => {
            params.insert("ber".into(), 1.5e-7 + rng.f64() * 1e-7);
            nic(at.job_node, at.dev)
        }
        CaseKind::LinkFlap => {
            params.insert("period".into(), 0.5 + rng.f64() * 0.4);
            params.insert("down".into(), 0.1 + rng.f64() * 0.1);
            nic(at.job_node, at.dev)
        }
        CaseKind::GpuXid => {
            params.insert("gpu".into(), rng.u32(0..8) as f64);
            params.insert("xid".into(), *pick(rng, &[79.0, 48.0, 63.0]));
            Selector { node: Some(at.job_node.to_string()), ..Selector::default() }
        }
        CaseKind::Incast => {
            params.insert("load".into(), 1.5 + rng.f64());
            nic(at.any_node, at.dev)
        }
        CaseKind::UplinkCongestion => {
            params.insert("load".into(), 2.0 + rng.f64());
            Selector { switch: Some(pick(rng, at.leaves).0.clone()), ..Selector::default() }
        }
        CaseKind::Congestion => {
            params.insert("load".into(), 0.6 + rng.f64() * 0.4);
            Selector { rail: Some(pick(rng, at.leaves).1), ..Selector::default() }
        }
        CaseKind::JobRelaunch => {
            params.insert("qps".into(), 1.0);
            Selector::default()
        }
        CaseKind::LoaderStall => {
            params.insert("factor".into(), 1.3 + rng.f64() * 0.7);
            Selector::default()
        }
    };
    (select, params)
}

/// In three cases of four, a second small fault that should not be
/// blamed: a few symbol errors a second, one link flap, or an XID on a
/// node outside the job (`nodes`).
fn distractor(rng: &mut fastrand::Rng, all: &[String], nodes: &[String], netdevs: &[String]) -> Option<Fault> {
    let (other_node, other_dev) = (pick(rng, all).clone(), pick(rng, netdevs).clone());
    match rng.u8(0..4) {
        0 => None,
        1 => Some(Fault {
            kind: CaseKind::SymbolErrors,
            select: nic(&other_node, &other_dev),
            at: rng.i64(5..=35) * SECOND,
            duration: None,
            params: [("ber".to_string(), 1e-11)].into(),
        }),
        2 => Some(Fault {
            kind: CaseKind::LinkFlap,
            select: nic(&other_node, &other_dev),
            at: rng.i64(5..=35) * SECOND,
            duration: Some(SECOND),
            params: [("period".to_string(), 60.0), ("down".to_string(), 0.15)].into(),
        }),
        _ => {
            let outside: Vec<&String> = all.iter().filter(|n| !nodes.contains(n)).collect();
            outside.first().map(|n| Fault {
                kind: CaseKind::GpuXid,
                select: Selector { node: Some((*n).clone()), ..Selector::default() },
                at: rng.i64(5..=35) * SECOND,
                duration: None,
                params: [("gpu".to_string(), 2.0), ("xid".to_string(), 79.0)].into(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Arc<Topology> {
        Arc::new(Topology::parse(engine::topology::EXAMPLE_INVENTORY, "example").unwrap())
    }

    #[test]
    fn a_case_is_recorded_with_its_job_and_a_rising_step_time() {
        let t = example();
        let case = Case {
            job: "j".into(),
            nodes: vec!["node-01".into(), "node-02".into()],
            fault: Fault {
                kind: CaseKind::LinkFlap,
                select: nic("node-02", "eth5"),
                at: 10 * SECOND,
                duration: None,
                params: BTreeMap::new(),
            },
            distractor: None,
            length: 20 * SECOND,
            seed: 1,
            qps_per_connection: 1,
        };
        let bytes = record(&case, t);
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains(r#""metric":"job_node_info","labels":{"job":"j","node":"node-02"}"#));
        let step_id = text
            .lines()
            .find(|l| l.contains("job_step_time_seconds"))
            .and_then(|l| l.split("\"series\":").nth(1)?.split(',').next()?.parse::<u32>().ok())
            .unwrap();
        let steps: Vec<f64> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{{\"s\":{step_id},")))
            .map(|l| l.rsplit(':').next().unwrap().trim_end_matches('}').parse().unwrap())
            .collect();
        assert!(steps[..20].iter().all(|s| *s < 0.52), "{steps:?}");
        assert!(steps[25..].iter().all(|s| *s > 0.6), "a flapping link slows the job: {steps:?}");
    }

    #[test]
    fn random_cases_are_reproducible_and_vary() {
        let t = example();
        assert_eq!(random_case(&t, 7), random_case(&t, 7));
        let kinds: std::collections::BTreeSet<CaseKind> = (0..60).map(|s| random_case(&t, s).fault.kind).collect();
        assert_eq!(kinds.len(), CaseKind::ALL.len());
    }
}
