//! Canaries: an action of a kind a `[[canary]]` lists goes to one place of
//! its plane first, and the rest of the plane follows only once that one
//! proved itself.
//!
//! - **Made**: the first enforced action of the kind executed in a plane
//!   becomes the canary ([`Canary`] on its decision, in the ledger).
//! - **Waiting**: while it is judged, the plane's other proposals of the kind
//!   are held with `waits_for` naming it, kept here and in the ledger.
//! - **Judged** `after` it was made, by the rule that asked for it, read by
//!   the caller (the run loop has the evaluator) through the
//!   [`CanaryBoard`]: **promoted** when the rule's clear condition holds on
//!   its subject (the waiting proposals are decided again, the canary's
//!   approval standing for theirs, and the plane limit of the class no
//!   longer holds them); **reverted** when the rule's window value `worse`
//!   rose by more than `margin` (undone through the undo path, the waiting
//!   ones expire, and the kind is held in the plane for `hold`); else
//!   **kept** (or **unread**, when the value could not be read: nothing is
//!   judged on stale data): it stays, the waiting ones expire.
//!
//! A restart finds the canary and its waiting proposals in the ledger
//! ([`is_live`](crate::ledger::is_live) keeps both) and judges it when due.

use std::sync::Mutex;

use super::*;
use crate::contracts::{Canary, CanaryJudgement, CanaryOutcome};
use crate::evaluator::Reading;

/// A canary due or waiting to be judged, as the caller needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct CanaryCheck {
    /// The canary's decision.
    pub id: String,
    /// The rule that asked for it.
    pub rule: String,
    /// Its subject.
    pub subject: Labels,
    /// The rule's window value it is judged by.
    pub signal: String,
    /// When it is due.
    pub judge_at: Nanos,
}

/// The canaries awaiting judgement, shared with the run loop: the
/// dispatcher's task cannot read the evaluator, the loop can.
#[derive(Debug, Clone, Default)]
pub struct CanaryBoard(Arc<Mutex<Vec<(CanaryCheck, bool)>>>);

impl CanaryBoard {
    /// The canaries due at `now` not handed out before; each once.
    pub fn take_due(&self, now: Nanos) -> Vec<CanaryCheck> {
        let mut board = self.0.lock().unwrap_or_else(|e| e.into_inner());
        board
            .iter_mut()
            .filter(|(c, asked)| !asked && c.judge_at <= now)
            .map(|(c, asked)| {
                *asked = true;
                c.clone()
            })
            .collect()
    }

    fn publish(&self, open: Vec<CanaryCheck>) {
        let mut board = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let asked: Vec<String> = board.iter().filter(|(_, a)| *a).map(|(c, _)| c.id.clone()).collect();
        *board = open
            .into_iter()
            .map(|c| {
                let a = asked.contains(&c.id);
                (c, a)
            })
            .collect();
    }
}

/// The canary state of the dispatcher.
#[derive(Debug, Default)]
pub(super) struct Canaries {
    /// Canaries made and not yet judged, and promoted ones, by decision id.
    open: BTreeMap<String, OpenCanary>,
    /// Proposals held while a canary is judged, by decision id.
    waiting: BTreeMap<String, Decision>,
    /// (canary index, group) held after a revert: by which canary, until when.
    held: HashMap<(usize, String), (String, Nanos)>,
    board: CanaryBoard,
}

#[derive(Debug, Clone)]
struct OpenCanary {
    index: usize,
    group: String,
    check: CanaryCheck,
    promoted: bool,
}

impl Canaries {
    /// Rebuilds the state from a decision found in the ledger at start.
    pub(super) fn restore(&mut self, d: &Decision, policy: &mut Policy) {
        if let Some(canary) = &d.canary {
            let Some((index, _)) = policy.settings().canary_for(&d.proposal.action.kind) else { return };
            let promoted = canary.judged.as_ref().is_some_and(|j| j.outcome == CanaryOutcome::Promoted);
            if canary.judged.is_some() && !promoted {
                return;
            }
            if promoted {
                policy.promote(&d.id);
            }
            self.open.insert(
                d.id.clone(),
                OpenCanary { index, group: canary.group.clone(), check: check_of(d, canary), promoted },
            );
        } else if d.waits_for.is_some() && matches!(d.verdict, Verdict::Held { .. }) {
            self.waiting.insert(d.id.clone(), d.clone());
        }
        self.publish();
    }

    fn publish(&self) {
        let open = self.open.values().filter(|c| !c.promoted).map(|c| c.check.clone()).collect();
        self.board.publish(open);
    }
}

fn check_of(d: &Decision, canary: &Canary) -> CanaryCheck {
    CanaryCheck {
        id: d.id.clone(),
        rule: d.proposal.rule.clone(),
        subject: d.proposal.subject.clone(),
        signal: canary.signal.clone(),
        judge_at: canary.judge_at,
    }
}

impl Dispatcher {
    /// The canaries awaiting judgement, for the run loop to read.
    pub fn canary_board(&self) -> CanaryBoard {
        self.canaries.board.clone()
    }

    /// The proposals waiting for a canary.
    pub fn waiting_for_canaries(&self) -> impl Iterator<Item = &Decision> {
        self.canaries.waiting.values()
    }

    /// The group a canary of `action` stands for: its plane.
    fn canary_group(&self, action: &crate::contracts::Action) -> String {
        match self.policy.impact(action).plane {
            Some(plane) => format!("plane {plane}"),
            None => "the fleet".into(),
        }
    }

    /// Whether `d` must wait for a canary, or is held after one was
    /// reverted: the reason, and the canary it waits for. An action already
    /// in effect is left to the policy's de-duplication.
    pub(super) fn canary_gate(&self, d: &Decision, now: Nanos) -> Option<(String, Option<String>)> {
        if d.mode != Mode::Enforce || !d.destructive {
            return None;
        }
        let (index, _) = self.policy.settings().canary_for(&d.proposal.action.kind)?;
        let key = d.proposal.action.dedup_key();
        if self.policy.in_effect().any(|e| e.action.dedup_key() == key) {
            return None;
        }
        let group = self.canary_group(&d.proposal.action);
        if let Some((by, until)) = self.canaries.held.get(&(index, group.clone())).filter(|(_, until)| *until > now) {
            return Some((
                format!(
                    "canary {by} of {group} was reverted; no {} there until {}",
                    d.proposal.action.kind,
                    crate::time::rfc3339(*until)
                ),
                None,
            ));
        }
        let canary = self.canaries.open.values().find(|c| c.index == index && c.group == group && !c.promoted)?;
        let subject = &canary.check.subject;
        let place = subject.get("switch").map_or_else(|| subject.to_string(), str::to_string);
        Some((
            format!(
                "waits for canary {} ({} on {place}), judged at {}",
                canary.check.id,
                d.proposal.action.kind,
                crate::time::rfc3339(canary.check.judge_at)
            ),
            Some(canary.check.id.clone()),
        ))
    }

    /// `d` held by [`Dispatcher::canary_gate`].
    pub(super) fn hold_for_canary(
        &mut self,
        mut d: Decision,
        now: Nanos,
        reason: String,
        of: Option<String>,
    ) -> Decision {
        d.steps.push(Step { at: now, what: format!("held: {reason}") });
        d.verdict = Verdict::Held { reason };
        d.waits_for = of.clone();
        let d = self.finish(d, false);
        if of.is_some() {
            self.canaries.waiting.insert(d.id.clone(), d.clone());
        }
        d
    }

    /// After `d` was decided: an enforced action of a canary kind executed
    /// in a plane without a canary becomes its canary.
    pub(super) fn maybe_canary(&mut self, mut d: Decision, now: Nanos) -> Decision {
        if d.mode != Mode::Enforce || !matches!(d.verdict, Verdict::Executed { .. }) {
            return d;
        }
        let Some((index, settings)) = self.policy.settings().canary_for(&d.proposal.action.kind) else { return d };
        let settings = settings.clone();
        let group = self.canary_group(&d.proposal.action);
        if self.canaries.open.values().any(|c| c.index == index && c.group == group) {
            return d;
        }
        let before = d.proposal.values.iter().find(|(n, _)| *n == settings.worse).map_or(f64::NAN, |(_, v)| *v);
        let canary = Canary {
            group: group.clone(),
            signal: settings.worse.clone(),
            before,
            judge_at: now + settings.after,
            margin: settings.margin,
            judged: None,
        };
        d.steps.push(Step {
            at: now,
            what: format!(
                "the canary of {group}: the rest of it waits until it is judged at {}",
                crate::time::rfc3339(canary.judge_at)
            ),
        });
        let check = check_of(&d, &canary);
        d.canary = Some(canary);
        self.save(&d, false);
        self.canaries.open.insert(d.id.clone(), OpenCanary { index, group, check, promoted: false });
        self.canaries.publish();
        d
    }

    /// Judges the canary `id` on what its rule reads now; returns the
    /// decisions this makes (the canary's, judged; the waiting ones,
    /// decided or expired; an undo).
    pub async fn judge_canary(&mut self, id: &str, reading: Reading, now: Nanos) -> Vec<Decision> {
        let Some(open) = self.canaries.open.get(id).filter(|c| !c.promoted).cloned() else { return Vec::new() };
        let original = self.ledger.as_ref().and_then(|l| l.get(id).ok().flatten());
        let effect = self.policy.in_effect().find(|e| e.id == id).cloned();
        let (Some(mut d), Some(effect)) = (original, effect) else {
            self.canaries.open.remove(id);
            self.canaries.publish();
            return self.release_waiting(id, now, Release::Expire(format!("canary {id} is no longer in effect"))).await;
        };
        let Some(mut canary) = d.canary.clone() else { return Vec::new() };
        let outcome = judge(&canary, reading);
        canary.judged = Some(CanaryJudgement { at: now, outcome, value: reading.value, cleared: reading.cleared });
        d.steps.push(Step { at: now, what: canary.describe() });
        d.canary = Some(canary.clone());
        self.save(&d, true);
        tracing::warn!(message = "Canary judged.", %id, outcome = outcome.name(), judgement = %canary.describe());
        let mut out = vec![d];
        match outcome {
            CanaryOutcome::Promoted => {
                self.policy.promote(id);
                if let Some(c) = self.canaries.open.get_mut(id) {
                    c.promoted = true;
                }
                self.canaries.publish();
                out.extend(self.release_waiting(id, now, Release::Promoted).await);
            }
            CanaryOutcome::Reverted => {
                self.canaries.open.remove(id);
                let hold = self.policy.settings().canaries.get(open.index).map_or(0, |c| c.hold);
                self.canaries.held.insert((open.index, open.group.clone()), (id.to_string(), now + hold));
                self.canaries.publish();
                let first = format!("canary {id} made it worse: undo {}", effect.action);
                out.push(self.undo(effect, now, first).await);
                out.extend(
                    self.release_waiting(id, now, Release::Expire(format!("canary {id} made it worse and was undone")))
                        .await,
                );
            }
            CanaryOutcome::Kept | CanaryOutcome::Unread => {
                self.canaries.open.remove(id);
                self.canaries.publish();
                let why = format!("canary {id} was not promoted ({})", outcome.name());
                out.extend(self.release_waiting(id, now, Release::Expire(why)).await);
            }
        }
        out
    }

    /// The proposals waiting for canary `id`, decided again or expired.
    async fn release_waiting(&mut self, id: &str, now: Nanos, release: Release) -> Vec<Decision> {
        let ids: Vec<String> = self
            .canaries
            .waiting
            .iter()
            .filter(|(_, d)| d.waits_for.as_deref() == Some(id))
            .map(|(k, _)| k.clone())
            .collect();
        let mut out = Vec::new();
        for wid in ids {
            let Some(mut d) = self.canaries.waiting.remove(&wid) else { continue };
            if let Release::Expire(reason) = &release {
                out.push(self.expire_waiting(d, now, reason));
            } else {
                d.steps.push(Step {
                    at: now,
                    what: format!("canary {id} promoted: decided again, its approval standing for this one"),
                });
                d.phase = Phase::Decided;
                out.push(self.decide(d, now, CheckFor::Approved).await);
            }
        }
        out
    }

    /// The instance of `rule` on `subject` resolved: its proposals waiting
    /// for a canary expire.
    pub(super) fn expire_waiting_of(
        &mut self,
        rule: &str,
        subject: &Labels,
        now: Nanos,
        reason: &str,
    ) -> Vec<Decision> {
        let ids: Vec<String> = self
            .canaries
            .waiting
            .iter()
            .filter(|(_, d)| d.proposal.rule == rule && &d.proposal.subject == subject)
            .map(|(k, _)| k.clone())
            .collect();
        let mut out = Vec::new();
        for wid in ids {
            let Some(d) = self.canaries.waiting.remove(&wid) else { continue };
            out.push(self.expire_waiting(d, now, reason));
        }
        out
    }

    /// A proposal that waited for a canary expires, for `reason`.
    fn expire_waiting(&mut self, mut d: Decision, now: Nanos, reason: &str) -> Decision {
        d.steps.push(Step { at: now, what: format!("expired: {reason}") });
        d.verdict = Verdict::Expired { reason: reason.to_string() };
        self.finish(d, true)
    }
}

/// What becomes of the proposals waiting for a canary.
enum Release {
    /// It was promoted: they are decided again.
    Promoted,
    /// They expire, for this reason.
    Expire(String),
}

/// The verdict on `canary` given what its rule reads now.
fn judge(canary: &Canary, reading: Reading) -> CanaryOutcome {
    if !reading.value.is_finite() {
        return CanaryOutcome::Unread;
    }
    if canary.before.is_finite() && reading.value > canary.before * (1.0 + canary.margin) {
        return CanaryOutcome::Reverted;
    }
    if reading.cleared {
        CanaryOutcome::Promoted
    } else {
        CanaryOutcome::Kept
    }
}
