//! The dispatcher's own task: proposals, resolutions, ticks and dispatch
//! commands arrive in order on one inbox; decisions leave on another
//! channel. A slow actuator holds up this task only, never detection.

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::command::DispatchCommand;
use super::{DispatchStatus, DISPATCH_CHANNEL};
use crate::contracts::Proposal;
use crate::dispatch::{CanaryBoard, OutcomeBoard};
use crate::dispatch::{Decision, Dispatcher};
use crate::evaluator::{FiringSnapshot, Observation, Reading};
use crate::labels::Labels;
use crate::time::{wall_clock_now, Nanos};

/// What the dispatcher's task is given.
pub(super) enum ToDispatcher {
    /// A proposal to decide on.
    Proposal(Proposal),
    /// An instance stopped firing: undo and expire what it left.
    Resolved { rule: String, subject: Labels, at: Nanos },
    /// Time passed: expiry, ledger housekeeping, re-verification when due.
    Tick(Nanos),
    /// A sensor reconnected to a target (its labels, e.g. `switch`): the
    /// actions in effect there are read back.
    Reconnected { target: Labels, at: Nanos },
    /// A request, with the loop's time.
    Command(DispatchCommand, Nanos),
    /// A canary is due: what its rule reads now.
    JudgeCanary { id: String, reading: Reading, at: Nanos },
    /// An open outcome check: what its rule sees now (`None`: unreadable).
    JudgeOutcome { id: String, seen: Option<Observation>, at: Nanos },
}

/// The running task: its inbox and what it decides.
pub(super) struct DispatcherTask {
    /// Where the loop sends it work; dropped to let it finish.
    pub inbox: mpsc::Sender<ToDispatcher>,
    /// Its decisions, in order.
    pub decisions: mpsc::Receiver<Decision>,
    /// The task.
    pub task: JoinHandle<()>,
    /// The canaries it waits to have judged: the loop reads their rules.
    pub canaries: CanaryBoard,
    /// The outcome checks it waits to have read.
    pub outcomes: OutcomeBoard,
}

impl DispatcherTask {
    /// Spawns the task: it first settles what a crash interrupted and undoes
    /// what outlived its incident (`firing` says which instances fire at
    /// start), then serves its inbox until the inbox closes.
    pub fn spawn(mut dispatcher: Dispatcher, firing: FiringSnapshot) -> DispatcherTask {
        let (inbox, mut work) = mpsc::channel::<ToDispatcher>(DISPATCH_CHANNEL);
        let (decision_tx, decisions) = mpsc::channel::<Decision>(DISPATCH_CHANNEL);
        let canaries = dispatcher.canary_board();
        let outcomes = dispatcher.outcome_board();
        let task = tokio::spawn(async move {
            let mut settled = dispatcher.reconcile(wall_clock_now()).await;
            settled.extend(dispatcher.settle_orphans(|r, s| firing.is_firing(r, s), wall_clock_now()).await);
            for decision in settled {
                if decision_tx.send(decision).await.is_err() {
                    return;
                }
            }
            while let Some(msg) = work.recv().await {
                for decision in serve(&mut dispatcher, msg).await {
                    if decision_tx.send(decision).await.is_err() {
                        return;
                    }
                }
            }
        });
        DispatcherTask { inbox, decisions, task, canaries, outcomes }
    }
}

/// Handles one message; returns the decisions it made.
async fn serve(dispatcher: &mut Dispatcher, msg: ToDispatcher) -> Vec<Decision> {
    match msg {
        ToDispatcher::Proposal(p) => vec![dispatcher.dispatch(p).await],
        ToDispatcher::Resolved { rule, subject, at } => dispatcher.instance_resolved(&rule, &subject, at).await,
        ToDispatcher::Tick(now) => {
            let mut out = dispatcher.keep_ledger(now).await;
            dispatcher.adopt_taken_over(now).await;
            out.extend(dispatcher.maintain(now));
            out.extend(dispatcher.climb_due(now).await);
            out.extend(dispatcher.reverify_if_due(now).await);
            out
        }
        ToDispatcher::Reconnected { target, at } => {
            dispatcher.reverify(|e| e.action.target.contains_all(&target), at).await
        }
        ToDispatcher::Command(command, now) => command_decisions(dispatcher, command, now).await,
        ToDispatcher::JudgeCanary { id, reading, at } => dispatcher.judge_canary(&id, reading, at).await,
        ToDispatcher::JudgeOutcome { id, seen, at } => dispatcher.judge_outcome(&id, seen, at).await,
    }
}

/// Answers a dispatch command; an approval or a rejection is a decision.
async fn command_decisions(dispatcher: &mut Dispatcher, command: DispatchCommand, now: Nanos) -> Vec<Decision> {
    match command {
        DispatchCommand::SetMode { mode, by } => dispatcher.set_mode_by(mode, &by, now),
        DispatchCommand::Approve { id, by, reply } => {
            let result = dispatcher.approve(&id, &by, now).await;
            let decided = result.as_ref().ok().cloned();
            let _ = reply.send(result);
            return decided.into_iter().collect();
        }
        DispatchCommand::Reject { id, by, reply } => {
            let result = dispatcher.reject(&id, &by, now);
            let decided = result.as_ref().ok().cloned();
            let _ = reply.send(result);
            return decided.into_iter().collect();
        }
        DispatchCommand::Undo { id, by, reply } => {
            let result = dispatcher.undo_by_hand(&id, &by, now).await;
            let decided = result.as_ref().ok().cloned();
            let _ = reply.send(result);
            return decided.into_iter().collect();
        }
        DispatchCommand::Resolve { incident, rule, subject, started, by, reply } => {
            let result = dispatcher.resolve_incident(&incident, &rule, &subject, started, &by, now).await;
            let decided = result.as_ref().map(|(_, decisions)| decisions.clone()).unwrap_or_default();
            let _ = reply.send(result);
            return decided;
        }
        DispatchCommand::ResetBreaker { by, reply } => {
            let _ = reply.send(dispatcher.reset_breaker(&by));
        }
        DispatchCommand::Status { reply } => {
            let _ = reply.send(DispatchStatus {
                mode: dispatcher.mode(),
                breaker: dispatcher.breaker().clone(),
                breaker_window: dispatcher.policy().settings().breaker_window,
                pending: dispatcher.pending().cloned().collect(),
                in_effect: dispatcher.changed_in_effect().cloned().collect(),
                ledger: dispatcher.ledger_health(),
                silences: dispatcher.silences(now),
                drifted: dispatcher.drifted().cloned().collect(),
                drift_counts: dispatcher.drift_counts(),
                offenders: dispatcher.standings(now),
            });
        }
        DispatchCommand::Silence { silence, reply } => {
            let _ = reply.send(dispatcher.silence(silence));
        }
        DispatchCommand::Unsilence { id, reply } => {
            let _ = reply.send(dispatcher.unsilence(&id));
        }
    }
    Vec::new()
}
