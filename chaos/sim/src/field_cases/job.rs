//! A job's steps, and what they put on the fabric and the GPUs.
//!
//! A step is: an optional long phase (an evaluation or a checkpoint every Nth
//! step, the cause's checkpoints), a wait for input, the compute (forward
//! and backward, at the slowest rank's pace), and the exposed collective at
//! its end, when the bytes flow. The job pushes the step's duration when it
//! ends. Each phase has its own noise; now and then a step hiccups (garbage
//! collection, logging). From the steps come the job's traffic (each NIC
//! sends a fixed number of bytes per step, so a slower step means a lower
//! rate), an indicator of collectives in progress (what PFC and ECN marks
//! follow), and each GPU's busy share (what NVML and DCGM read).

use super::noise::{normal, uniform};
use super::pace::{Activity, Pace};
use super::profile::{Cells, Profile, FINE};
use super::world::JobSpec;

/// One step.
#[derive(Debug, Clone)]
pub(super) struct Step {
    /// When it started.
    pub start: f64,
    /// When its long phase (evaluation, checkpoint) ended.
    pub extra_end: f64,
    /// Whether the long phase keeps the GPUs busy (an evaluation).
    pub extra_busy: bool,
    /// When its compute started (after the input arrived).
    pub work: f64,
    /// When its collective started.
    pub comm: f64,
    /// When it ended (or the job hung).
    pub end: f64,
    /// How much longer than nominal its compute took because of the cause.
    pub compute_mult: f64,
    /// Spans within the collective when it could not progress.
    pub stalls: Vec<(f64, f64)>,
    /// Whether it completed (and was pushed).
    pub done: bool,
}

/// A job's steps over the case.
#[derive(Debug, Clone)]
pub(super) struct Schedule {
    /// The steps, the last one cut off by a hang or by the end.
    pub steps: Vec<Step>,
    /// When the job hung, if it did.
    pub hang: Option<f64>,
}

impl Schedule {
    /// The step pushes: (time, duration) of every step that ended within
    /// `[0, duration]`.
    pub(super) fn pushes(&self, duration: f64) -> Vec<(f64, f64)> {
        self.steps
            .iter()
            .filter(|s| s.done && s.end >= 0.0 && s.end <= duration)
            .map(|s| (s.end, s.end - s.start))
            .collect()
    }
}

/// What shapes a job's steps besides its own noise.
pub(super) struct Shaping<'a> {
    /// The cause's effect at full activity.
    pub pace: &'a Pace,
    /// The cause's activity.
    pub act: Activity,
    /// Spans (start, end, factor) when its compute is slower (a tenant's own
    /// trouble).
    pub slow: Vec<(f64, f64, f64)>,
    /// When it hangs.
    pub hang: Option<f64>,
}

/// The job's steps from before the recording to its end (or its hang).
pub(super) fn schedule(job: &JobSpec, duration: f64, shaping: &Shaping, rng: &mut fastrand::Rng) -> Schedule {
    let mut steps = Vec::new();
    let mut t = -job.phase;
    let mut k = rng.usize(0..1000);
    let mut ckpts = 0;
    while t < duration {
        let mut step = next_step(job, shaping, t, k, &mut ckpts, rng);
        if let Some(h) = shaping.hang.filter(|&h| h < step.end) {
            step.end = h.max(step.start);
            step.done = false;
            steps.push(step);
            return Schedule { steps, hang: Some(h) };
        }
        t = step.end;
        steps.push(step);
        k += 1;
    }
    Schedule { steps, hang: None }
}

/// Step `k`, starting at `t`.
fn next_step(job: &JobSpec, shaping: &Shaping, t: f64, k: usize, ckpts: &mut i32, rng: &mut fastrand::Rng) -> Step {
    let pace = shaping.pace;
    let a = shaping.act.at(t);
    let (c0, m0) = (job.step * (1.0 - job.comm_frac), job.step * job.comm_frac);
    let (mut extra, mut extra_busy) = (0.0, false);
    if let Some(b) = job.bursty.filter(|b| k % b.every.max(1) == 0) {
        extra = (b.factor - 1.0) * job.step;
        extra_busy = b.busy;
    }
    if let Some((every, first, growth)) = pace.ckpt.filter(|_| a > 0.0) {
        if k % every.max(1) == 0 {
            extra += first * (1.0 + growth).powi(*ckpts) * job.step;
            extra_busy = false;
            *ckpts += 1;
        }
    }
    // A data loader hands over the next batch in a sliver of each step; a
    // stalled one makes the step wait, most steps a little, some a lot.
    let mut wait = job.step * 0.01 * uniform(rng, 0.5, 1.5);
    if pace.wait > 0.0 && a > 0.0 {
        wait += (pace.wait * a * job.step * -(rng.f64().max(1e-6)).ln()).min(5.0 * pace.wait * job.step);
    }
    let slow: f64 = shaping.slow.iter().filter(|(s, e, _)| t >= *s && t < *e).map(|w| w.2).product();
    let compute_mult = (1.0 + (pace.compute - 1.0) * a) * slow;
    let mut compute = c0 * (job.jitter * normal(rng)).exp() * compute_mult;
    if rng.f64() < 0.01 {
        compute += job.step * uniform(rng, 0.1, 0.4);
    }
    let comm_len = m0 * (job.jitter * normal(rng)).exp() * (1.0 + (pace.comm - 1.0) * a);
    let extra_end = t + extra;
    let work = extra_end + wait;
    let comm = work + compute;
    let mut end = comm + comm_len;
    let mut stalls = Vec::new();
    for &(d0, d1) in &pace.stalls {
        let from = d0.max(comm);
        if d0 < end && d1 > from {
            end += d1 - from;
            stalls.push((from, d1));
        }
    }
    Step { start: t, extra_end, extra_busy, work, comm, end, compute_mult, stalls, done: true }
}

/// The spans of `[from, to)` outside `stalls` (sorted, within it).
fn outside(from: f64, to: f64, stalls: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut spans = Vec::with_capacity(stalls.len() + 1);
    let mut t = from;
    for &(a, b) in stalls {
        if a > t {
            spans.push((t, a.min(to)));
        }
        t = t.max(b);
    }
    if t < to {
        spans.push((t, to));
    }
    spans
}

/// The bytes/s each NIC of the job sends, and the collectives' indicator.
pub(super) fn traffic(job: &JobSpec, sched: &Schedule, duration: f64) -> (Profile, Profile) {
    let mut bytes = Cells::new(duration, FINE);
    let mut comm = Cells::new(duration, FINE);
    let per_step = job.rate * job.step * job.comm_frac;
    for step in &sched.steps {
        if step.end <= step.comm {
            continue;
        }
        let spans = outside(step.comm, step.end, &step.stalls);
        let active: f64 = spans.iter().map(|(a, b)| b - a).sum();
        // A step cut off by a hang was moving at the job's usual rate.
        let rate = if step.done { per_step / active.max(1e-6) } else { job.rate };
        for (a, b) in spans {
            bytes.add(a, b, rate);
            comm.add(a, b, 1.0);
        }
    }
    (bytes.integrate(), comm.integrate())
}

/// How busy a GPU of the job is (0–1) over time: `compute` gives its
/// busy share during a step's compute, `after` its level once the job hung.
pub(super) fn busy(sched: &Schedule, duration: f64, compute: impl Fn(&Step) -> f64, after: f64) -> Profile {
    let mut cells = Cells::new(duration, FINE);
    for step in &sched.steps {
        cells.add(step.start, step.extra_end, if step.extra_busy { 0.93 } else { 0.04 });
        cells.add(step.extra_end, step.work, 0.03);
        cells.add(step.work, step.comm.min(step.end), compute(step));
        // NCCL's kernels run (and spin while they wait) for the whole
        // collective: the GPU counts as busy.
        cells.add(step.comm, step.end, 0.9);
    }
    if let Some(h) = sched.hang {
        cells.add(h, duration + 1.0, after);
    }
    cells.integrate()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field_cases::noise::rng_for;
    use crate::field_cases::world::Member;

    fn job() -> JobSpec {
        JobSpec {
            name: "j".into(),
            members: vec![Member::Node(0), Member::Node(1)],
            step: 1.0,
            comm_frac: 0.3,
            jitter: 0.02,
            rate: 40e9,
            qps: 1,
            msg: 262144.0,
            bursty: None,
            power: 600.0,
            phase: 0.5,
        }
    }

    #[test]
    fn steps_are_back_to_back_and_a_hang_stops_them() {
        let pace = Pace::none();
        let shaping = Shaping { pace: &pace, act: Activity::never(), slow: Vec::new(), hang: Some(30.0) };
        let sched = schedule(&job(), 60.0, &shaping, &mut rng_for(1, 1));
        for w in sched.steps.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        assert!(sched.pushes(60.0).iter().all(|(t, _)| *t < 30.0));
        assert!(sched.pushes(60.0).len() > 25);
        let (bytes, _) = traffic(&job(), &sched, 60.0);
        assert_eq!(bytes.integral(30.1, 60.0), 0.0, "no traffic after the hang");
        let per_s = bytes.integral(5.0, 25.0) / 20.0;
        assert!((per_s / (40e9 * 0.3) - 1.0).abs() < 0.1, "{per_s}");
    }

    #[test]
    fn a_stall_stretches_the_collective_it_falls_in() {
        let pace = Pace { stalls: vec![(10.0, 12.0)], ..Pace::none() };
        let shaping = Shaping { pace: &pace, act: Activity::never(), slow: Vec::new(), hang: None };
        let sched = schedule(&job(), 30.0, &shaping, &mut rng_for(2, 1));
        let longest = sched.pushes(30.0).iter().map(|p| p.1).fold(0.0, f64::max);
        assert!(longest > 1.5, "{longest}");
        let (bytes, comm) = traffic(&job(), &sched, 30.0);
        assert_eq!(bytes.integral(10.05, 11.95), 0.0);
        assert_eq!(comm.integral(10.05, 11.95), 0.0);
    }
}
