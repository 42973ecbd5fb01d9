//! Percentiles across runs (nearest rank): of durations in milliseconds,
//! or of ratios as they are. A figure that is not a number never becomes
//! a percentile.

use engine::time::Nanos;
use serde::{Deserialize, Serialize};

/// Percentiles of one duration across runs, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Runs that have the duration.
    pub count: usize,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
}

impl Stats {
    /// The nearest-rank percentiles of `values` (ns), in ms.
    pub fn of(values: &[Nanos]) -> Stats {
        let ms: Vec<f64> = values.iter().map(|n| *n as f64 / 1e6).collect();
        Stats::of_values(&ms)
    }

    /// The nearest-rank percentiles of `values` as they are (ratios); a
    /// value that is not a number is left out, so no percentile is NaN.
    pub fn of_values(values: &[f64]) -> Stats {
        let mut v: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let rank = |p: f64| -> Option<f64> {
            if v.is_empty() {
                return None;
            }
            let i = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
            Some(v[i])
        };
        Stats { count: v.len(), p50: rank(0.50), p90: rank(0.90), p99: rank(0.99), max: v.last().copied() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<Nanos> = (1..=100).map(|i| i * 1_000_000).collect();
        let s = Stats::of(&values);
        assert_eq!((s.count, s.p50, s.p90, s.p99, s.max), (100, Some(50.0), Some(90.0), Some(99.0), Some(100.0)));
        assert_eq!(Stats::of(&[]).p50, None);
        assert_eq!(Stats::of(&[7_000_000]).p99, Some(7.0));
    }

    #[test]
    fn a_ratio_that_is_not_a_number_is_left_out_of_the_percentiles() {
        let s = Stats::of_values(&[1.5, f64::NAN, 1.0, f64::INFINITY]);
        assert_eq!((s.count, s.p50, s.max), (2, Some(1.0), Some(1.5)));
    }
}
