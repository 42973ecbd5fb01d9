//! Undo: what a resolved instance put in effect is undone where the
//! playbook asks, and only where the target still holds what we wrote.
//!
//! The order mirrors acting: verify that the target holds what we set (and
//! nothing else), write the undo's intent to disk, restore the prior values
//! the original intent recorded, record the outcome. A crash in between is
//! settled at the next start ([`super::reconcile`]), which reads the target
//! again: restored means done; still ours means the undo runs again.

use super::*;

impl Dispatcher {
    /// The instance of `rule` for `subject` resolved: requests it left
    /// waiting expire (no action for a fault that is gone), and what it put
    /// in effect is undone where the playbook asks for it, but only where the
    /// target is still as we left it.
    pub async fn instance_resolved(&mut self, rule: &str, subject: &Labels, now: Nanos) -> Vec<Decision> {
        self.resolved_as(rule, subject, None, now).await
    }

    /// What a resolution of `rule` on `subject` does, the rule's own
    /// (`by: None`) or an operator's (`by`, `rocemend resolve`): the same,
    /// said so in each decision.
    pub(super) async fn resolved_as(
        &mut self,
        rule: &str,
        subject: &Labels,
        by: Option<&str>,
        now: Nanos,
    ) -> Vec<Decision> {
        let mut out = Vec::new();
        let waiting: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, d)| d.proposal.rule == rule && &d.proposal.subject == subject)
            .map(|(id, _)| id.clone())
            .collect();
        let reason = match by {
            Some(by) => format!("the incident it was for was resolved by {by}"),
            None => "the fault it was for resolved".to_string(),
        };
        for id in waiting {
            out.extend(self.expire_one(&id, now, reason.clone()));
        }
        out.extend(self.expire_waiting_of(rule, subject, now, &reason));
        // An operator's resolution says nothing of the action's effect. The
        // rule's own is judged while the action is in effect, and said before
        // the undos: a reader keyed by decision sees it effective, then undone.
        if by.is_some() {
            self.unwatch_outcomes_of(rule, subject);
        }
        out.extend(self.outcomes_on_resolve(rule, subject, now));
        self.climb_ends(rule, subject);
        for effect in self.policy.resolved(rule, subject) {
            if self.policy.settings().undo_on_resolve(&effect.action.kind) {
                let resolved = match by {
                    Some(by) => format!("{rule} resolved by {by}"),
                    None => format!("{rule} resolved"),
                };
                let first = format!("{resolved}: undo {} of {}", effect.action, effect.id);
                out.push(self.undo(effect, now, first).await);
            }
        }
        out
    }

    /// Undoes `effect`; `first` is the undo decision's first step: why.
    pub(super) async fn undo(&mut self, effect: Effect, now: Nanos, first: String) -> Decision {
        let d = self.undo_inner(effect.clone(), now, first).await;
        // Whatever became of the undo, the effect is no longer counted here;
        // its fleet token goes back with it.
        if !self.policy.in_effect().any(|e| e.id == effect.id) {
            self.fleet.undone(&effect).await;
        }
        d
    }

    async fn undo_inner(&mut self, effect: Effect, now: Nanos, first: String) -> Decision {
        let original = self.ledger.as_ref().and_then(|l| l.get(&effect.id).ok().flatten());
        let mut d = self.undo_decision(&effect, original.as_ref(), now, first.clone());
        let Some(route) = self.route(&effect.action.kind) else {
            d.verdict = Verdict::NoActuator;
            return self.finish(d, false);
        };
        let Some(applied) = original.as_ref().and_then(applied_of) else {
            d.verdict = Verdict::Skipped { reason: format!("no record of what {} changed; left alone", effect.id) };
            self.policy.remove_effect(&effect.action);
            return self.finish(d, false);
        };
        if d.mode != Mode::Enforce || original.as_ref().is_some_and(|o| o.mode != Mode::Enforce) {
            d.verdict = match self.call(route.actuator.dry_run_undo(&effect.action, &applied)).await {
                Ok(plan) => Verdict::DryRun { plan },
                Err(e) => Verdict::Failed { error: e.to_string() },
            };
            self.policy.remove_effect(&effect.action);
            return self.finish(d, false);
        }
        if let Some(switch) = &effect.impact.switch {
            if let Err(refused) = self.fleet.coordinator().may_change_switch(switch).await {
                let reason = refused.to_string();
                // The switch's owner has adopted the action and undoes it
                // itself; its record stays for it.
                d.steps.push(Step { at: now, what: format!("held: {reason}") });
                d.verdict = Verdict::Held { reason };
                return self.finish(d, false);
            }
        }
        let found = self.call(route.actuator.verify(&effect.action, Some(&applied))).await;
        if let Some(reason) = not_ours_to_undo(found, route.actuator.name()) {
            tracing::warn!(message = "Undo skipped.", of = %effect.id, %reason);
            d.steps.push(Step { at: now, what: format!("skipped: {reason}") });
            d.verdict = Verdict::Skipped { reason };
            self.policy.remove_effect(&effect.action);
            return self.finish(d, false);
        }
        d.phase = Phase::Intent;
        d.steps.push(Step { at: now, what: "verified as we left it; intent on disk; restoring".into() });
        if self.ledger_unwritable().is_some() || !self.save(&d, true) {
            if !self.held_undos.iter().any(|(e, _)| e.id == effect.id) {
                self.held_undos.push((effect.clone(), first));
            }
            return self.hold_unwritable(d, now, "undone when it can be written again");
        }
        self.restore(d, route.actuator.as_ref(), &effect, &applied, now).await
    }

    /// The decision recording the undo of `effect`, not yet decided; its
    /// first step says why (`first`).
    pub(super) fn undo_decision(
        &mut self,
        effect: &Effect,
        original: Option<&Decision>,
        now: Nanos,
        first: String,
    ) -> Decision {
        let route = self.route(&effect.action.kind);
        let mut proposal = original.map(|o| o.proposal.clone()).unwrap_or_else(|| Proposal {
            id: effect.id.clone(),
            rule: effect.rule.clone(),
            rule_hash: String::new(),
            rule_mode: Mode::Enforce,
            severity: crate::contracts::Severity::Info,
            subject: effect.subject.clone(),
            action: effect.action.clone(),
            jobs: Vec::new(),
            values: vec![],
            active_at: effect.since,
            sample_at: now,
            decided_at: now,
            restored: false,
        });
        proposal.decided_at = now;
        let mode = self.effective_mode(&proposal.rule, proposal.rule_mode);
        let first = Step { at: now, what: first };
        let id = self.next_id();
        let mut d = Decision::new(id, proposal, mode, first, self.now());
        d.undo_of = Some(effect.id.clone());
        d.actuator = route.as_ref().map(|r| r.actuator.name().to_string());
        // An undo restores what was there: no blast radius of its own.
        d.destructive = false;
        d
    }

    /// Restores what `applied` changed, the undo's intent being on disk;
    /// records the outcome, and the original as undone.
    pub(super) async fn restore(
        &mut self,
        mut d: Decision,
        actuator: &dyn Actuator,
        effect: &Effect,
        applied: &Outcome,
        now: Nanos,
    ) -> Decision {
        d.attempts += 1;
        let restored = match self.call(actuator.undo(&effect.action, applied)).await {
            Ok(outcome) => {
                d.steps.push(Step { at: now, what: format!("restored: {}", outcome.summary) });
                Some(outcome)
            }
            // A timed-out or failed call may still have restored the target (a switch whose
            // config updater pauses a second per Set answers late): looked at before it is
            // called a failure, as an action's execute is.
            Err(e) => match self.call(actuator.verify(&effect.action, Some(applied))).await {
                Ok(Verification::NotInEffect) => {
                    d.steps.push(Step { at: now, what: format!("undo call failed ({e}), but the target holds its values from before the action again: restored") });
                    Some(Outcome { summary: format!("restored after: {e}"), requests: vec![], prior: None })
                }
                _ => {
                    d.steps.push(Step { at: now, what: format!("undo failed: {e}") });
                    d.verdict = Verdict::Failed { error: e.to_string() };
                    None
                }
            },
        };
        if let Some(outcome) = restored {
            d.verdict = Verdict::Executed { outcome };
            self.policy.remove_effect(&effect.action);
            let undo = d.id.clone();
            self.mark_original(&effect.id, Step { at: now, what: format!("undone by {undo}") }, |o| {
                o.undone_by = Some(undo.clone())
            });
        }
        d.phase = Phase::Done;
        self.finish(d, true)
    }

    /// Updates the original decision `id` with `change` and `step`, durably.
    pub(super) fn mark_original(&self, id: &str, step: Step, change: impl FnOnce(&mut Decision)) {
        let Some(ledger) = &self.ledger else { return };
        match ledger.get(id) {
            Ok(Some(mut original)) => {
                change(&mut original);
                original.steps.push(step);
                if let Err(error) = ledger.put_durable(&original) {
                    tracing::error!(message = "Could not update a decision.", %id, %error);
                }
            }
            Ok(None) => {}
            Err(error) => tracing::error!(message = "Could not read a decision.", %id, %error),
        }
    }
}

/// What an original decision changed, for undo: its outcome, or the prior
/// its intent recorded.
pub(super) fn applied_of(original: &Decision) -> Option<Outcome> {
    match &original.verdict {
        Verdict::Executed { outcome } => {
            let mut outcome = outcome.clone();
            if outcome.prior.is_none() {
                outcome.prior = original.prior.clone();
            }
            Some(outcome)
        }
        Verdict::DryRun { plan } => {
            Some(Outcome { summary: "planned in dry-run".into(), requests: plan.requests.clone(), prior: None })
        }
        _ => None,
    }
}

/// Why a target is not ours to undo, from what verification found; `None`
/// when it still holds what we set.
pub(super) fn not_ours_to_undo(found: Result<Verification, ActuatorError>, actuator: &str) -> Option<String> {
    match found {
        Ok(Verification::InEffect) => None,
        Ok(Verification::Changed(detail)) => {
            Some(format!("the target changed since we acted ({detail}); it is not ours to undo"))
        }
        Ok(Verification::NotInEffect) => Some("the action is no longer in effect; nothing to undo".into()),
        Ok(Verification::Unknown) => Some(format!("{actuator} cannot read the target back, so it is left alone")),
        Err(e) => Some(format!("verification failed: {e}; left alone")),
    }
}
