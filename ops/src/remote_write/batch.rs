//! Samples into a [`WriteRequest`]: each series' labels resolved once from
//! the [`SeriesTable`] (with `__name__` and the external labels, sorted by
//! name) and cached by series id; timestamps in milliseconds; samples a
//! receiver would refuse as out of order left out and counted; each metric's
//! type sent as metadata once a minute, as Prometheus does.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use engine::series::{SampleKind, SeriesId, SeriesTable};
use engine::Sample as EngineSample;

use super::proto::{Label, MetricMetadata, MetricType, Sample, TimeSeries, WriteRequest};

/// How often each metric's type is sent again (Prometheus's
/// `metadata_config.send_interval` default).
pub const METADATA_INTERVAL: Duration = Duration::from_secs(60);

/// What is known of a series once resolved.
struct Resolved {
    labels: Arc<[Label]>,
    /// The newest timestamp sent (ms): a receiver refuses anything not newer.
    last_ms: Option<i64>,
}

/// Builds the requests of one sender.
pub struct Batcher {
    series: SeriesTable,
    external_labels: Vec<(String, String)>,
    resolved: HashMap<SeriesId, Resolved>,
    /// Each metric family seen, with its type.
    families: BTreeMap<String, MetricType>,
    metadata_sent: Option<Instant>,
}

/// One request built, with what was left out of it.
pub struct Built {
    /// The request.
    pub request: WriteRequest,
    /// Samples in it.
    pub samples: usize,
    /// Samples left out: not newer than their series' last one sent (a
    /// receiver answers 400 for the whole request otherwise).
    pub out_of_order: usize,
}

impl Batcher {
    /// A batcher resolving labels in `series`, adding `external_labels`.
    pub fn new(series: SeriesTable, external_labels: Vec<(String, String)>) -> Batcher {
        Batcher { series, external_labels, resolved: HashMap::new(), families: BTreeMap::new(), metadata_sent: None }
    }

    /// The request for `samples` (in the order the loop saw them); with the
    /// metadata of every family seen when [`METADATA_INTERVAL`] has passed
    /// since it was last sent.
    pub fn build(&mut self, samples: &[EngineSample], now: Instant) -> Built {
        let mut by_series: Vec<(SeriesId, Vec<Sample>)> = Vec::new();
        let mut index: HashMap<SeriesId, usize> = HashMap::new();
        let mut out_of_order = 0;
        for s in samples {
            let ms = s.ts / engine::MS;
            let resolved = self.resolve(s.series);
            if resolved.last_ms.is_some_and(|last| ms <= last) {
                out_of_order += 1;
                continue;
            }
            resolved.last_ms = Some(ms);
            let i = *index.entry(s.series).or_insert_with(|| {
                by_series.push((s.series, Vec::new()));
                by_series.len() - 1
            });
            by_series[i].1.push(Sample { value: s.value.as_f64(), timestamp: ms });
        }
        let sent = samples.len() - out_of_order;
        let timeseries = by_series
            .into_iter()
            .map(|(id, samples)| TimeSeries { labels: self.resolved[&id].labels.to_vec(), samples })
            .collect();
        let due = self.metadata_sent.is_none_or(|at| now.duration_since(at) >= METADATA_INTERVAL);
        let metadata = if due && !self.families.is_empty() {
            self.metadata_sent = Some(now);
            self.metadata()
        } else {
            Vec::new()
        };
        Built { request: WriteRequest { timeseries, metadata }, samples: sent, out_of_order }
    }

    /// The series' entry, resolved from the table the first time.
    fn resolve(&mut self, id: SeriesId) -> &mut Resolved {
        let (series, external, families) = (&self.series, &self.external_labels, &mut self.families);
        self.resolved.entry(id).or_insert_with(|| {
            let table = series.read();
            let name = table.metric_name(id).to_string();
            let kind = match table.info(id).kind {
                SampleKind::Counter(_) => MetricType::Counter,
                SampleKind::Gauge => MetricType::Gauge,
                SampleKind::Event => MetricType::Unknown,
            };
            let mut labels = table.labels(id).0;
            drop(table);
            for (k, v) in external {
                labels.entry(k.clone()).or_insert_with(|| v.clone());
            }
            labels.insert("__name__".into(), name.clone());
            families.entry(name).or_insert(kind);
            // A BTreeMap iterates by name: the order the protocol asks for.
            let labels = labels.into_iter().filter(|(_, v)| !v.is_empty()).map(|(name, value)| Label { name, value });
            Resolved { labels: labels.collect(), last_ms: None }
        })
    }

    fn metadata(&self) -> Vec<MetricMetadata> {
        self.families
            .iter()
            .map(|(name, kind)| MetricMetadata {
                r#type: *kind as i32,
                metric_family_name: name.clone(),
                help: help(*kind).into(),
                unit: String::new(),
            })
            .collect()
    }
}

/// The help text of a family: the daemon knows the kind, not the meaning.
fn help(kind: MetricType) -> &'static str {
    match kind {
        MetricType::Counter => "A counter as rocemend read it (its raw value)",
        MetricType::Gauge => "A level as rocemend read it",
        MetricType::Unknown => "An event rocemend saw (its value is the event's payload)",
    }
}
