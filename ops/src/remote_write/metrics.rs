//! The sender's own metrics on the daemon's `/metrics`, named after
//! Prometheus's `prometheus_remote_storage_*`: samples sent, failed
//! (refused by the receiver), retried, dropped (by reason), pending, and
//! how long a request took.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// Why samples were dropped: the label of `remote_write_samples_dropped`.
pub type Reason = Vec<(String, String)>;

/// The sender's counters; clones share them.
#[derive(Clone)]
pub struct RemoteWriteMetrics {
    /// Samples the receiver took (2xx).
    pub sent: Counter,
    /// Samples the receiver refused (a 4xx other than 429): not sent again.
    pub failed: Counter,
    /// Samples sent again after a network error, a 5xx or a 429.
    pub retried: Counter,
    /// Samples never sent, by reason (`queue_full`, `out_of_order`, `rejected`, `shutdown`).
    pub dropped: Family<Reason, Counter>,
    /// Samples queued or in the request under way.
    pub pending: Gauge,
    /// Seconds from a request sent to its answer, whatever the answer.
    pub send_seconds: Histogram,
}

impl RemoteWriteMetrics {
    /// The metrics, registered in `r` (prefixed there).
    pub fn register(r: &mut Registry) -> RemoteWriteMetrics {
        let m = RemoteWriteMetrics {
            sent: Counter::default(),
            failed: Counter::default(),
            retried: Counter::default(),
            dropped: Family::default(),
            pending: Gauge::default(),
            // 1 ms doubling to ~33 s: a loopback write to a timed-out one.
            send_seconds: Histogram::new(exponential_buckets(0.001, 2.0, 16)),
        };
        r.register("remote_write_samples_sent", "Samples a remote-write receiver took", m.sent.clone());
        r.register(
            "remote_write_samples_failed",
            "Samples a remote-write receiver refused (4xx other than 429), not sent again",
            m.failed.clone(),
        );
        r.register(
            "remote_write_samples_retried",
            "Samples sent again after a network error, a 5xx or a 429",
            m.retried.clone(),
        );
        r.register(
            "remote_write_samples_dropped",
            "Samples never sent, by reason (queue_full, out_of_order, rejected, shutdown)",
            m.dropped.clone(),
        );
        r.register("remote_write_samples_pending", "Samples queued or in the request under way", m.pending.clone());
        r.register(
            "remote_write_send_seconds",
            "From a remote-write request sent to its answer",
            m.send_seconds.clone(),
        );
        m
    }

    /// Counts `n` samples dropped for `reason`.
    pub fn drop_samples(&self, reason: &str, n: usize) {
        if n > 0 {
            self.dropped.get_or_create(&vec![("reason".to_string(), reason.to_string())]).inc_by(n as u64);
        }
    }
}
