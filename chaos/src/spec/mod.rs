//! What a scenario file and a fleet game day file share, as written: one
//! [`FaultSpec`] (each harness says which of its keys apply), durations
//! as people write them ([`Dur`]), tables that remember where each key was
//! written ([`Keyed`]), and the error that names `file:line:col`
//! ([`ScenarioError`]). [`crate::plan`] resolves them.
//!
//! - [`fault`]: the fault table and its kinds;
//! - [`dur`]: a duration and where it was written;
//! - [`keyed`]: a table with the place of each of its keys.

pub mod dur;
pub mod fault;
pub mod keyed;

pub use dur::Dur;
pub use fault::{By, FaultExpectSpec, FaultKind, FaultSpec};
pub use keyed::Keyed;

/// A scenario or game day file is wrong; the message says where.
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
