//! `rocemend chaos`: runs chaos scenarios against the daemon's own sensors,
//! engine, dispatcher and safety policy, on the simulated fabric, and
//! reports time to detect, to mitigate and to recover.
//!
//! - [`lockstep`]: one run on the virtual clock;
//! - [`readers`]: the daemon's sysfs, gNMI and Prometheus readers on the
//!   simulated fabric;
//! - [`switches`]: the fabric's leaves served over gNMI, for the
//!   playbook's real switch actuators;
//! - [`actuator`]: the simulated fabric's host and scheduler side (`ip
//!   link`, the scheduler's drain and cordon);
//! - [`wall`]: scenarios on real links (veth pairs in network namespaces)
//!   on the wall clock;
//! - [`embedded`]: the scenario library, its rules and playbook, built in
//!   for `rocemend demo`.
//!
//! The scenario format, the fabric model and the report live in the
//! `chaos` crate; this module is the wiring that needs the sensors.

//! The runner: chaos scenarios against the daemon's own sensors, engine,
//! dispatcher and safety policy, on the simulated fabric or on real links,
//! reporting time to detect, to mitigate and to recover.
//!
//! - [`lockstep`]: one run on the virtual clock;
//! - [`readers`]: the daemon's sysfs, gNMI and Prometheus readers on the
//!   simulated fabric;
//! - [`fabric_actuator`]: the simulated fabric's host and scheduler side
//!   (`ip link`, the scheduler's drain and cordon);
//! - [`wall`]: scenarios on real links (veth pairs in network namespaces)
//!   on the wall clock, or attached to a running daemon (a game day);
//! - [`faults`]: the wall-clock faults, applied with rtnetlink and `tc`;
//! - [`Sources`]: the rules and playbook a scenario runs with, read from
//!   disk or built in.

pub mod fabric_actuator;
pub mod faults;
pub mod lockstep;
pub mod readers;
mod sources;
pub mod wall;

pub use sources::{Sources, PLAYBOOK};
// The contract's error sits with ChaosError, which carries it.
pub use crate::error::AttachError;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use engine::dispatch::{Decision, Mode};
use engine::playbook::{Playbook, RulePolicy};
use engine::Nanos;

use crate::report::{Report, RunRecord};
use crate::scenario::{Clock, Loaded};
use crate::ChaosError;

/// A running daemon that a game day asks for its decisions: the faults are
/// applied to the host's own links and the daemon's decisions are read
/// afterwards. The binary implements it over the control socket.
#[async_trait::async_trait]
pub trait AttachedDaemon: Send + Sync {
    /// Where it is (its control socket), for messages.
    fn address(&self) -> String;
    /// Every decision since `since` (ns since the epoch), oldest first.
    async fn decisions_since(&self, since: Nanos) -> Result<Vec<Decision>, AttachError>;
}

/// How to run a scenario.
#[derive(Clone, Default)]
pub struct Options {
    /// Runs, instead of the scenario's.
    pub runs: Option<u32>,
    /// Seed of run 0, instead of the scenario's.
    pub seed: Option<u64>,
    /// A playbook instead of the scenario's.
    pub playbook: Option<PathBuf>,
    /// A rule directory instead of the scenario's (or its playbook's).
    pub rules: Option<PathBuf>,
    /// Rule modes forced over the playbook's (`RULE=dry-run` switches a
    /// rule's mitigation off).
    pub rule_modes: Vec<(String, Mode)>,
    /// A running daemon to attach to (wall clock).
    pub daemon: Option<Arc<dyn AttachedDaemon>>,
    /// Told after each run: (runs done, runs in all, runs failed). The
    /// binary draws its progress bar with it; the runner prints nothing.
    pub progress: Option<RunProgress>,
}

/// A callback told after each run: (runs done, runs in all, runs failed).
pub type RunProgress = Arc<dyn Fn(usize, usize, usize) + Send + Sync>;

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("runs", &self.runs)
            .field("seed", &self.seed)
            .field("playbook", &self.playbook)
            .field("rules", &self.rules)
            .field("rule_modes", &self.rule_modes)
            .field("daemon", &self.daemon.as_ref().map(|d| d.address()))
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// Why a `--rule-mode` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleModeError {
    /// There is no `=` between the rule and the mode.
    #[error("{text:?}: expected RULE=MODE")]
    NoEquals {
        /// The argument as given.
        text: String,
    },
    /// The mode is none the engine knows.
    #[error("{reason}")]
    UnknownMode {
        /// The rule.
        rule: String,
        /// The mode as given.
        mode: String,
        /// The engine's refusal, naming the modes it knows.
        reason: String,
    },
}

/// Parses `RULE=MODE`.
pub fn parse_rule_mode(text: &str) -> Result<(String, Mode), RuleModeError> {
    let (rule, mode) = text.split_once('=').ok_or_else(|| RuleModeError::NoEquals { text: text.to_string() })?;
    let parsed = mode.parse().map_err(|reason: engine::mode::UnknownMode| RuleModeError::UnknownMode {
        rule: rule.to_string(),
        mode: mode.to_string(),
        reason: reason.to_string(),
    })?;
    Ok((rule.to_string(), parsed))
}

/// `playbook` with the rule modes `overrides` forced over its own.
pub fn with_modes(playbook: &Playbook, overrides: &[(String, Mode)]) -> Result<Playbook, ChaosError> {
    let mut out = playbook.clone();
    for (rule, mode) in overrides {
        let policy: RulePolicy = toml::from_str(&format!("mode = {:?}", mode.as_str()))
            .map_err(|e| ChaosError::Daemon(format!("rule mode {rule}={}: {e}", mode.as_str())))?;
        out.rule.insert(rule.clone(), policy);
    }
    Ok(out)
}

/// Runs on the virtual clock in flight at once.
const CONCURRENT_RUNS: u32 = 4;

/// Runs `loaded` with `sources` and `options`: every run, then the report.
pub async fn run_scenario(loaded: &Loaded, sources: &Sources, options: &Options) -> Result<Report, ChaosError> {
    let plan = &loaded.plan;
    let runs = options.runs.unwrap_or(plan.runs).max(1);
    let seed = options.seed.unwrap_or(plan.seed);
    let started = Instant::now();
    let mut records: Vec<RunRecord> = Vec::with_capacity(runs as usize);
    // The sysfs trees are rewritten every step: on tmpfs when there is one.
    let shm = Path::new("/dev/shm");
    let builder = tempfile::Builder::new().prefix("rocemend-chaos-").clone();
    let scratch = if shm.is_dir() { builder.tempdir_in(shm) } else { builder.tempdir() }
        .map_err(|e| ChaosError::io("creating the run's scratch directory", e))?;
    let mut failed = 0;
    let setup = lockstep::Setup {
        rules: &sources.rules,
        playbook: &sources.playbook,
        rule_modes: &options.rule_modes,
        scratch: scratch.path(),
    };
    let mut next = 0;
    while next < runs {
        // Runs on the virtual clock are independent (each its own fabric,
        // leaves, ledger and scratch tree): a few go at once, so one waiting
        // on its gNMI Set or ledger write leaves the CPU to another. The
        // records stay in run order, and each run's is what it would be alone.
        let batch = match plan.clock {
            Clock::Virtual => {
                let end = (next + CONCURRENT_RUNS).min(runs);
                let runs = (next..end).map(|i| lockstep::run(plan, &setup, i, seed.wrapping_add(i as u64)));
                futures_util::future::join_all(runs).await.into_iter().collect::<Result<Vec<_>, _>>()?
            }
            Clock::Wall => vec![wall::run(plan, sources, options, next, seed.wrapping_add(next as u64)).await?],
        };
        for record in batch {
            next += 1;
            if !record.outcome.passed {
                failed += 1;
            }
            records.push(record);
            if let Some(progress) = &options.progress {
                progress(next as usize, runs as usize, failed);
            }
        }
    }
    let summary = Report::summarize(&records);
    Ok(Report {
        scenario: plan.name.clone(),
        description: plan.description.clone(),
        file: loaded.path.display().to_string(),
        clock: match plan.clock {
            Clock::Virtual => "virtual".into(),
            Clock::Wall => "wall".into(),
        },
        step: plan.step,
        passed: records.len() - failed,
        failed,
        elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
        summary,
        bounds: plan.probes.clone(),
        runs: records,
        fleet: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_modes_parse_and_refusals_say_which_part_is_wrong() {
        assert_eq!(parse_rule_mode("link_flap=shadow"), Ok(("link_flap".to_string(), Mode::Shadow)));
        assert_eq!(parse_rule_mode("link_flap"), Err(RuleModeError::NoEquals { text: "link_flap".into() }));
        match parse_rule_mode("link_flap=loud") {
            Err(RuleModeError::UnknownMode { rule, mode, reason }) => {
                assert_eq!((rule.as_str(), mode.as_str()), ("link_flap", "loud"));
                assert!(reason.contains("expected enforce"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
}
