//! The sender's task, after Prometheus's queue manager
//! (`storage/remote/queue_manager.go`): a request when
//! `max_samples_per_send` samples wait or `batch_send_deadline` has passed
//! since the last one; a request that meets a network error, a 5xx or a 429
//! is sent again, unchanged, after an exponential backoff (or the 429's
//! `Retry-After`) until it is taken or the daemon stops; one refused with
//! another 4xx (Prometheus answers 400 for samples out of order) is dropped
//! and counted. One request at a time: a receiver sees each series' samples
//! in order.

use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::BackoffBuilder;
use net::http::{HttpError, Request};
use tokio::sync::watch;

use super::batch::Batcher;
use super::metrics::RemoteWriteMetrics;
use super::proto;
use super::queue::Queue;
use super::settings::RemoteWrite;

/// What a receiver's answer means for the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Taken.
    Sent,
    /// Refused for good (a 4xx other than 429): dropped.
    Refused(u16, String),
    /// Worth sending again after the wait given, if the receiver named one.
    Retry(String, Option<Duration>),
}

/// What `status` (with its `Retry-After`, in seconds) means.
pub fn outcome(status: u16, retry_after: Option<&str>, body: String) -> Outcome {
    match status {
        200..=299 => Outcome::Sent,
        429 | 500..=599 => {
            let wait = retry_after.and_then(|s| s.trim().parse::<u64>().ok()).map(Duration::from_secs);
            Outcome::Retry(format!("HTTP {status}: {body}"), wait)
        }
        _ => Outcome::Refused(status, body),
    }
}

/// The sender: its plan, its queue, its counters.
pub struct Sender {
    plan: RemoteWrite,
    queue: Arc<Queue>,
    batcher: Batcher,
    metrics: RemoteWriteMetrics,
}

/// The longest a `Retry-After` is honoured: a receiver asking for an hour
/// would leave the queue to overflow silently.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

impl Sender {
    /// A sender of what `queue` holds, labels resolved by `batcher`.
    pub fn new(plan: RemoteWrite, queue: Arc<Queue>, batcher: Batcher, metrics: RemoteWriteMetrics) -> Sender {
        Sender { plan, queue, batcher, metrics }
    }

    /// Sends until `shutdown` turns true, then sends once what is left
    /// (a receiver that fails then loses it, counted as `shutdown`).
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let mut taken = Vec::with_capacity(self.plan.max_samples_per_send);
        let mut last_send = tokio::time::Instant::now();
        loop {
            let deadline = last_send + self.plan.batch_send_deadline;
            let stopping = tokio::select! {
                _ = self.queue.ready.notified() => false,
                _ = tokio::time::sleep_until(deadline) => false,
                _ = shutdown.wait_for(|stop| *stop) => true,
            };
            let due = stopping || tokio::time::Instant::now() >= deadline;
            // Full requests while there are some; the rest when it is due.
            while self.queue.len() >= self.plan.max_samples_per_send || (due && !self.queue.is_empty()) {
                self.queue.take(self.plan.max_samples_per_send, &mut taken);
                self.send(&taken, &mut shutdown).await;
                last_send = tokio::time::Instant::now();
            }
            if due {
                last_send = tokio::time::Instant::now();
            }
            if stopping || *shutdown.borrow() {
                return;
            }
        }
    }

    /// Sends one request of `samples`, again and again while the receiver
    /// asks for it, until it is taken, refused, or the daemon stops.
    async fn send(&mut self, samples: &[engine::Sample], shutdown: &mut watch::Receiver<bool>) {
        let built = self.batcher.build(samples, Instant::now());
        self.metrics.drop_samples("out_of_order", built.out_of_order);
        let body = proto::encode(&built.request);
        let n = built.samples as u64;
        let mut delays = backon::ExponentialBuilder::new()
            .with_min_delay(self.plan.min_backoff)
            .with_max_delay(self.plan.max_backoff)
            .without_max_times()
            .build();
        let stopping = *shutdown.borrow();
        loop {
            match self.attempt(&body).await {
                Outcome::Sent => {
                    self.metrics.sent.inc_by(n);
                    break;
                }
                Outcome::Refused(status, text) => {
                    tracing::warn!(message = "Remote write refused a request; its samples are dropped.", url = %self.plan.url, status, samples = n, answer = %text);
                    self.metrics.failed.inc_by(n);
                    self.metrics.drop_samples("rejected", n as usize);
                    break;
                }
                Outcome::Retry(why, after) => {
                    let wait = after
                        .map(|a| a.min(MAX_RETRY_AFTER))
                        .or_else(|| delays.next())
                        .unwrap_or(self.plan.max_backoff);
                    if stopping || *shutdown.borrow() {
                        tracing::warn!(message = "Remote write failed while stopping; its samples are dropped.", url = %self.plan.url, samples = n, error = %why);
                        self.metrics.drop_samples("shutdown", n as usize);
                        break;
                    }
                    tracing::debug!(message = "Remote write failed; sending again.", url = %self.plan.url, error = %why, wait = ?wait);
                    self.metrics.retried.inc_by(n);
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = shutdown.wait_for(|stop| *stop) => {}
                    }
                }
            }
        }
        self.metrics.pending.dec_by(samples.len() as i64);
    }

    /// One POST of `body`.
    async fn attempt(&self, body: &[u8]) -> Outcome {
        let mut headers: Vec<(&str, String)> = vec![
            ("Content-Encoding", "snappy".into()),
            ("Content-Type", "application/x-protobuf".into()),
            ("X-Prometheus-Remote-Write-Version", "0.1.0".into()),
            ("User-Agent", concat!("rocemend/", env!("CARGO_PKG_VERSION")).into()),
        ];
        headers.extend(self.plan.headers.iter().map(|(k, v)| (k.as_str(), v.clone())));
        let request = Request { method: "POST", url: &self.plan.url, headers, body };
        let started = Instant::now();
        let answer = self.plan.client.send(&request, self.plan.timeout).await;
        self.metrics.send_seconds.observe(started.elapsed().as_secs_f64());
        match answer {
            Ok(response) => outcome(response.status, response.header("retry-after"), response.snippet()),
            Err(e @ (HttpError::Connect(_) | HttpError::Io(_) | HttpError::Timeout(_) | HttpError::TooLarge(_))) => {
                Outcome::Retry(e.to_string(), None)
            }
            Err(e) => Outcome::Refused(0, e.to_string()),
        }
    }
}
