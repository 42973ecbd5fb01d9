//! A fault resolved, the same for both harnesses: its timing in
//! nanoseconds (a game day's phases start its faults, so theirs is the
//! default: at once, to the end), its parameters with their defaults and
//! clamped to sense, what and where for people ([`FaultPlan::label`]),
//! where it lands ([`FaultPlan::locations`]), and what it does to the
//! simulated fabric ([`FaultPlan::effects`]).
//!
//! Each harness checks first what only it refuses — which keys apply, the
//! ranges it accepts, the names of real links — and then calls
//! [`FaultSpec::resolve`].

use engine::time::{Nanos, MS};
use sim::fabric::{Effect, Fabric, Selector};

use super::{site, Ctx};
use crate::spec::{FaultKind, FaultSpec, ScenarioError};

/// One fault, resolved.
#[derive(Debug, Clone)]
pub struct FaultPlan {
    /// What.
    pub kind: FaultKind,
    /// Where.
    pub select: Selector,
    /// Offset from the run's start.
    pub at: Nanos,
    /// Random extra delay, at most.
    pub jitter: Nanos,
    /// How long, if not to the end.
    pub duration: Option<Nanos>,
    /// Times.
    pub repeats: u32,
    /// Between repeats.
    pub every: Nanos,
    /// PFC priority.
    pub prio: u8,
    /// BER.
    pub ber: f64,
    /// Flap period.
    pub period: Nanos,
    /// Time down per flap.
    pub down: Nanos,
    /// Link rate fraction.
    pub rate: f64,
    /// Loss fraction.
    pub loss: f64,
    /// Competing load.
    pub load: f64,
    /// The GPU of a `gpu_xid`.
    pub gpu: u32,
    /// The XID of a `gpu_xid`.
    pub xid: u64,
    /// The job of a `job_relaunch` (every job when `None`).
    pub job: Option<String>,
    /// The QPs per connection a `job_relaunch` launches with (its environment file's when `None`).
    pub qps: Option<u32>,
    /// The ECMP hash fields a `hash_change` pushes.
    pub hash: Vec<sonic::hash::HashField>,
    /// netem delay.
    pub delay: Nanos,
    /// tbf rate.
    pub rate_mbit: u64,
    /// veth link.
    pub link: Option<String>,
    /// The veth's other end, the one a `veth_flap` flaps (real-link faults
    /// only): the fault's `peer`, else `<link>p`.
    pub peer: Option<String>,
    /// What and where, for people: `pfc_storm {node=node-04, netdev=eth3}`,
    /// `veth_flap rcv0`. A scenario makes it unique among its faults: a
    /// run's fault records carry it, which ties each occurrence to its
    /// fault.
    pub label: String,
    /// Where it lands, as labels ([`site`]), in the fabric's NIC order.
    pub locations: Vec<site::Location>,
}

impl FaultSpec {
    /// The fault resolved on `fabric`, with the real link and peer the
    /// harness checked (none for a simulator fault): its durations read,
    /// its defaults filled in and its values clamped to sense.
    pub fn resolve(
        &self,
        ctx: &Ctx,
        fabric: &Fabric,
        link: Option<String>,
        peer: Option<String>,
    ) -> Result<FaultPlan, ScenarioError> {
        let kind = *self.kind.get_ref();
        let select = self.select.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default();
        let job = self.job.as_ref().map(|j| j.get_ref().as_str());
        let label = site::label(kind, &select, link.as_deref(), job);
        let locations = site::locations(kind, &select, link.as_deref(), job, fabric);
        Ok(FaultPlan {
            kind,
            at: ctx.opt(&self.at, "at", 0)?,
            jitter: ctx.opt(&self.jitter, "jitter", 0)?,
            duration: self.duration.as_ref().map(|d| ctx.dur(d, "duration")).transpose()?,
            repeats: self.repeats.max(1),
            every: ctx.opt(&self.every, "every", 0)?,
            prio: self.prio.unwrap_or(3).min(7),
            ber: self.ber.unwrap_or(1e-9),
            period: ctx.opt(&self.period, "period", 2_000 * MS)?,
            down: ctx.opt(&self.down, "down", 200 * MS)?,
            rate: self.rate.unwrap_or(0.5).clamp(0.01, 1.0),
            loss: self.loss.unwrap_or(0.01).clamp(0.0, 1.0),
            load: self
                .load
                .unwrap_or(match kind {
                    FaultKind::Incast => 1.0,
                    FaultKind::UplinkCongestion => 1.5,
                    _ => 0.8,
                })
                .max(0.0),
            gpu: self.gpu.unwrap_or(0),
            xid: self.xid.unwrap_or(79),
            job: job.map(str::to_string),
            qps: self.qps.map(|q| q.clamp(1, 128)),
            hash: self.hash_fields(ctx, kind)?,
            delay: ctx.opt(&self.delay, "delay", 0)?,
            rate_mbit: self.rate_mbit.unwrap_or(100),
            select,
            link,
            peer,
            label,
            locations,
        })
    }
}

impl FaultSpec {
    /// The field list of a `hash_change`, read as switchorch reads it: every
    /// name known, at least one.
    fn hash_fields(&self, ctx: &Ctx, kind: FaultKind) -> Result<Vec<sonic::hash::HashField>, ScenarioError> {
        let span = self.kind.span();
        match (&self.hash, kind) {
            (None, FaultKind::HashChange) => Err(ctx.err(span, "a hash_change needs `hash`, the field list it pushes")),
            (None, _) => Ok(Vec::new()),
            (Some(h), _) => match sonic::hash::parse_fields(h.get_ref()) {
                Ok(fields) if !fields.is_empty() => Ok(fields),
                Ok(_) => Err(ctx.err(h.span(), "`hash` names no field")),
                Err(e) => Err(ctx.err(h.span(), format!("`hash`: {e}"))),
            },
        }
    }
}

impl FaultPlan {
    /// What the fault does to `fabric` while it is in force: nothing for a
    /// real-link fault, which acts on the host's links instead.
    pub fn effects(&self, fabric: &Fabric) -> Vec<Effect> {
        let nics = fabric.select(&self.select).unwrap_or_default();
        let nodes = || {
            let mut nodes: Vec<String> = nics.iter().map(|&i| fabric.nics[i].node.clone()).collect();
            nodes.dedup();
            nodes
        };
        match self.kind {
            FaultKind::PfcStorm => nics.iter().map(|&nic| Effect::PfcStorm { nic, prio: self.prio }).collect(),
            FaultKind::WedgedNic => nics.iter().map(|&nic| Effect::Wedged { nic }).collect(),
            FaultKind::SymbolErrors => nics.iter().map(|&nic| Effect::Ber { nic, ber: self.ber }).collect(),
            FaultKind::LinkFlap => {
                nics.iter().map(|&nic| Effect::Flap { nic, period: self.period, down: self.down }).collect()
            }
            FaultKind::DegradedLink => nics.iter().map(|&nic| Effect::Degraded { nic, rate: self.rate }).collect(),
            FaultKind::PacketLoss => nics.iter().map(|&nic| Effect::Loss { nic, loss: self.loss }).collect(),
            FaultKind::Congestion => {
                let mut rails: Vec<u32> = nics.iter().map(|&i| fabric.nics[i].rail).collect();
                rails.dedup();
                rails.into_iter().map(|rail| Effect::Congestion { rail, load: self.load }).collect()
            }
            FaultKind::SensorOutage => nodes().into_iter().map(|node| Effect::SensorOutage { node }).collect(),
            FaultKind::GnmiSilent => {
                self.select.switch.iter().map(|s| Effect::GnmiSilent { switch: s.clone() }).collect()
            }
            FaultKind::Incast => nics.iter().map(|&nic| Effect::Incast { nic, load: self.load }).collect(),
            FaultKind::UplinkCongestion => self
                .select
                .switch
                .iter()
                .map(|s| Effect::UplinkCongestion { switch: s.clone(), load: self.load })
                .collect(),
            FaultKind::GpuXid => {
                nodes().into_iter().map(|node| Effect::GpuXid { node, gpu: self.gpu, xid: self.xid }).collect()
            }
            FaultKind::JobRelaunch => (0..fabric.jobs.len())
                .filter(|&j| self.job.as_ref().is_none_or(|name| &fabric.jobs[j].spec.name == name))
                .map(|job| Effect::JobRelaunch { job, qps: self.qps })
                .collect(),
            FaultKind::HashChange => {
                let leaves: Vec<String> = match &self.select.switch {
                    None => fabric.leaves.keys().cloned().collect(),
                    Some(one) => vec![one.clone()],
                };
                leaves.into_iter().map(|switch| Effect::HashChange { switch, fields: self.hash.clone() }).collect()
            }
            FaultKind::VethFlap | FaultKind::Netem | FaultKind::Tbf => Vec::new(),
        }
    }
}
