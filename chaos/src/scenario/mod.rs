//! Chaos scenarios as TOML files: the topology, the jobs, the steady-state
//! hypothesis, the faults, what the daemon must (and must not) do, abort
//! conditions, and how many runs. The format is documented in
//! `docs/chaos.md`; [`load`] reads a file and [`Scenario::resolve`] checks
//! it, every error naming `file:line:col`.
//!
//! - [`spec`]: the file's schema;
//! - [`plan`]: the resolved scenario: durations in nanoseconds, faults
//!   turned into fabric [`Effect`](sim::fabric::Effect)s with their times
//!   for one run ([`ScenarioPlan::schedule`]);
//! - [`check`]: a run's record against the expectations.

pub mod check;
pub mod plan;
pub mod spec;

use std::path::{Path, PathBuf};

pub use check::check;
pub use plan::{FaultPlan, ScenarioPlan, Scheduled};
pub use spec::{ActionMatch, Clock, Expect, FaultKind, FaultSpec, Probe, Scenario};

/// A scenario file is wrong; the message says where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}:{column}: {message}")]
pub struct ScenarioError {
    /// The file.
    pub path: String,
    /// 1-based line (0 when not known).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl From<engine::config::TomlError> for ScenarioError {
    fn from(e: engine::config::TomlError) -> Self {
        ScenarioError { path: e.path, line: e.line, column: e.column, message: e.message }
    }
}

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
/// (inventory, rules, playbook) are relative to the file's directory.
pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    let text = engine::config::read_text(path)?;
    parse(&text, path)
}

/// Parses and resolves scenario `text`, read from `path`.
pub fn parse(text: &str, path: &Path) -> Result<Loaded, ScenarioError> {
    let origin = path.display().to_string();
    let scenario: Scenario = engine::config::parse_toml(text, &origin)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let plan = scenario.resolve(text, &origin, &base)?;
    Ok(Loaded { path: path.to_path_buf(), text: text.to_string(), scenario, plan })
}
