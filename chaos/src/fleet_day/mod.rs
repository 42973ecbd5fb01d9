//! Fleet game days: many real daemons, one real etcd, one shared budget.
//!
//! A fleet game day (`rocemend chaos fleet`, `docs/chaos.md`) starts a
//! real 3-member etcd cluster on loopback, the simulated fabric of an
//! inventory on the wall clock with its leaves served over gNMI, and one
//! `rocemend run` process per node (reading its node's simulated sysfs) plus
//! a switch aggregator (reading every leaf over gNMI), all coordinating
//! through etcd. Then it plays a script: plane-wide faults that make every
//! node propose the same kind of action at once, a fault one daemon handles
//! alone, etcd's leader SIGKILLed, a daemon holding a token SIGKILLed. It
//! measures, from the daemons' decisions and the keys in etcd, whether the
//! fleet budget held exactly, how fast each fault was detected and
//! mitigated, how fast a dead daemon's tokens came back, whether etcd
//! elected another leader and the daemons went on, and whether the fleet
//! breaker tripped.
//!
//! # Layout
//!
//! - [`spec`]: the game file as written (its faults are the shared
//!   [`FaultSpec`](crate::spec::FaultSpec)); [`plan`]: checked and
//!   resolved on the shared plan (`crate::plan`);
//! - `etcd`: the etcd cluster (`etcd`, `etcdctl`); `watch`: every key the
//!   daemons write, as etcd's own client sees it; `state`: the budget,
//!   sessions and breaker replayed from it;
//! - `fabric`: the simulated fabric stepped on the wall clock;
//! - `config`: the daemons' configuration files; `daemons`: their
//!   processes (`procs`: process groups killed with their guards);
//! - `game`: the script played (`about`: which decisions are about a
//!   fault); [`measure`]: the figures
//!   ([`crate::report::fleet`]) and the verdict; [`report`]: the game as a
//!   chaos [`Report`], its figures in [`Report::fleet`], drawn by the
//!   report's page and table like any other.
//!
//! The chaos crate does not depend on the binary: the daemons are the
//! `rocemend` executable given in [`Options::binary`], and their control
//! sockets are asked through [`Options::attach`], which the binary
//! implements over its control client.

mod about;
mod config;
mod daemons;
mod error;
mod etcd;
mod fabric;
mod game;
pub mod measure;
pub mod plan;
mod procs;
pub mod report;
pub mod spec;
mod state;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

pub use error::FleetDayError;
pub use plan::{load, FleetPlan};

use crate::report::Report;
use crate::run::AttachedDaemon;

/// Reaches a daemon's control socket (the binary's control client).
pub type Attach = Arc<dyn Fn(&Path) -> Arc<dyn AttachedDaemon> + Send + Sync>;

/// How to play a game.
#[derive(Clone)]
pub struct Options {
    /// The `rocemend` executable to run as each daemon (built with the
    /// `etcd` feature).
    pub binary: PathBuf,
    /// How to ask a daemon over its control socket.
    pub attach: Attach,
    /// Progress lines on stderr.
    pub progress: bool,
    /// Keep the game's directory (configs, logs, state) instead of removing
    /// it, and say where it is.
    pub keep_dir: bool,
}

/// Why the game cannot be played on this machine, if it cannot.
pub fn missing_part() -> Option<String> {
    etcd::missing_part()
}

/// Plays `plan` and reports it. Ctrl-C or SIGTERM stop the game: every
/// process it started is killed and its directory removed before this
/// returns [`FleetDayError::Interrupted`].
pub async fn run(plan: &FleetPlan, options: &Options) -> Result<Report, FleetDayError> {
    use tokio::signal::unix::{signal, SignalKind};
    let began = Instant::now();
    let mut term = signal(SignalKind::terminate()).map_err(|e| FleetDayError::io("handling SIGTERM", e))?;
    let played = tokio::select! {
        played = game::play(plan, options) => played?,
        _ = tokio::signal::ctrl_c() => return Err(FleetDayError::Interrupted("Ctrl-C")),
        _ = term.recv() => return Err(FleetDayError::Interrupted("SIGTERM")),
    };
    let figures = measure::figures(plan, &played);
    Ok(report::build(plan, &played, figures, began.elapsed().as_secs_f64() * 1e3))
}
