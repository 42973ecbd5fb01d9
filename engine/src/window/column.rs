//! One window's accumulators for every subject of a rule, stored as a
//! column (one `Vec` per window) so each accumulator is exactly as large as
//! its function needs.

use super::ring::{Fold, Ring, BUCKETS};
use super::spec::{WindowFn, WindowSpec};
use crate::time::{Nanos, SECOND};

/// What one sample contributes to a window, prepared once per sample by the
/// engine and shared by every window the sample feeds.
#[derive(Debug, Clone, Copy)]
pub struct Observation {
    /// Sample time.
    pub ts: Nanos,
    /// Counters: the increase since the previous reading. Gauges: the change
    /// since the previous reading. Events: 1. `NaN` for a series' first sample.
    pub step: f64,
    /// Counters: per-second rate since the previous reading (`NaN` first).
    /// Gauges: the value. Events: the payload.
    pub level: f64,
    /// The value as read (counters: raw reading; events: the payload).
    pub value: f64,
}

#[derive(Debug, Clone)]
enum Data {
    /// `increase`, `rate`, `changes`, `count_events`.
    Sum(Vec<Ring>),
    Min(Vec<Ring>),
    Max(Vec<Ring>),
    Avg {
        sums: Vec<Ring>,
        counts: Vec<Ring>,
    },
    Last(Vec<f64>),
    /// (value, time of last update).
    Ewma(Vec<(f64, Nanos)>),
    /// Time of the last sample.
    Seen(Vec<Nanos>),
    /// `skew`: per subject, each of its series' ring of increases, by series id.
    PerSeries(Vec<Vec<(u32, Ring)>>),
}

/// The accumulators of one declared window, indexed by subject.
#[derive(Debug, Clone)]
pub struct Column {
    func: WindowFn,
    range: Nanos,
    width: Nanos,
    /// Bucket number (time / width) that the rings' `i32` buckets count
    /// from: the first sample's, moved up when samples run 2^30 buckets
    /// past it (years for windows of seconds). `i64::MIN` until then.
    base: i64,
    /// The last bucket written, as `[from, to)` in time and its ring bucket:
    /// the samples of one poll share a timestamp, so most writes find their
    /// bucket here instead of by a 64-bit division. Empty (`from > to`)
    /// until the first write.
    written: WrittenBucket,
    data: Data,
}

#[derive(Debug, Clone, Copy)]
struct WrittenBucket {
    from: Nanos,
    to: Nanos,
    rel: i32,
}

impl WrittenBucket {
    const NONE: WrittenBucket = WrittenBucket { from: Nanos::MAX, to: Nanos::MIN, rel: 0 };
}

/// How far past the base a bucket may run before the rings are rebased.
const REBASE_AT: i64 = 1 << 30;

impl Column {
    /// An empty column for `spec`.
    pub fn new(spec: &WindowSpec) -> Column {
        let data = match spec.func {
            WindowFn::Increase | WindowFn::Rate | WindowFn::Changes | WindowFn::CountEvents => Data::Sum(Vec::new()),
            WindowFn::MinOver => Data::Min(Vec::new()),
            WindowFn::MaxOver => Data::Max(Vec::new()),
            WindowFn::AvgOver => Data::Avg { sums: Vec::new(), counts: Vec::new() },
            WindowFn::Last => Data::Last(Vec::new()),
            WindowFn::Ewma => Data::Ewma(Vec::new()),
            WindowFn::Absent => Data::Seen(Vec::new()),
            WindowFn::Skew => Data::PerSeries(Vec::new()),
        };
        Column {
            func: spec.func,
            range: spec.range,
            width: (spec.range / BUCKETS as i64).max(1),
            base: i64::MIN,
            written: WrittenBucket::NONE,
            data,
        }
    }

    /// Makes room for subjects `0..n`, growing by a quarter rather than
    /// doubling: columns are most of the engine's memory.
    pub fn grow(&mut self, n: usize) {
        fn resize<T: Clone>(v: &mut Vec<T>, n: usize, fill: T) {
            if n > v.capacity() {
                v.reserve_exact((n - v.len()).max(v.capacity() / 4 + 16));
            }
            v.resize(n, fill);
        }
        match &mut self.data {
            Data::Sum(v) | Data::Min(v) | Data::Max(v) => resize(v, n, Ring::default()),
            Data::Avg { sums, counts } => {
                resize(sums, n, Ring::default());
                resize(counts, n, Ring::default());
            }
            Data::Last(v) => resize(v, n, f64::NAN),
            Data::Ewma(v) => resize(v, n, (f64::NAN, 0)),
            Data::Seen(v) => resize(v, n, Nanos::MIN),
            Data::PerSeries(v) => resize(v, n, Vec::new()),
        }
    }

    /// Empties the window of `subject`: after its clock stepped back, what
    /// it holds is stamped in a future its new samples will not reach for
    /// as long as the step, and would hide them.
    pub fn reset(&mut self, subject: usize) {
        match &mut self.data {
            Data::Sum(v) | Data::Min(v) | Data::Max(v) => v[subject] = Ring::default(),
            Data::Avg { sums, counts } => {
                sums[subject] = Ring::default();
                counts[subject] = Ring::default();
            }
            Data::Last(v) => v[subject] = f64::NAN,
            Data::Ewma(v) => v[subject] = (f64::NAN, 0),
            Data::Seen(v) => v[subject] = Nanos::MIN,
            Data::PerSeries(v) => v[subject].clear(),
        }
    }

    /// Gives back spare capacity.
    pub fn shrink_to_fit(&mut self) {
        match &mut self.data {
            Data::Sum(v) | Data::Min(v) | Data::Max(v) => v.shrink_to_fit(),
            Data::Avg { sums, counts } => {
                sums.shrink_to_fit();
                counts.shrink_to_fit();
            }
            Data::Last(v) => v.shrink_to_fit(),
            Data::Ewma(v) => v.shrink_to_fit(),
            Data::Seen(v) => v.shrink_to_fit(),
            Data::PerSeries(v) => v.shrink_to_fit(),
        }
    }

    /// Subjects the column has room for without growing.
    pub fn capacity(&self) -> usize {
        match &self.data {
            Data::Sum(v) | Data::Min(v) | Data::Max(v) => v.capacity(),
            Data::Avg { sums, .. } => sums.capacity(),
            Data::Last(v) => v.capacity(),
            Data::Ewma(v) => v.capacity(),
            Data::Seen(v) => v.capacity(),
            Data::PerSeries(v) => v.capacity(),
        }
    }

    /// Bytes of state per subject (for the memory budget).
    pub fn bytes_per_subject(&self) -> usize {
        match &self.data {
            Data::Sum(_) | Data::Min(_) | Data::Max(_) => std::mem::size_of::<Ring>(),
            Data::Avg { .. } => 2 * std::mem::size_of::<Ring>(),
            Data::Last(_) => 8,
            Data::Ewma(_) => 16,
            Data::Seen(_) => 8,
            // The list itself; each series of a subject adds a ring and its id.
            Data::PerSeries(_) => std::mem::size_of::<Vec<(u32, Ring)>>(),
        }
    }

    /// The ring bucket of a sample at `ts`, rebasing the rings when it runs
    /// too far past the base; `None` for a sample so far before the base
    /// that it cannot be inside any window.
    #[inline]
    fn bucket_for_write(&mut self, ts: Nanos) -> Option<i32> {
        if self.written.from <= ts && ts < self.written.to {
            return Some(self.written.rel);
        }
        let b = ts.div_euclid(self.width);
        if self.base == i64::MIN {
            self.base = b;
        }
        let mut rel = b - self.base;
        if rel >= REBASE_AT {
            // A multiple of BUCKETS, so each value stays in its slot.
            let delta = rel - rel.rem_euclid(BUCKETS as i64);
            self.rebase(delta);
            rel -= delta;
        }
        if rel <= -REBASE_AT {
            return None;
        }
        let from = b * self.width; // b = ts / width rounded down: no overflow
        self.written = WrittenBucket { from, to: from.saturating_add(self.width), rel: rel as i32 };
        Some(rel as i32)
    }

    #[cold]
    fn rebase(&mut self, delta: i64) {
        self.base += delta;
        // Deltas beyond i32 empty every ring, as they should: all of it is
        // older than any window.
        let delta = delta.min(i32::MAX as i64 - (i32::MAX as i64).rem_euclid(BUCKETS as i64)) as i32;
        let rings: &mut [Vec<Ring>] = match &mut self.data {
            Data::Sum(v) | Data::Min(v) | Data::Max(v) => std::slice::from_mut(v),
            Data::Avg { sums, counts } => {
                sums.iter_mut().chain(counts.iter_mut()).for_each(|r| r.rebase(delta));
                return;
            }
            Data::PerSeries(v) => {
                v.iter_mut().flatten().for_each(|(_, r)| r.rebase(delta));
                return;
            }
            _ => return,
        };
        rings.iter_mut().flatten().for_each(|r| r.rebase(delta));
    }

    /// The ring bucket of `now` for reading.
    #[inline]
    fn bucket_for_read(&self, now: Nanos) -> i32 {
        (now.div_euclid(self.width).saturating_sub(self.base)).clamp(i32::MIN as i64 + 1, i32::MAX as i64) as i32
    }

    /// Feeds one sample of series `series` of `subject` into the window.
    #[inline]
    pub fn observe(&mut self, subject: usize, series: u32, o: &Observation) {
        let uses_rings =
            matches!(self.data, Data::Sum(_) | Data::Min(_) | Data::Max(_) | Data::Avg { .. } | Data::PerSeries(_));
        let b = if uses_rings {
            match self.bucket_for_write(o.ts) {
                Some(b) => b,
                None => return,
            }
        } else {
            0
        };
        match &mut self.data {
            Data::Sum(rings) => {
                let x = match self.func {
                    WindowFn::Changes => (o.step.is_finite() && o.step != 0.0) as u8 as f32,
                    WindowFn::CountEvents => 1.0,
                    _ if o.step.is_finite() => o.step as f32,
                    _ => return,
                };
                rings[subject].add(Fold::Sum, b, x);
            }
            Data::Min(rings) if o.level.is_finite() => rings[subject].add(Fold::Min, b, o.level as f32),
            Data::Max(rings) if o.level.is_finite() => rings[subject].add(Fold::Max, b, o.level as f32),
            Data::Avg { sums, counts } if o.level.is_finite() => {
                sums[subject].add(Fold::Sum, b, o.level as f32);
                counts[subject].add(Fold::Sum, b, 1.0);
            }
            Data::Last(v) => v[subject] = o.value,
            Data::Ewma(v) if o.level.is_finite() => {
                let (value, last) = &mut v[subject];
                if value.is_nan() {
                    *value = o.level;
                } else {
                    let dt = (o.ts - *last).max(0) as f64;
                    let keep = 0.5f64.powf(dt / self.range.max(1) as f64);
                    *value = keep * *value + (1.0 - keep) * o.level;
                }
                *last = o.ts;
            }
            Data::Seen(v) => v[subject] = v[subject].max(o.ts),
            Data::PerSeries(v) if o.step.is_finite() => {
                let list = &mut v[subject];
                let at = match list.iter().position(|(id, _)| *id == series) {
                    Some(at) => at,
                    None => {
                        list.push((series, Ring::default()));
                        list.len() - 1
                    }
                };
                list[at].1.add(Fold::Sum, b, o.step as f32);
            }
            _ => {}
        }
    }

    /// The window's value for `subject` at `now`. Empty min/max/avg/last/ewma
    /// windows are `NaN`, so every comparison with them is false.
    #[inline]
    pub fn value(&self, subject: usize, now: Nanos) -> f64 {
        let b = self.bucket_for_read(now);
        match &self.data {
            Data::Sum(rings) => {
                let sum = rings[subject].fold(Fold::Sum, b) as f64;
                if self.func == WindowFn::Rate {
                    sum * SECOND as f64 / self.range as f64
                } else {
                    sum
                }
            }
            Data::Min(rings) => finite_or_nan(rings[subject].fold(Fold::Min, b)),
            Data::Max(rings) => finite_or_nan(rings[subject].fold(Fold::Max, b)),
            Data::Avg { sums, counts } => {
                let n = counts[subject].fold(Fold::Sum, b);
                if n == 0.0 {
                    f64::NAN
                } else {
                    sums[subject].fold(Fold::Sum, b) as f64 / n as f64
                }
            }
            Data::Last(v) => v[subject],
            Data::Ewma(v) => v[subject].0,
            Data::Seen(v) => {
                let seen = v[subject];
                (seen == Nanos::MIN || now.saturating_sub(seen) > self.range) as u8 as f64
            }
            Data::PerSeries(v) => skew(v[subject].iter().map(|(_, r)| r.fold(Fold::Sum, b) as f64)),
        }
    }

    /// The function this column computes.
    pub fn func(&self) -> WindowFn {
        self.func
    }
}

/// The largest of `increases` over the mean of those above zero; `NaN` with fewer than two.
fn skew(increases: impl Iterator<Item = f64>) -> f64 {
    let (mut n, mut sum, mut max) = (0u32, 0.0, 0.0f64);
    for x in increases.filter(|x| *x > 0.0) {
        (n, sum, max) = (n + 1, sum + x, max.max(x));
    }
    if n < 2 {
        return f64::NAN;
    }
    max / (sum / f64::from(n))
}

fn finite_or_nan(x: f32) -> f64 {
    if x.is_finite() {
        x as f64
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn skew_is_the_busiest_series_over_the_mean_of_those_that_moved() {
        let mut c = Column::new(&spec(WindowFn::Skew, 1000 * MS));
        c.grow(2);
        // Four uplinks of subject 0: 2, 1, 1 and 0 flows' worth every 100 ms.
        for i in 1..=10 {
            for (series, step) in [(7, 2.0), (8, 1.0), (9, 1.0), (10, 0.0)] {
                c.observe(0, series, &counter_obs(i * 100 * MS, step));
            }
            c.observe(1, 11, &counter_obs(i * 100 * MS, 5.0));
        }
        assert!((c.value(0, 1000 * MS) - 1.5).abs() < 1e-6, "{}", c.value(0, 1000 * MS));
        assert!(c.value(1, 1000 * MS).is_nan(), "one series is no group");
        assert!(c.value(0, 10_000 * MS).is_nan(), "nothing moved in the window");
        c.reset(0);
        assert!(c.value(0, 1000 * MS).is_nan());
    }

    fn spec(func: WindowFn, range: Nanos) -> WindowSpec {
        WindowSpec { func, metric: "m".into(), range }
    }

    fn counter_obs(ts: Nanos, step: f64) -> Observation {
        Observation { ts, step, level: step, value: 0.0 }
    }

    #[test]
    fn rate_is_increase_per_second_of_range() {
        let mut c = Column::new(&spec(WindowFn::Rate, 1000 * MS));
        c.grow(1);
        for i in 1..=10 {
            c.observe(0, 0, &counter_obs(i * 100 * MS, 50.0));
        }
        // +50 every 100 ms is 500/s. The window covers the newest 7/8 to 8/8
        // of its range, so the estimate is within 1/8 below the truth: the
        // sample at 100 ms sits in the bucket that just expired.
        let rate = c.value(0, 1000 * MS);
        assert!((437.5..=500.0).contains(&rate), "{rate}");
        assert_eq!(rate, 450.0);
    }

    #[test]
    fn samples_far_past_the_base_rebase_the_rings_and_keep_summing() {
        // Range 8 ns: buckets of 1 ns, so the rebase point is 2^30 ns away.
        let mut c = Column::new(&spec(WindowFn::Increase, 8));
        c.grow(2);
        c.observe(0, 0, &counter_obs(0, 5.0));
        c.observe(1, 0, &counter_obs(3, 7.0));
        let far = (1 << 30) + 5;
        c.observe(0, 0, &counter_obs(far, 1.0));
        c.observe(0, 0, &counter_obs(far + 1, 2.0));
        assert_eq!(c.value(0, far + 1), 3.0, "the old sample is outside the window; the new ones sum");
        assert_eq!(c.value(1, far + 1), 0.0, "a ring left behind by the rebase reads empty");
        c.observe(1, 0, &counter_obs(far + 2, 4.0));
        assert_eq!(c.value(1, far + 2), 4.0);
        // A sample far before the base cannot be inside any window.
        c.observe(1, 0, &counter_obs(-(1 << 31), 100.0));
        assert_eq!(c.value(1, far + 2), 4.0);
    }

    #[test]
    fn each_sample_lands_in_its_own_bucket_whatever_was_written_last() {
        // Buckets of 100 ms. Subject 0's samples go back and forth between
        // buckets (a late sample of an earlier poll), subject 1's share one
        // timestamp: the bucket remembered from the last write must only
        // ever be the sample's own.
        let mut c = Column::new(&spec(WindowFn::MaxOver, 800 * MS));
        c.grow(2);
        let at = |ms: i64, level: f64| Observation { ts: ms * MS, step: 0.0, level, value: level };
        c.observe(0, 0, &at(150, 1.0));
        c.observe(1, 0, &at(150, 2.0));
        c.observe(0, 0, &at(250, 3.0));
        c.observe(1, 0, &at(199, 9.0)); // still bucket 1, after bucket 2 was written
        c.observe(0, 0, &at(100, 4.0)); // bucket 1's first instant
        c.observe(0, 0, &at(299, 5.0)); // bucket 2's last

        // At 850 ms the window holds buckets 1..=8: everything.
        assert_eq!((c.value(0, 850 * MS), c.value(1, 850 * MS)), (5.0, 9.0));
        // At 950 ms bucket 1 has left it: only what went into bucket 2.
        assert_eq!(c.value(0, 950 * MS), 5.0);
        assert!(c.value(1, 950 * MS).is_nan(), "subject 1 had nothing after bucket 1");
        // Bucket 3 and later: subject 0's bucket-2 samples age out at 1050 ms.
        c.observe(0, 0, &at(1_000, 0.5));
        assert_eq!(c.value(0, 1_050 * MS), 0.5);
    }

    #[test]
    fn changes_counts_moving_samples_only() {
        let mut c = Column::new(&spec(WindowFn::Changes, 400 * MS));
        c.grow(1);
        c.observe(0, 0, &counter_obs(100 * MS, f64::NAN));
        c.observe(0, 0, &counter_obs(200 * MS, 0.0));
        c.observe(0, 0, &counter_obs(300 * MS, 7.0));
        c.observe(0, 0, &counter_obs(400 * MS, 3.0));
        assert_eq!(c.value(0, 400 * MS), 2.0);
    }

    #[test]
    fn absent_turns_true_after_the_range_without_samples() {
        let mut c = Column::new(&spec(WindowFn::Absent, 1000 * MS));
        c.grow(1);
        assert_eq!(c.value(0, 0), 1.0, "never seen is absent");
        c.observe(0, 0, &counter_obs(0, 1.0));
        assert_eq!(c.value(0, 900 * MS), 0.0);
        assert_eq!(c.value(0, 1100 * MS), 1.0);
    }

    #[test]
    fn ewma_moves_half_way_in_one_half_life() {
        let mut c = Column::new(&spec(WindowFn::Ewma, 1000 * MS));
        c.grow(1);
        let gauge = |ts, v| Observation { ts, step: 0.0, level: v, value: v };
        c.observe(0, 0, &gauge(0, 0.0));
        c.observe(0, 0, &gauge(1000 * MS, 10.0));
        assert!((c.value(0, 1000 * MS) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn empty_gauge_windows_are_nan_so_comparisons_fail() {
        let mut c = Column::new(&spec(WindowFn::MaxOver, 1000 * MS));
        c.grow(1);
        let v = c.value(0, 0);
        assert!(v.is_nan());
        assert_eq!(v.partial_cmp(&1.0), None, "NaN compares with nothing");
    }
}
