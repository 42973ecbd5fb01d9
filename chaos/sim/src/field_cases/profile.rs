//! Rates over a case's time, kept as running integrals on a grid.
//!
//! Every counter a sensor reads is the integral of some rate (bytes of a
//! job's collectives, µs of pause, marked packets) between two of its polls,
//! and sensors poll at cadences of their own (100 ms to 10 s, each at its own
//! phase). Keeping each rate as a running integral makes any poll's increase
//! one subtraction, so every sensor that reads the same rate (a NIC and the
//! switch port at the other end of its cable) sees the same traffic, however
//! their polls fall. A job's steps need 10 ms cells (a 0.4 s step's
//! collective spans tens of them); slow rates (background drift, incidents)
//! take coarser cells, which keeps a case's memory, and the time to fault
//! it in, small.

/// The cell of profiles that follow a job's steps, seconds.
pub(super) const FINE: f64 = 0.01;

/// A rate's cells, being filled.
#[derive(Debug, Clone)]
pub(super) struct Cells {
    dt: f64,
    rate: Vec<f64>,
}

impl Cells {
    /// Zero over `[0, duration]` in cells of `dt` (one cell more, so a poll
    /// a little past the end still reads a defined value).
    pub(super) fn new(duration: f64, dt: f64) -> Cells {
        Cells { dt, rate: vec![0.0; (duration / dt).ceil() as usize + 2] }
    }

    /// Adds `rate` over `[t0, t1)`; partial cells get their share, so a
    /// segment shorter than a cell still carries its whole integral.
    pub(super) fn add(&mut self, t0: f64, t1: f64, rate: f64) {
        let dt = self.dt;
        let end = self.rate.len() as f64 * dt;
        let (t0, t1) = (t0.max(0.0), t1.min(end));
        if t1 <= t0 || rate == 0.0 {
            return;
        }
        let (first, last) = ((t0 / dt) as usize, ((t1 / dt) as usize).min(self.rate.len() - 1));
        for i in first..=last {
            let (c0, c1) = (i as f64 * dt, (i + 1) as f64 * dt);
            let overlap = t1.min(c1) - t0.max(c0);
            if overlap > 0.0 {
                self.rate[i] += rate * overlap / dt;
            }
        }
    }

    /// Sets every cell from `f` at the cell's middle (for smooth rates).
    pub(super) fn fill(&mut self, f: impl Fn(f64) -> f64) {
        let dt = self.dt;
        for (i, r) in self.rate.iter_mut().enumerate() {
            *r = f((i as f64 + 0.5) * dt);
        }
    }

    /// The running integral, in place: cell `i` then holds the integral up
    /// to its end.
    pub(super) fn integrate(mut self) -> Profile {
        let mut acc = 0.0;
        for r in &mut self.rate {
            acc += *r * self.dt;
            *r = acc;
        }
        Profile { dt: self.dt, end: self.rate }
    }
}

/// A rate, as its running integral.
#[derive(Debug, Clone)]
pub(super) struct Profile {
    dt: f64,
    /// The integral up to the end of each cell.
    end: Vec<f64>,
}

impl Profile {
    /// A rate that is `value` everywhere.
    pub(super) fn constant(duration: f64, value: f64) -> Profile {
        let mut cells = Cells::new(duration, duration.max(1.0));
        cells.fill(|_| value);
        cells.integrate()
    }

    /// The cell that holds `t`, and the integral before it.
    fn cell(&self, t: f64) -> (usize, f64) {
        let i = ((t.max(0.0) / self.dt) as usize).min(self.end.len() - 1);
        (i, if i == 0 { 0.0 } else { self.end[i - 1] })
    }

    /// The integral from 0 to `t`, linear within a cell.
    pub(super) fn cum(&self, t: f64) -> f64 {
        let (i, before) = self.cell(t);
        let frac = (t.max(0.0) / self.dt - i as f64).min(1.0);
        before + (self.end[i] - before) * frac
    }

    /// The integral over `[a, b]` (0 when `b <= a`).
    pub(super) fn integral(&self, a: f64, b: f64) -> f64 {
        if b <= a {
            0.0
        } else {
            self.cum(b) - self.cum(a)
        }
    }

    /// The mean rate over `[a, b]`, or the rate at `a` for an empty span.
    pub(super) fn mean(&self, a: f64, b: f64) -> f64 {
        if b - a < 1e-9 {
            self.at(a)
        } else {
            self.integral(a, b) / (b - a)
        }
    }

    /// The rate in the cell that holds `t`.
    pub(super) fn at(&self, t: f64) -> f64 {
        let (i, before) = self.cell(t);
        (self.end[i] - before) / self.dt
    }

    /// The largest cell rate over `[a, b]` (a queue's high-water mark follows
    /// the worst moment of a window, not its mean).
    pub(super) fn max(&self, a: f64, b: f64) -> f64 {
        let (i, mut before) = self.cell(a);
        let (j, _) = self.cell(b);
        let mut top: f64 = 0.0;
        for k in i..=j.max(i) {
            top = top.max((self.end[k] - before) / self.dt);
            before = self.end[k];
        }
        top
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_segment_keeps_its_whole_integral() {
        let mut cells = Cells::new(1.0, FINE);
        cells.add(0.123, 0.1245, 1000.0);
        let p = cells.integrate();
        assert!((p.integral(0.0, 1.0) - 1.5).abs() < 1e-9);
        assert!((p.integral(0.12, 0.13) - 1.5).abs() < 1e-9);
        assert!((p.at(0.124) - 150.0).abs() < 1e-9);
        assert!((p.max(0.0, 1.0) - 150.0).abs() < 1e-9);
        assert_eq!(p.integral(0.5, 0.4), 0.0);
    }

    #[test]
    fn integrals_interpolate_within_cells() {
        let mut cells = Cells::new(2.0, 0.5);
        cells.fill(|_| 3.0);
        let p = cells.integrate();
        assert!((p.integral(0.105, 1.305) - 3.6).abs() < 1e-9);
        assert!((p.mean(0.3, 0.9) - 3.0).abs() < 1e-9);
        assert!((p.cum(50.0) - p.cum(3.0)).abs() < 1e-9, "past the last cell the integral stays put");
        assert!((Profile::constant(100.0, 2.0).integral(10.0, 20.5) - 21.0).abs() < 1e-9);
    }
}
