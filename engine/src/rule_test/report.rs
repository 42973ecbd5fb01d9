//! What a test run found, printable as the CLI shows it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use super::TestFileError;
use crate::contracts::Action;
use crate::instance::State;
use crate::labels::Labels;
use crate::time::{Nanos, Span};

/// One way a case did not go as its test file says. Times are case times
/// (0 is the first step).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Failure {
    /// An instance was not in the expected state.
    State {
        /// The step's time.
        at: Nanos,
        /// The rule.
        rule: String,
        /// The subject's `group_by` labels.
        subject: Labels,
        /// The state the test expects.
        expected: State,
        /// The staleness the test expects, when it says.
        expected_stale: Option<bool>,
        /// The state the engine has.
        got: State,
        /// Whether the engine has the subject's inputs as stale.
        got_stale: bool,
        /// The subject's window values at `at`.
        windows: Vec<(String, f64)>,
        /// The subject's transitions up to `at` (the last few), as
        /// (time, from, to).
        history: Vec<(Nanos, State, State)>,
    },
    /// A listed action was not proposed at its time.
    MissingAction {
        /// When it should have been proposed.
        at: Nanos,
        /// Its kind.
        kind: String,
        /// Its target.
        target: Labels,
        /// Its parameters, when the test gives them.
        params: Option<BTreeMap<String, String>>,
    },
    /// An action was proposed that the test does not list.
    UnexpectedAction {
        /// When it was proposed.
        at: Nanos,
        /// The subject that proposed it (its `group_by` labels).
        subject: Labels,
        /// The action.
        action: Action,
    },
    /// A firing instance could not build its action (a target template
    /// names a label the subject lacks).
    ActionError {
        /// When.
        at: Nanos,
        /// The subject's `group_by` labels.
        subject: Labels,
        /// What the engine said.
        message: String,
    },
    /// The rule failed at run time and was quarantined: nothing after this
    /// was evaluated.
    Quarantined {
        /// When.
        at: Nanos,
        /// The script error.
        error: String,
    },
}

/// Formats a window value compactly: whole numbers as such, small and
/// huge ones in scientific notation, the rest with three decimals.
pub fn format_value(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{}", x as i64);
    }
    let a = x.abs();
    if (1e-3..1e6).contains(&a) {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{x:.3e}")
    }
}

fn state_text(state: State, stale: Option<bool>) -> String {
    match stale {
        Some(true) => format!("{} (stale)", state.as_str()),
        Some(false) => format!("{} (fresh)", state.as_str()),
        None => state.as_str().to_string(),
    }
}

fn params_text(params: &BTreeMap<String, String>) -> String {
    let list: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(" ({})", list.join(", "))
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::State { at, rule, subject, expected, expected_stale, got, got_stale, windows, history } => {
                let got_stale = expected_stale.map(|_| *got_stale);
                write!(
                    f,
                    "at {}: {rule}{subject} expected {}, got {}",
                    Span(*at),
                    state_text(*expected, *expected_stale),
                    state_text(*got, got_stale)
                )?;
                let values: Vec<String> = windows.iter().map(|(n, v)| format!("{n}={}", format_value(*v))).collect();
                write!(f, " (windows: {}", values.join(", "))?;
                if history.is_empty() {
                    write!(f, "; no transitions yet)")
                } else {
                    let steps: Vec<String> = history
                        .iter()
                        .map(|(t, from, to)| format!("{} {}→{}", Span(*t), from.as_str(), to.as_str()))
                        .collect();
                    write!(f, "; transitions: {})", steps.join(", "))
                }
            }
            Failure::MissingAction { at, kind, target, params } => {
                write!(f, "missing action at {}: {kind} {target}", Span(*at))?;
                if let Some(p) = params.as_ref().filter(|p| !p.is_empty()) {
                    f.write_str(&params_text(p))?;
                }
                Ok(())
            }
            Failure::UnexpectedAction { at, subject, action } => {
                write!(f, "unexpected action at {}: {action} from {subject}", Span(*at))
            }
            Failure::ActionError { at, subject, message } => {
                write!(f, "at {}: {subject} could not propose its action: {message}", Span(*at))
            }
            Failure::Quarantined { at, error } => {
                write!(f, "at {}: the rule failed and was quarantined: {error}", Span(*at))
            }
        }
    }
}

/// The result of one case.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// Steps run.
    pub steps: usize,
    /// What went wrong; empty when the case passed.
    pub failures: Vec<Failure>,
}

impl CaseReport {
    /// Whether the case passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

impl fmt::Display for CaseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passed() {
            return write!(f, "ok    {}", self.name);
        }
        write!(f, "FAIL  {}", self.name)?;
        for failure in &self.failures {
            write!(f, "\n        {failure}")?;
        }
        Ok(())
    }
}

/// The result of one rule's test file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileReport {
    /// The rule's name.
    pub rule: String,
    /// The rule file.
    pub rule_path: String,
    /// The test file.
    pub test_path: String,
    /// One report per case, in file order.
    pub cases: Vec<CaseReport>,
}

impl FileReport {
    /// Whether every case passed.
    pub fn passed(&self) -> bool {
        self.cases.iter().all(CaseReport::passed)
    }

    /// The cases that failed.
    pub fn failed(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases.iter().filter(|c| !c.passed())
    }
}

impl fmt::Display for FileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let failed = self.failed().count();
        if failed == 0 {
            write!(f, "PASS  {} ({}): {} cases", self.rule_path, self.rule, self.cases.len())?;
        } else {
            write!(
                f,
                "FAIL  {} ({}): {failed} of {} cases failed ({})",
                self.rule_path,
                self.rule,
                self.cases.len(),
                self.test_path
            )?;
        }
        for case in &self.cases {
            write!(f, "\n  {case}")?;
        }
        Ok(())
    }
}

/// What became of one file of a rule directory.
#[derive(Debug)]
#[non_exhaustive]
pub enum FileResult {
    /// The tests ran.
    Ran(FileReport),
    /// The rule has no test file.
    NoTests,
    /// A test file has no rule next to it (renamed or deleted rule).
    NoRule,
    /// The test file, the rule or the inventory could not be loaded.
    Error(TestFileError),
}

/// One rule (or orphan test file) of a directory.
#[derive(Debug)]
pub struct FileOutcome {
    /// `<stem>.rhai`.
    pub rule_path: PathBuf,
    /// `<stem>.test.toml`.
    pub test_path: PathBuf,
    /// What happened.
    pub result: FileResult,
}

impl FileOutcome {
    /// Whether the rule has tests and all of them passed.
    pub fn passed(&self) -> bool {
        matches!(&self.result, FileResult::Ran(r) if r.passed())
    }
}

impl fmt::Display for FileOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.result {
            FileResult::Ran(report) => write!(f, "{report}"),
            FileResult::NoTests => write!(
                f,
                "UNTESTED  {}: no test file (expected {})",
                self.rule_path.display(),
                self.test_path.display()
            ),
            FileResult::NoRule => {
                write!(f, "ORPHAN  {}: no rule file (expected {})", self.test_path.display(), self.rule_path.display())
            }
            // Every error names its own file (and line and column).
            FileResult::Error(e) => write!(f, "ERROR  {e}"),
        }
    }
}

/// The results for a whole rule directory.
#[derive(Debug)]
pub struct DirReport {
    /// One outcome per rule file, then per orphan test file, sorted by name.
    pub files: Vec<FileOutcome>,
}

impl DirReport {
    /// Whether every rule has a test file, every test file a rule, and every
    /// case passed.
    pub fn passed(&self) -> bool {
        self.files.iter().all(FileOutcome::passed)
    }
}

impl fmt::Display for DirReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for file in &self.files {
            writeln!(f, "{file}")?;
        }
        let count = |p: fn(&FileResult) -> bool| self.files.iter().filter(|o| p(&o.result)).count();
        let cases: usize =
            self.files.iter().map(|o| if let FileResult::Ran(r) = &o.result { r.cases.len() } else { 0 }).sum();
        write!(
            f,
            "{} files, {cases} cases: {} passed, {} failed, {} untested, {} orphan test files, {} errors",
            self.files.len(),
            self.files.iter().filter(|o| o.passed()).count(),
            count(|r| matches!(r, FileResult::Ran(rep) if !rep.passed())),
            count(|r| matches!(r, FileResult::NoTests)),
            count(|r| matches!(r, FileResult::NoRule)),
            count(|r| matches!(r, FileResult::Error(_))),
        )
    }
}
