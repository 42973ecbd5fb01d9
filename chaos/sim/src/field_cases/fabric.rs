//! The fabric's traffic: every flow the recorded ports carry (the job's
//! queue pairs, the tenants', the background between unrecorded nodes, the
//! cause's own traffic), each with its path through the directions of the
//! links it crosses, and what the cause does to those directions' egress
//! queues (congestion: ECN marks, a high watermark) and to their senders
//! (PFC pause).
//!
//! A direction is one way of one cable: a NIC's `up` (NIC → leaf) and `down`
//! (leaf → NIC), an uplink's `up` (leaf → spine) and `down` (spine → leaf).
//! Its egress queue sits at its sending end, and its pause is sent by its
//! receiving end. Both ends' sensors read the same direction: the NIC's
//! `tx_prio3_pause` is the leaf port's `pfc_rx_pkts`, and so on.
//!
//! Queue pairs are hashed onto a leaf's 8 uplinks (and at the spine onto its
//! two links to the far leaf) one by one, so a healthy fabric already carries
//! its cross-unit traffic unevenly; an ECMP collision is a rehash that puts
//! most of a leaf's job traffic on 2–3 uplinks. Loads are compared with the
//! 400G line rate: a direction offered more than it carries is congested, and
//! the job's collectives run at the pace of its most congested direction.

use std::collections::BTreeMap;

use super::inventory::{unit_of, RAILS, RAILS_PER_PLANE, UNITS, UPLINKS};
use super::noise::{log_uniform, pick, rng_for, stream, uniform};
use super::world::{Cause, Incident, JobSpec, Member, Scenario, LINK_BYTES};

/// What a flow's bytes follow over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Src {
    /// The job's collectives (bytes/s per NIC).
    Job,
    /// Tenant job `j`'s collectives.
    Tenant(usize),
    /// Unrecorded nodes' traffic across leaf `unit * RAILS + rail`.
    Background(usize),
    /// The incast's senders (the cause).
    Incast,
    /// The traffic congesting uplinks (the cause).
    Congestor,
    /// Incident `i`'s traffic.
    Incident(usize),
}

/// What a pause or congestion term follows over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Act {
    /// Always on.
    Always,
    /// The cause's activity.
    Fault,
    /// The job's collectives in progress.
    JobComm,
    /// Tenant job `j`'s collectives in progress.
    TenantComm(usize),
    /// Incident `i` in progress.
    Incident(usize),
}

/// One flow (a queue pair, or an aggregate of unrecorded ones).
#[derive(Debug, Clone)]
pub(super) struct Flow {
    /// Whose bytes.
    pub src: Src,
    /// The recorded NIC (node, rail) that sends it.
    pub from: Option<(usize, usize)>,
    /// The recorded NIC that receives it.
    pub to: Option<(usize, usize)>,
    /// Its share of its source's bytes outside the cause's window.
    pub share: f64,
    /// … and inside it (a rehash moves a queue pair from one path to another).
    pub during: f64,
    /// The directions it crosses, in order.
    pub path: Vec<usize>,
}

/// The sender of a direction is paused by its receiver `duty` of the time
/// while `act` (and `with`, if any) is on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pause {
    /// When.
    pub act: Act,
    /// And only while this is on too (a paused NIC is paused when it sends).
    pub with: Option<Act>,
    /// Share of that time paused.
    pub duty: f64,
    /// XON frames per pause frame (0 for a storm: it never releases).
    pub xon: f64,
}

/// The egress queue of a direction is `level` over its ECN threshold while
/// `act` is on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cong {
    /// When.
    pub act: Act,
    /// How far over (offered load / line rate beyond 0.9; a stuck queue 3).
    pub level: f64,
}

/// One direction of one cable.
#[derive(Debug, Clone, Default)]
pub(super) struct Dir {
    /// The flows through it.
    pub flows: Vec<usize>,
    /// Pauses of its sender.
    pub pause: Vec<Pause>,
    /// Congestion of its egress queue.
    pub cong: Vec<Cong>,
    /// Share of its lossless packets marked in a healthy fabric (micro-bursts).
    pub base_mark: f64,
    /// Best-effort (queue 0) bytes a second beside the RoCE traffic.
    pub q0: f64,
    /// Nominal offered load outside the cause's window, bytes/s.
    pub base_load: f64,
    /// … and inside it, at full activity.
    pub fault_load: f64,
}

/// The recorded fabric's traffic.
#[derive(Debug, Clone)]
pub(super) struct Fabric {
    /// Every direction.
    pub dirs: Vec<Dir>,
    /// Every flow.
    pub flows: Vec<Flow>,
    /// Mean background bytes/s across each leaf (`unit * RAILS + rail`).
    pub background: Vec<f64>,
    /// Bytes/s the cause's own traffic gets through, at full activity: what
    /// it offers, less what the congested links it shares cannot carry
    /// (DCQCN and PFC hold every sender to its share of line rate).
    pub delivered: f64,
    /// Flows into each recorded NIC.
    pub inbound: BTreeMap<(usize, usize), Vec<usize>>,
    /// Flows out of each recorded NIC.
    pub outbound: BTreeMap<(usize, usize), Vec<usize>>,
    access: BTreeMap<(usize, usize), (usize, usize)>,
    links: Vec<(usize, usize)>,
    owner: BTreeMap<usize, Act>,
}

fn unit_of_member(m: Member) -> usize {
    match m {
        Member::Node(k) => unit_of(k),
        Member::Remote(u) => u,
    }
}

impl Fabric {
    /// The fabric of `sc`: reproducible from its seed.
    pub(super) fn build(sc: &Scenario) -> Fabric {
        let mut rng = rng_for(sc.seed, stream(2, 0, 0, 0));
        let mut fb = Fabric::empty(sc);
        let ecmp = match &sc.fault.cause {
            Cause::EcmpCollision { unit, rail, hot, share } => Some((*unit, *rail, hot.clone(), *share)),
            _ => None,
        };
        fb.add_ring(Src::Job, &sc.job, ecmp.as_ref(), &mut rng);
        for (j, tenant) in sc.tenants.iter().enumerate() {
            fb.add_ring(Src::Tenant(j), tenant, None, &mut rng);
        }
        fb.add_background(&mut rng);
        fb.add_cause_flows(sc, &mut rng);
        fb.add_incident_flows(sc, &mut rng);
        fb.index();
        fb.loads(sc);
        fb.delivered = fb.nominal(sc, Src::Incast) + fb.nominal(sc, Src::Congestor);
        let worst =
            fb.dirs.iter().filter(|d| d.flows.iter().any(|&f| matches!(fb.flows[f].src, Src::Incast | Src::Congestor)));
        let worst = worst.map(|d| d.fault_load / LINK_BYTES).fold(1.0, f64::max);
        fb.delivered /= worst;
        fb.healthy_terms(&mut rng);
        fb.congestion_terms(sc);
        if let Cause::PfcStorm { node, rail, duty, hol } = sc.fault.cause {
            fb.storm_terms(sc, node, rail, duty, hol, &mut rng);
        }
        fb.incident_terms(sc, &mut rng);
        fb
    }

    /// Directions for every NIC whose port is recorded, and every uplink.
    fn empty(sc: &Scenario) -> Fabric {
        let mut fb = Fabric {
            dirs: Vec::new(),
            flows: Vec::new(),
            background: Vec::new(),
            delivered: 0.0,
            inbound: BTreeMap::new(),
            outbound: BTreeMap::new(),
            access: BTreeMap::new(),
            links: Vec::new(),
            owner: BTreeMap::new(),
        };
        for k in sc.ported() {
            for rail in 0..RAILS {
                let up = fb.new_dir();
                let dn = fb.new_dir();
                fb.access.insert((k, rail), (up, dn));
            }
            let owner = if sc.in_job(k) {
                Act::JobComm
            } else {
                let j = sc.tenants.iter().position(|t| t.members.contains(&Member::Node(k))).unwrap_or(0);
                Act::TenantComm(j)
            };
            fb.owner.insert(k, owner);
        }
        for _ in 0..UNITS * RAILS * UPLINKS {
            let up = fb.new_dir();
            let dn = fb.new_dir();
            fb.links.push((up, dn));
        }
        fb
    }

    fn new_dir(&mut self) -> usize {
        self.dirs.push(Dir::default());
        self.dirs.len() - 1
    }

    /// The (up, down) directions of recorded NIC (`node`, `rail`).
    pub(super) fn access(&self, node: usize, rail: usize) -> Option<(usize, usize)> {
        self.access.get(&(node, rail)).copied()
    }

    /// The (up, down) directions of uplink `m` of leaf (`unit`, `rail`).
    pub(super) fn link(&self, unit: usize, rail: usize, m: usize) -> (usize, usize) {
        self.links[(unit * RAILS + rail) * UPLINKS + m]
    }

    /// When the sender of node `k`'s NICs sends: its job's collectives.
    pub(super) fn owner(&self, k: usize) -> Act {
        self.owner.get(&k).copied().unwrap_or(Act::Always)
    }

    /// The directions from `from` to `to` on `rail`: the sender's NIC, the
    /// uplink `hash` (or `uplink`) picks and the spine's link to the far
    /// leaf when they are in different units, the receiver's NIC.
    fn path(&self, from: Member, to: Member, rail: usize, hash: u64, uplink: Option<usize>) -> Vec<usize> {
        let mut path = Vec::with_capacity(4);
        if let Member::Node(a) = from {
            path.extend(self.access(a, rail).map(|d| d.0));
        }
        let (ua, ub) = (unit_of_member(from), unit_of_member(to));
        if ua != ub {
            let m = uplink.unwrap_or((hash % UPLINKS as u64) as usize);
            path.push(self.link(ua, rail, m).0);
            let far = (m / 2) * 2 + ((hash >> 17) % 2) as usize;
            path.push(self.link(ub, rail, far).1);
        }
        if let Member::Node(b) = to {
            path.extend(self.access(b, rail).map(|d| d.1));
        }
        path
    }

    fn push(&mut self, src: Src, from: Member, to: Member, rail: usize, shares: (f64, f64), path: Vec<usize>) {
        let nic = |m: Member| match m {
            Member::Node(k) => Some((k, rail)),
            Member::Remote(_) => None,
        };
        self.flows.push(Flow { src, from: nic(from), to: nic(to), share: shares.0, during: shares.1, path });
    }

    /// A job's ring on every rail: each rank sends half to the next rank and
    /// half to the previous one, each half over `qps` queue pairs. The ECMP
    /// collision `(unit, rail, hot uplinks, share)` rehashes the job's queue
    /// pairs leaving that leaf for the other unit.
    fn add_ring(
        &mut self,
        src: Src,
        job: &JobSpec,
        ecmp: Option<&(usize, usize, Vec<usize>, f64)>,
        rng: &mut fastrand::Rng,
    ) {
        let n = job.members.len();
        if n < 2 {
            return;
        }
        let qps = job.qps.max(1);
        let share = 0.5 / qps as f64;
        for rail in 0..RAILS {
            for i in 0..n {
                for off in [1, n - 1] {
                    let (a, b) = (job.members[i], job.members[(i + off) % n]);
                    if matches!((a, b), (Member::Remote(_), Member::Remote(_))) {
                        continue;
                    }
                    for _ in 0..qps {
                        let path = self.path(a, b, rail, rng.u64(..), None);
                        let rehash = ecmp
                            .filter(|(u, r, _, _)| *r == rail && unit_of_member(a) == *u && unit_of_member(b) != *u);
                        match rehash {
                            Some((_, _, hot, hot_share)) => {
                                let cold: Vec<usize> = (0..UPLINKS).filter(|m| !hot.contains(m)).collect();
                                let pool = if rng.f64() < *hot_share { hot.as_slice() } else { cold.as_slice() };
                                let m = pick(rng, pool).unwrap_or(0);
                                let moved = self.path(a, b, rail, rng.u64(..), Some(m));
                                self.push(src, a, b, rail, (share, 0.0), path);
                                self.push(src, a, b, rail, (0.0, share), moved);
                            }
                            None => self.push(src, a, b, rail, (share, share), path),
                        }
                    }
                }
            }
        }
    }

    /// Unrecorded nodes' traffic between the units on every rail: a few
    /// large flows, hashed like any other.
    fn add_background(&mut self, rng: &mut fastrand::Rng) {
        for unit in 0..UNITS {
            for rail in 0..RAILS {
                self.background.push(uniform(rng, 1e9, 12e9));
                let n = rng.usize(6..=14);
                for _ in 0..n {
                    let (a, b) = (Member::Remote(unit), Member::Remote(1 - unit));
                    let path = self.path(a, b, rail, rng.u64(..), None);
                    let share = 1.0 / n as f64;
                    self.push(Src::Background(unit * RAILS + rail), a, b, rail, (share, share), path);
                }
            }
        }
    }

    /// The cause's own traffic: the incast's senders, the uplinks' congestor.
    fn add_cause_flows(&mut self, sc: &Scenario, rng: &mut fastrand::Rng) {
        match &sc.fault.cause {
            Cause::Incast { node, rail, senders, .. } => {
                let share = 1.0 / senders.len().max(1) as f64;
                for &s in senders {
                    let path = self.path(s, Member::Node(*node), *rail, rng.u64(..), None);
                    self.push(Src::Incast, s, Member::Node(*node), *rail, (0.0, share), path);
                }
            }
            Cause::UplinkCongestion { unit, rail, down, .. } => self.add_congestor(sc, *unit, *rail, *down, rng),
            _ => {}
        }
    }

    /// 16 flows through the 8 uplinks of leaf (`unit`, `rail`), two each:
    /// from the leaf's own nodes to the other unit, or (`down`) from the
    /// other leaves of the plane into this one.
    fn add_congestor(&mut self, sc: &Scenario, unit: usize, rail: usize, down: bool, rng: &mut fastrand::Rng) {
        let tenants: Vec<usize> =
            sc.ported().into_iter().filter(|&k| unit_of(k) == unit && !sc.in_job(k)).take(3).collect();
        let weights: Vec<f64> = (0..2 * UPLINKS).map(|_| uniform(rng, 0.85, 1.15)).collect();
        let total: f64 = weights.iter().sum();
        for (i, w) in weights.iter().enumerate() {
            let m = i % UPLINKS;
            let share = w / total;
            let spine_link = (m / 2) * 2 + rng.usize(0..2);
            if down {
                let plane = rail / RAILS_PER_PLANE;
                let (u2, r2) = loop {
                    let cand = (rng.usize(0..UNITS), plane * RAILS_PER_PLANE + rng.usize(0..RAILS_PER_PLANE));
                    if cand != (unit, rail) {
                        break cand;
                    }
                };
                let path = vec![self.link(u2, r2, spine_link).0, self.link(unit, rail, m).1];
                self.push(Src::Congestor, Member::Remote(u2), Member::Remote(unit), rail, (0.0, share), path);
            } else {
                let from = match pick(rng, &tenants) {
                    Some(k) if rng.bool() => Member::Node(k),
                    _ => Member::Remote(unit),
                };
                let to = Member::Remote(1 - unit);
                let path = self.path(from, to, rail, rng.u64(..), Some(m));
                self.push(Src::Congestor, from, to, rail, (0.0, share), path);
            }
        }
    }

    /// Incidents' traffic: other nodes converging on a tenant NIC.
    fn add_incident_flows(&mut self, sc: &Scenario, rng: &mut fastrand::Rng) {
        for (i, inc) in sc.incidents.iter().enumerate() {
            if let Incident::Congestion { node, rail, .. } = *inc {
                let from = Member::Remote(if rng.bool() { unit_of(node) } else { 1 - unit_of(node) });
                let path = self.path(from, Member::Node(node), rail, rng.u64(..), None);
                self.push(Src::Incident(i), from, Member::Node(node), rail, (1.0, 1.0), path);
            }
        }
    }

    fn index(&mut self) {
        for (id, flow) in self.flows.iter().enumerate() {
            for &d in &flow.path {
                self.dirs[d].flows.push(id);
            }
            if let Some(nic) = flow.to {
                self.inbound.entry(nic).or_default().push(id);
            }
            if let Some(nic) = flow.from {
                self.outbound.entry(nic).or_default().push(id);
            }
        }
    }

    /// Mean bytes/s a source offers (its collectives' mean for a tenant, the
    /// job's full rate: the job's collectives are what is being paced).
    pub(super) fn nominal(&self, sc: &Scenario, src: Src) -> f64 {
        match src {
            Src::Job => sc.job.rate,
            Src::Tenant(j) => sc.tenants.get(j).map_or(0.0, |t| t.rate * t.comm_frac),
            Src::Background(i) => self.background.get(i).copied().unwrap_or(0.0),
            Src::Incast => match sc.fault.cause {
                Cause::Incast { rate, .. } => rate,
                _ => 0.0,
            },
            Src::Congestor => match sc.fault.cause {
                Cause::UplinkCongestion { extra, .. } => extra,
                _ => 0.0,
            },
            Src::Incident(_) => 0.0,
        }
    }

    fn loads(&mut self, sc: &Scenario) {
        for d in 0..self.dirs.len() {
            let (mut base, mut fault) = (0.0, 0.0);
            for &f in &self.dirs[d].flows {
                let flow = &self.flows[f];
                let rate = self.nominal(sc, flow.src);
                base += flow.share * rate;
                fault += flow.during * rate;
            }
            self.dirs[d].base_load = base;
            self.dirs[d].fault_load = fault;
        }
    }

    /// How far the job's most loaded direction is offered beyond line rate
    /// outside the cause's window (1 when none is): the hash can put several
    /// of its queue pairs on one uplink.
    pub(super) fn job_base_mult(&self) -> f64 {
        let job = |d: &&Dir| d.flows.iter().any(|&f| self.flows[f].src == Src::Job && self.flows[f].share > 0.0);
        self.dirs.iter().filter(job).map(|d| d.base_load / LINK_BYTES).fold(1.0, f64::max)
    }

    /// How much longer the job's collectives take at the cause's full
    /// activity, from the loads alone: the most congested direction its
    /// traffic crosses, against the same direction before.
    pub(super) fn job_comm_mult(&self) -> f64 {
        let mut worst: f64 = 1.0;
        for dir in &self.dirs {
            let carries_job = dir.flows.iter().any(|&f| self.flows[f].src == Src::Job);
            if carries_job {
                let ratio = (dir.fault_load / LINK_BYTES).max(1.0) / (dir.base_load / LINK_BYTES).max(1.0);
                worst = worst.max(ratio);
            }
        }
        worst
    }
}

impl Fabric {
    /// A healthy RoCE fabric: a little PFC while collectives burst, rare
    /// pauses from hosts, a few ECN marks, best-effort traffic in queue 0.
    fn healthy_terms(&mut self, rng: &mut fastrand::Rng) {
        let access: Vec<((usize, usize), (usize, usize))> = self.access.iter().map(|(k, v)| (*k, *v)).collect();
        for ((node, _), (up, dn)) in access {
            let owner = self.owner(node);
            let burst =
                Pause { act: owner, with: None, duty: log_uniform(rng, 4e-4, 4e-3), xon: uniform(rng, 0.5, 0.9) };
            self.dirs[up].pause.push(burst);
            let host = Pause { act: Act::Always, with: None, duty: log_uniform(rng, 1e-6, 4e-5), xon: 0.9 };
            self.dirs[dn].pause.push(host);
            self.dirs[dn].base_mark += log_uniform(rng, 2e-5, 4e-4);
            self.dirs[up].q0 = log_uniform(rng, 2e5, 2e7);
            self.dirs[dn].q0 = log_uniform(rng, 2e5, 2e7);
        }
        for i in 0..self.links.len() {
            let (up, dn) = self.links[i];
            for d in [up, dn] {
                let p = Pause { act: Act::Always, with: None, duty: log_uniform(rng, 1e-6, 2e-4), xon: 0.7 };
                self.dirs[d].pause.push(p);
                self.dirs[d].base_mark += log_uniform(rng, 5e-6, 2e-4);
                self.dirs[d].q0 = log_uniform(rng, 5e6, 8e7);
            }
        }
    }

    /// Directions offered more than 90 % of line rate mark packets, and the
    /// switch pauses the directions that feed them, in proportion to what
    /// each brings.
    fn congestion_terms(&mut self, sc: &Scenario) {
        let mut pauses: BTreeMap<usize, f64> = BTreeMap::new();
        for d in 0..self.dirs.len() {
            let (base, fault) = (self.dirs[d].base_load / LINK_BYTES, self.dirs[d].fault_load / LINK_BYTES);
            if base > 0.9 {
                self.dirs[d].base_mark += 0.02 * (base - 0.9);
            }
            if fault <= 0.9 || fault <= base + 0.02 {
                continue;
            }
            let level = fault - base.max(0.9);
            self.dirs[d].cong.push(Cong { act: Act::Fault, level });
            let total = self.dirs[d].fault_load.max(1.0);
            for &f in &self.dirs[d].flows {
                let flow = &self.flows[f];
                let pos = flow.path.iter().position(|&x| x == d).unwrap_or(0);
                if pos == 0 || flow.during <= 0.0 {
                    continue;
                }
                let weight = flow.during * self.nominal(sc, flow.src) / total;
                *pauses.entry(flow.path[pos - 1]).or_default() += (0.3 * level).min(0.5) * weight;
            }
        }
        for (d, duty) in pauses {
            let with = self.access.iter().find(|(_, v)| v.0 == d).map(|((k, _), _)| self.owner(*k));
            self.dirs[d].pause.push(Pause { act: Act::Fault, with, duty: duty.min(0.6), xon: 0.5 });
        }
    }

    /// A NIC that pauses its leaf port: the port's queue stops draining, the
    /// leaf's shared buffer fills, and the leaf pauses its other ingress
    /// ports (head-of-line blocking), the spines' links into it, and the
    /// spines in turn the far unit's uplinks toward it.
    fn storm_terms(&mut self, sc: &Scenario, node: usize, rail: usize, duty: f64, hol: f64, rng: &mut fastrand::Rng) {
        let Some((_, dn)) = self.access(node, rail) else { return };
        self.dirs[dn].pause.push(Pause { act: Act::Fault, with: None, duty, xon: 0.0 });
        self.dirs[dn].cong.push(Cong { act: Act::Fault, level: 3.0 });
        let unit = unit_of(node);
        for k in sc.ported().into_iter().filter(|&k| unit_of(k) == unit && k != node) {
            if let Some((up, _)) = self.access(k, rail) {
                let p = Pause {
                    act: Act::Fault,
                    with: Some(self.owner(k)),
                    duty: duty * hol * uniform(rng, 0.7, 1.0),
                    xon: 0.25,
                };
                self.dirs[up].pause.push(p);
            }
        }
        for m in 0..UPLINKS {
            let down = self.link(unit, rail, m).1;
            let p = Pause { act: Act::Fault, with: None, duty: duty * hol * uniform(rng, 0.4, 0.7), xon: 0.3 };
            self.dirs[down].pause.push(p);
            let far_up = self.link(1 - unit, rail, m).0;
            let p = Pause { act: Act::Fault, with: None, duty: duty * hol * uniform(rng, 0.15, 0.35), xon: 0.4 };
            self.dirs[far_up].pause.push(p);
        }
    }

    /// An incident's congestion marks the tenant NIC's queue while it lasts.
    fn incident_terms(&mut self, sc: &Scenario, rng: &mut fastrand::Rng) {
        for (i, inc) in sc.incidents.iter().enumerate() {
            if let Incident::Congestion { node, rail, .. } = *inc {
                if let Some((_, dn)) = self.access(node, rail) {
                    self.dirs[dn].cong.push(Cong { act: Act::Incident(i), level: uniform(rng, 0.2, 1.0) });
                    let p = Pause { act: Act::Incident(i), with: None, duty: uniform(rng, 0.01, 0.08), xon: 0.6 };
                    for &f in &self.dirs[dn].flows.clone() {
                        if let Some(&up) = self.flows[f].path.first() {
                            if up != dn && self.flows[f].src == Src::Incident(i) {
                                self.dirs[up].pause.push(p);
                            }
                        }
                    }
                }
            }
        }
    }
}
