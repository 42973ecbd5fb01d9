//! Rules: Rhai files that SREs write, compiled into native rule definitions.
//!
//! A rule file is a Rhai script whose last expression is a map declaring the
//! rule, and which defines `fn fire(w)` and optionally `fn clear(w)`. See
//! `docs/rules.md` for the format; [`load_dir`] and [`compile`] load it.
//!
//! - [`selector`]: PromQL-style series selectors;
//! - [`sandbox`]: the locked-down Rhai engine every rule runs in;
//! - [`decl`]: reading the declaration map into a [`Rule`];
//! - [`script`]: calling `fire` / `clear` with window values;
//! - [`helpers`]: cross-series functions scripts may call.

pub mod decl;
pub mod helpers;
pub mod sandbox;
pub mod script;
pub mod selector;

use crate::errors::Errors;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use decl::{ActionTemplate, Rule, MAX_GROUP_BY};
pub use helpers::{HelperState, Helpers};
pub use script::{Condition, RuleScripts, ScriptError};
pub use selector::Selector;

/// How bad a rule's finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Degrades the fabric.
    Warning,
    /// Stalls training.
    Critical,
}

/// A rule file could not be loaded. Every variant names the file and, where
/// it is known, the line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The rule file.
    pub path: String,
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}:{}: {}", self.path, self.line, self.column, self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for RuleError {}

/// A compiled set of rules sharing one sandboxed Rhai engine.
#[derive(Clone)]
pub struct RuleSet {
    /// The rules, in file-name order.
    pub rules: Vec<Arc<Rule>>,
    /// The engine their scripts run in.
    pub scripts: RuleScripts,
}

impl fmt::Debug for RuleSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleSet")
            .field("rules", &self.rules.iter().map(|r| r.name.as_str()).collect::<Vec<_>>())
            .finish()
    }
}

impl RuleSet {
    /// The rule named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Rule>> {
        self.rules.iter().find(|r| r.name == name)
    }

    /// The set without the rules `playbook` switches off (`mode = "off"`).
    pub fn without_disabled(mut self, playbook: &crate::playbook::Playbook) -> RuleSet {
        let off = playbook.disabled_rules();
        self.rules.retain(|r| !off.contains(&r.name.as_str()));
        self
    }
}

/// Every error of a rule set, one per line.
pub type RuleErrors = Errors<RuleError>;

/// Compiles one rule from source text; `path` names it in errors.
pub fn compile(scripts: &RuleScripts, path: &str, source: &str) -> Result<Rule, RuleErrors> {
    decl::compile(scripts, path, source)
}

/// Loads every `*.rhai` file of `dir` (sorted by name). All errors are
/// returned together, so `rocemend check` can show every one.
pub fn load_dir(dir: &Path, helpers: Helpers) -> Result<RuleSet, RuleErrors> {
    let files = rule_files(dir)?;
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            std::fs::read_to_string(p).map(|s| (p.display().to_string(), s)).map_err(|e| RuleError {
                path: p.display().to_string(),
                line: 0,
                column: 0,
                message: format!("cannot read: {e}"),
            })
        })
        .collect::<Result<_, _>>()?;
    load_sources(&sources, helpers)
}

/// Compiles rules from `(path, source)` pairs; used for embedded rule sets.
pub fn load_sources(sources: &[(String, String)], helpers: Helpers) -> Result<RuleSet, RuleErrors> {
    let scripts = RuleScripts::new(helpers);
    let mut rules: Vec<Arc<Rule>> = Vec::new();
    let mut errors = Vec::new();
    for (path, source) in sources {
        match compile(&scripts, path, source) {
            Ok(rule) => {
                if let Some(other) = rules.iter().find(|r| r.name == rule.name) {
                    errors.push(RuleError {
                        path: path.clone(),
                        line: 0,
                        column: 0,
                        message: format!("rule name {:?} is also used by {}", rule.name, other.path),
                    });
                } else {
                    rules.push(Arc::new(rule));
                }
            }
            Err(e) => errors.extend(e),
        }
    }
    Errors::or_ok(errors, RuleSet { rules, scripts })
}

/// The rule files of a directory, sorted.
pub fn rule_files(dir: &Path) -> Result<Vec<PathBuf>, RuleError> {
    let entries = std::fs::read_dir(dir).map_err(|e| RuleError {
        path: dir.display().to_string(),
        line: 0,
        column: 0,
        message: format!("cannot read rule directory: {e}"),
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rhai"))
        .collect();
    files.sort();
    Ok(files)
}
