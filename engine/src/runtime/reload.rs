//! Reloading the rules off the loop: the files are read and compiled on a
//! blocking thread under a timeout, while the loop goes on ingesting and
//! evaluating; the new set is swapped in when it is ready, unless it would
//! leave no rules or drop more than half of them (a directory emptied or
//! half-deleted by mistake, or read in the middle of a deployment), which is
//! refused unless the request allows it (`rocemend reload --allow-shrink`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::RuleLoader;
use crate::evaluator::ReloadReport;
use crate::rule::{Helpers, RuleSet};

/// How long reading and compiling the rules may take. The 1,000-rule bench
/// set loads in about a second; a minute means a hung filesystem.
pub const RELOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// What a reload request gets back: what changed, or why the running rules stay.
pub type ReloadResult = Result<ReloadReport, ReloadError>;

/// Why a reload was refused; the running rules stay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReloadError {
    /// The daemon runs rules that were not read from a directory.
    #[error("this daemon has no rule directory to reload")]
    NoRuleDirectory,
    /// The rules do not load, or the new set would leave none or drop more
    /// than half of them: every reason, one per line.
    #[error("{}", .0.join("\n"))]
    Refused(Vec<String>),
}

/// A request to reload: whether it may shrink the rule set, and where to answer.
#[derive(Debug)]
pub struct ReloadRequest {
    /// Accept a set that is empty or less than half the running one.
    pub allow_shrink: bool,
    /// The answer, if the requester waits for one.
    pub reply: Option<oneshot::Sender<ReloadResult>>,
}

/// A reload in flight, and the requests waiting for the next one.
pub(super) struct Reloading {
    pub result: oneshot::Receiver<Result<RuleSet, Vec<String>>>,
    pub requests: Vec<ReloadRequest>,
    /// Requests that came while it was in flight: served by one more reload,
    /// since the files may have changed again after this one read them.
    pub queued: Vec<ReloadRequest>,
}

impl Reloading {
    /// Starts loading with `loader` on a blocking thread.
    pub fn start(loader: &RuleLoader, helpers: Helpers, requests: Vec<ReloadRequest>) -> Reloading {
        let (tx, result) = oneshot::channel();
        let loader = Arc::clone(loader);
        tokio::spawn(async move {
            let task = tokio::task::spawn_blocking(move || loader(helpers));
            let loaded = match tokio::time::timeout(RELOAD_TIMEOUT, task).await {
                Ok(Ok(Ok(rules))) => Ok(rules),
                Ok(Ok(Err(errors))) => Err(errors.iter().map(ToString::to_string).collect()),
                Ok(Err(join)) => Err(vec![format!("loading the rules failed: {join}")]),
                Err(_) => Err(vec![format!(
                    "loading the rules took longer than {}s (a hung filesystem?)",
                    RELOAD_TIMEOUT.as_secs()
                )]),
            };
            let _ = tx.send(loaded);
        });
        Reloading { result, requests, queued: Vec::new() }
    }
}

/// Why a new rule set of `new` rules may not replace `running` ones, unless
/// `allowed`: it is empty, or less than half as large.
pub fn shrink_refusal(running: usize, new: usize, allowed: bool) -> Option<String> {
    if allowed {
        return None;
    }
    if new == 0 && running > 0 {
        return Some(format!(
            "the new rule set is empty ({running} rules run now); refused unless asked for \
             (rocemend reload --allow-shrink)"
        ));
    }
    if new * 2 < running {
        return Some(format!(
            "the new rule set has {new} rules, {running} run now: a reload that drops more than half is refused \
             unless asked for (rocemend reload --allow-shrink)"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_or_halved_rule_set_needs_permission() {
        assert!(shrink_refusal(2006, 0, false).unwrap().contains("empty"));
        assert!(shrink_refusal(2006, 943, false).unwrap().starts_with("the new rule set has 943 rules, 2006 run now"));
        assert_eq!(shrink_refusal(2006, 1003, false), None, "half is allowed");
        assert_eq!(shrink_refusal(2006, 0, true), None);
        assert_eq!(shrink_refusal(0, 0, false), None, "nothing ran, nothing is lost");
        assert!(shrink_refusal(1, 0, false).is_some());
    }
}
