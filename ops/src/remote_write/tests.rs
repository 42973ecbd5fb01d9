//! The body decoded back, labels and timestamps as the protocol asks, the
//! queue's bound, the answers' meanings, and a request on the wire.

use std::time::{Duration, Instant};

use engine::labels::Labels;
use engine::series::{SampleKind, SeriesSpec, SeriesTable};
use engine::{CounterSpec, Sample, Value};
use prometheus_client::registry::Registry;

use super::batch::{Batcher, METADATA_INTERVAL};
use super::proto::{self, MetricType};
use super::queue::Queue;
use super::sender::{outcome, Outcome};
use super::RemoteWriteMetrics;

fn table() -> (SeriesTable, engine::SeriesId, engine::SeriesId) {
    let table = SeriesTable::new(None, Labels::default());
    let sensor = table.add_sensor("test", 10);
    let counter = SeriesSpec {
        metric: "rx_bytes".into(),
        labels: Labels::from_pairs([("netdev", "eth0"), ("Zone", "a"), ("node", "n1")]),
        kind: SampleKind::Counter(CounterSpec::U64),
    };
    let gauge =
        SeriesSpec { metric: "temp_c".into(), labels: Labels::from_pairs([("gpu", "0")]), kind: SampleKind::Gauge };
    let c = table.register(sensor, &counter).unwrap();
    let g = table.register(sensor, &gauge).unwrap();
    (table, c, g)
}

fn metrics() -> RemoteWriteMetrics {
    RemoteWriteMetrics::register(&mut Registry::default())
}

#[test]
fn a_request_decodes_back_with_sorted_labels_and_millisecond_timestamps() {
    let (table, c, g) = table();
    let mut batcher = Batcher::new(table, vec![("cluster".into(), "west".into()), ("node".into(), "ignored".into())]);
    let samples = [
        Sample { series: c, ts: 1_700_000_000_123_456_789, value: Value::Count(u64::from(u32::MAX) + 7) },
        Sample { series: g, ts: 1_700_000_000_200_000_000, value: Value::Real(61.5) },
        Sample { series: c, ts: 1_700_000_001_123_999_999, value: Value::Count(u64::from(u32::MAX) + 9) },
    ];
    let built = batcher.build(&samples, Instant::now());
    assert_eq!((built.samples, built.out_of_order), (3, 0));
    let back = proto::decode(&proto::encode(&built.request)).unwrap();
    assert_eq!(back, built.request);
    let labels: Vec<(&str, &str)> =
        back.timeseries[0].labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
    // Byte order: upper case before `__name__`, which is before lower case;
    // the series' own `node` wins over the external one.
    assert_eq!(
        labels,
        [("Zone", "a"), ("__name__", "rx_bytes"), ("cluster", "west"), ("netdev", "eth0"), ("node", "n1")]
    );
    let points: Vec<(i64, f64)> = back.timeseries[0].samples.iter().map(|s| (s.timestamp, s.value)).collect();
    assert_eq!(points, [(1_700_000_000_123, 4_294_967_302.0), (1_700_000_001_123, 4_294_967_304.0)]);
    assert_eq!(back.timeseries[1].samples[0].timestamp, 1_700_000_000_200);
    assert_eq!(back.timeseries[1].labels[0].name, "__name__");
    let kinds: Vec<(&str, i32)> = back.metadata.iter().map(|m| (m.metric_family_name.as_str(), m.r#type)).collect();
    assert_eq!(kinds, [("rx_bytes", MetricType::Counter as i32), ("temp_c", MetricType::Gauge as i32)]);
}

#[test]
fn samples_not_newer_than_the_last_sent_are_left_out_and_metadata_waits_a_minute() {
    let (table, c, _) = table();
    let mut batcher = Batcher::new(table, Vec::new());
    let at = |ts, v| Sample { series: c, ts, value: Value::Count(v) };
    let start = Instant::now();
    let first = batcher.build(&[at(5_000_000_000, 1)], start);
    assert_eq!(first.request.metadata.len(), 1);
    // The same millisecond again, and an older one: a receiver would answer
    // 400 for the whole request.
    let second = batcher.build(&[at(5_000_400_000, 2), at(4_000_000_000, 3), at(6_000_000_000, 4)], start);
    assert_eq!((second.samples, second.out_of_order), (1, 2));
    assert_eq!(second.request.timeseries[0].samples[0].timestamp, 6_000);
    assert!(second.request.metadata.is_empty(), "metadata is sent once a minute");
    let later = batcher.build(&[at(7_000_000_000, 5)], start + METADATA_INTERVAL);
    assert_eq!(later.request.metadata.len(), 1);
}

#[test]
fn a_full_queue_drops_its_oldest_samples_and_counts_them() {
    let m = metrics();
    let queue = Queue::new(3, 2, m.clone());
    let s = |ts| Sample { series: engine::SeriesId(0), ts, value: Value::Real(0.0) };
    queue.push(&[s(1), s(2)]);
    queue.push(&[s(3), s(4), s(5)]);
    let mut out = Vec::new();
    queue.take(10, &mut out);
    assert_eq!(out.iter().map(|s| s.ts).collect::<Vec<_>>(), [3, 4, 5]);
    let reason = vec![("reason".to_string(), "queue_full".to_string())];
    assert_eq!(m.dropped.get_or_create(&reason).get(), 2);
    assert_eq!(m.pending.get(), 3, "taken samples stay pending until their request ends");
}

#[test]
fn answers_mean_sent_retried_or_refused() {
    assert_eq!(outcome(204, None, String::new()), Outcome::Sent);
    assert_eq!(outcome(400, None, "out of order".into()), Outcome::Refused(400, "out of order".into()));
    assert_eq!(outcome(404, Some("3"), String::new()), Outcome::Refused(404, String::new()));
    assert_eq!(
        outcome(429, Some(" 3 "), "slow down".into()),
        Outcome::Retry("HTTP 429: slow down".into(), Some(Duration::from_secs(3)))
    );
    assert_eq!(outcome(503, Some("a date"), String::new()), Outcome::Retry("HTTP 503: ".into(), None));
}
