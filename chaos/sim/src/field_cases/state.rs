//! The world over a case's time: the jobs' steps and profiles, the cause's
//! activity, the background's drift, the links' carrier losses and the
//! GPUs' XIDs, and what a direction of a cable carries between two
//! instants (bytes, pause, marks). Every sensor reads the world through
//! these queries, each at its own instants.

use std::collections::BTreeMap;

use super::fabric::{Act, Fabric, Src};
use super::inventory::{RAILS, UNITS};
use super::job::{busy, schedule, traffic, Schedule, Shaping, Step};
use super::noise::{normal, rng_for, stream, uniform};
use super::pace::{Activity, Pace};
use super::profile::{Cells, Profile};
use super::world::{Cause, Incident, JobSpec, Member, Scenario, ROCE_FRAME};

/// The cell of the cause's activity: its bursts last a second or more.
const FAULT_CELL: f64 = 0.02;
/// The cell of slow rates: incidents, the background's drift (×5).
const SLOW_CELL: f64 = 0.1;

/// Pause frames a port sends per second while it holds its peer paused (a
/// quanta of 0xFFFF lasts 84 µs at 400G; it is refreshed before it runs out).
const PAUSE_FRAMES_PER_S: f64 = 2.2e4;

/// A job's steps and what they do.
pub(super) struct Timeline {
    /// The steps.
    pub sched: Schedule,
    /// Bytes/s per NIC.
    pub bytes: Profile,
    /// 1 while a collective is in progress.
    pub comm: Profile,
    /// How busy its GPUs are.
    pub busy: Profile,
    /// How busy the cause's special GPUs are (a straggler's, a hung rank's),
    /// when it has any.
    pub special: Option<Profile>,
}

/// Pause over a span (expected values; the sensors add the noise).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Paused {
    /// Seconds the sender was held.
    pub seconds: f64,
    /// Pause frames the receiver sent.
    pub frames: f64,
    /// XON frames among them.
    pub xon: f64,
}

/// The world of one case.
pub(super) struct World<'a> {
    /// What was drawn.
    pub sc: &'a Scenario,
    /// Its flows and their paths.
    pub fabric: &'a Fabric,
    /// The job's steps.
    pub job: Timeline,
    /// Each tenant job's steps.
    pub tenants: Vec<Timeline>,
    /// The cause's activity, 0–1.
    pub fault: Profile,
    /// Bytes/s the incast's senders get through (0 in other cases).
    pub incast: Profile,
    /// Bytes/s of the uplinks' congestor (0 in other cases).
    pub congestor: Profile,
    /// Bytes/s across each leaf between unrecorded nodes.
    pub background: Vec<Profile>,
    /// Each incident's activity, 0–1.
    pub incidents: Vec<Profile>,
    /// Each incident's own bytes/s (a tenant NIC's congestion).
    pub incident_bytes: Vec<Profile>,
    /// 1 everywhere.
    pub always: Profile,
    /// 0 everywhere.
    pub zero: Profile,
    /// (down, up) spans of each NIC that loses carrier.
    pub flaps: BTreeMap<(usize, usize), Vec<(f64, f64)>>,
    /// Bursts of out-of-sequence packets at a NIC: (time, count).
    pub oos: BTreeMap<(usize, usize), Vec<(f64, f64)>>,
    /// Bursts of NAK sequence errors at a sending NIC: (time, count).
    pub naks: BTreeMap<(usize, usize), Vec<(f64, f64)>>,
    /// GPUs that fell off the bus, and when.
    pub gone: BTreeMap<(usize, usize), f64>,
    /// XIDs: (time, node, gpu, code).
    pub xids: Vec<(f64, usize, usize, u32)>,
}

impl<'a> World<'a> {
    /// Builds the world of `sc`.
    pub(super) fn build(sc: &'a Scenario, fabric: &'a Fabric, pace: &'a Pace) -> World<'a> {
        let d = sc.duration;
        let act = Activity::of(&sc.fault);
        let job = job_timeline(sc, pace, act);
        let tenants = (0..sc.tenants.len()).map(|j| tenant_timeline(sc, j)).collect();
        let mut fault = Cells::new(d, FAULT_CELL);
        fault.fill(|t| act.at(t));
        let rate_of = |r: f64| {
            let mut c = Cells::new(d, FAULT_CELL);
            c.fill(|t| r * act.at(t));
            c.integrate()
        };
        let is = |cause: bool| if cause { fabric.delivered } else { 0.0 };
        let incast = rate_of(is(matches!(sc.fault.cause, Cause::Incast { .. })));
        let congestor = rate_of(is(matches!(sc.fault.cause, Cause::UplinkCongestion { .. })));
        let mut world = World {
            sc,
            fabric,
            job,
            tenants,
            fault: fault.integrate(),
            incast,
            congestor,
            background: background(sc, fabric),
            incidents: Vec::new(),
            incident_bytes: Vec::new(),
            always: Profile::constant(d, 1.0),
            zero: Profile::constant(d, 0.0),
            flaps: BTreeMap::new(),
            oos: BTreeMap::new(),
            naks: BTreeMap::new(),
            gone: BTreeMap::new(),
            xids: Vec::new(),
        };
        world.incidents_and_flaps();
        world.bursts();
        world
    }

    /// The incidents' windows, every NIC's carrier losses, the XIDs.
    fn incidents_and_flaps(&mut self) {
        let sc = self.sc;
        let d = sc.duration;
        for inc in &sc.incidents {
            let (span, rate) = match *inc {
                Incident::Congestion { start, len, rate, .. } => ((start, start + len), rate),
                Incident::Symbols { start, len, .. } | Incident::Slow { start, len, .. } => ((start, start + len), 0.0),
                Incident::Xid { at, .. } => ((at, at), 0.0),
                Incident::Flap { at, down, .. } => ((at, at + down), 0.0),
            };
            let mut act = Cells::new(d, SLOW_CELL);
            act.add(span.0, span.1, 1.0);
            let mut bytes = Cells::new(d, SLOW_CELL);
            bytes.add(span.0, span.1, rate);
            self.incidents.push(act.integrate());
            self.incident_bytes.push(bytes.integrate());
            match *inc {
                Incident::Flap { node, rail, at, down } => {
                    self.flaps.entry((node, rail)).or_default().push((at, at + down))
                }
                Incident::Xid { node, gpu, at, xid } => self.xid(node, gpu, at, xid),
                _ => {}
            }
        }
        match &sc.fault.cause {
            Cause::LinkFlap { node, rail, flaps } => self.flaps.entry((*node, *rail)).or_default().extend(flaps),
            Cause::GpuXid { node, gpu, xid, .. } => self.xid(*node, *gpu, sc.fault.onset, *xid),
            _ => {}
        }
        for spans in self.flaps.values_mut() {
            spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        self.xids.sort_by(|a, b| a.0.total_cmp(&b.0));
    }

    fn xid(&mut self, node: usize, gpu: usize, at: f64, xid: u32) {
        self.xids.push((at, node, gpu, xid));
        if xid == 79 {
            self.gone.entry((node, gpu)).or_insert(at);
        }
    }

    /// Reordering and retries: after a NIC's carrier returns (at it and at
    /// its peers), when the ECMP rehash moves queue pairs mid-flight.
    fn bursts(&mut self) {
        let mut rng = rng_for(self.sc.seed, stream(4, 0, 0, 0));
        let nics: Vec<(usize, usize)> = self.flaps.keys().copied().collect();
        for nic in nics {
            let spans = self.flaps.get(&nic).cloned().unwrap_or_default();
            let peers = self.peers(nic);
            for (_, up) in spans {
                self.oos.entry(nic).or_default().push((up, uniform(&mut rng, 50.0, 600.0)));
                for &p in &peers {
                    self.naks.entry(p).or_default().push((up, uniform(&mut rng, 5.0, 80.0)));
                    self.oos.entry(p).or_default().push((up, uniform(&mut rng, 20.0, 300.0)));
                }
            }
        }
        if matches!(self.sc.fault.cause, Cause::EcmpCollision { .. }) {
            let onset = self.sc.fault.onset;
            for flow in self.fabric.flows.iter().filter(|f| f.src == Src::Job && f.during > f.share) {
                if let Some(to) = flow.to {
                    self.oos.entry(to).or_default().push((onset + 0.01, uniform(&mut rng, 5.0, 60.0)));
                }
            }
        }
        for v in self.oos.values_mut().chain(self.naks.values_mut()) {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
    }

    /// The recorded NICs that exchange traffic with `nic`.
    pub(super) fn peers(&self, nic: (usize, usize)) -> Vec<(usize, usize)> {
        let mut peers: Vec<(usize, usize)> = Vec::new();
        let flows = self.fabric.inbound.get(&nic).into_iter().chain(self.fabric.outbound.get(&nic)).flatten();
        for &f in flows {
            let flow = &self.fabric.flows[f];
            for p in [flow.from, flow.to].into_iter().flatten() {
                if p != nic && !peers.contains(&p) {
                    peers.push(p);
                }
            }
        }
        peers
    }

    /// The profile a source's bytes follow.
    pub(super) fn src_profile(&self, src: Src) -> &Profile {
        match src {
            Src::Job => &self.job.bytes,
            Src::Tenant(j) => self.tenants.get(j).map_or(&self.zero, |t| &t.bytes),
            Src::Background(i) => self.background.get(i).unwrap_or(&self.zero),
            Src::Incast => &self.incast,
            Src::Congestor => &self.congestor,
            Src::Incident(i) => self.incident_bytes.get(i).unwrap_or(&self.zero),
        }
    }

    /// The profile a pause or congestion term follows.
    pub(super) fn act_profile(&self, act: Act) -> &Profile {
        match act {
            Act::Always => &self.always,
            Act::Fault => &self.fault,
            Act::JobComm => &self.job.comm,
            Act::TenantComm(j) => self.tenants.get(j).map_or(&self.zero, |t| &t.comm),
            Act::Incident(i) => self.incidents.get(i).unwrap_or(&self.zero),
        }
    }

    /// Bytes of flow `f` over `[a, b]`.
    pub(super) fn flow_bytes(&self, f: usize, a: f64, b: f64) -> f64 {
        let flow = &self.fabric.flows[f];
        let p = self.src_profile(flow.src);
        let mut v = flow.share * p.integral(a, b);
        if flow.during != flow.share {
            let (w0, w1) = (a.max(self.sc.fault.onset), b.min(self.sc.fault.until));
            v += (flow.during - flow.share) * p.integral(w0, w1);
        }
        v.max(0.0)
    }

    /// RoCE bytes (queue 3) and best-effort bytes (queue 0) of direction `d`
    /// over `[a, b]`.
    pub(super) fn dir_bytes(&self, d: usize, a: f64, b: f64) -> (f64, f64) {
        let dir = &self.fabric.dirs[d];
        let roce = dir.flows.iter().map(|&f| self.flow_bytes(f, a, b)).sum();
        (roce, dir.q0 * (b - a).max(0.0))
    }

    /// The share of direction `d`'s RoCE packets marked CE over `[a, b]`.
    pub(super) fn mark_prob(&self, d: usize, a: f64, b: f64) -> f64 {
        let dir = &self.fabric.dirs[d];
        let congested: f64 = dir.cong.iter().map(|c| c.level * self.act_profile(c.act).mean(a, b)).sum();
        (dir.base_mark + 0.08 * congested).min(0.5)
    }

    /// How much direction `d`'s congestion peaked over `[a, b]`.
    pub(super) fn peak_congestion(&self, d: usize, a: f64, b: f64) -> f64 {
        self.fabric.dirs[d].cong.iter().map(|c| c.level * self.act_profile(c.act).max(a, b)).sum()
    }

    /// How long direction `d`'s sender was paused over `[a, b]`.
    pub(super) fn paused(&self, d: usize, a: f64, b: f64) -> Paused {
        let mut out = Paused::default();
        for p in &self.fabric.dirs[d].pause {
            let with = p.with.map_or(1.0, |w| self.act_profile(w).mean(a, b));
            let s = p.duty * self.act_profile(p.act).integral(a, b) * with;
            out.seconds += s;
            out.frames += s * PAUSE_FRAMES_PER_S;
            out.xon += s * PAUSE_FRAMES_PER_S * p.xon;
        }
        out.seconds = out.seconds.min((b - a).max(0.0));
        out
    }

    /// The duty of direction `d`'s pause at `t` (a Broadcom queue's pause
    /// status is read at an instant).
    pub(super) fn pause_duty_at(&self, d: usize, t: f64) -> f64 {
        let duty: f64 = self.fabric.dirs[d]
            .pause
            .iter()
            .map(|p| p.duty * self.act_profile(p.act).at(t) * p.with.map_or(1.0, |w| self.act_profile(w).at(t)))
            .sum();
        duty.min(1.0)
    }

    /// Marked packets among what NIC `nic` received (`inbound`) or sent over
    /// `[a, b]`: every queue on each flow's path marks its share.
    pub(super) fn nic_marks(&self, nic: (usize, usize), inbound: bool, a: f64, b: f64) -> f64 {
        let flows = if inbound { self.fabric.inbound.get(&nic) } else { self.fabric.outbound.get(&nic) };
        let mut marks = 0.0;
        for &f in flows.into_iter().flatten() {
            let bytes = self.flow_bytes(f, a, b);
            if bytes > 0.0 {
                let p: f64 = self.fabric.flows[f].path.iter().map(|&d| self.mark_prob(d, a, b)).sum();
                marks += bytes / ROCE_FRAME * p.min(1.0);
            }
        }
        marks
    }

    /// The share of `[a, b]` NIC `nic`'s link was down.
    pub(super) fn down_share(&self, nic: (usize, usize), a: f64, b: f64) -> f64 {
        let Some(spans) = self.flaps.get(&nic) else { return 0.0 };
        let down: f64 = spans.iter().map(|&(d, u)| (u.min(b) - d.max(a)).max(0.0)).sum();
        if b > a {
            (down / (b - a)).min(1.0)
        } else {
            0.0
        }
    }

    /// Carrier losses of `nic` that began in `(a, b]`.
    pub(super) fn downs_in(&self, nic: (usize, usize), a: f64, b: f64) -> u64 {
        self.flaps.get(&nic).map_or(0, |s| s.iter().filter(|(d, _)| *d > a && *d <= b).count() as u64)
    }

    /// Whether `nic`'s carrier is up at `t`.
    pub(super) fn is_up(&self, nic: (usize, usize), t: f64) -> bool {
        self.flaps.get(&nic).is_none_or(|s| !s.iter().any(|&(d, u)| t >= d && t < u))
    }

    /// The NIC a NIC-level cause acts on (the storming, flapping, erring one,
    /// an incast's victim).
    pub(super) fn fault_nic(&self) -> Option<(usize, usize)> {
        match self.sc.fault.cause {
            Cause::PfcStorm { node, rail, .. }
            | Cause::LinkFlap { node, rail, .. }
            | Cause::Ber { node, rail, .. }
            | Cause::Incast { node, rail, .. } => Some((node, rail)),
            _ => None,
        }
    }

    /// The timeline of node `k`'s job (the job's or a tenant's).
    pub(super) fn timeline_of(&self, k: usize) -> (&Timeline, &JobSpec) {
        if self.sc.in_job(k) {
            return (&self.job, &self.sc.job);
        }
        let j = self.sc.tenants.iter().position(|t| t.members.contains(&Member::Node(k))).unwrap_or(0);
        match (self.tenants.get(j), self.sc.tenants.get(j)) {
            (Some(tl), Some(spec)) => (tl, spec),
            _ => (&self.job, &self.sc.job),
        }
    }
}

/// Sums `counts` of `bursts` that fall in `(a, b]`.
pub(super) fn bursts_in(bursts: Option<&Vec<(f64, f64)>>, a: f64, b: f64) -> f64 {
    bursts.map_or(0.0, |v| v.iter().filter(|(t, _)| *t > a && *t <= b).map(|x| x.1).sum())
}

/// Whether GPU (`node`, `gpu`) of the job is one the cause singles out (its
/// busy share follows `special`).
pub(super) fn is_special(sc: &Scenario, node: usize, gpu: usize) -> bool {
    match sc.fault.cause {
        Cause::HostStraggler { node: n, .. } => n == node,
        Cause::LoaderHang { node: Some(n) } => n == node,
        Cause::GpuXid { node: n, gpu: g, xid, .. } => n == node && g == gpu && xid != 63,
        _ => false,
    }
}

fn job_timeline(sc: &Scenario, pace: &Pace, act: Activity) -> Timeline {
    let mut rng = rng_for(sc.seed, stream(5, 0, 0, 0));
    let shaping = Shaping { pace, act, slow: Vec::new(), hang: pace.hang };
    let sched = schedule(&sc.job, sc.duration, &shaping, &mut rng);
    let (bytes, comm) = traffic(&sc.job, &sched, sc.duration);
    // After a hang the ranks still in their collective spin in NCCL's
    // kernels (busy); a stalled input pipeline everywhere leaves all idle.
    let after = if matches!(sc.fault.cause, Cause::LoaderHang { node: None }) { 0.0 } else { 1.0 };
    let busy_normal = busy(&sched, sc.duration, |_| 0.97, after);
    let straggler = matches!(sc.fault.cause, Cause::HostStraggler { .. });
    let special_compute = move |s: &Step| if straggler { 0.97 / s.compute_mult.max(1.0) } else { 0.97 };
    let singles_out = (0..RAILS).any(|g| sc.job.nodes().iter().any(|&k| is_special(sc, k, g)));
    let special = singles_out.then(|| busy(&sched, sc.duration, special_compute, 0.0));
    Timeline { sched, bytes, comm, busy: busy_normal, special }
}

fn tenant_timeline(sc: &Scenario, j: usize) -> Timeline {
    let mut rng = rng_for(sc.seed, stream(6, j, 0, 0));
    let spec = &sc.tenants[j];
    let pace = Pace::none();
    let mut slow = Vec::new();
    let mut hang: Option<f64> = None;
    for inc in &sc.incidents {
        match *inc {
            Incident::Slow { tenant, start, len, factor } if tenant == j => slow.push((start, start + len, factor)),
            Incident::Xid { node, at, xid, .. }
                if matches!(xid, 48 | 79 | 94) && spec.members.contains(&Member::Node(node)) =>
            {
                hang = Some(hang.map_or(at, |h: f64| h.min(at)));
            }
            _ => {}
        }
    }
    let shaping = Shaping { pace: &pace, act: Activity::never(), slow, hang };
    let sched = schedule(spec, sc.duration, &shaping, &mut rng);
    let (bytes, comm) = traffic(spec, &sched, sc.duration);
    let busy_normal = busy(&sched, sc.duration, |_| 0.97, 1.0);
    Timeline { sched, bytes, comm, special: None, busy: busy_normal }
}

/// Unrecorded nodes' traffic across each leaf: its mean, drifting ±35 %
/// between knots 5 s apart.
fn background(sc: &Scenario, fabric: &Fabric) -> Vec<Profile> {
    let mut rng = rng_for(sc.seed, stream(7, 0, 0, 0));
    let knots = (sc.duration / 5.0).ceil() as usize + 2;
    (0..UNITS * RAILS)
        .map(|i| {
            let mean = fabric.background.get(i).copied().unwrap_or(0.0);
            let levels: Vec<f64> = (0..knots).map(|_| (1.0 + 0.35 * normal(&mut rng)).clamp(0.2, 2.0)).collect();
            let mut cells = Cells::new(sc.duration, SLOW_CELL * 5.0);
            cells.fill(|t| {
                let x = t / 5.0;
                let k = (x as usize).min(knots - 2);
                let f = x - k as f64;
                mean * (levels[k] * (1.0 - f) + levels[k + 1] * f)
            });
            cells.integrate()
        })
        .collect()
}
