//! What the evaluator tests share: loading rule sources, a rig that
//! registers series and steps an [`Evaluator`] through time, and readers for
//! the events it returns.

// Each helper is used by some tests only.
#![allow(dead_code)]

use engine::series::SensorId;
use engine::store::StoreError;
use engine::Sample;
use engine::{
    rule, CounterSpec, EngineEvent, Evaluator, Helpers, Labels, Nanos, Proposal, RuleSet, SampleKind, SeriesId,
    SeriesSpec, SeriesTable, State, Store, Value, SECOND,
};

/// An arbitrary wall-clock origin (November 2023), so timestamps look like
/// the ones sensors send and nothing depends on time starting at zero.
pub const T0: Nanos = 1_700_000_000 * SECOND;

/// `s` seconds after [`T0`].
pub fn secs(s: i64) -> Nanos {
    T0 + s * SECOND
}

/// Rule sources as `(path, text)` pairs for [`rule::load_sources`].
pub fn sources(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect()
}

/// Loads rule sources that must compile; panics with every loader message.
pub fn load(files: &[(&str, &str)], helpers: Helpers) -> RuleSet {
    rule::load_sources(&sources(files), helpers).unwrap_or_else(|errors| {
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        panic!("rules did not load:\n{}", text.join("\n"))
    })
}

/// The loader's messages for one file that must not compile.
pub fn load_errors(path: &str, source: &str) -> Vec<String> {
    match rule::load_sources(&sources(&[(path, source)]), Helpers::default()) {
        Ok(set) => panic!("{path} loaded, but it should be rejected: {set:?}"),
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    }
}

/// A series table, one sensor registering into it, and an evaluator.
pub struct Rig {
    pub series: SeriesTable,
    pub sensor: SensorId,
    pub ev: Evaluator,
}

impl Rig {
    /// An evaluator over `files` with a plain series table and no store.
    pub fn new(files: &[(&str, &str)]) -> Rig {
        let series = SeriesTable::default();
        let rules = load(files, Helpers::default());
        Rig::with(series, rules, None).expect("no store, no store error")
    }

    /// An evaluator over `rules` and `series`, restoring from `store`.
    pub fn with(series: SeriesTable, rules: RuleSet, store: Option<Store>) -> Result<Rig, StoreError> {
        let sensor = series.add_sensor("test", 1_000);
        let ev = Evaluator::new(series.clone(), rules, store)?;
        Ok(Rig { series, sensor, ev })
    }

    /// Registers a series of `kind` with device-local `labels`.
    pub fn series_of(&self, metric: &str, labels: &[(&str, &str)], kind: SampleKind) -> SeriesId {
        let spec = SeriesSpec { metric: metric.into(), labels: Labels::from_pairs(labels.iter().copied()), kind };
        self.series.register(self.sensor, &spec).expect("under the sensor's cap")
    }

    /// Registers a counter.
    pub fn counter(&self, metric: &str, labels: &[(&str, &str)], spec: CounterSpec) -> SeriesId {
        self.series_of(metric, labels, SampleKind::Counter(spec))
    }

    /// Ingests `samples` stamped `t`, evaluates at `t` and returns the events.
    pub fn step(&mut self, t: Nanos, samples: &[(SeriesId, u64)]) -> Vec<EngineEvent> {
        let batch: Vec<Sample> =
            samples.iter().map(|(id, v)| Sample { series: *id, ts: t, value: Value::Count(*v) }).collect();
        self.ev.ingest(&batch);
        let mut events = Vec::new();
        self.ev.evaluate(t, &mut events);
        events
    }

    /// The state of `rule` for the subject with these labels.
    pub fn state(&self, rule: &str, subject: &[(&str, &str)]) -> Option<State> {
        self.ev.state_of(rule, &Labels::from_pairs(subject.iter().copied()))
    }
}

/// The pause counter of the storm rule ([`storm`]).
pub const PAUSE: &str = "ethtool_tx_prio_pause_duration_us";

/// Pause microseconds per second of a storming port (90 % paused).
pub const STORMING: u64 = 900_000;
/// Between the clear and fire thresholds (30 % paused).
pub const BETWEEN: u64 = 300_000;
/// A healthy port (5 % paused).
pub const HEALTHY: u64 = 50_000;

/// The pause counter of priority 3 on `node`'s `netdev`, read from 0.
pub fn pause_counter(rig: &Rig, node: &str, netdev: &str) -> Counter {
    let id = rig.counter(PAUSE, &[("node", node), ("netdev", netdev), ("prio", "3")], CounterSpec::U64);
    Counter { id, reading: 0 }
}

/// A counter whose reading the test advances, the way hardware counts.
#[derive(Debug, Clone, Copy)]
pub struct Counter {
    pub id: SeriesId,
    pub reading: u64,
}

impl Counter {
    /// The counter after `delta` more events, as a sample `(id, reading)`.
    pub fn add(&mut self, delta: u64) -> (SeriesId, u64) {
        self.reading += delta;
        (self.id, self.reading)
    }
}

/// The proposals among `events`.
pub fn proposals(events: &[EngineEvent]) -> Vec<&Proposal> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Proposal(p) => Some(p),
            _ => None,
        })
        .collect()
}

/// The proposals of `rule` among `events`.
pub fn proposals_of<'a>(events: &'a [EngineEvent], rule: &str) -> Vec<&'a Proposal> {
    proposals(events).into_iter().filter(|p| p.rule == rule).collect()
}

/// The `(from, to)` transitions among `events`.
pub fn transitions(events: &[EngineEvent]) -> Vec<(State, State)> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Transition { from, to, .. } => Some((*from, *to)),
            _ => None,
        })
        .collect()
}

/// The value of window `name` recorded in a proposal.
pub fn window(p: &Proposal, name: &str) -> f64 {
    p.values.iter().find(|(n, _)| n == name).map(|(_, v)| *v).unwrap_or_else(|| panic!("no window {name}"))
}

/// A PFC storm source: the NIC pauses its switch port most of the time
/// (`tx_prio3_pause_duration` grows by ~10^6 µs per second). Fires above
/// 50 % paused, clears below 10 %: between the two the instance keeps its
/// state. `WINDOW` is the window function over the pause counter and
/// `TIMING` the timing fields.
pub const STORM: &str = r#"
fn fire(w) { w.paused > 500000.0 }
fn clear(w) { w.paused < 100000.0 }
#{
    name: "pfc-storm",
    select: ["ethtool_tx_prio_pause_duration_us{prio=\"3\"}"],
    group_by: ["node", "netdev"],
    windows: #{ paused: WINDOW("ethtool_tx_prio_pause_duration_us", "RANGE") },
    TIMING
    actions: [ #{ action: "pfcwd.escalate", target: #{ node: "{node}", netdev: "{netdev}", prio: "3" } } ],
}
"#;

/// The storm rule with `rate(…, "1s")`: with one poll a second the window
/// holds exactly the last poll's increase.
pub fn storm(timing: &str) -> String {
    storm_with("rate", "1s", timing)
}

pub fn storm_with(func: &str, range: &str, timing: &str) -> String {
    STORM.replace("WINDOW", func).replace("RANGE", range).replace("TIMING", timing)
}
