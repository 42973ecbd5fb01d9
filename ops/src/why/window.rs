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
}

impl Windows {
    /// `--from/--to`: that span, and the equal span before it as baseline.
    pub fn given(from: Nanos, to: Nanos) -> Windows {
        Windows { baseline: (from - (to - from), from), regression: (from, to), rise_at: from, detected: false }
    }
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

/// Finds the regression in `signal` (time-ordered, higher is slower).
pub fn detect(signal: &[(Nanos, f64)], relative: f64) -> Result<Windows, WhyError> {
    if signal.len() < MIN_BASELINE + RUN {
        return Err(WhyError::TooFewPoints { points: signal.len(), needed: MIN_BASELINE + RUN });
    }
    let quarter = (signal.len() / 4).max(MIN_BASELINE);
    let values: Vec<f64> = signal[..quarter].iter().map(|p| p.1).collect();
    let (base, hi) = threshold_of(&values, relative);
    let start = first_run(signal, quarter, |v| v > hi).ok_or(WhyError::NoRegression {
        threshold: hi,
        baseline: base,
        percent: relative * 100.0,
    })?;
    let end = first_run(signal, start + 1, |v| v <= hi).map(|j| signal[j].0).unwrap_or(signal[signal.len() - 1].0);
    let rise_at = signal[start].0;
    Ok(Windows {
        baseline: (signal[0].0, rise_at - 1),
        regression: (rise_at, end.max(rise_at + 1)),
        rise_at,
        detected: true,
    })
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

    #[test]
    fn a_sustained_rise_is_found_and_a_lone_slow_step_is_not() {
        let mut v = vec![1.0; 40];
        v[12] = 3.0; // one slow step (a checkpoint)
        for x in &mut v[25..35] {
            *x = 1.4;
        }
        v[27] = 1.0; // one fast step inside does not split it
        let w = detect(&steps(&v), DEFAULT_THRESHOLD).unwrap();
        assert_eq!(w.rise_at, 2500);
        assert_eq!(w.regression, (2500, 3500));
        assert_eq!(w.baseline, (0, 2499));
        let l = levels(&steps(&v), &w);
        assert!((l.change() - 0.4).abs() < 1e-9, "{l:?}");
    }

    #[test]
    fn a_flat_job_has_no_regression_and_says_how_to_choose_one() {
        let err = detect(&steps(&[1.0; 40]), DEFAULT_THRESHOLD).unwrap_err().to_string();
        assert!(err.contains("no regression") && err.contains("--from/--to"), "{err}");
        assert!(detect(&steps(&[1.0; 5]), DEFAULT_THRESHOLD).unwrap_err().to_string().contains("at least"));
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
}
