//! Series and samples: the data model every sensor speaks.
//!
//! A series is a metric name plus labels. Sensors register a series once
//! ([`SeriesTable::register`]) and get a small [`SeriesId`]; after that a
//! [`Sample`] is an id, a timestamp and a value, and nothing on the hot path
//! touches a string. Registration adds the topology labels (rail, plane,
//! switch, rack, …) so every rule sees them.
//!
//! Each sensor has a cap on how many series it may register: a sensor that
//! explodes in cardinality (a label carrying a sequence number, say) gets a
//! clear error instead of eating the daemon's memory.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use serde::{Deserialize, Serialize};

pub use crate::counter::Value;
use crate::counter::{CounterSpec, RateBound};
use crate::labels::{Interner, LabelSet, Labels, Sym};
use crate::time::Nanos;
use crate::topology::Topology;

/// A registered series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeriesId(pub u32);

/// The kind of a series, fixed when it is registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SampleKind {
    /// Cumulative count; windows see its increases, never its raw value.
    Counter(CounterSpec),
    /// A level that goes up and down (temperature, queue occupancy, step time).
    Gauge,
    /// A discrete occurrence (link down, XID 79, watchdog storm); the value
    /// is a payload such as the XID code.
    Event,
}

/// One reading of a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Which series.
    pub series: SeriesId,
    /// When it was read, in nanoseconds since the epoch.
    pub ts: Nanos,
    /// What was read.
    pub value: Value,
}

/// What a sensor declares about a series when it registers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesSpec {
    /// Metric name, e.g. `ethtool_rx_prio_pause_duration_us`.
    pub metric: String,
    /// Device-local labels, e.g. `netdev`, `prio`. Topology labels are added.
    pub labels: Labels,
    /// Counter (with width), gauge or event.
    #[serde(flatten)]
    pub kind: SampleKind,
}

/// A sensor's registration handle, carrying its series cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SensorId(pub u16);

/// A series could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SeriesError {
    /// The sensor already has as many series as it may.
    #[error("sensor {sensor:?} reached its cap of {cap} series; refusing {metric}{labels} (raise `max_series` for this sensor or drop the high-cardinality label)")]
    Cardinality {
        /// The sensor's name.
        sensor: String,
        /// Its cap.
        cap: usize,
        /// The metric that was refused.
        metric: String,
        /// Its labels.
        labels: Labels,
    },
    /// A name or value is longer than a series may carry, or there are too
    /// many labels: a sensor gone wrong (a label holding a whole page, an
    /// unbounded id) must not take the daemon's memory.
    #[error("series {metric:.64}…: {what} is {len} bytes long; at most {max} are accepted")]
    TooLarge {
        /// The metric (its first 64 bytes).
        metric: String,
        /// What is too large: `metric name`, `label name "…"`, `label "…"`, `label count`.
        what: String,
        /// Its length (count, for the label count).
        len: usize,
        /// The bound.
        max: usize,
    },
    /// The series exists already with another kind.
    #[error("series {metric}{labels} was registered as {existing:?}, now as {requested:?}")]
    KindConflict {
        /// The metric.
        metric: String,
        /// Its labels.
        labels: Labels,
        /// The kind it was registered with.
        existing: SampleKind,
        /// The kind asked for now.
        requested: SampleKind,
    },
}

/// The longest metric name a series may have, in bytes. Real ones are
/// under 100 (`ethtool_rx_prio_pause_duration_us`, DCGM's `DCGM_FI_…`).
pub const MAX_METRIC_LEN: usize = 256;
/// The longest label name.
pub const MAX_LABEL_NAME_LEN: usize = 64;
/// The longest label value. A netdev name is 15 bytes, a switch port name or
/// a job id tens; 256 leaves room for a Kubernetes pod name and stops a
/// label carrying a whole page.
pub const MAX_LABEL_VALUE_LEN: usize = 256;
/// The most labels a series may carry, topology labels included.
pub const MAX_LABELS: usize = 32;

/// Checks a series' names and values against the size bounds.
pub fn check_size(spec: &SeriesSpec) -> Result<(), SeriesError> {
    let too_large = |what: String, len: usize, max: usize| {
        let metric: String = spec.metric.chars().take(64).collect();
        Err(SeriesError::TooLarge { metric, what, len, max })
    };
    if spec.metric.len() > MAX_METRIC_LEN {
        return too_large("the metric name".into(), spec.metric.len(), MAX_METRIC_LEN);
    }
    if spec.labels.0.len() > MAX_LABELS {
        return too_large("the label count".into(), spec.labels.0.len(), MAX_LABELS);
    }
    for (name, value) in &spec.labels.0 {
        let short: String = name.chars().take(32).collect();
        if name.len() > MAX_LABEL_NAME_LEN {
            return too_large(format!("label name {short:?}…"), name.len(), MAX_LABEL_NAME_LEN);
        }
        if value.len() > MAX_LABEL_VALUE_LEN {
            return too_large(format!("the value of label {short:?}"), value.len(), MAX_LABEL_VALUE_LEN);
        }
    }
    Ok(())
}

impl SeriesSpec {
    /// The kind the series is registered with: a counter that declares no
    /// rate bound gets the one its metric name implies ([`RateBound::of_metric`]).
    pub fn registered_kind(&self) -> SampleKind {
        match self.kind {
            SampleKind::Counter(c) if c.bound == RateBound::Unknown => {
                SampleKind::Counter(c.bounded(RateBound::of_metric(&self.metric)))
            }
            kind => kind,
        }
    }
}

/// What the table keeps about one series.
#[derive(Debug, Clone)]
pub struct SeriesInfo {
    /// Metric name.
    pub metric: Sym,
    /// Labels after topology enrichment.
    pub labels: LabelSet,
    /// Counter, gauge or event.
    pub kind: SampleKind,
    /// The sensor that registered it.
    pub sensor: SensorId,
    /// A label whose value its kind does not allow ([`crate::label_check`]):
    /// the series is registered, so its sensor goes on, and every sample
    /// of it is refused.
    pub bad_label: Option<crate::label_check::BadLabel>,
}

#[derive(Debug)]
struct SensorQuota {
    name: String,
    cap: usize,
    used: usize,
}

/// The registry behind [`SeriesTable`].
#[derive(Debug, Default)]
pub struct Registry {
    interner: Interner,
    by_key: HashMap<(Sym, LabelSet), SeriesId>,
    series: Vec<SeriesInfo>,
    sensors: Vec<SensorQuota>,
    topology: Option<Arc<Topology>>,
    default_labels: Labels,
}

impl Registry {
    /// The interner behind every symbol in this registry.
    pub fn interner(&self) -> &Interner {
        &self.interner
    }

    /// Interns a string (for selectors and rules that name labels).
    pub fn intern(&mut self, s: &str) -> Sym {
        self.interner.intern(s)
    }

    /// What the table knows of `id`.
    pub fn info(&self, id: SeriesId) -> &SeriesInfo {
        &self.series[id.0 as usize]
    }

    /// Number of series registered.
    pub fn len(&self) -> usize {
        self.series.len()
    }

    /// Whether no series is registered.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// The metric name of `id`.
    pub fn metric_name(&self, id: SeriesId) -> &str {
        self.interner.resolve(self.info(id).metric)
    }

    /// The labels of `id` as strings.
    pub fn labels(&self, id: SeriesId) -> Labels {
        self.info(id).labels.to_labels(&self.interner)
    }

    /// The name a sensor registered under.
    pub fn sensor_name(&self, id: SensorId) -> &str {
        &self.sensors[id.0 as usize].name
    }

    /// How many series each sensor has registered, with its cap.
    pub fn sensor_usage(&self) -> Vec<(String, usize, usize)> {
        self.sensors.iter().map(|s| (s.name.clone(), s.used, s.cap)).collect()
    }
}

/// The shared series table: sensors register into it, the engine reads it
/// when it first sees a series. Only registration takes the write lock.
#[derive(Debug, Clone, Default)]
pub struct SeriesTable(Arc<RwLock<Registry>>);

impl SeriesTable {
    /// An empty table that enriches labels from `topology` (if any) and adds
    /// `default_labels` (typically `node`) to series that lack them.
    pub fn new(topology: Option<Arc<Topology>>, default_labels: Labels) -> SeriesTable {
        SeriesTable(Arc::new(RwLock::new(Registry { topology, default_labels, ..Registry::default() })))
    }

    /// Read access to the registry.
    pub fn read(&self) -> RwLockReadGuard<'_, Registry> {
        self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Interns a string in the table's interner.
    pub fn intern(&self, s: &str) -> Sym {
        self.write().intern(s)
    }

    /// Registers a sensor that may create at most `cap` series.
    pub fn add_sensor(&self, name: &str, cap: usize) -> SensorId {
        let mut reg = self.write();
        if let Some(i) = reg.sensors.iter().position(|s| s.name == name) {
            reg.sensors[i].cap = cap;
            return SensorId(i as u16);
        }
        reg.sensors.push(SensorQuota { name: name.to_string(), cap, used: 0 });
        SensorId((reg.sensors.len() - 1) as u16)
    }

    /// Registers (or finds) a series for `sensor`. Idempotent: the same
    /// metric and labels give the same id.
    pub fn register(&self, sensor: SensorId, spec: &SeriesSpec) -> Result<SeriesId, SeriesError> {
        check_size(spec)?;
        let bad_label = crate::label_check::check_all(&spec.labels.0).err();
        let kind = spec.registered_kind();
        let mut labels = spec.labels.clone();
        {
            let reg = self.read();
            // A series that names a switch is the switch's, not this
            // node's (gNMI counters, a switch port in a recording).
            let of_a_switch = labels.get("switch").is_some();
            for (k, v) in &reg.default_labels.0 {
                if of_a_switch && k == "node" {
                    continue;
                }
                labels.0.entry(k.clone()).or_insert_with(|| v.clone());
            }
            if let Some(topology) = &reg.topology {
                topology.enrich(&mut labels);
            }
        }
        let mut reg = self.write();
        let reg = &mut *reg;
        let metric = reg.interner.intern(&spec.metric);
        let pairs = labels.0.iter().map(|(k, v)| (reg.interner.intern(k), reg.interner.intern(v))).collect();
        let key = (metric, LabelSet::new(pairs));
        if let Some(id) = reg.by_key.get(&key) {
            let existing = reg.series[id.0 as usize].kind;
            if existing != kind {
                return Err(SeriesError::KindConflict {
                    metric: spec.metric.clone(),
                    labels,
                    existing,
                    requested: kind,
                });
            }
            return Ok(*id);
        }
        let quota = &mut reg.sensors[sensor.0 as usize];
        if quota.used >= quota.cap {
            return Err(SeriesError::Cardinality {
                sensor: quota.name.clone(),
                cap: quota.cap,
                metric: spec.metric.clone(),
                labels,
            });
        }
        quota.used += 1;
        let id = SeriesId(reg.series.len() as u32);
        reg.series.push(SeriesInfo { metric, labels: key.1.clone(), kind, sensor, bad_label });
        reg.by_key.insert(key, id);
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(metric: &str, netdev: &str) -> SeriesSpec {
        SeriesSpec {
            metric: metric.into(),
            labels: Labels::from_pairs([("netdev", netdev)]),
            kind: SampleKind::Counter(CounterSpec::U64),
        }
    }

    #[test]
    fn registration_is_idempotent_and_adds_default_labels() {
        let table = SeriesTable::new(None, Labels::from_pairs([("node", "n1")]));
        let s = table.add_sensor("test", 10);
        let a = table.register(s, &spec("m", "eth0")).unwrap();
        let b = table.register(s, &spec("m", "eth0")).unwrap();
        let c = table.register(s, &spec("m", "eth1")).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(table.read().labels(a).get("node"), Some("n1"));
    }

    #[test]
    fn a_switch_series_gets_no_node_label() {
        let table = SeriesTable::new(None, Labels::from_pairs([("node", "n1")]));
        let s = table.add_sensor("gnmi", 10);
        let mut port = spec("switch_in_fcs_errors", "x");
        port.labels = Labels::from_pairs([("switch", "leaf-rail0"), ("port", "Ethernet4")]);
        let id = table.register(s, &port).unwrap();
        assert_eq!(table.read().labels(id).get("node"), None);
    }

    #[test]
    fn a_sensor_over_its_cap_gets_a_clear_error() {
        let table = SeriesTable::default();
        let s = table.add_sensor("noisy", 2);
        table.register(s, &spec("m", "a")).unwrap();
        table.register(s, &spec("m", "b")).unwrap();
        let err = table.register(s, &spec("m", "c")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("\"noisy\" reached its cap of 2 series"), "{text}");
        assert!(text.contains("netdev=\"c\""), "{text}");
        // Known series still resolve at the cap.
        assert!(table.register(s, &spec("m", "a")).is_ok());
    }

    #[test]
    fn huge_names_and_values_are_refused_before_they_are_stored() {
        let table = SeriesTable::default();
        let s = table.add_sensor("t", 10);
        let mut huge = spec("m", &"x".repeat(MAX_LABEL_VALUE_LEN + 1));
        let err = table.register(s, &huge).unwrap_err();
        assert_eq!(
            err.to_string(),
            "series m…: the value of label \"netdev\" is 257 bytes long; at most 256 are accepted"
        );
        huge.labels = Labels::from_pairs([("netdev", "x".repeat(MAX_LABEL_VALUE_LEN).as_str())]);
        assert!(table.register(s, &huge).is_ok(), "256 bytes is within the bound");
        huge.metric = "m".repeat(MAX_METRIC_LEN + 1);
        assert!(matches!(table.register(s, &huge), Err(SeriesError::TooLarge { .. })));
        assert_eq!(table.read().len(), 1);
    }

    #[test]
    fn a_counter_without_a_bound_gets_the_one_its_name_implies() {
        let table = SeriesTable::default();
        let s = table.add_sensor("t", 10);
        let id = table.register(s, &spec("ethtool_tx_prio_pause_duration_us", "eth0")).unwrap();
        let bounded = CounterSpec::U64.bounded(RateBound::Micros);
        assert_eq!(table.read().info(id).kind, SampleKind::Counter(bounded));
        // Registering again, with or without the bound, is the same series.
        assert_eq!(table.register(s, &spec("ethtool_tx_prio_pause_duration_us", "eth0")).unwrap(), id);
    }

    #[test]
    fn the_same_series_with_another_kind_is_refused() {
        let table = SeriesTable::default();
        let s = table.add_sensor("t", 10);
        table.register(s, &spec("m", "a")).unwrap();
        let mut gauge = spec("m", "a");
        gauge.kind = SampleKind::Gauge;
        assert!(matches!(table.register(s, &gauge), Err(SeriesError::KindConflict { .. })));
    }
}
