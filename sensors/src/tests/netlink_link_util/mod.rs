//! A network namespace with a veth pair, for the `netlink_link` tests and
//! the latency bench. Needs root and iproute2's `ip`.

#![allow(dead_code)]

use std::time::Duration;

use engine::{Batch, Sensor, SensorContext, SeriesTable};
use tokio::sync::{mpsc, watch};

/// A namespace `rm-<tag>-<pid>` holding `veth0` and `veth1`, both up;
/// deleted on drop.
pub struct Netns {
    inner: net::netns::Netns,
    pub name: String,
}

/// Why a test that needs a namespace cannot run here, if it cannot.
pub fn missing_part() -> Option<String> {
    net::netns::missing_part(&["ip"])
}

impl Netns {
    /// Creates the namespace and the veth pair, or says why it cannot.
    pub fn create(tag: &str) -> Result<Netns, String> {
        if let Some(reason) = missing_part() {
            return Err(reason);
        }
        let inner = net::netns::Netns::create(&format!("rm-{tag}-{}", std::process::id()))
            .map_err(|e| format!("cannot create a network namespace: {e}"))?;
        inner.add_veth("veth0", "veth1").map_err(|e| e.to_string())?;
        Ok(Netns { name: inner.name.clone(), inner })
    }

    /// Runs `ip -n <ns> <args>`.
    pub fn ip(&self, args: &[&str]) -> Result<(), String> {
        self.inner.ip(args).map_err(|e| e.to_string())
    }

    /// Runs `f` on a new thread that has entered the namespace, so every
    /// socket it opens is in it.
    pub fn spawn_in<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
        let name = self.name.clone();
        std::thread::spawn(move || {
            net::netns::enter(&name).unwrap_or_else(|e| panic!("{e}"));
            f()
        })
    }

    /// Starts `sensor` inside the namespace on its own current-thread
    /// runtime; returns the batches, the series table and a stop switch.
    pub fn run_sensor(&self, sensor: Box<dyn Sensor>, series: SeriesTable) -> Running {
        // Generous: a test reads as it goes, the bench too.
        let (tx, rx) = mpsc::channel(4096);
        let (stop, shutdown) = watch::channel(false);
        let ctx = SensorContext::new(series.clone(), "netlink_link", 1000, tx, shutdown);
        let health = ctx.health().clone();
        let thread = self.spawn_in(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(sensor.run(ctx)).map_err(|e| e.to_string())
        });
        Running { rx, series, stop, health, thread: Some(thread) }
    }
}

/// A sensor running in a namespace.
pub struct Running {
    pub rx: mpsc::Receiver<Batch>,
    pub series: SeriesTable,
    pub stop: watch::Sender<bool>,
    pub health: engine::HealthBoard,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl Running {
    /// Stops the sensor and returns how its run ended.
    pub fn finish(mut self) -> Result<(), String> {
        let _ = self.stop.send(true);
        self.thread.take().unwrap().join().map_err(|_| "the sensor thread panicked".to_string())?
    }

    /// The next batch, or `None` after `timeout`.
    pub async fn next(&mut self, timeout: Duration) -> Option<Batch> {
        tokio::time::timeout(timeout, self.rx.recv()).await.ok().flatten()
    }

    /// Every batch that comes within `period`. The sensor's heartbeat keeps
    /// sending, so waiting for a quiet gap would never end.
    pub async fn during(&mut self, period: Duration) -> Vec<Batch> {
        let deadline = tokio::time::Instant::now() + period;
        let mut batches = Vec::new();
        while let Ok(Some(batch)) = tokio::time::timeout_at(deadline, self.rx.recv()).await {
            batches.push(batch);
        }
        batches
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}
