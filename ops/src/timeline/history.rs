//! What the daemon did in the window: its decisions and actions (the
//! ledger, read by [`crate::recorded::decisions`]), and its rule states,
//! replayed.
//!
//! The store keeps each rule instance's *current* state only, not its
//! history, so the pending / firing / resolved spans are derived the way
//! `rocemend replay` derives them: the recording, from its start to the
//! window's end, is evaluated through the daemon's rules on its own time.
//! That is what the daemon saw and how it judged it, as long as the rules
//! have not changed since; the page says which rules it used.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use engine::{EngineEvent, Labels, Nanos, RuleSet, State, Topology};

use super::TimelineError;
use crate::progress::Progress;

/// One state change of a rule instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// Rule.
    pub rule: String,
    /// Instance subject.
    pub subject: Labels,
    /// New state.
    pub to: State,
    /// When.
    pub at: Nanos,
}

/// The rule instances' transitions over the first `until_end` bytes of the
/// recording, in time order.
/// `progress` follows the bytes read.
pub fn rule_states(
    recording: &Path,
    until_end: u64,
    rules: RuleSet,
    topology: Option<Arc<Topology>>,
    progress: &Progress,
) -> Result<Vec<Transition>, TimelineError> {
    let input = crate::recorded::open(recording)?;
    let input = std::io::BufReader::new(progress.reader(input.take(until_end)));
    let bt = engine::backtest::run(input, &recording.display().to_string(), rules, topology)?;
    Ok(bt
        .events
        .into_iter()
        .filter_map(|e| match e {
            EngineEvent::Transition { rule, subject, to, at, .. } => Some(Transition { rule, subject, to, at }),
            _ => None,
        })
        .collect())
}
