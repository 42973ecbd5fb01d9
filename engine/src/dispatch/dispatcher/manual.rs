//! An operator's hand: one action undone (`rocemend undo ID`), one incident
//! ended (`rocemend resolve INCIDENT`).
//!
//! Both take the path the rules' own resolutions take ([`super::undo`]):
//! the target is verified as we left it, the undo's intent is on disk before
//! the restore, the outcome after, and a crash in between is settled at the
//! next start like any undo ([`super::reconcile`]). What differs is who
//! asked, and that is said in the decisions' steps.
//!
//! An undo by hand is refused, with nothing recorded, when there is nothing
//! of ours to restore: an unknown id, a decision that is not an executed
//! action still in effect, or a kind its actuator cannot undo. Its target is
//! read back once more after the restore, as an action's is after it is
//! sent: the decision says what the target holds then.
//!
//! Ending an incident is what the dispatcher does when the rule's instance
//! resolves: requests still waiting expire, and the kinds `[undo]
//! on_resolve` lists are undone. The evaluator's instance is the rule's own
//! and is left as it is: while the condition holds it stays firing without
//! proposing again; when the condition clears and returns, the rule fires
//! again, as a new incident.

use super::undo::applied_of;
use super::*;
use crate::dispatch::Resolution;

fn not_undoable(id: &str, reason: impl Into<String>) -> DispatchError {
    DispatchError::NotUndoable { id: id.to_string(), reason: reason.into() }
}

impl Dispatcher {
    /// Undoes what the decision `id` put in effect, because `by` asked, at
    /// `now`. In enforce mode the target is restored and read back; in
    /// dry-run the undo is recorded as what would be sent, in shadow mode
    /// recorded only, and in both the action stays in effect (nothing
    /// changed on the target). Refused, with nothing recorded, when `id` is
    /// not an executed action in effect or its kind has no undo.
    pub async fn undo_by_hand(&mut self, id: &str, by: &str, now: Nanos) -> Result<Decision, DispatchError> {
        let (effect, original, applied) = self.undoable(id)?;
        let kind = effect.action.kind.clone();
        let route =
            self.route(&kind).ok_or_else(|| not_undoable(id, format!("no actuator of the playbook handles {kind}")))?;
        // The plan costs nothing and sends nothing: asked first, it tells a
        // kind without an undo before anything is written.
        if let Err(ActuatorError::NotSupported(why)) =
            self.call(route.actuator.dry_run_undo(&effect.action, &applied)).await
        {
            return Err(not_undoable(id, format!("{kind} has no undo ({why})")));
        }
        tracing::warn!(message = "Undo asked by an operator.", of = %id, action = %effect.action, %by);
        let first = format!("undo of {id} ({}) asked by {by}", effect.action);
        if self.effective_mode(&original.proposal.rule, original.proposal.rule_mode) != Mode::Enforce {
            return Ok(self.undo_not_sent(&effect, &original, &applied, route, now, first).await);
        }
        let d = self.undo(effect.clone(), now, first).await;
        Ok(self.verify_undone(d, &effect, &applied, route, now).await)
    }

    /// The effect of `id`, its decision and what it changed, if it is ours
    /// to undo; why not otherwise.
    fn undoable(&self, id: &str) -> Result<(Effect, Decision, Outcome), DispatchError> {
        let effect = self.policy.in_effect().find(|e| e.id == id).cloned();
        let original = match &self.ledger {
            Some(ledger) => {
                ledger.get(id).map_err(|e| not_undoable(id, format!("the ledger could not be read: {e}")))?
            }
            None => None,
        };
        let Some(original) = original else {
            return Err(match effect {
                Some(_) => not_undoable(id, "the ledger holds no record of what it changed"),
                None => DispatchError::Unknown(id.to_string()),
            });
        };
        if let Some(of) = &original.undo_of {
            return Err(not_undoable(id, format!("it is itself the undo of {of}")));
        }
        if let Some(undo) = &original.undone_by {
            return Err(not_undoable(id, format!("it was already undone by {undo}")));
        }
        if !matches!(original.verdict, Verdict::Executed { .. }) {
            let verdict = original.verdict.name();
            return Err(not_undoable(id, format!("it is not an executed action (its verdict is {verdict})")));
        }
        if let Some(drift) = &original.drift {
            let (kind, found) = (drift.kind.name(), &drift.found);
            return Err(not_undoable(id, format!("it drifted ({kind}: {found}); the target is not as we left it")));
        }
        let effect = effect.ok_or_else(|| not_undoable(id, "it is no longer in effect"))?;
        let applied = applied_of(&original).ok_or_else(|| not_undoable(id, "no record of what it changed"))?;
        Ok((effect, original, applied))
    }

    /// An undo by hand in dry-run or shadow mode: recorded as what would be
    /// sent (dry-run) or recorded only (shadow); the action stays in effect.
    async fn undo_not_sent(
        &mut self,
        effect: &Effect,
        original: &Decision,
        applied: &Outcome,
        route: ActuatorRoute,
        now: Nanos,
        first: String,
    ) -> Decision {
        let mut d = self.undo_decision(effect, Some(original), now, first);
        let stays = format!("{} stays in effect", effect.id);
        if d.mode == Mode::Shadow {
            d.steps.push(Step { at: now, what: format!("shadow mode: recorded, not acted on; {stays}") });
            d.verdict = Verdict::Shadowed;
            return self.finish(d, true);
        }
        d.verdict = match self.call(route.actuator.dry_run_undo(&effect.action, applied)).await {
            Ok(plan) => {
                let what = format!("dry-run: {} would send {}; {stays}", plan.actuator, plan.requests.join(" ; "));
                d.steps.push(Step { at: now, what });
                Verdict::DryRun { plan }
            }
            Err(e) => Verdict::Failed { error: e.to_string() },
        };
        self.finish(d, true)
    }

    /// Reads the target back after an undo by hand. Still holding what the
    /// action set means the undo did not take: the decision fails and the
    /// action is in effect again, so status and de-duplication keep telling
    /// the truth.
    async fn verify_undone(
        &mut self,
        mut d: Decision,
        effect: &Effect,
        applied: &Outcome,
        route: ActuatorRoute,
        now: Nanos,
    ) -> Decision {
        if !matches!(d.verdict, Verdict::Executed { .. }) {
            return d;
        }
        let found = self.call(route.actuator.verify(&effect.action, Some(applied))).await;
        let what = match &found {
            Ok(Verification::NotInEffect) => "read back: the target holds its values from before the action".into(),
            Ok(Verification::InEffect) => "read back: the target still holds what the action set".into(),
            Ok(Verification::Changed(detail)) => format!("read back: the target holds other values ({detail})"),
            Ok(Verification::Unknown) => format!("not read back: {} cannot read the target", route.actuator.name()),
            Err(e) => format!("not read back: verification failed: {e}"),
        };
        d.steps.push(Step { at: now, what });
        if found == Ok(Verification::InEffect) {
            d.verdict = Verdict::Failed {
                error: "the actuator reported the undo done, but the target still holds what the action set".into(),
            };
            self.policy.restore_effect(effect.clone());
            let undo = d.id.clone();
            self.mark_original(
                &effect.id,
                Step { at: now, what: format!("{undo} did not take; still in effect") },
                |o| o.undone_by = None,
            );
        }
        self.finish(d, true)
    }

    /// Ends the incident `incident` (`rule` on `subject`, first seen at
    /// `started`) because `by` asked, at `now`: recorded in the ledger
    /// first, then resolved as the rule's own resolution would (see the
    /// module's documentation). Refused if an operator ended it already.
    pub async fn resolve_incident(
        &mut self,
        incident: &str,
        rule: &str,
        subject: &Labels,
        started: Nanos,
        by: &str,
        now: Nanos,
    ) -> Result<(Resolution, Vec<Decision>), DispatchError> {
        let earlier = self.ledger.as_ref().and_then(|l| l.resolution(rule, subject, started).ok().flatten());
        if let Some(earlier) = earlier {
            let reason = format!("it was resolved by {} at {}", earlier.by, crate::time::rfc3339(earlier.at));
            return Err(DispatchError::NotResolvable { incident: incident.to_string(), reason });
        }
        let mut resolution = Resolution {
            rule: rule.to_string(),
            subject: subject.clone(),
            started,
            by: by.to_string(),
            at: now,
            decisions: Vec::new(),
        };
        // On disk before anything is undone: a crash in between must not let
        // the same incident be resolved twice.
        self.save_resolution(&resolution);
        tracing::warn!(message = "Incident resolved by an operator.", %incident, %rule, %subject, %by);
        let decisions = self.resolved_as(rule, subject, Some(by), now).await;
        resolution.decisions = decisions.iter().map(|d| d.id.clone()).collect();
        self.save_resolution(&resolution);
        Ok((resolution, decisions))
    }

    fn save_resolution(&self, resolution: &Resolution) {
        if let Some(ledger) = &self.ledger {
            if let Err(error) = ledger.put_resolution(resolution) {
                tracing::error!(message = "Could not record a resolution in the ledger.", rule = %resolution.rule, %error);
            }
        }
    }
}
