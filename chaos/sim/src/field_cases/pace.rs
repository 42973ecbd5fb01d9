//! How the cause paces the job: when it acts ([`Activity`]: its onset,
//! ramp, on/off bursts and end) and what it does to each step at full
//! activity ([`Pace`]): collectives or compute stretched, input waits,
//! checkpoints, stalls while a link is down, a hang.
//!
//! A collective runs at its slowest rank's pace and over its most congested
//! link, so one slow NIC or GPU slows every rank: the step multipliers here
//! apply to the whole job.

use super::fabric::Fabric;
use super::world::{Bursts, Cause, Fault, JobSpec, Scenario, LINK_BYTES};

/// When a cause acts, from 0 (not at all) to 1 (full strength).
#[derive(Debug, Clone, Copy)]
pub(super) struct Activity {
    onset: f64,
    until: f64,
    ramp: f64,
    bursts: Option<Bursts>,
}

impl Activity {
    /// The activity of `fault`.
    pub(super) fn of(fault: &Fault) -> Activity {
        Activity { onset: fault.onset, until: fault.until, ramp: fault.ramp, bursts: fault.bursts }
    }

    /// On over `[start, end)`, at once.
    pub(super) fn window(start: f64, end: f64) -> Activity {
        Activity { onset: start, until: end, ramp: 0.0, bursts: None }
    }

    /// Never on.
    pub(super) fn never() -> Activity {
        Activity::window(f64::INFINITY, f64::INFINITY)
    }

    /// The activity at `t`.
    pub(super) fn at(&self, t: f64) -> f64 {
        if t < self.onset || t >= self.until {
            return 0.0;
        }
        let ramp = if self.ramp > 0.0 { ((t - self.onset) / self.ramp).min(1.0) } else { 1.0 };
        let on = match self.bursts {
            Some(b) if b.period > 0.0 => {
                let x = (t - self.onset - b.phase).rem_euclid(b.period);
                if x < b.duty * b.period {
                    1.0
                } else {
                    0.0
                }
            }
            _ => 1.0,
        };
        ramp * on
    }
}

/// A job's steps under the cause, at full activity.
#[derive(Debug, Clone, Default)]
pub(super) struct Pace {
    /// Collectives take this many times longer.
    pub comm: f64,
    /// Compute (the slowest rank's) takes this many times longer.
    pub compute: f64,
    /// Each step first waits for input this many nominal steps, on average.
    pub wait: f64,
    /// The job stops here: no step completes after it.
    pub hang: Option<f64>,
    /// Spans when a NIC of the job is down and its queue pairs retry: a
    /// collective in progress waits them out.
    pub stalls: Vec<(f64, f64)>,
    /// Checkpoints to slow storage: every, first (nominal steps), growth.
    pub ckpt: Option<(usize, f64, f64)>,
}

impl Pace {
    /// No effect.
    pub(super) fn none() -> Pace {
        Pace { comm: 1.0, compute: 1.0, ..Pace::default() }
    }

    /// What the cause of `sc` does to its job, through `fabric`'s loads.
    pub(super) fn of(sc: &Scenario, fabric: &Fabric) -> Pace {
        let mut pace = Pace::none();
        let rate = sc.job.rate;
        match &sc.fault.cause {
            Cause::PfcStorm { node, duty, hol, .. } => {
                // The storming NIC drains at (1 - duty) of line rate; its
                // leaf's other senders are paused hol × duty of the time.
                let left = if sc.in_job(*node) { 1.0 - duty } else { 1.0 - hol * duty };
                pace.comm = (rate / (left.max(0.02) * LINK_BYTES)).max(1.0);
            }
            Cause::UplinkCongestion { .. } | Cause::EcmpCollision { .. } | Cause::Incast { .. } => {
                pace.comm = fabric.job_comm_mult();
            }
            Cause::GpuThermal { slow, .. } | Cause::HostStraggler { slow, .. } => pace.compute = *slow,
            Cause::GpuXid { xid, slow, .. } => {
                if *xid == 63 {
                    pace.compute = *slow;
                } else {
                    pace.hang = Some(sc.fault.onset);
                }
            }
            Cause::LinkFlap { flaps, .. } => {
                // After carrier returns, the queue pairs wait out their retry
                // timer, which backs off with how long they were cut off.
                pace.stalls = flaps.iter().map(|&(down, up)| (down, up + 0.2 + 0.25 * (up - down))).collect();
            }
            Cause::Ber { slow, .. } => pace.comm = *slow,
            Cause::LoaderStall { wait } => pace.wait = *wait,
            Cause::CheckpointStall { every, first, growth } => pace.ckpt = Some((*every, *first, *growth)),
            Cause::LoaderHang { .. } => pace.hang = Some(sc.fault.onset),
        }
        pace
    }

    /// A step's duration at full activity, in nominal steps (a hang: ∞).
    pub(super) fn step_ratio(&self, job: &JobSpec) -> f64 {
        if self.hang.is_some() {
            return f64::INFINITY;
        }
        let f = job.comm_frac;
        let mut ratio = (1.0 - f) * self.compute + f * self.comm + self.wait;
        if let Some((every, first, _)) = self.ckpt {
            ratio += first / every.max(1) as f64;
        }
        if !self.stalls.is_empty() {
            let stalled: f64 = self.stalls.iter().map(|(a, b)| b - a).sum();
            let span = self.stalls.last().map_or(1.0, |s| s.1) - self.stalls.first().map_or(0.0, |s| s.0);
            ratio += stalled / span.max(job.step);
        }
        ratio
    }
}
