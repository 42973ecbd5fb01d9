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
//! - [`native`]: `fire` / `clear` bodies compiled into native predicates;
//! - [`helpers`]: cross-series functions scripts may call;
//! - [`template`]: action templates filled for a subject;
//! - `touched`: the running jobs an action's target touches.

pub mod decl;
pub mod helpers;
pub mod native;
pub mod sandbox;
pub mod script;
pub mod selector;
pub mod template;
mod touched;

use crate::errors::Errors;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use decl::{ActionTemplate, Each, Rule, MAX_GROUP_BY};
pub use helpers::{HelperState, Helpers};
pub use native::{NativePredicate, Runs};
pub use script::{Condition, RuleScripts, ScriptError};
pub use selector::Selector;
pub use template::TemplateError;

/// How bad a rule's finding is: carried by its proposals, so it is defined
/// with them.
pub use crate::contracts::Severity;

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

    /// The set without the rules named in `off` (those a playbook switches
    /// off: [`Playbook::disabled_rules`](crate::playbook::Playbook::disabled_rules)).
    pub fn without_disabled(mut self, off: &[&str]) -> RuleSet {
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

/// The largest rule file read. The standard rules are 1 to 3 KiB; a file
/// of a megabyte is not a rule, and reading it must not cost the daemon.
pub const MAX_RULE_FILE: u64 = 1 << 20;

/// Loads every `*.rhai` file of `dir` (sorted by name). All errors are
/// returned together, so `rocemend check` can show every one.
///
/// Only regular files are read (a FIFO or a device named `x.rhai` would
/// block the reader or never end), each at most [`MAX_RULE_FILE`] bytes.
pub fn load_dir(dir: &Path, helpers: Helpers) -> Result<RuleSet, RuleErrors> {
    let files = rule_files(dir)?;
    let mut sources = Vec::new();
    let mut errors = Vec::new();
    for path in &files {
        match read_rule_file(path) {
            Ok(source) => sources.push((path.display().to_string(), source)),
            Err(e) => {
                errors.push(RuleError { path: path.display().to_string(), line: 0, column: 0, message: e.to_string() })
            }
        }
    }
    match load_sources(&sources, helpers) {
        Ok(set) if errors.is_empty() => Ok(set),
        Ok(_) => Err(Errors(errors)),
        Err(more) => {
            errors.extend(more);
            Err(Errors(errors))
        }
    }
}

/// Reads one rule file: a regular file (checked on the open file, so it
/// cannot be swapped for a FIFO in between) of at most [`MAX_RULE_FILE`]
/// bytes. Opened without blocking, so a FIFO is refused, not waited on.
pub fn read_rule_file(path: &Path) -> Result<String, RuleFileError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(RuleFileError::NotAFile(kind_of(&meta)));
    }
    if meta.len() > MAX_RULE_FILE {
        return Err(RuleFileError::TooLarge(meta.len()));
    }
    let mut text = String::new();
    file.take(MAX_RULE_FILE + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_RULE_FILE {
        return Err(RuleFileError::Grew);
    }
    Ok(text)
}

/// A rule file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuleFileError {
    /// Opening or reading it failed.
    #[error("cannot read: {0}")]
    Unreadable(#[from] std::io::Error),
    /// It is a FIFO, a directory, a socket or a device.
    #[error("not a regular file ({0}); rules are read from regular files only")]
    NotAFile(&'static str),
    /// It is larger than [`MAX_RULE_FILE`] (its size in bytes).
    #[error("{0} bytes; a rule file is at most {MAX_RULE_FILE} bytes")]
    TooLarge(u64),
    /// It grew past [`MAX_RULE_FILE`] while being read.
    #[error("grew past {MAX_RULE_FILE} bytes while being read")]
    Grew,
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a file"
    }
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
                    let (line, column) = decl::field_position(source, "name", (1, 1));
                    errors.push(RuleError {
                        path: path.clone(),
                        line,
                        column,
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
