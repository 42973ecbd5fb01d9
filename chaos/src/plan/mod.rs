//! The one resolution both harnesses share: a file's durations in
//! nanoseconds, its paths found, its faults checked against the fabric of
//! its inventory and turned into [`FaultPlan`]s — their defaults, where
//! they land ([`site`]), their label, their fabric effects — every error
//! naming `file:line:col` through one [`Ctx`]. The scenario's plan
//! (`scenario::plan`) and the game day's (`fleet_day::plan`) are built
//! on it, each adding what only it has.
//!
//! - [`fault`]: a fault resolved, and its fabric effects;
//! - [`site`]: where a fault lands, as the labels rules and actions use.

pub mod fault;
pub mod site;

use std::ops::Range;
use std::path::{Path, PathBuf};

use engine::Nanos;
use serde::{Deserialize, Serialize};
use toml::Spanned;

pub use fault::FaultPlan;

use crate::spec::{Dur, ScenarioError};

/// A probe's bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// The probe.
    pub probe: String,
    /// Lowest allowed.
    pub min: Option<f64>,
    /// Highest allowed.
    pub max: Option<f64>,
}

impl Bound {
    /// Whether `v` is within.
    pub fn holds(&self, v: f64) -> bool {
        self.min.is_none_or(|m| v >= m) && self.max.is_none_or(|m| v <= m)
    }

    /// Whether it bounds anything: a probe recorded only to be reported
    /// has no `min` and no `max`, and says nothing about the steady state.
    pub fn bounds(&self) -> bool {
        self.min.is_some() || self.max.is_some()
    }
}

/// The file being resolved: its text and name, for error locations, and
/// its folder, for the paths it names.
#[derive(Debug, Clone)]
pub struct Ctx<'a> {
    /// The file's text.
    pub text: &'a str,
    /// Its name, as errors give it.
    pub origin: &'a str,
    /// Its folder: relative paths are found from there first.
    pub base: PathBuf,
    /// What the file is, for messages: `scenario`, `game`.
    pub what: &'static str,
}

impl Ctx<'_> {
    /// An error at `span` (`0..0`: nowhere in particular).
    pub fn err(&self, span: Range<usize>, message: impl Into<String>) -> ScenarioError {
        let (line, column) =
            if span.is_empty() && span.start == 0 { (0, 0) } else { engine::config::line_col(self.text, span.start) };
        ScenarioError { path: self.origin.to_string(), line, column, message: message.into() }
    }

    /// `d` in nanoseconds; `field` names it in the error.
    pub fn dur(&self, d: &Dur, field: &str) -> Result<Nanos, ScenarioError> {
        d.nanos().map_err(|e| self.err(d.span(), format!("{field}: {e}")))
    }

    /// [`Ctx::dur`], or `default` when it was not written.
    pub fn opt(&self, d: &Option<Dur>, field: &str, default: Nanos) -> Result<Nanos, ScenarioError> {
        d.as_ref().map(|d| self.dur(d, field)).transpose().map(|v| v.unwrap_or(default))
    }

    /// [`Ctx::dur`], refusing zero: a wait, a timeout, a lease.
    pub fn positive(&self, d: &Dur, field: &str) -> Result<Nanos, ScenarioError> {
        match self.dur(d, field)? {
            0 => Err(self.err(d.span(), format!("{field} = {:?}: must be more than zero", d.text()))),
            ns => Ok(ns),
        }
    }

    /// [`Ctx::positive`], or `default` when it was not written.
    pub fn positive_or(&self, d: &Option<Dur>, field: &str, default: Nanos) -> Result<Nanos, ScenarioError> {
        d.as_ref().map(|d| self.positive(d, field)).transpose().map(|v| v.unwrap_or(default))
    }

    /// The file or directory `p` names: from the file's folder, then from
    /// the current directory; an error naming both when neither has it.
    pub fn path(&self, p: &Spanned<String>, what: &str) -> Result<PathBuf, ScenarioError> {
        locate(&self.base, p.get_ref()).ok_or_else(|| {
            self.err(
                p.span(),
                format!(
                    "{what} {:?}: neither {} (from the {}'s folder) nor {} (from the current directory) exists",
                    p.get_ref(),
                    self.base.join(p.get_ref()).display(),
                    self.what,
                    Path::new(p.get_ref()).display()
                ),
            )
        })
    }
}

/// `rel` from `base`, else from the current directory, whichever exists
/// first (an absolute `rel` is itself).
pub fn locate(base: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel);
    [base.join(rel), rel.to_path_buf()].into_iter().find(|p| p.exists())
}

/// Where an optional field was written, or `or` when it was not (`0..0`:
/// no location).
pub fn span_or<T>(field: &Option<Spanned<T>>, or: Range<usize>) -> Range<usize> {
    field.as_ref().map(|f| f.span()).unwrap_or(or)
}
