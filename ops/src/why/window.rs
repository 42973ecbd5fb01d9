//! The job's regression window: when it got slow, and what "normal" was.
//!
//! The job signal is its step time (`job_step_time_seconds`; with one series
//! per node, the slowest node at each instant, since a synchronous job runs
//! at its slowest rank's pace). Without a step time, the NCCL bus bandwidth
//! (`nccl_busbw_gbps`, the lowest node) is used, inverted, so that "higher
//! is slower" holds for both.
//!
//! Automatic detection (no `--from`):
//! - the baseline is the median and MAD of the first quarter of the job's
//!   points (at least [`MIN_BASELINE`]): the job is assumed healthy when it
//!   starts, and a median ignores a few slow steps;
//! - the threshold is `baseline × (1 + threshold)`, and at least 4 robust
//!   standard deviations above it, so a noisy job does not trip on noise;
//! - the regression starts at the first point from which [`HOLD`] of the
//!   next [`RUN`] points are above the threshold (a single slow step, a
//!   checkpoint, is not a regression), and ends where the same holds below
//!   it, or at the end of the recording;
//! - the ranking's baseline is everything before the rise.
//!
//! - **the onset, as the daemons see it**: a step time is known when the
//!   step *ends*, so the first slow step pushed at `t` with `v` seconds
//!   began at `t − v` (not before the step pushed before it): the
//!   regression starts there, and a cause that struck during that step (an
//!   XID, a storm's first second) falls inside it, not in the baseline;
//! - **the pace**: when no run of slow steps is found, the mean of
//!   [`PACE_STEPS`] steps against the baseline's: a fault that stalls the
//!   job now and then (a flapping link) leaves most steps normal and a few
//!   very long;
//! - **a stall**: when no regression is found in the points (a job that all
//!   but stopped pushes too few steps), a silence of [`STALL_STEPS`]
//!   baseline steps (at least [`MIN_STALL`]) between two pushes, or from the
//!   last push to the end of the recording, is the regression: the step
//!   that began at its start has not ended.
//!
//! With `--from/--to`, that span is the regression and the span of equal
//! length before it the baseline.

use engine::Nanos;
use serde::Serialize;

use super::rank::{mad, median};
use super::WhyError;

/// Points of the job signal that must be above the threshold…
pub const HOLD: usize = 4;
/// …out of this many consecutive ones, for the job to count as slow.
pub const RUN: usize = 5;
/// Fewest baseline points.
pub const MIN_BASELINE: usize = 8;
/// The default relative rise that counts as a regression (15 %).
pub const DEFAULT_THRESHOLD: f64 = 0.15;
/// The steps whose mean is the job's pace, when single slow steps show no regression.
pub const PACE_STEPS: usize = 20;
/// A silence of this many baseline steps is a stall…
pub const STALL_STEPS: i64 = 20;
/// …and at least this long.
pub const MIN_STALL: Nanos = 10 * engine::SECOND;

/// Where the job was normal and where it was slow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Windows {
    /// Baseline span.
    pub baseline: (Nanos, Nanos),
    /// Regression span.
    pub regression: (Nanos, Nanos),
    /// When the job signal rose (the regression's start when detected).
    pub rise_at: Nanos,
    /// Found from the step time (true) or given.
    pub detected: bool,
    /// The regression is a silence: no step ended in it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stalled: bool,
    /// No regression in the job signal: the span is the whole recording,
    /// and each element was compared with its peers alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub peers_only: bool,
}

impl Windows {
    /// `--from/--to`: that span, and the equal span before it as baseline.
    pub fn given(from: Nanos, to: Nanos) -> Windows {
        Windows {
            baseline: (from - (to - from), from),
            regression: (from, to),
            rise_at: from,
            detected: false,
            stalled: false,
            peers_only: false,
        }
    }

    /// Found in the job signal: slow from `rise_at` to `end`, normal from `start` before it.
    fn found(start: Nanos, rise_at: Nanos, end: Nanos) -> Windows {
        Windows {
            baseline: (start, rise_at - 1),
            regression: (rise_at, end.max(rise_at + 1)),
            rise_at,
            detected: true,
            stalled: false,
            peers_only: false,
        }
    }

    /// A job never faster in `from..to`: one span, compared across peers.
    pub fn peers_only(from: Nanos, to: Nanos) -> Windows {
        Windows {
            baseline: (from, to),
            regression: (from, to),
            rise_at: from,
            detected: false,
            stalled: false,
            peers_only: true,
        }
    }
}

/// How the job signal was pushed, for [`detect`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pushes {
    /// Each point is a step's duration in seconds, pushed when it ended.
    pub step_ends: bool,
    /// The end of the recording: a silence up to it is a stall.
    pub recording_end: Nanos,
}

/// The job signal's level in each window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Levels {
    /// Median in the baseline.
    pub baseline: f64,
    /// Median in the regression.
    pub regression: f64,
}

impl Levels {
    /// Relative change, regression over baseline (0.38 = 38 % slower).
    pub fn change(&self) -> f64 {
        if self.baseline.abs() > f64::EPSILON {
            self.regression / self.baseline - 1.0
        } else {
            0.0
        }
    }
}

/// The job's points as one "higher is slower" signal: per time, the worst
/// (highest) of the series given. Bandwidths are passed inverted (`1/bw`).
pub fn worst_of(series: &[Vec<(Nanos, f64)>]) -> Vec<(Nanos, f64)> {
    let mut all: Vec<(Nanos, f64)> = series.iter().flatten().copied().filter(|(_, v)| v.is_finite()).collect();
    all.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    all.dedup_by_key(|p| p.0);
    all
}

/// The threshold above which a point counts as slow.
fn threshold_of(values: &[f64], relative: f64) -> (f64, f64) {
    let base = median(values);
    let spread = mad(values, base) * 1.4826;
    (base, (base * (1.0 + relative)).max(base + 4.0 * spread))
}

/// The first index from which [`HOLD`] of the next [`RUN`] points satisfy
/// `slow`, searching from `from`.
fn first_run(points: &[(Nanos, f64)], from: usize, slow: impl Fn(f64) -> bool) -> Option<usize> {
    (from..points.len()).find(|&i| {
        slow(points[i].1) && points[i..(i + RUN).min(points.len())].iter().filter(|p| slow(p.1)).count() >= HOLD
    })
}

/// Finds the regression in `signal` (time-ordered, higher is slower),
/// pushed as `pushes` says.
///
/// Every candidate counts: each run of slow steps, the pace, each stall. A
/// job may have had a short slow spell (an evaluation, a checkpoint) before
/// the fault it is asked about, so the one chosen is the one still under
/// way at the end of the recording, else the largest (how much slower,
/// times how long; a stall's step has lasted its whole silence).
pub fn detect(signal: &[(Nanos, f64)], relative: f64, pushes: Pushes) -> Result<Windows, WhyError> {
    let (mut found, none) = match in_points(signal, relative, pushes) {
        Ok(runs) => (runs, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    // The pace too: a short run of slow steps may be the edge of a longer slowdown around the line.
    found.extend(in_pace(signal, relative, pushes));
    found.extend(stalls(signal, pushes.recording_end));
    let base = median(&signal.iter().take((signal.len() / 4).max(MIN_BASELINE)).map(|p| p.1).collect::<Vec<_>>());
    let last_push = signal.last().map_or(0, |p| p.0);
    let ongoing = |w: &Windows| w.regression.1 >= last_push;
    let weight = |w: &Windows| {
        let secs = (w.regression.1 - w.regression.0) as f64 / engine::SECOND as f64;
        let slower = if w.stalled { secs / base.max(1e-9) } else { levels(signal, w).regression / base - 1.0 };
        slower * secs
    };
    let best = found.into_iter().max_by(|a, b| ongoing(a).cmp(&ongoing(b)).then(weight(a).total_cmp(&weight(b))));
    best.ok_or_else(|| {
        none.unwrap_or(WhyError::NoRegression {
            threshold: base * (1.0 + relative),
            baseline: base,
            percent: relative * 100.0,
        })
    })
}

/// The regression in the job's pace when no run of slow steps shows it:
/// a fault that stalls the job now and then (a flapping link, retries)
/// leaves most steps normal and a few very long, and a mild one (a GPU
/// throttling 10 %) hides in each step's noise. The mean of [`PACE_STEPS`]
/// steps against the baseline's (the median of such means over the first
/// quarter, so the odd checkpoint in the baseline does not raise it): the
/// regression starts at the first slow step of the first window whose mean
/// is above `baseline × (1 + relative / 2)` (and 4 robust standard
/// deviations of the baseline's means) and stays so half a window later.
fn in_pace(signal: &[(Nanos, f64)], relative: f64, pushes: Pushes) -> Option<Windows> {
    let values: Vec<f64> = signal.iter().map(|p| p.1).collect();
    let quarter = (values.len() / 4).max(MIN_BASELINE);
    let k = PACE_STEPS.min(quarter / 2).max(RUN);
    if values.len() < quarter + 2 * k {
        return None;
    }
    let means: Vec<f64> = values.windows(k).map(|w| w.iter().sum::<f64>() / k as f64).collect();
    let base = median(&means[..=quarter - k]);
    // A mean of k steps is √k times steadier than one step: half the relative
    // rise counts, if it also clears the means' own noise.
    let spread = 1.4826 * mad(&means[..=quarter - k], base);
    let hi = (base * (1.0 + relative / 2.0)).max(base + 4.0 * spread);
    let step_hi = median(&values[..quarter]) * (1.0 + relative);
    let slow = |i: usize| means.get(i).is_some_and(|m| *m > hi);
    let first = (quarter - k + 1..means.len()).find(|&i| slow(i) && slow(i + k / 2))?;
    let onset = (first..first + k).find(|&j| values[j] > step_hi).unwrap_or(first);
    // The last slow window ends the regression.
    let last = (first..means.len()).rev().find(|&i| slow(i)).unwrap_or(first);
    let end = signal[(last + k - 1).min(signal.len() - 1)].0;
    let rise_at = if pushes.step_ends { began(signal, onset) } else { signal[onset].0 };
    (onset >= MIN_BASELINE).then(|| Windows::found(signal[0].0, rise_at, end))
}

/// The regressions found in the points themselves: each run of slow steps,
/// in order; an error when there are too few points or none is slow.
fn in_points(signal: &[(Nanos, f64)], relative: f64, pushes: Pushes) -> Result<Vec<Windows>, WhyError> {
    if signal.len() < MIN_BASELINE + RUN {
        return Err(WhyError::TooFewPoints { points: signal.len(), needed: MIN_BASELINE + RUN });
    }
    let quarter = (signal.len() / 4).max(MIN_BASELINE);
    let values: Vec<f64> = signal[..quarter].iter().map(|p| p.1).collect();
    let (base, hi) = threshold_of(&values, relative);
    let mut found = Vec::new();
    let mut from = quarter;
    while let Some(start) = first_run(signal, from, |v| v > hi) {
        let back = first_run(signal, start + 1, |v| v <= hi);
        let end = back.map_or(signal[signal.len() - 1].0, |j| signal[j].0);
        let rise_at = if pushes.step_ends { began(signal, start) } else { signal[start].0 };
        found.push(Windows::found(signal[0].0, rise_at, end));
        match back {
            Some(j) => from = j,
            None => break,
        }
    }
    if found.is_empty() {
        return Err(WhyError::NoRegression { threshold: hi, baseline: base, percent: relative * 100.0 });
    }
    Ok(found)
}

/// When the step pushed as point `i` began: its duration before its end,
/// not before the step pushed before it ended.
fn began(signal: &[(Nanos, f64)], i: usize) -> Nanos {
    let (t, secs) = signal[i];
    let start = t - (secs.max(0.0) * engine::SECOND as f64) as Nanos;
    match i.checked_sub(1) {
        Some(p) => start.max(signal[p].0 + 1),
        None => start,
    }
}

/// Each silence of [`STALL_STEPS`] baseline steps (at least [`MIN_STALL`])
/// in the pushes, up to `end`: a stall.
fn stalls(signal: &[(Nanos, f64)], end: Nanos) -> Vec<Windows> {
    if signal.len() < 3 {
        return Vec::new();
    }
    let gaps: Vec<f64> = signal.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
    let step = median(&gaps[..gaps.len().min(MIN_BASELINE)]) as Nanos;
    let limit = (STALL_STEPS * step).max(MIN_STALL);
    let ends = signal.iter().skip(1).map(|p| p.0).chain([end]);
    signal
        .iter()
        .map(|p| p.0)
        .zip(ends)
        .filter(|(a, b)| b - a > limit)
        .map(|(from, to)| Windows {
            baseline: (signal[0].0, from - 1),
            regression: (from, to),
            rise_at: from,
            detected: true,
            stalled: true,
            peers_only: false,
        })
        .collect()
}

/// The medians of the job signal in each window.
pub fn levels(signal: &[(Nanos, f64)], w: &Windows) -> Levels {
    let within = |(a, b): (Nanos, Nanos)| -> Vec<f64> {
        signal.iter().filter(|(t, _)| (a..=b).contains(t)).map(|p| p.1).collect()
    };
    Levels { baseline: median(&within(w.baseline)), regression: median(&within(w.regression)) }
}

/// When the signal is back below the baseline's threshold to stay, after
/// `from`: what a decision's effect is judged by.
pub fn recovered_after(signal: &[(Nanos, f64)], baseline: f64, relative: f64, from: Nanos) -> Option<Nanos> {
    let hi = baseline * (1.0 + relative);
    let i = signal.iter().position(|(t, _)| *t >= from)?;
    first_run(signal, i, |v| v <= hi).map(|j| signal[j].0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(values: &[f64]) -> Vec<(Nanos, f64)> {
        values.iter().enumerate().map(|(i, v)| (i as Nanos * 100, *v)).collect()
    }

    /// Points that are levels, not step ends, in a recording that ends with them.
    const POINTS: Pushes = Pushes { step_ends: false, recording_end: 0 };

    #[test]
    fn a_slow_step_began_its_length_before_it_was_pushed() {
        // Steps of 0.5 s pushed at their ends; from the one pushed at 10.5 s, 2 s each.
        let mut t = 0;
        let mut pts = Vec::new();
        while t <= 30 * engine::SECOND {
            let secs = if t > 10 * engine::SECOND { 2.0 } else { 0.5 };
            t += (secs * 1e9) as Nanos;
            pts.push((t, secs));
        }
        let end = pts.last().unwrap().0;
        let w = detect(&pts, DEFAULT_THRESHOLD, Pushes { step_ends: true, recording_end: end }).unwrap();
        assert_eq!(w.rise_at, 10_500_000_001, "the first slow step began when the last fast one ended");
        let as_levels = detect(&pts, DEFAULT_THRESHOLD, Pushes { step_ends: false, recording_end: end }).unwrap();
        assert_eq!(as_levels.rise_at, 12_500_000_000);
    }

    #[test]
    fn a_job_that_stops_pushing_is_stalled() {
        let s = engine::SECOND;
        let pts: Vec<(Nanos, f64)> = (1..=10).map(|i| (i * s / 2, 0.5)).collect();
        let w = detect(&pts, DEFAULT_THRESHOLD, Pushes { step_ends: true, recording_end: 60 * s }).unwrap();
        assert!(w.stalled);
        assert_eq!((w.rise_at, w.regression), (5 * s, (5 * s, 60 * s)));
        // A silence of 9 s is not one (at least 10 s), however short the steps.
        let short = detect(&pts, DEFAULT_THRESHOLD, Pushes { step_ends: true, recording_end: 14 * s });
        assert!(short.is_err());
    }

    #[test]
    fn a_sustained_rise_is_found_and_a_lone_slow_step_is_not() {
        let mut v = vec![1.0; 40];
        v[12] = 3.0; // one slow step (a checkpoint)
        for x in &mut v[25..35] {
            *x = 1.4;
        }
        v[27] = 1.0; // one fast step inside does not split it
        let w = detect(&steps(&v), DEFAULT_THRESHOLD, POINTS).unwrap();
        assert_eq!(w.rise_at, 2500);
        assert_eq!(w.regression, (2500, 3500));
        assert_eq!(w.baseline, (0, 2499));
        let l = levels(&steps(&v), &w);
        assert!((l.change() - 0.4).abs() < 1e-9, "{l:?}");
    }

    #[test]
    fn a_flat_job_has_no_regression_and_says_how_to_choose_one() {
        let err = detect(&steps(&[1.0; 40]), DEFAULT_THRESHOLD, POINTS).unwrap_err().to_string();
        assert!(err.contains("no regression") && err.contains("--from/--to"), "{err}");
        assert!(detect(&steps(&[1.0; 5]), DEFAULT_THRESHOLD, POINTS).unwrap_err().to_string().contains("at least"));
    }

    #[test]
    fn the_worst_node_paces_the_job_and_recovery_is_when_it_stays_back() {
        let a = vec![(0, 1.0), (100, 1.0), (200, 1.0)];
        let b = vec![(0, 1.0), (100, 5.0), (200, 1.1)];
        assert_eq!(worst_of(&[a, b]), [(0, 1.0), (100, 5.0), (200, 1.1)]);
        let mut v = vec![1.0; 10];
        v.extend([3.0; 10]);
        v.extend([1.0; 10]);
        assert_eq!(recovered_after(&steps(&v), 1.0, 0.15, 1200), Some(2000));
        assert_eq!(recovered_after(&steps(&v[..20]), 1.0, 0.15, 1200), None);
        assert_eq!(Windows::given(100, 300).baseline, (-100, 100));
    }

    /// Steps pushed at their ends, of `secs(i)` seconds each.
    fn pushed(n: usize, secs: impl Fn(usize) -> f64) -> Vec<(Nanos, f64)> {
        let mut t = 0;
        (0..n)
            .map(|i| {
                t += (secs(i) * 1e9) as Nanos;
                (t, secs(i))
            })
            .collect()
    }

    #[test]
    fn a_link_that_stalls_the_job_now_and_then_shows_in_its_pace() {
        // 1 s steps; from step 100, one step in 5 is 2.2 s: no run of slow steps, 24 % slower.
        let pts = pushed(200, |i| if i >= 100 && i % 5 == 0 { 2.2 } else { 1.0 });
        let end = pts.last().unwrap().0;
        let w = detect(&pts, 0.15, Pushes { step_ends: true, recording_end: end }).unwrap();
        // It began when the step before it ended (its end less its length, 1 ns later).
        let onset = pts[99].0 + 1;
        assert_eq!((w.rise_at, w.stalled), (onset, false), "the first slow step began the regression: {w:?}");
        // A steady job with one such step now and then in its baseline too is not slower.
        let steady = pushed(200, |i| if i % 25 == 0 { 2.2 } else { 1.0 });
        let end = steady.last().unwrap().0;
        assert!(detect(&steady, 0.15, Pushes { step_ends: true, recording_end: end }).is_err());
    }

    #[test]
    fn the_slowdown_still_under_way_is_chosen_over_an_earlier_spell() {
        // An evaluation of 6 slow steps at step 60; the job hangs after step 150.
        let pts = pushed(150, |i| if (60..66).contains(&i) { 2.0 } else { 1.0 });
        let end = pts.last().unwrap().0 + 60 * engine::SECOND;
        let w = detect(&pts, 0.15, Pushes { step_ends: true, recording_end: end }).unwrap();
        assert!(w.stalled && w.regression.1 == end, "the hang, not the evaluation: {w:?}");
    }
}
