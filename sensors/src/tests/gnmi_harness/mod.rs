//! A gnmi sensor run by a test: built from its TOML, its batches received
//! one at a time, its series found by metric and labels. Shared by the
//! tests against the simulated switch (`gnmi.rs`) and against the
//! independent Python target (`gnmi_interop.rs`).

// Each test binary uses a different part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use engine::{Batch, HealthBoard, Labels, SensorContext, SeriesTable, Value};
use sensors::GnmiConfig;
use tokio::sync::{mpsc, watch};

/// How long a test waits for what it expects from the sensor.
const WAIT: Duration = Duration::from_secs(20);

/// A running gnmi sensor.
pub struct Harness {
    pub table: SeriesTable,
    rx: mpsc::Receiver<Batch>,
    stop: watch::Sender<bool>,
    pub health: HealthBoard,
    task: tokio::task::JoinHandle<Result<(), engine::SensorError>>,
}

/// Starts a gnmi sensor with the settings `config` (TOML).
pub fn start(config: &str) -> Harness {
    let config: GnmiConfig = toml::from_str(config).unwrap();
    let sensor = config.build("gnmi").unwrap();
    let table = SeriesTable::default();
    let (tx, rx) = mpsc::channel(256);
    let (stop, shutdown) = watch::channel(false);
    let health = HealthBoard::default();
    let ctx = SensorContext::new(table.clone(), "gnmi", 100_000, tx, shutdown).with_health(health.clone());
    let task = tokio::spawn(engine::Sensor::run(Box::new(sensor), ctx));
    Harness { table, rx, stop, health, task }
}

impl Harness {
    /// Receives batches until `done` says so (at most [`WAIT`]).
    pub async fn until(&mut self, mut done: impl FnMut(&Self, &Batch) -> bool) -> Vec<Batch> {
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let batch = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!("timed out after {} batches; health: {:?}", seen.len(), self.health.snapshot())
                })
                .expect("the sensor stopped");
            let stop = done(self, &batch);
            seen.push(batch);
            if stop {
                return seen;
            }
        }
    }

    /// Polls the health until `done` says so (at most [`WAIT`]): for what
    /// the sensor reports without sending a batch.
    pub async fn health_until(&self, done: impl Fn(&engine::SensorHealth) -> bool) -> engine::SensorHealth {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let health = self.health.snapshot().into_iter().next().expect("the sensor reports");
            if done(&health) {
                return health;
            }
            assert!(tokio::time::Instant::now() < deadline, "timed out; health: {health:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The newest value in `batch` of a series of `metric` with `labels`.
    pub fn find(&self, batch: &Batch, metric: &str, labels: &[(&str, &str)]) -> Option<Value> {
        let reg = self.table.read();
        let want = Labels::from_pairs(labels.iter().copied());
        batch
            .samples
            .iter()
            .rev()
            .find(|s| reg.metric_name(s.series) == metric && reg.labels(s.series).contains_all(&want))
            .map(|s| s.value)
    }

    /// The sensor's error counts, by kind.
    pub fn errors(&self) -> BTreeMap<String, u64> {
        self.health.snapshot().into_iter().next().map(|h| h.errors).unwrap_or_default()
    }

    /// Stops the sensor; it must end cleanly.
    pub async fn stop(self) {
        self.stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), self.task).await.unwrap().unwrap().unwrap();
    }
}
