//! A network namespace with a veth pair, for the `netlink_link` tests and
//! the latency bench. Needs root and iproute2's `ip`.

#![allow(dead_code)]

use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Duration;

use engine::{Batch, Sensor, SensorContext, SeriesTable};
use tokio::sync::{mpsc, watch};

/// A namespace `rm-<tag>-<pid>` holding `veth0` and `veth1`, both up;
/// deleted on drop.
pub struct Netns {
    pub name: String,
}

/// Why a test that needs a namespace cannot run here, if it cannot.
pub fn missing_part() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (network namespaces need CAP_SYS_ADMIN)".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(out) if out.status.success() => None,
        _ => Some("`ip` (iproute2) is not installed".into()),
    }
}

impl Netns {
    /// Creates the namespace and the veth pair, or says why it cannot.
    pub fn create(tag: &str) -> Result<Netns, String> {
        if let Some(reason) = missing_part() {
            return Err(reason);
        }
        let name = format!("rm-{tag}-{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        run(&["netns", "add", &name]).map_err(|e| format!("cannot create a network namespace: {e}"))?;
        let ns = Netns { name };
        ns.ip(&["link", "add", "veth0", "type", "veth", "peer", "name", "veth1"])?;
        ns.ip(&["link", "set", "veth1", "up"])?;
        ns.ip(&["link", "set", "veth0", "up"])?;
        Ok(ns)
    }

    /// Runs `ip -n <ns> <args>`.
    pub fn ip(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        run(&all)
    }

    /// Runs `f` on a new thread that has entered the namespace, so every
    /// socket it opens is in it.
    pub fn spawn_in<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
        let path = format!("/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("opening {path}: {e}"));
            // SAFETY: a valid namespace fd; setns only changes this thread.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
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

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
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
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}
