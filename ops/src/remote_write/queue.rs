//! The bounded queue between the run loop and the sender: the loop's side
//! ([`QueueSink`], a [`SampleSink`]) only locks, appends and wakes, never
//! waits; when the queue holds `capacity` samples the oldest are dropped
//! and counted, so what reaches the receiver after an outage is the newest
//! data (Prometheus's WAL would block instead; a daemon that heals the
//! fabric must not wait on its TSDB).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use engine::runtime::SampleSink;
use engine::Sample;
use tokio::sync::Notify;

use super::metrics::RemoteWriteMetrics;

/// Samples waiting to be sent.
pub struct Queue {
    samples: Mutex<VecDeque<Sample>>,
    capacity: usize,
    /// A full request's worth of samples: the sender is woken at this many.
    batch: usize,
    /// Wakes the sender: a full request is waiting.
    pub(super) ready: Notify,
    metrics: RemoteWriteMetrics,
}

impl Queue {
    /// An empty queue of at most `capacity` samples, waking its sender at
    /// `batch` of them.
    pub fn new(capacity: usize, batch: usize, metrics: RemoteWriteMetrics) -> Arc<Queue> {
        let samples = Mutex::new(VecDeque::with_capacity(capacity.min(1 << 16)));
        Arc::new(Queue { samples, capacity, batch, ready: Notify::new(), metrics })
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<Sample>> {
        // A panic while holding the lock left whole samples behind: go on.
        self.samples.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends `samples`, dropping the oldest beyond the capacity.
    pub fn push(&self, samples: &[Sample]) {
        let mut queue = self.lock();
        queue.extend(samples.iter().copied());
        let over = queue.len().saturating_sub(self.capacity);
        queue.drain(..over);
        let full = queue.len() >= self.batch;
        drop(queue);
        self.metrics.drop_samples("queue_full", over);
        self.metrics.pending.inc_by(samples.len() as i64 - over as i64);
        if full {
            self.ready.notify_one();
        }
    }

    /// Takes up to `n` of the oldest samples into `out` (cleared first).
    pub fn take(&self, n: usize, out: &mut Vec<Sample>) {
        out.clear();
        let mut queue = self.lock();
        let n = n.min(queue.len());
        out.extend(queue.drain(..n));
    }

    /// Samples waiting.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The loop's end of a [`Queue`].
pub struct QueueSink(pub Arc<Queue>);

impl SampleSink for QueueSink {
    fn offer(&mut self, samples: &[Sample]) {
        if !samples.is_empty() {
            self.0.push(samples);
        }
    }
}
