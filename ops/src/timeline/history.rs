//! What the daemon did in the window: its decisions and actions, from the
//! ledger in its sled state directory (or from the running daemon that
//! holds it), and its rule states, replayed.
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

use anyhow::Context;
use engine::dispatch::Decision;
use engine::ledger::{Filter, Ledger, Retention};
use engine::{EngineEvent, Labels, Nanos, RuleSet, State, Store, Topology};

/// The ledger's records, oldest first. sled lets one process open a
/// database: when the daemon that owns `state_dir` is running, they come
/// from it over its control socket (`socket`) instead.
pub fn decisions(state_dir: &Path, socket: Option<&Path>) -> anyhow::Result<Vec<Decision>> {
    let db = state_dir.join("state.sled");
    if !db.is_dir() {
        anyhow::bail!(
            "{}: no ledger here (state.sled is missing); --state names the daemon's state_dir",
            state_dir.display()
        );
    }
    match Store::open(&db) {
        Ok(store) => {
            let ledger = Ledger::open(&store, Retention::default())?;
            Ok(ledger.list(&Filter::default())?)
        }
        Err(e) if format!("{e:?}").contains("WouldBlock") => {
            let socket = socket.map(Path::to_path_buf).unwrap_or_else(|| state_dir.join("control.sock"));
            from_daemon(&socket).with_context(|| {
                format!(
                    "the ledger {} is held by a running daemon, and its control socket {} did not answer",
                    db.display(),
                    socket.display()
                )
            })
        }
        Err(e) => Err(e).with_context(|| format!("cannot open the ledger {}", db.display())),
    }
}

/// Every decision of the daemon listening on `socket`, oldest first.
fn from_daemon(socket: &Path) -> anyhow::Result<Vec<Decision>> {
    let target = crate::control::client::Target::Unix(socket.to_path_buf());
    let reply = crate::commands::runtime()?.block_on(async {
        let mut client = crate::control::client::connect(&target).await?;
        let request = crate::control::pb::ListDecisionsRequest::default();
        client.list_decisions(request).await.map_err(|s| anyhow::anyhow!("{}", s.message()))
    })?;
    reply.into_inner().decisions_json.iter().map(|j| Ok(serde_json::from_str(j)?)).collect()
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
/// `progress` follows the bytes read.
pub fn rule_states(
    recording: &Path,
    until_end: u64,
    rules: RuleSet,
    topology: Option<Arc<Topology>>,
    progress: &crate::progress::Progress,
) -> anyhow::Result<Vec<Transition>> {
    let (input, _) = engine::recording::open_with_rotated(recording)
        .with_context(|| format!("cannot read the recording {}", recording.display()))?;
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
