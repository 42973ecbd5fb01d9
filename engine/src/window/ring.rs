//! A fixed ring of time buckets.

/// Buckets per ranged window. Eight keeps a window's state at 36 bytes and
/// its edge within 1/8 of its range.
pub const BUCKETS: usize = 8;

const EMPTY: i32 = i32::MIN;

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
///
/// Bucket numbers are `i32`s relative to a base the owning column keeps
/// (see `Column`), which keeps a ring at 36 bytes.
#[derive(Debug, Clone, Copy)]
pub struct Ring {
    head: i32,
    vals: [f32; BUCKETS],
}

impl Default for Ring {
    fn default() -> Ring {
        Ring { head: EMPTY, vals: [0.0; BUCKETS] }
    }
}

impl Ring {
    /// Folds `x` into bucket `b`. Samples older than the ring are dropped:
    /// they can no longer be inside any window.
    #[inline]
    pub fn add(&mut self, fold: Fold, b: i32, x: f32) {
        if self.head == EMPTY {
            self.vals = [fold.identity(); BUCKETS];
            self.head = b;
        } else if b > self.head {
            let steps = b as i64 - self.head as i64;
            if steps >= BUCKETS as i64 {
                // The usual case for a window of seconds fed once a second:
                // every bucket has aged out.
                self.vals = [fold.identity(); BUCKETS];
            } else {
                for k in 1..=steps as i32 {
                    self.vals[slot(self.head + k)] = fold.identity();
                }
            }
            self.head = b;
        } else if b as i64 <= self.head as i64 - BUCKETS as i64 {
            return;
        }
        let v = &mut self.vals[slot(b)];
        *v = fold.apply(*v, x);
    }

    /// Folds the buckets still inside the window ending in bucket `now`.
    #[inline]
    pub fn fold(&self, fold: Fold, now: i32) -> f32 {
        if self.head == EMPTY {
            return fold.identity();
        }
        let newest = (now as i64).max(self.head as i64);
        let oldest = (newest - BUCKETS as i64 + 1).max(self.head as i64 - BUCKETS as i64 + 1);
        let mut acc = fold.identity();
        let mut i = oldest;
        while i <= self.head as i64 {
            acc = fold.apply(acc, self.vals[slot(i as i32)]);
            i += 1;
        }
        acc
    }

    /// Moves the ring's buckets `delta` (a multiple of [`BUCKETS`]) down,
    /// when the column's base moves up by as much. A ring whose newest
    /// bucket would fall off the bottom is emptied: it is far older than
    /// any window.
    pub fn rebase(&mut self, delta: i32) {
        debug_assert_eq!(delta % BUCKETS as i32, 0);
        if self.head != EMPTY {
            match self.head.checked_sub(delta) {
                Some(h) if h > EMPTY => self.head = h,
                _ => *self = Ring::default(),
            }
        }
    }
}

#[inline]
fn slot(b: i32) -> usize {
    b.rem_euclid(BUCKETS as i32) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_what_is_inside_the_window_and_forgets_the_rest() {
        let mut r = Ring::default();
        // Buckets 0..8 hold one each.
        for t in (0..800).step_by(100) {
            r.add(Fold::Sum, t / 100, 1.0);
        }
        assert_eq!(r.fold(Fold::Sum, 7), 8.0);
        // 300 ns later the three oldest buckets fell out.
        assert_eq!(r.fold(Fold::Sum, 10), 5.0);
        // Long after, nothing is left.
        assert_eq!(r.fold(Fold::Sum, 100), 0.0);
    }

    #[test]
    fn a_jump_forward_clears_the_skipped_buckets() {
        let mut r = Ring::default();
        r.add(Fold::Max, 0, 9.0);
        r.add(Fold::Max, 10, 2.0);
        assert_eq!(r.fold(Fold::Max, 10), 2.0);
    }

    #[test]
    fn late_samples_older_than_the_ring_are_dropped() {
        let mut r = Ring::default();
        r.add(Fold::Sum, 10, 1.0);
        r.add(Fold::Sum, 0, 50.0);
        assert_eq!(r.fold(Fold::Sum, 10), 1.0);
        r.add(Fold::Sum, 9, 2.0);
        assert_eq!(r.fold(Fold::Sum, 10), 3.0);
    }

    #[test]
    fn rebasing_keeps_the_values_in_their_buckets() {
        let mut r = Ring::default();
        for b in 100..108 {
            r.add(Fold::Sum, b, b as f32);
        }
        let before = r.fold(Fold::Sum, 107);
        r.rebase(96);
        assert_eq!(r.fold(Fold::Sum, 11), before);
        r.add(Fold::Sum, 12, 1000.0);
        assert_eq!(r.fold(Fold::Sum, 12), before - 100.0 + 1000.0, "bucket 4 (was 100) expired");
        let mut old = Ring::default();
        old.add(Fold::Sum, i32::MIN + 5, 1.0);
        old.rebase(8);
        assert_eq!(old.fold(Fold::Sum, 0), 0.0, "fell off the bottom: emptied");
    }

    #[test]
    fn min_of_an_empty_ring_is_infinite() {
        let r = Ring::default();
        assert_eq!(r.fold(Fold::Min, 0), f32::INFINITY);
    }
}
