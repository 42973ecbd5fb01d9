//! Chaos scenarios as TOML files: the topology, the jobs, the steady-state
//! hypothesis, the faults, what the daemon must (and must not) do, abort
//! conditions, and how many runs. The format is documented in
//! `docs/chaos.md`; [`load`] reads a file and [`Scenario::resolve`] checks
//! it, every error naming `file:line:col`.
//!
//! - [`spec`]: the file's schema (its faults are the shared
//!   [`FaultSpec`](crate::spec::FaultSpec));
//! - [`plan`]: the resolved scenario, on the shared plan (`crate::plan`):
//!   durations in nanoseconds, faults turned into fabric
//!   [`Effect`](sim::fabric::Effect)s with their times for one run
//!   ([`ScenarioPlan::schedule`]);
//! - [`check`]: a run's record against the expectations;
//! - [`inventories`]: the inventories the library's scenarios name, built in.

pub mod check;
pub mod inventories;
pub mod plan;
pub mod spec;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::Topology;

pub use check::check;
pub use plan::{ScenarioPlan, Scheduled};
pub use spec::{ActionMatch, Clock, Expect, Probe, Scenario};

use crate::spec::ScenarioError;

/// A scenario file, read and resolved.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// As written.
    pub scenario: Scenario,
    /// Resolved.
    pub plan: ScenarioPlan,
}

/// Reads and resolves the scenario at `path`. Relative paths in it
/// (inventory, rules, playbook) are found from the file's folder, then from
/// the current directory.
pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    load_on(path, None)
}

/// [`load`], on `inventory` (a daemon config's) instead of the scenario's
/// own when one is given: its selectors must then name that inventory's
/// nodes and switches.
pub fn load_on(path: &Path, inventory: Option<Arc<Topology>>) -> Result<Loaded, ScenarioError> {
    let text = engine::config::read_text(path)?;
    parse_on(&text, path, inventory)
}

/// Parses and resolves scenario `text`, read from `path`.
pub fn parse(text: &str, path: &Path) -> Result<Loaded, ScenarioError> {
    parse_on(text, path, None)
}

/// [`parse`], on `inventory` instead of the scenario's own when given.
pub fn parse_on(text: &str, path: &Path, inventory: Option<Arc<Topology>>) -> Result<Loaded, ScenarioError> {
    let origin = path.display().to_string();
    let scenario: Scenario = engine::config::parse_toml(text, &origin)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let plan = scenario.resolve(text, &origin, &base, inventory)?;
    Ok(Loaded { path: path.to_path_buf(), text: text.to_string(), scenario, plan })
}
