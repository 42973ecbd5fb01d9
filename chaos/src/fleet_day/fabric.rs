//! The simulated fabric on the wall clock: a thread of its own steps it by
//! the time that really passed, every `step`, rewriting each node's sysfs
//! tree (what the node daemons' `rdma_sysfs` sensors read) and moving the
//! leaves' models (what the aggregator reads over gNMI, and what the
//! daemons' switch actuators change with gNMI Set). Faults are put in force
//! and ended from the game through the shared fabric.
//!
//! A thread, not a task: a step writes a few hundred files, which must not
//! hold a worker of the runtime that answers the daemons' gNMI calls.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use engine::time::wall_clock_now;
use engine::{Nanos, Topology};
use sim::fabric::{Effect, Fabric};
use sim::leaves::LeafServers;

use super::FleetDayError;

/// The fabric, its leaves served over gNMI, and the thread stepping it.
pub struct Driver {
    fabric: Arc<Mutex<Fabric>>,
    servers: Option<LeafServers>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    failed: Arc<Mutex<Option<String>>>,
}

fn lock(f: &Mutex<Fabric>) -> MutexGuard<'_, Fabric> {
    f.lock().unwrap_or_else(|p| p.into_inner())
}

impl Driver {
    /// The fabric of `topology` with its sysfs trees under `sysfs` and its
    /// leaves served on loopback, stepped every `step` from now on.
    pub async fn start(topology: Arc<Topology>, seed: u64, sysfs: &Path, step: Nanos) -> Result<Driver, FleetDayError> {
        let mut fabric = Fabric::new(topology, &[], seed, wall_clock_now())?;
        fabric.export_sysfs(sysfs)?;
        let servers = LeafServers::serve(&fabric).await?;
        let fabric = Arc::new(Mutex::new(fabric));
        let stop = Arc::new(AtomicBool::new(false));
        let failed = Arc::new(Mutex::new(None));
        let thread = {
            let (fabric, stop, failed) = (fabric.clone(), stop.clone(), failed.clone());
            let every = Duration::from_nanos(step as u64);
            std::thread::Builder::new()
                .name("fleet-day-fabric".into())
                .spawn(move || step_until(&fabric, &stop, &failed, every))
                .map_err(|e| FleetDayError::io("starting the fabric's thread", e))?
        };
        Ok(Driver { fabric, servers: Some(servers), stop, thread: Some(thread), failed })
    }

    /// The inventory with the served leaves' addresses: the daemons'.
    pub fn served_inventory(&self, topology: &Topology) -> Topology {
        self.servers.as_ref().map(|s| s.inventory(topology)).unwrap_or_else(|| topology.clone())
    }

    /// Puts `effects` in force now; returns when.
    pub fn start_faults(&self, effects: &[Effect]) -> Nanos {
        let mut f = lock(&self.fabric);
        // Catch up first, so the fault starts at this moment, not at the
        // last step.
        let now = wall_clock_now();
        if now > f.now {
            let dt = now - f.now;
            if let Err(e) = f.step(dt) {
                tracing::warn!(message = "Fabric step failed.", error = %e);
            }
        }
        for e in effects {
            f.start(e);
        }
        now
    }

    /// Why stepping failed, if it did (the sysfs trees could not be
    /// written): the game cannot go on.
    pub fn failure(&self) -> Option<String> {
        self.failed.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stops stepping and serving.
    pub async fn stop(mut self) {
        self.halt();
        if let Some(s) = self.servers.take() {
            s.stop().await;
        }
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The leaves' servers are tasks of the runtime: they end with it.
        self.halt();
    }
}

/// Steps the fabric by the wall-clock time since its last step, every
/// `every`, until `stop`.
fn step_until(fabric: &Mutex<Fabric>, stop: &AtomicBool, failed: &Mutex<Option<String>>, every: Duration) {
    let mut next = Instant::now() + every;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now < next {
            // Short sleeps, so a stop is seen within 20 ms.
            std::thread::sleep((next - now).min(Duration::from_millis(20)));
            continue;
        }
        next += every;
        if next < now {
            // Behind (a loaded machine): skip missed steps, one step covers them.
            next = now + every;
        }
        let mut f = lock(fabric);
        let dt = wall_clock_now() - f.now;
        if dt <= 0 {
            continue;
        }
        if let Err(e) = f.step(dt) {
            *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
            return;
        }
    }
}
