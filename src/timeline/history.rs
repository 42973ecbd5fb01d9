//! What the daemon did in the window: its decisions and actions, from the
//! ledger in its sled state directory, and its rule states, replayed.
//!
//! The store keeps each rule instance's *current* state only, not its
//! history, so the pending / firing / resolved spans are derived the way
//! `rocemend replay` derives them: the recording, from its start to the
//! window's end, is evaluated through the daemon's rules on its own time.
//! That is what the daemon saw and how it judged it, as long as the rules
//! have not changed since; the page says which rules it used.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use engine::dispatch::Decision;
use engine::ledger::{Filter, Ledger, Retention};
use engine::{EngineEvent, Labels, Nanos, RuleSet, State, Store, Topology};

/// The ledger's records, oldest first. sled lets one process open a
/// database: on a node whose daemon runs, copy the state directory and
/// point `--state` at the copy.
pub fn decisions(state_dir: &Path) -> anyhow::Result<Vec<Decision>> {
    let db = state_dir.join("state.sled");
    if !db.is_dir() {
        anyhow::bail!(
            "{}: no ledger here (state.sled is missing); --state names the daemon's state_dir",
            state_dir.display()
        );
    }
    let store = Store::open(&db).with_context(|| {
        format!(
            "cannot open the ledger {} (a running daemon holds it: copy the state directory and pass --state COPY)",
            db.display()
        )
    })?;
    let ledger = Ledger::open(&store, Retention::default())?;
    Ok(ledger.list(&Filter::default())?)
}

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
pub fn rule_states(
    recording: &Path,
    until_end: u64,
    rules: RuleSet,
    topology: Option<Arc<Topology>>,
) -> anyhow::Result<Vec<Transition>> {
    let file = File::open(recording).with_context(|| format!("cannot read the recording {}", recording.display()))?;
    let input = BufReader::new(file.take(until_end));
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
