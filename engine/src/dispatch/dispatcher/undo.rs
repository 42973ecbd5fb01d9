//! Undo: what a resolved instance put in effect is undone where the
//! playbook asks, and only where the target is still as we left it.

use super::*;

impl Dispatcher {
    /// The instance of `rule` for `subject` resolved: requests it left
    /// waiting expire (no action for a fault that is gone), and what it put
    /// in effect is undone where the playbook asks for it, but only where the
    /// target is still as we left it.
    pub async fn instance_resolved(&mut self, rule: &str, subject: &Labels, now: Nanos) -> Vec<Decision> {
        let mut out = Vec::new();
        let waiting: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, d)| d.proposal.rule == rule && &d.proposal.subject == subject)
            .map(|(id, _)| id.clone())
            .collect();
        for id in waiting {
            out.extend(self.expire_one(&id, now, "the fault it was for resolved".into()));
        }
        for effect in self.policy.resolved(rule, subject) {
            if self.policy.settings().undo_on_resolve(&effect.action.kind) {
                out.push(self.undo(effect, now).await);
            }
        }
        out
    }

    pub(super) async fn undo(&mut self, effect: Effect, now: Nanos) -> Decision {
        let d = self.undo_inner(effect.clone(), now).await;
        // Whatever became of the undo, the effect is no longer counted here;
        // its fleet token goes back with it.
        if !self.policy.in_effect().any(|e| e.id == effect.id) {
            self.fleet.undone(&effect.id).await;
        }
        d
    }

    pub(super) async fn undo_inner(&mut self, effect: Effect, now: Nanos) -> Decision {
        let original = self.ledger.as_ref().and_then(|l| l.get(&effect.id).ok().flatten());
        let route = self.route(&effect.action.kind);
        let mut proposal = original.as_ref().map(|o| o.proposal.clone()).unwrap_or_else(|| Proposal {
            id: effect.id.clone(),
            rule: effect.rule.clone(),
            rule_hash: String::new(),
            rule_mode: Mode::Enforce,
            severity: crate::rule::Severity::Info,
            subject: effect.subject.clone(),
            action: effect.action.clone(),
            values: vec![],
            active_at: effect.since,
            sample_at: now,
            decided_at: now,
            restored: false,
        });
        proposal.decided_at = now;
        let mode = self.effective_mode(&proposal.rule, proposal.rule_mode);
        let first =
            Step { at: now, what: format!("{} resolved: undo {} of {}", effect.rule, effect.action, effect.id) };
        let id = self.next_id();
        let mut d = Decision::new(id, proposal, mode, first, self.now());
        d.undo_of = Some(effect.id.clone());
        d.actuator = route.as_ref().map(|r| r.actuator.name().to_string());
        // An undo restores what was there: no blast radius of its own.
        d.destructive = false;
        let Some(route) = route else {
            d.verdict = Verdict::NoActuator;
            return self.finish(d, false);
        };
        let applied = match original.as_ref().map(|o| &o.verdict) {
            Some(Verdict::Executed { outcome }) => Some(outcome.clone()),
            Some(Verdict::DryRun { plan }) => {
                Some(Outcome { summary: "planned in dry-run".into(), requests: plan.requests.clone(), prior: None })
            }
            _ => None,
        };
        let Some(applied) = applied else {
            d.verdict = Verdict::Skipped { reason: format!("no record of what {} changed; left alone", effect.id) };
            self.policy.remove_effect(&effect.action);
            return self.finish(d, false);
        };
        if mode != Mode::Enforce || original.as_ref().is_some_and(|o| o.mode != Mode::Enforce) {
            d.verdict = match self.call(route.actuator.dry_run_undo(&effect.action, &applied)).await {
                Ok(plan) => Verdict::DryRun { plan },
                Err(e) => Verdict::Failed { error: e.to_string() },
            };
            self.policy.remove_effect(&effect.action);
            return self.finish(d, false);
        }
        let found = self.call(route.actuator.verify(&effect.action, Some(&applied))).await;
        let reason = match found {
            Ok(Verification::InEffect) => None,
            Ok(Verification::Changed(detail)) => {
                Some(format!("the target changed since we acted ({detail}); it is not ours to undo"))
            }
            Ok(Verification::NotInEffect) => Some("the action is no longer in effect; nothing to undo".into()),
            Ok(Verification::Unknown) => {
                Some(format!("{} cannot read the target back, so it is left alone", route.actuator.name()))
            }
            Err(e) => Some(format!("verification failed: {e}; left alone")),
        };
        if let Some(reason) = reason {
            tracing::warn!(message = "Undo skipped.", of = %effect.id, %reason);
            d.steps.push(Step { at: now, what: format!("skipped: {reason}") });
            d.verdict = Verdict::Skipped { reason };
            self.policy.remove_effect(&effect.action);
            return self.finish(d, false);
        }
        d.phase = Phase::Intent;
        d.steps.push(Step { at: now, what: "verified as we left it; intent on disk; restoring".into() });
        self.save(&d, true);
        d.attempts = 1;
        match self.call(route.actuator.undo(&effect.action, &applied)).await {
            Ok(outcome) => {
                d.steps.push(Step { at: now, what: format!("restored: {}", outcome.summary) });
                d.verdict = Verdict::Executed { outcome };
                self.policy.remove_effect(&effect.action);
                if let (Some(ledger), Some(mut o)) = (&self.ledger, original) {
                    o.undone_by = Some(d.id.clone());
                    o.steps.push(Step { at: now, what: format!("undone by {}", d.id) });
                    if let Err(error) = ledger.put(&o) {
                        tracing::error!(message = "Could not update the undone decision.", %error);
                    }
                }
            }
            Err(e) => {
                d.steps.push(Step { at: now, what: format!("undo failed: {e}") });
                d.verdict = Verdict::Failed { error: e.to_string() };
            }
        }
        d.phase = Phase::Done;
        self.finish(d, true)
    }
}
