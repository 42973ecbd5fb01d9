//! A fixed ring of time buckets.

use crate::time::Nanos;

/// Buckets per ranged window. Eight keeps a window's state at 40 bytes and
/// its edge within 1/8 of its range.
pub const BUCKETS: usize = 8;

const EMPTY: i64 = i64::MIN;

/// How a ring combines values into a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    /// Add (sums, counts).
    Sum,
    /// Keep the smallest.
    Min,
    /// Keep the largest.
    Max,
}

impl Fold {
    fn identity(self) -> f32 {
        match self {
            Fold::Sum => 0.0,
            Fold::Min => f32::INFINITY,
            Fold::Max => f32::NEG_INFINITY,
        }
    }

    fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            Fold::Sum => a + b,
            Fold::Min => a.min(b),
            Fold::Max => a.max(b),
        }
    }
}

/// Eight buckets of `width = range / 8`; bucket `i` holds what arrived in
/// `[i·width, (i+1)·width)`. `f32` is enough: windows feed thresholds, and
/// counters are reduced to per-sample increases before they get here.
#[derive(Debug, Clone, Copy)]
pub struct Ring {
    head: i64,
    vals: [f32; BUCKETS],
}

impl Default for Ring {
    fn default() -> Ring {
        Ring { head: EMPTY, vals: [0.0; BUCKETS] }
    }
}

impl Ring {
    /// Folds `x` into the bucket of `ts`. Samples older than the ring are
    /// dropped: they can no longer be inside any window.
    #[inline]
    pub fn add(&mut self, fold: Fold, width: Nanos, ts: Nanos, x: f32) {
        let b = ts.div_euclid(width);
        if self.head == EMPTY {
            self.vals = [fold.identity(); BUCKETS];
            self.head = b;
        } else if b > self.head {
            let steps = (b - self.head).min(BUCKETS as i64);
            for k in 1..=steps {
                self.vals[(self.head + k).rem_euclid(BUCKETS as i64) as usize] = fold.identity();
            }
            self.head = b;
        } else if b <= self.head - BUCKETS as i64 {
            return;
        }
        let slot = &mut self.vals[b.rem_euclid(BUCKETS as i64) as usize];
        *slot = fold.apply(*slot, x);
    }

    /// Folds the buckets still inside the window ending at `now`.
    #[inline]
    pub fn fold(&self, fold: Fold, width: Nanos, now: Nanos) -> f32 {
        if self.head == EMPTY {
            return fold.identity();
        }
        let newest = now.div_euclid(width).max(self.head);
        let oldest = (newest - BUCKETS as i64 + 1).max(self.head - BUCKETS as i64 + 1);
        let mut acc = fold.identity();
        let mut i = oldest;
        while i <= self.head {
            acc = fold.apply(acc, self.vals[i.rem_euclid(BUCKETS as i64) as usize]);
            i += 1;
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_what_is_inside_the_window_and_forgets_the_rest() {
        let mut r = Ring::default();
        // Range 800 ns: 8 buckets of 100 ns.
        for t in (0..800).step_by(100) {
            r.add(Fold::Sum, 100, t, 1.0);
        }
        assert_eq!(r.fold(Fold::Sum, 100, 799), 8.0);
        // 300 ns later the three oldest buckets fell out.
        assert_eq!(r.fold(Fold::Sum, 100, 1099), 5.0);
        // Long after, nothing is left.
        assert_eq!(r.fold(Fold::Sum, 100, 10_000), 0.0);
    }

    #[test]
    fn a_jump_forward_clears_the_skipped_buckets() {
        let mut r = Ring::default();
        r.add(Fold::Max, 100, 0, 9.0);
        r.add(Fold::Max, 100, 1_000, 2.0);
        assert_eq!(r.fold(Fold::Max, 100, 1_000), 2.0);
    }

    #[test]
    fn late_samples_older_than_the_ring_are_dropped() {
        let mut r = Ring::default();
        r.add(Fold::Sum, 100, 1_000, 1.0);
        r.add(Fold::Sum, 100, 0, 50.0);
        assert_eq!(r.fold(Fold::Sum, 100, 1_000), 1.0);
        r.add(Fold::Sum, 100, 950, 2.0);
        assert_eq!(r.fold(Fold::Sum, 100, 1_000), 3.0);
    }

    #[test]
    fn min_of_an_empty_ring_is_infinite() {
        let r = Ring::default();
        assert_eq!(r.fold(Fold::Min, 100, 0), f32::INFINITY);
    }
}
