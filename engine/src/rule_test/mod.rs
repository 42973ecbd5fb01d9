//! The offline rule test runner, like `promtool test rules`.
//!
//! Every rule `rules/<stem>.rhai` has its cases in `rules/<stem>.test.toml`:
//! input series written in promtool's expanding notation, the states its
//! instances must be in at given times, and the exact set of actions it
//! must propose. Each case runs the rule alone in a fresh engine, one
//! sample per series per step, evaluating after every step, exactly as the
//! daemon would with that data. See `docs/rules.md` for the file format.
//!
//! ```
//! use engine::rule_test;
//!
//! let rule = r#"
//!     fn fire(w) { w.flaps >= 3 }
//!     #{
//!         name: "link-flap",
//!         select: ["link_carrier_down_count"],
//!         group_by: ["node", "netdev"],
//!         windows: #{ flaps: increase("link_carrier_down_count", "30s") },
//!         actions: [ #{ action: "link.isolate", target: #{ node: "{node}", netdev: "{netdev}" } } ],
//!     }
//! "#;
//! let tests = r#"
//!     [[case]]
//!     name = "three flaps isolate the link"
//!     interval = "1s"
//!     [[case.series]]
//!     series = 'link_carrier_down_count{node="n1",netdev="eth0"}'
//!     bits = 32
//!     values = "0 1 2 3 3"
//!     [[case.expect]]
//!     at = "2s"
//!     state = "inactive"
//!     [[case.expect]]
//!     at = "3s"
//!     state = "firing"
//!     [[case.action]]
//!     at = "3s"
//!     kind = "link.isolate"
//!     target = { node = "n1", netdev = "eth0" }
//! "#;
//! let report = rule_test::run_sources("flap.rhai", rule, "flap.test.toml", tests).unwrap();
//! assert!(report.passed(), "{report}");
//! ```
//!
//! - [`expand`]: the expanding notation of values;
//! - [`format`](mod@format): the test file's schema;
//! - `case`: validating a test file into cases (every `at` on the step grid);
//! - `runner`: running one case against an evaluator;
//! - `shadow`: window values for failure reports;
//! - [`report`]: what a run found, printable.

pub mod expand;
pub mod format;
pub mod report;

mod case;
mod runner;
mod shadow;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use case::MAX_SERIES_PER_CASE;
pub use report::{CaseReport, DirReport, Failure, FileOutcome, FileReport, FileResult};

use crate::config::TomlError;
use crate::rule::{self, Helpers, RuleError, RuleErrors};
use crate::time::{Nanos, SECOND};
use crate::topology::{Topology, TopologyError};

/// The wall-clock time of a case's time 0: 2023-11-14T00:00:00Z. Midnight
/// is a multiple of every bucket width that divides a day (a `"300ms"`
/// window has 37.5 ms buckets, a `"5m"` one 37.5 s buckets), so bucket edges
/// fall on round case times and window values do not depend on the epoch.
pub const CASE_EPOCH: Nanos = 1_699_920_000 * SECOND;

/// The suffix that turns a rule's stem into its test file's name.
pub const TEST_SUFFIX: &str = ".test.toml";

/// A test file, its rule or its inventory could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestFileError {
    /// A file could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The test file is not TOML, does not match the schema, or asks for
    /// something impossible (an `at` off the step grid, a malformed values
    /// string, a subject no series has); `path:line:column: message`.
    #[error("{0}")]
    Invalid(#[from] TomlError),
    /// The rule under test does not load.
    #[error(transparent)]
    Rule(RuleErrors),
    /// The inventory the test file names does not load.
    #[error("{test}: inventory: {error}")]
    Inventory {
        /// Where the test file names it (`path:line:column`).
        test: String,
        /// Why it does not load.
        error: TopologyError,
    },
}

/// Runs the test file `test_path` against the rule `rule_path`.
pub fn run_file(rule_path: &Path, test_path: &Path) -> Result<FileReport, TestFileError> {
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|source| TestFileError::Read { path: p.display().to_string(), source })
    };
    let (rule_source, test_source) = (read(rule_path)?, read(test_path)?);
    run_sources(&rule_path.display().to_string(), &rule_source, &test_path.display().to_string(), &test_source)
}

/// Runs test file text against rule text. The paths name the files in
/// reports and errors; an `inventory` is resolved relative to `test_path`.
pub fn run_sources(
    rule_path: &str,
    rule_source: &str,
    test_path: &str,
    test_source: &str,
) -> Result<FileReport, TestFileError> {
    let plan = case::plan(test_source, test_path)?;
    let loc = case::Locator { text: test_source, origin: test_path };
    // Loaded once up front, so a broken rule is one error, not one per case.
    let rules = rule::load_sources(&[(rule_path.to_string(), rule_source.to_string())], Helpers::default())
        .map_err(TestFileError::Rule)?;
    let name = rules.rules[0].name.clone();
    let topology = match &plan.inventory {
        None => None,
        Some((path, (line, column))) => {
            let full = Path::new(test_path).parent().unwrap_or(Path::new("")).join(path);
            let topology = Topology::load(&full)
                .map_err(|error| TestFileError::Inventory { test: format!("{test_path}:{line}:{column}"), error })?;
            Some(Arc::new(topology))
        }
    };
    let cases = plan
        .cases
        .iter()
        .map(|case| runner::run_case(rule_path, rule_source, topology.clone(), case, &loc))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(FileReport { rule: name, rule_path: rule_path.to_string(), test_path: test_path.to_string(), cases })
}

/// Runs a rule file against its `<stem>.test.toml`, or every rule of a
/// directory ([`run_dir`]).
pub fn run_path(path: &Path) -> Result<DirReport, TestFileError> {
    if path.is_dir() {
        return run_dir(path);
    }
    if path.extension().is_none_or(|x| x != "rhai") {
        return Err(TestFileError::Read {
            path: path.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "neither a rule directory nor a .rhai file"),
        });
    }
    Ok(DirReport { files: vec![outcome(path)] })
}

/// The test file of a rule: `<stem>.test.toml` beside it.
fn test_of(rule: &Path) -> PathBuf {
    let stem = rule.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    rule.with_file_name(format!("{stem}{TEST_SUFFIX}"))
}

/// One rule run against its test file; a rule without one is still
/// compiled, so its load errors show.
fn outcome(rule_path: &Path) -> FileOutcome {
    let test_path = test_of(rule_path);
    let result = if test_path.exists() {
        match run_file(rule_path, &test_path) {
            Ok(report) => FileResult::Ran(report),
            Err(e) => FileResult::Error(e),
        }
    } else {
        match rule::read_rule_file(rule_path).map_err(|e| {
            let message = e.to_string();
            TestFileError::Rule(RuleError { path: rule_path.display().to_string(), line: 0, column: 0, message }.into())
        }) {
            Err(e) => FileResult::Error(e),
            Ok(source) => match rule::load_sources(&[(rule_path.display().to_string(), source)], Helpers::default()) {
                Ok(_) => FileResult::NoTests,
                Err(errors) => FileResult::Error(TestFileError::Rule(errors)),
            },
        }
    };
    FileOutcome { rule_path: rule_path.to_path_buf(), test_path, result }
}

/// Runs every `*.rhai` of `dir` against its `<stem>.test.toml`, reporting
/// rules without a test file, test files without a rule, and two files
/// that declare the same rule name (the daemon refuses such a directory).
pub fn run_dir(dir: &Path) -> Result<DirReport, TestFileError> {
    let rules = rule::rule_files(dir).map_err(|e| TestFileError::Rule(e.into()))?;
    let mut files: Vec<FileOutcome> = rules.iter().map(|p| outcome(p)).collect();
    if let Err(errors) = rule::load_dir(dir, Helpers::default()) {
        for clash in errors.into_iter().filter(|e| e.message.contains("is also used by")) {
            let path = PathBuf::from(&clash.path);
            files.push(FileOutcome {
                test_path: test_of(&path),
                rule_path: path,
                result: FileResult::Error(TestFileError::Rule(clash.into())),
            });
        }
    }
    let entries =
        std::fs::read_dir(dir).map_err(|source| TestFileError::Read { path: dir.display().to_string(), source })?;
    let mut orphans: Vec<FileOutcome> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|test_path| {
            let name = test_path.file_name()?.to_str()?;
            let stem = name.strip_suffix(TEST_SUFFIX)?;
            let rule_path = test_path.with_file_name(format!("{stem}.rhai"));
            (!rule_path.exists()).then_some(FileOutcome { rule_path, test_path, result: FileResult::NoRule })
        })
        .collect();
    orphans.sort_by(|a, b| a.test_path.cmp(&b.test_path));
    files.extend(orphans);
    Ok(DirReport { files })
}
