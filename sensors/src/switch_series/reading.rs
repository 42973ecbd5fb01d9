//! One reading of a switch: a metric of a port (and of one of its queues or
//! priorities), as both switch sensors produce it.

use compact_str::CompactString;
use engine::{CounterSpec, Labels, SampleKind, SeriesSpec};

/// How often SONiC refreshes the counters both switch sensors read, ms:
/// syncd copies the ASIC's counters into COUNTERS_DB at its flex counter
/// polls (`counterpoll port`: every second by default), and gNMI and Redis
/// serve that copy. Two reads a second apart can hold two polls, two
/// seconds of a storm's pause ([`engine::CounterSpec::refresh_ms`]).
pub const COUNTERS_REFRESH_MS: u32 = 1000;

/// Counter or gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadingKind {
    /// A 64-bit counter.
    Counter,
    /// A gauge.
    Gauge,
}

/// One reading out of an update.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// Metric name.
    pub metric: &'static str,
    /// Counter or gauge.
    pub kind: ReadingKind,
    /// The port's SONiC name. Inline up to 24 bytes (every port name of
    /// SONiC and OpenConfig), so a reading allocates nothing.
    pub port: CompactString,
    /// The queue: its position in the port's queue list (`<port>:<queue>`
    /// in SONiC's maps), for queue and watchdog metrics.
    pub queue: Option<u8>,
    /// The PFC priority: of a port PFC counter, of the queue a priority
    /// pauses, or of the queue the watchdog watches for it.
    pub prio: Option<u8>,
    /// A counter's reading.
    pub count: u64,
    /// A gauge's level.
    pub level: f64,
}

impl Reading {
    /// A counter `metric` of `port` reading `count`.
    pub fn counter(metric: &'static str, port: &str, queue: Option<u8>, prio: Option<u8>, count: u64) -> Reading {
        Reading { metric, kind: ReadingKind::Counter, port: CompactString::from(port), queue, prio, count, level: 0.0 }
    }

    /// A gauge `metric` of `port` at `level`.
    pub fn gauge(metric: &'static str, port: &str, queue: Option<u8>, prio: Option<u8>, level: f64) -> Reading {
        Reading { metric, kind: ReadingKind::Gauge, port: CompactString::from(port), queue, prio, count: 0, level }
    }

    /// The series of this reading on switch `switch`: labelled `switch` and
    /// `port`, and `queue` and `prio` when the reading has them; counters
    /// are 64-bit copies refreshed every [`COUNTERS_REFRESH_MS`].
    pub fn spec(&self, switch: &str) -> SeriesSpec {
        let mut labels = Labels::from_pairs([("switch", switch), ("port", self.port.as_str())]);
        if let Some(q) = self.queue {
            labels.insert("queue", q.to_string());
        }
        if let Some(p) = self.prio {
            labels.insert("prio", p.to_string());
        }
        let kind = match self.kind {
            ReadingKind::Counter => SampleKind::Counter(CounterSpec::U64.refreshed_every(COUNTERS_REFRESH_MS)),
            ReadingKind::Gauge => SampleKind::Gauge,
        };
        SeriesSpec { metric: self.metric.to_string(), labels, kind }
    }

    /// The reading as an engine value.
    pub fn value(&self) -> engine::Value {
        match self.kind {
            ReadingKind::Counter => engine::Value::Count(self.count),
            ReadingKind::Gauge => engine::Value::Real(self.level),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_and_priority_are_labels_of_their_own() {
        let spec = Reading::gauge("switch_pfc_queue_paused", "Ethernet1/1", Some(5), Some(3), 1.0).spec("leaf01");
        let labels = &spec.labels;
        assert_eq!((labels.get("queue"), labels.get("prio")), (Some("5"), Some("3")), "{labels}");
        assert_eq!((labels.get("port"), labels.get("switch")), (Some("Ethernet1/1"), Some("leaf01")), "{labels}");
        let multicast = Reading::counter("switch_queue_packets", "Ethernet0", Some(13), None, 1).spec("leaf01");
        assert_eq!(multicast.labels.get("prio"), None, "a multicast queue has no priority");
        assert_eq!(multicast.kind, SampleKind::Counter(CounterSpec::U64.refreshed_every(COUNTERS_REFRESH_MS)));
    }
}
