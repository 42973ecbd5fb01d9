//! Writing a case: series registered by the sensors that emit them,
//! declared in the recording the first time they get a sample (as the
//! daemon's recorder declares them), and the clocks the sensors poll by.

use std::collections::HashMap;
use std::io;

use engine::recording::Writer;

use super::state::World;
use engine::{CounterSpec, Labels, Nanos, SampleKind, SeriesSpec, Value, SECOND};

/// When every case starts: 1,700,000,000 s after the epoch.
pub(super) const START: Nanos = 1_700_000_000 * SECOND;

/// The instant `t` seconds after the start (`t` is never negative; adding
/// a half and truncating rounds it without a call into libm).
pub(super) fn ns(t: f64) -> Nanos {
    START + (t.max(0.0) * 1e9 + 0.5) as Nanos
}

/// The recording being written.
pub(super) struct Out<'a> {
    w: Writer<&'a mut Vec<u8>>,
    specs: Vec<SeriesSpec>,
    declared: Vec<bool>,
    by_key: HashMap<String, u32>,
    /// Samples written.
    pub samples: usize,
}

impl<'a> Out<'a> {
    /// A recording written to `buf`.
    pub(super) fn new(buf: &'a mut Vec<u8>) -> Out<'a> {
        Out { w: Writer::new(buf), specs: Vec::new(), declared: Vec::new(), by_key: HashMap::new(), samples: 0 }
    }

    /// The id of a new series `metric{labels}` of `kind`: each sensor
    /// registers its own series once, so no two registrations collide.
    pub(super) fn series(&mut self, metric: &str, labels: &[(&str, &str)], kind: SampleKind) -> u32 {
        let id = self.specs.len() as u32;
        self.specs.push(SeriesSpec {
            metric: metric.to_string(),
            labels: Labels::from_pairs(labels.iter().copied()),
            kind,
        });
        self.declared.push(false);
        id
    }

    /// The id of `metric{labels}` of `kind`, registered at its first use (an
    /// event series that several events may share).
    pub(super) fn shared(&mut self, metric: &str, labels: &[(&str, &str)], kind: SampleKind) -> u32 {
        let key = format!("{metric}{labels:?}");
        if let Some(&id) = self.by_key.get(&key) {
            return id;
        }
        let id = self.series(metric, labels, kind);
        self.by_key.insert(key, id);
        id
    }

    /// A counter series.
    pub(super) fn counter(&mut self, metric: &str, labels: &[(&str, &str)], spec: CounterSpec) -> u32 {
        self.series(metric, labels, SampleKind::Counter(spec))
    }

    /// A gauge series.
    pub(super) fn gauge(&mut self, metric: &str, labels: &[(&str, &str)]) -> u32 {
        self.series(metric, labels, SampleKind::Gauge)
    }

    /// A sample of `id` at `t` seconds, its series declared first if new.
    pub(super) fn emit(&mut self, id: u32, t: f64, value: Value) -> io::Result<()> {
        let i = id as usize;
        if !self.declared[i] {
            self.w.declare(id, &self.specs[i])?;
            self.declared[i] = true;
        }
        self.samples += 1;
        self.w.write_raw_sample(id, ns(t), value)
    }

    /// A counter's reading.
    pub(super) fn count(&mut self, id: u32, t: f64, v: u64) -> io::Result<()> {
        self.emit(id, t, Value::Count(v))
    }

    /// A gauge's or an event's reading.
    pub(super) fn real(&mut self, id: u32, t: f64, v: f64) -> io::Result<()> {
        self.emit(id, t, Value::Real(v))
    }
}

/// A sensor's poll clock: every `interval` from `phase`, each poll a few ms
/// late (a daemon's timer and its read take time).
#[derive(Debug, Clone)]
pub(super) struct Ticker {
    phase: f64,
    interval: f64,
    k: u64,
    late: f64,
    lateness: f64,
    rng: fastrand::Rng,
}

impl Ticker {
    /// A clock of `interval` seconds starting at `phase`, late by up to
    /// `lateness` seconds (kept below a tenth of the interval, so polls stay
    /// in order).
    pub(super) fn new(interval: f64, phase: f64, lateness: f64, rng: fastrand::Rng) -> Ticker {
        let mut t = Ticker { phase, interval, k: 0, late: 0.0, lateness: lateness.min(interval / 10.0), rng };
        t.late = t.rng.f64() * t.lateness;
        t
    }

    /// The next poll's time.
    pub(super) fn now(&self) -> f64 {
        self.phase + self.k as f64 * self.interval + self.late
    }

    /// Moves to the next poll.
    pub(super) fn advance(&mut self) {
        self.k += 1;
        self.late = self.rng.f64() * self.lateness;
    }
}

/// A sensor (or an event stream) of the recording: polled in time order
/// with every other.
pub(super) trait Source {
    /// When it next writes, seconds after the start (`None`: never again).
    fn next(&self) -> Option<f64>;
    /// Writes what it reads at that time, and moves on.
    fn poll(&mut self, world: &World, out: &mut Out) -> io::Result<()>;
}
