//! `[remote_write]`: every sample the daemon takes in, sent on to the
//! cluster's TSDB (Prometheus, VictoriaMetrics, Thanos, Mimir) with the
//! Prometheus remote-write 1.0 protocol.
//!
//! The run loop hands each batch to a [`queue::QueueSink`] (an
//! [`engine::runtime::SampleSink`]); a [`sender::Sender`] task takes the
//! samples off in requests, as Prometheus's queue manager does.
//!
//! - [`settings`]: `[remote_write]` checked into [`RemoteWrite`];
//! - [`proto`]: the `prompb` messages and the snappy-compressed body;
//! - [`batch`]: samples into a request: labels, milliseconds, metadata;
//! - [`queue`]: the bounded queue that never makes the loop wait;
//! - [`sender`]: batching deadlines, retries and backoff, refusals;
//! - [`metrics`]: sent, failed, retried, dropped, pending, send latency;
//! - [`history`]: the way back: series read from the TSDB as recording events.

pub mod batch;
pub mod history;
pub mod metrics;
pub mod proto;
pub mod queue;
pub mod sender;
pub mod settings;

#[cfg(test)]
mod tests;

pub use metrics::RemoteWriteMetrics;
pub use settings::{settings, RemoteWrite};

use engine::SeriesTable;
use tokio::sync::watch;

/// Starts sending: the loop's sink, and the sender's task (spawned on the
/// current runtime) that ends once `shutdown` turns true and what was
/// queued has been sent once more.
pub fn start(
    plan: RemoteWrite,
    series: SeriesTable,
    metrics: RemoteWriteMetrics,
    shutdown: watch::Receiver<bool>,
) -> (queue::QueueSink, tokio::task::JoinHandle<()>) {
    let queue = queue::Queue::new(plan.queue_capacity, plan.max_samples_per_send, metrics.clone());
    let batcher = batch::Batcher::new(series, plan.external_labels.clone());
    let sender = sender::Sender::new(plan, queue.clone(), batcher, metrics);
    (queue::QueueSink(queue), tokio::spawn(sender.run(shutdown)))
}
