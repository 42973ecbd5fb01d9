//! Drawing a case from its seed: the kind (stratified, so that every 100
//! consecutive seeds hold each kind exactly its weight's times), the job
//! and where it runs, the tenants beside it, the cause's window and
//! strength, the tenants' incidents, and the sensors' cadences.
//!
//! Strength is drawn as a target step slowdown (two in five mild, 8–20 %;
//! the rest 25 % to more than double) and turned into the cause's physical
//! parameter (a pause duty, a clock, an error rate); causes whose effect
//! follows from the fabric's loads (congestion, ECMP, incast) draw their
//! physical parameter and let the loads decide.

use super::inventory::{unit_of, NODES_PER_UNIT, RAILS, UNITS, UPLINKS};
use super::noise::{log_uniform, pick, rng_for, stream, uniform};
use super::plan::{self, Shape};
use super::world::{Bursts, Bursty, Cause, Fault, Incident, JobSpec, Member, Scenario, LINK_BYTES};
use super::FieldKind;

const NAMES: [&str; 8] =
    ["llm-pretrain", "moe-sft", "vit-huge", "diffusion-xl", "llama-ft", "rm-train", "code-lm", "asr-conformer"];

/// The kind of case `seed`: slot `seed % 100` of a shuffle of 0..100 drawn
/// per block of 100 seeds, mapped through the cumulative weights.
pub(super) fn kind_of(seed: u64) -> FieldKind {
    let mut slots: Vec<u32> = (0..100).collect();
    rng_for(seed / 100, stream(1, 0, 0, 0)).shuffle(&mut slots);
    let slot = slots[(seed % 100) as usize];
    let mut acc = 0;
    for kind in FieldKind::ALL {
        acc += kind.weight();
        if slot < acc {
            return kind;
        }
    }
    FieldKind::PfcStorm
}

/// Case `seed`; `attempt` redraws everything but the kind (a cause too weak
/// to slow its job is drawn again).
pub(super) fn draw(seed: u64, attempt: usize) -> Scenario {
    let mut rng = rng_for(seed, stream(8, attempt, 0, 0));
    let kind = kind_of(seed);
    let job = draw_job(&mut rng, kind);
    let job_nodes = job.nodes();
    let mut units: Vec<usize> = job_nodes.iter().map(|&k| unit_of(k)).collect();
    units.sort_unstable();
    units.dedup();
    let min_onset = (40.0 * job.step).max(60.0);
    let post = (25.0 * job.step).max(60.0);
    let min_duration = (min_onset + post + 5.0).max(150.0);
    let duration = uniform(&mut rng, 150.0, 300.0).max(min_duration);
    let want_tenants = rng.usize(2..=6);
    let ports_only = rng.usize(1..=3);
    let shape = Shape { nodes: job_nodes.len() + want_tenants, ports_only, units: units.len(), duration };
    let (plan, tenant_count, duration) = plan::fit(plan::draw(&mut rng), want_tenants, shape, 2, min_duration);
    let mut others = draw_tenant_nodes(&mut rng, &job_nodes, &units, tenant_count + ports_only);
    let mut ports_only = others.split_off(tenant_count.min(others.len()));
    ports_only.sort_unstable();
    let tenant_nodes = others;
    let mut tenants = draw_tenants(&mut rng, &tenant_nodes, &ports_only, seed);
    for (j, t) in tenants.iter_mut().enumerate() {
        if t.name == job.name {
            t.name = format!("{}-{j}", t.name);
        }
    }
    let mut recorded: Vec<usize> = job_nodes.iter().chain(&tenant_nodes).copied().collect();
    recorded.sort_unstable();
    let onset = uniform(&mut rng, min_onset, duration - post);
    let mut sc = Scenario {
        seed,
        kind,
        duration,
        job,
        tenants,
        recorded,
        ports_only,
        units,
        fault: Fault { cause: Cause::LoaderHang { node: None }, onset, until: duration, ramp: 0.0, bursts: None },
        incidents: Vec::new(),
        plan,
        broadcom: rng.bool(),
    };
    sc.fault = draw_fault(&mut rng, &sc, onset);
    sc.incidents = draw_incidents(&mut rng, &sc, &tenant_nodes);
    sc
}

/// The job: its placement, rank order and pace.
fn draw_job(rng: &mut fastrand::Rng, kind: FieldKind) -> JobSpec {
    let crossing = matches!(kind, FieldKind::UplinkCongestion | FieldKind::EcmpCollision);
    let both = crossing || rng.f64() < 0.45;
    let mut nodes = Vec::new();
    if both {
        let n = if crossing { rng.usize(8..=16) } else { rng.usize(4..=16) };
        let lo = if crossing { 4 } else { 2 };
        let first = rng.usize(lo..=n - lo);
        let u = rng.usize(0..UNITS);
        nodes.extend(some_nodes(rng, u, first));
        nodes.extend(some_nodes(rng, 1 - u, n - first));
    } else {
        // At most 14, so that two nodes of its unit are left for tenants.
        let n = rng.usize(4..=14);
        let unit = rng.usize(0..UNITS);
        nodes.extend(some_nodes(rng, unit, n));
    }
    // A scheduler hands out hosts sorted by name, in the order it found them
    // free, or spread round-robin over the units; NCCL's rings follow the
    // ranks, so the last puts every ring edge across the spines.
    if crossing && rng.bool() {
        nodes = interleave(&nodes);
    } else if crossing || rng.bool() {
        rng.shuffle(&mut nodes);
    } else {
        nodes.sort_unstable();
    }
    let step = log_uniform(rng, 0.4, 4.0);
    JobSpec {
        name: format!("{}-{}", NAMES[rng.usize(0..NAMES.len())], rng.u32(1000..10000)),
        members: nodes.into_iter().map(Member::Node).collect(),
        step,
        comm_frac: if crossing { uniform(rng, 0.3, 0.55) } else { uniform(rng, 0.2, 0.5) },
        jitter: uniform(rng, 0.01, 0.04),
        rate: if crossing { uniform(rng, 38e9, 47e9) } else { uniform(rng, 25e9, 46e9) },
        qps: if crossing { [1, 2][rng.usize(0..2)] } else { [1, 2, 4][rng.usize(0..3)] },
        msg: [131072.0, 262144.0, 524288.0, 1048576.0][rng.usize(0..4)],
        bursty: (rng.f64() < 1.0 / 3.0).then(|| Bursty {
            every: rng.usize(20..=100),
            factor: uniform(rng, 1.5, 3.0),
            busy: rng.bool(),
        }),
        power: uniform(rng, 560.0, 690.0),
        phase: uniform(rng, 0.0, step),
    }
}

/// `nodes` with the units taking turns, as long as both have nodes left.
fn interleave(nodes: &[usize]) -> Vec<usize> {
    let (mut a, mut b): (Vec<usize>, Vec<usize>) = nodes.iter().partition(|&&k| unit_of(k) == 0);
    let mut out = Vec::with_capacity(nodes.len());
    while !a.is_empty() || !b.is_empty() {
        out.extend(a.pop());
        out.extend(b.pop());
    }
    out
}

/// `n` distinct nodes of `unit`.
fn some_nodes(rng: &mut fastrand::Rng, unit: usize, n: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..NODES_PER_UNIT).map(|i| unit * NODES_PER_UNIT + i).collect();
    rng.shuffle(&mut all);
    all.truncate(n);
    all
}

/// `n` nodes beside the job: on its units, so they share its leaves.
fn draw_tenant_nodes(rng: &mut fastrand::Rng, job: &[usize], units: &[usize], n: usize) -> Vec<usize> {
    let mut free: Vec<usize> = units
        .iter()
        .flat_map(|&u| (0..NODES_PER_UNIT).map(move |i| u * NODES_PER_UNIT + i))
        .filter(|k| !job.contains(k))
        .collect();
    rng.shuffle(&mut free);
    free.truncate(n);
    free
}

/// One or two tenant jobs over `nodes` and the ports-only nodes `extra`,
/// each with a few more nodes whose ports are not recorded either.
fn draw_tenants(rng: &mut fastrand::Rng, nodes: &[usize], extra: &[usize], seed: u64) -> Vec<JobSpec> {
    let groups: Vec<&[usize]> =
        if nodes.len() <= 3 { vec![nodes] } else { vec![&nodes[..nodes.len() / 2], &nodes[nodes.len() / 2..]] };
    let count = groups.len();
    let mut tenants = Vec::new();
    for (j, group) in groups.into_iter().enumerate() {
        let mut members: Vec<Member> = group.iter().map(|&k| Member::Node(k)).collect();
        members.extend(extra.iter().skip(j).step_by(count).map(|&k| Member::Node(k)));
        let remotes = rng.usize(usize::from(group.len() < 2)..=4);
        members.extend((0..remotes).map(|_| Member::Remote(rng.usize(0..UNITS))));
        rng.shuffle(&mut members);
        let step = log_uniform(rng, 0.3, 3.0);
        tenants.push(JobSpec {
            // Tenants' jobs are named like any other: nothing in a name says
            // which job is the one being asked about.
            name: format!("{}-{}", NAMES[(seed as usize + 3 * j + 1) % NAMES.len()], rng.u32(1000..10000)),
            members,
            step,
            comm_frac: uniform(rng, 0.15, 0.45),
            jitter: uniform(rng, 0.01, 0.05),
            rate: uniform(rng, 8e9, 40e9),
            qps: [1, 2, 4][rng.usize(0..3)],
            msg: [65536.0, 262144.0, 1048576.0][rng.usize(0..3)],
            bursty: (rng.f64() < 0.25).then(|| Bursty {
                every: rng.usize(10..=60),
                factor: uniform(rng, 1.5, 3.0),
                busy: rng.bool(),
            }),
            power: uniform(rng, 300.0, 650.0),
            phase: uniform(rng, 0.0, step),
        });
    }
    tenants
}

/// A step slowdown to aim at: two in five mild.
fn target(rng: &mut fastrand::Rng) -> f64 {
    if rng.f64() < 0.4 {
        uniform(rng, 1.08, 1.2)
    } else {
        uniform(rng, 1.25, 2.2)
    }
}

/// The cause, its window and its shape in time.
fn draw_fault(rng: &mut fastrand::Rng, sc: &Scenario, onset: f64) -> Fault {
    let lasting = matches!(
        sc.kind,
        FieldKind::LoaderHang
            | FieldKind::GpuXid
            | FieldKind::CheckpointStall
            | FieldKind::GpuThermal
            | FieldKind::LinkFlap
    ) || rng.f64() < 0.65;
    let shortest = (15.0 * sc.job.step).max(45.0);
    let until = if lasting || sc.duration - onset - 10.0 <= shortest {
        sc.duration
    } else {
        onset + uniform(rng, shortest, sc.duration - onset - 10.0)
    };
    let mut fault = Fault { cause: Cause::LoaderHang { node: None }, onset, until, ramp: 0.0, bursts: None };
    fault.cause = match sc.kind {
        FieldKind::PfcStorm | FieldKind::UplinkCongestion | FieldKind::EcmpCollision | FieldKind::Incast => {
            network_cause(rng, sc, &mut fault)
        }
        FieldKind::LinkFlap | FieldKind::Ber => link_cause(rng, sc, &mut fault),
        _ => host_cause(rng, sc, &mut fault),
    };
    fault
}

fn bursts(rng: &mut fastrand::Rng, period: (f64, f64), duty: (f64, f64)) -> Bursts {
    let period = uniform(rng, period.0, period.1);
    Bursts { period, duty: uniform(rng, duty.0, duty.1), phase: uniform(rng, 0.0, period) }
}

fn network_cause(rng: &mut fastrand::Rng, sc: &Scenario, fault: &mut Fault) -> Cause {
    let job = &sc.job;
    let nodes = job.nodes();
    let tenants: Vec<usize> = sc.recorded.iter().copied().filter(|&k| !sc.in_job(k)).collect();
    // A storming tenant NIC is as often on a node whose daemon is not in the
    // recording: then only its leaf port shows it.
    let stormers = if sc.ports_only.is_empty() || rng.bool() { &tenants } else { &sc.ports_only };
    let rail = rng.usize(0..RAILS);
    let unit = pick(rng, &sc.units).unwrap_or(0);
    match sc.kind {
        FieldKind::PfcStorm => {
            let m = 1.0 + (target(rng) - 1.0) / job.comm_frac;
            let hol = uniform(rng, 0.5, 0.85);
            let left = job.rate / (m * LINK_BYTES);
            fault.ramp = uniform(rng, 0.0, 3.0);
            fault.bursts = (rng.f64() < 0.2).then(|| bursts(rng, (2.0, 10.0), (0.5, 0.9)));
            match pick(rng, stormers).filter(|_| rng.f64() < 0.4) {
                Some(node) => Cause::PfcStorm { node, rail, duty: ((1.0 - left) / hol).clamp(0.2, 0.97), hol },
                None => {
                    let node = pick(rng, &nodes).unwrap_or(0);
                    Cause::PfcStorm { node, rail, duty: (1.0 - left).clamp(0.15, 0.95), hol }
                }
            }
        }
        FieldKind::UplinkCongestion => {
            let mut down = rng.f64() < 0.6;
            let mut extra = uniform(rng, 6.5, 12.0) * LINK_BYTES;
            let free = (NODES_PER_UNIT - nodes.iter().filter(|&&k| unit_of(k) == unit).count()) as f64;
            if !down && extra > free * 0.95 * LINK_BYTES {
                if free * 0.95 >= 7.0 {
                    extra = free * 0.95 * LINK_BYTES;
                } else {
                    down = true;
                }
            }
            fault.ramp = uniform(rng, 2.0, 15.0);
            fault.bursts = (rng.f64() < 0.3).then(|| bursts(rng, (5.0, 30.0), (0.5, 0.9)));
            Cause::UplinkCongestion { unit, rail, down, extra }
        }
        FieldKind::EcmpCollision => {
            // The leaf of the unit with more of the job's ranks sends more
            // of its traffic across.
            let here = |u: usize| nodes.iter().filter(|&&k| unit_of(k) == u).count();
            let unit = if here(0) == here(1) {
                unit
            } else if here(0) > here(1) {
                0
            } else {
                1
            };
            let mut hot: Vec<usize> = (0..UPLINKS).collect();
            rng.shuffle(&mut hot);
            hot.truncate(if rng.f64() < 0.65 { 2 } else { 3 });
            hot.sort_unstable();
            Cause::EcmpCollision { unit, rail, hot, share: uniform(rng, 0.75, 0.97) }
        }
        _ => {
            let node = pick(rng, &nodes).unwrap_or(0);
            let n = rng.usize(3..=10);
            let mut senders: Vec<Member> = tenants.iter().take(n - 1).map(|&k| Member::Node(k)).collect();
            senders.truncate(rng.usize(usize::from(!senders.is_empty())..=senders.len()));
            while senders.len() < n {
                senders.push(Member::Remote(rng.usize(0..UNITS)));
            }
            fault.bursts = (rng.f64() < 0.5).then(|| bursts(rng, (1.0, 8.0), (0.3, 0.9)));
            Cause::Incast { node, rail, senders, rate: uniform(rng, 0.6, 2.5) * LINK_BYTES }
        }
    }
}

fn link_cause(rng: &mut fastrand::Rng, sc: &Scenario, fault: &mut Fault) -> Cause {
    let node = pick(rng, &sc.job.nodes()).unwrap_or(0);
    let rail = rng.usize(0..RAILS);
    if sc.kind == FieldKind::Ber {
        let m = 1.0 + (target(rng) - 1.0) / sc.job.comm_frac;
        fault.ramp = uniform(rng, 0.0, 60.0);
        let ber = (2e-6 * m.powi(3) * uniform(rng, 0.5, 2.0)).clamp(2e-6, 5e-4);
        return Cause::Ber { node, rail, ber, errors: (m - 1.0) * uniform(rng, 800.0, 3000.0), slow: m };
    }
    let mut flaps = Vec::new();
    let mut t = fault.onset;
    for _ in 0..rng.usize(2..=8) {
        let up = t + log_uniform(rng, 0.3, 4.0);
        if up >= fault.until - 1.0 {
            break;
        }
        flaps.push((t, up));
        t = up + uniform(rng, 3.0, 25.0);
    }
    if let Some(last) = flaps.last() {
        fault.until = fault.until.min(last.1 + 1.0);
    }
    Cause::LinkFlap { node, rail, flaps }
}

fn host_cause(rng: &mut fastrand::Rng, sc: &Scenario, fault: &mut Fault) -> Cause {
    let job = &sc.job;
    let node = pick(rng, &job.nodes()).unwrap_or(0);
    let gpu = rng.usize(0..RAILS);
    let compute = |s: f64| 1.0 + (s - 1.0) / (1.0 - job.comm_frac);
    match sc.kind {
        FieldKind::GpuThermal => {
            fault.ramp = uniform(rng, 20.0, 60.0);
            // Thermal slowdown costs a GPU a third of its clock at worst.
            let slow = compute(target(rng)).min(1.6);
            Cause::GpuThermal { node, gpu, slow, rise: uniform(rng, 18.0, 30.0) }
        }
        FieldKind::GpuXid => {
            let xid = [79, 79, 79, 48, 48, 94, 94, 63, 63, 63][rng.usize(0..10)];
            Cause::GpuXid { node, gpu, xid, slow: compute(uniform(rng, 1.08, 1.25)) }
        }
        FieldKind::LoaderStall => {
            fault.ramp = uniform(rng, 0.0, 20.0);
            Cause::LoaderStall { wait: uniform(rng, 0.2, 2.0) }
        }
        FieldKind::CheckpointStall => Cause::CheckpointStall {
            every: rng.usize(5..=12),
            first: uniform(rng, 1.5, 4.0),
            growth: uniform(rng, 0.2, 0.8),
        },
        FieldKind::HostStraggler => {
            fault.ramp = uniform(rng, 0.0, 10.0);
            Cause::HostStraggler { node, slow: compute(target(rng)) }
        }
        _ => Cause::LoaderHang { node: rng.bool().then_some(node) },
    }
}

/// One to three incidents on the tenants' NICs, GPUs and jobs.
fn draw_incidents(rng: &mut fastrand::Rng, sc: &Scenario, tenants: &[usize]) -> Vec<Incident> {
    let mut out = Vec::new();
    let d = sc.duration;
    for _ in 0..rng.usize(1..=3) {
        let Some(node) = pick(rng, tenants) else { break };
        let (rail, start) = (rng.usize(0..RAILS), uniform(rng, 5.0, d - 10.0));
        let roll = rng.f64();
        out.push(if roll < 0.25 {
            Incident::Congestion {
                node,
                rail,
                start,
                len: uniform(rng, 5.0, 40.0),
                rate: uniform(rng, 0.3, 1.2) * LINK_BYTES,
            }
        } else if roll < 0.5 {
            let xid = [13, 13, 31, 31, 43, 45, 63, 79, 94, 48][rng.usize(0..10)];
            Incident::Xid { node, gpu: rng.usize(0..RAILS), at: start, xid }
        } else if roll < 0.7 {
            Incident::Symbols { node, rail, start, len: uniform(rng, 3.0, 20.0), rate: log_uniform(rng, 5.0, 200.0) }
        } else if roll < 0.8 {
            Incident::Flap { node, rail, at: start, down: uniform(rng, 0.2, 3.0) }
        } else {
            let tenant = rng.usize(0..sc.tenants.len().max(1));
            Incident::Slow { tenant, start, len: uniform(rng, 20.0, 80.0), factor: uniform(rng, 1.3, 2.5) }
        });
    }
    out
}
