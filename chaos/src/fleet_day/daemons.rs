//! The fleet under test: one real `rocemend run` process per node and one
//! switch aggregator, each with its config, state directory, control
//! socket and log under the game's directory; started together, watched
//! (a daemon that dies when nobody killed it ends the game with its log),
//! asked for their decisions over their control sockets while they run,
//! and read from their ledgers once they are stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use engine::dispatch::Decision;
use engine::ledger::{Filter, Ledger, Retention};
use engine::time::wall_clock_now;
use engine::{Nanos, Store};

use super::config::{self, Place, Shared};
use super::plan::{FleetPlan, AGGREGATOR};
use super::procs::Proc;
use super::state;
use super::watch::Watch;
use super::{Attach, FleetDayError};
use crate::report::fleet::Role;
use crate::run::AttachedDaemon;

/// A unix socket path's limit (`sun_path`, 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Lines of a daemon's log quoted when it fails.
const LOG_LINES: usize = 15;

/// One daemon of the fleet.
pub struct Daemon {
    /// Its identity (its node's name, or `aggregator`).
    pub name: String,
    /// What it is.
    pub role: Role,
    state: PathBuf,
    proc: Option<Proc>,
    control: Arc<dyn AttachedDaemon>,
    /// When the game SIGKILLed it.
    pub killed_at: Option<Nanos>,
    /// Its decisions, by id: as last read over its control socket, then
    /// from its ledger once it is stopped.
    pub decisions: BTreeMap<String, Decision>,
}

impl Daemon {
    /// Whether it runs (not killed, not stopped).
    pub fn alive(&self) -> bool {
        self.proc.is_some()
    }
}

/// Every daemon of the game.
pub struct Daemons {
    /// In order: the nodes' (inventory order), then the aggregator.
    pub list: Vec<Daemon>,
}

/// Writes a daemon's config into `dir` and starts `binary run` on it.
fn launch_one(
    binary: &Path,
    name: &str,
    dir: &Path,
    config_text: impl FnOnce(&Place) -> String,
) -> Result<(Proc, PathBuf, PathBuf), FleetDayError> {
    std::fs::create_dir_all(dir).map_err(|e| FleetDayError::io(format!("creating {}", dir.display()), e))?;
    let place = Place { state: dir.join("state"), socket: dir.join("control.sock") };
    if place.socket.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(FleetDayError::Daemon {
            name: name.into(),
            reason: format!(
                "its control socket {} is longer than a unix socket path may be; set TMPDIR to a shorter directory",
                place.socket.display()
            ),
        });
    }
    let file = dir.join("rocemend.toml");
    std::fs::write(&file, config_text(&place))
        .map_err(|e| FleetDayError::io(format!("writing {}", file.display()), e))?;
    let mut cmd = Command::new(binary);
    cmd.arg("run").arg("--config").arg(&file);
    let proc = Proc::spawn(name, cmd, &dir.join("daemon.log"))?;
    Ok((proc, place.state, place.socket))
}

impl Daemons {
    /// Starts a daemon per node of the inventory and the aggregator, each
    /// under `root/<name>/`.
    pub fn launch(
        plan: &FleetPlan,
        binary: &Path,
        root: &Path,
        shared: &Shared,
        attach: &Attach,
    ) -> Result<Daemons, FleetDayError> {
        let mut list = Vec::new();
        let nodes = plan.topology.inventory().node.iter().map(|n| (n.name.clone(), Role::Node));
        for (name, role) in nodes.chain([(AGGREGATOR.to_string(), Role::Aggregator)]) {
            let dir = root.join(&name);
            let (proc, state, socket) = launch_one(binary, &name, &dir, |place| match role {
                Role::Node => config::node(plan, &name, place, shared),
                Role::Aggregator => config::aggregator(plan, place, shared),
            })?;
            let control = attach(&socket);
            list.push(Daemon {
                name,
                role,
                state,
                proc: Some(proc),
                control,
                killed_at: None,
                decisions: BTreeMap::new(),
            });
        }
        Ok(Daemons { list })
    }

    /// The daemon called `name`.
    pub fn get(&self, name: &str) -> Option<&Daemon> {
        self.list.iter().find(|d| d.name == name)
    }

    /// An error for the first daemon that exited when nobody killed it.
    pub fn check_alive(&mut self) -> Result<(), FleetDayError> {
        for d in &mut self.list {
            if let Some(p) = &mut d.proc {
                if let Some(status) = p.exited() {
                    return Err(FleetDayError::Daemon {
                        name: d.name.clone(),
                        reason: format!("exited ({status}); the end of its log:\n{}", p.log_tail(LOG_LINES)),
                    });
                }
            }
        }
        Ok(())
    }

    /// Waits until every daemon answers on its control socket and has a
    /// session with etcd (its member key, seen by the watch), at most
    /// `within`.
    pub async fn wait_ready(&mut self, watch: &Watch, within: Duration) -> Result<(), FleetDayError> {
        let deadline = tokio::time::Instant::now() + within;
        let mut answered = vec![false; self.list.len()];
        loop {
            self.check_alive()?;
            for (i, d) in self.list.iter().enumerate() {
                if !answered[i] {
                    answered[i] = d.control.decisions_since(0).await.is_ok();
                }
            }
            let sessions = watch.with(state::members);
            let waiting: Vec<&str> = self
                .list
                .iter()
                .zip(&answered)
                .filter(|(d, ok)| !**ok || !sessions.contains(&d.name))
                .map(|(d, _)| d.name.as_str())
                .collect();
            if waiting.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                let first = waiting[0];
                let tail = self
                    .list
                    .iter()
                    .find(|d| d.name == first)
                    .and_then(|d| d.proc.as_ref())
                    .map(|p| p.log_tail(LOG_LINES))
                    .unwrap_or_default();
                return Err(FleetDayError::Daemon {
                    name: first.into(),
                    reason: format!(
                        "not ready within {within:?} ({} of {} daemons were not: control socket answering and \
                         a session with etcd); the end of its log:\n{tail}",
                        waiting.len(),
                        self.list.len()
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Reads every running daemon's decisions since `since` over its
    /// control socket. A daemon that does not answer keeps what was read
    /// before (it may be busy; a dead one is found by `check_alive`).
    pub async fn refresh(&mut self, since: Nanos) {
        let mut reads = tokio::task::JoinSet::new();
        for d in self.list.iter().filter(|d| d.alive()) {
            let (name, control) = (d.name.clone(), d.control.clone());
            reads.spawn(async move { (name, control.decisions_since(since).await) });
        }
        while let Some(Ok((name, result))) = reads.join_next().await {
            let Some(d) = self.list.iter_mut().find(|d| d.name == name) else { continue };
            match result {
                Ok(decisions) => {
                    for decision in decisions {
                        d.decisions.insert(decision.id.clone(), decision);
                    }
                }
                Err(why) => tracing::debug!(message = "A daemon did not answer.", daemon = %name, %why),
            }
        }
    }

    /// SIGKILLs daemon `name`; returns when, or `None` if it was not
    /// running.
    pub fn kill(&mut self, name: &str) -> Option<Nanos> {
        let d = self.list.iter_mut().find(|d| d.name == name)?;
        let mut p = d.proc.take()?;
        let at = wall_clock_now();
        p.kill();
        d.killed_at = Some(at);
        Some(at)
    }

    /// Stops every daemon (SIGKILL: the ledgers are crash-safe, and the
    /// decisions were read over the sockets just before).
    pub fn stop(&mut self) {
        for d in &mut self.list {
            if let Some(mut p) = d.proc.take() {
                p.kill();
            }
        }
    }

    /// Adds what each stopped daemon's ledger holds to its decisions (the
    /// ledger's record wins: it is what the daemon stored last).
    pub fn read_ledgers(&mut self, since: Nanos) -> Result<(), FleetDayError> {
        for d in &mut self.list {
            let ledger_error = |source| FleetDayError::Ledger { daemon: d.name.clone(), source };
            let store = Store::open(&d.state.join("state.sled")).map_err(ledger_error)?;
            let ledger = Ledger::open(&store, Retention::default()).map_err(ledger_error)?;
            let filter = Filter { since: Some(since), ..Filter::default() };
            for decision in ledger.list(&filter).map_err(ledger_error)? {
                d.decisions.insert(decision.id.clone(), decision);
            }
        }
        Ok(())
    }
}
