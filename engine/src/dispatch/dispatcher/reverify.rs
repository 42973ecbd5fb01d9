//! Re-verification: every action in effect is read back from its target
//! periodically (`[verify] every`) and when a sensor reconnects to the
//! target. An action the target lost (it holds its values from before
//! again: a switch restarted with its saved config) is re-applied through
//! the policy while its incident still fires, counted against the limits
//! and the breaker, for the kinds `[verify] reapply_reverted` lists (by
//! default those whose actuator declares a switch restart loses them: a
//! link brought back up by hand is an operator's doing). An action someone else changed is theirs: recorded
//! and left alone, unless the playbook says `reapply_changed`. Either way the
//! original decision records the drift, and `status`, `incidents` and the
//! metrics show it.

use super::undo::applied_of;
use super::*;

impl Dispatcher {
    /// Reads back every action in effect if `[verify] every` has passed
    /// since the last time (on the clock decisions are stamped with).
    pub async fn reverify_if_due(&mut self, now: Nanos) -> Vec<Decision> {
        let every = self.policy.settings().verify_every;
        if every <= 0 || now.saturating_sub(self.last_verified) < every {
            return Vec::new();
        }
        self.last_verified = now;
        self.reverify(|_| true, now).await
    }

    /// Reads back the actions in effect that `scope` selects (those on a
    /// switch a sensor just reconnected to, say); re-applies what was lost.
    pub async fn reverify(&mut self, scope: impl Fn(&Effect) -> bool, now: Nanos) -> Vec<Decision> {
        let effects: Vec<Effect> = self.policy.in_effect().filter(|e| scope(e)).cloned().collect();
        let mut out = Vec::new();
        for effect in effects {
            let Some(original) = self.ledger.as_ref().and_then(|l| l.get(&effect.id).ok().flatten()) else { continue };
            let (Some(route), Some(applied)) = (self.route(&effect.action.kind), applied_of(&original)) else {
                continue;
            };
            if original.mode != Mode::Enforce {
                continue;
            }
            // A switch another aggregator owns now is its to verify: it
            // adopted what this one left in effect there.
            if let Some(switch) = &effect.impact.switch {
                if self.fleet.coordinator().may_change_switch(switch).await.is_err() {
                    continue;
                }
            }
            let (kind, found) = match self.call(route.actuator.verify(&effect.action, Some(&applied))).await {
                Ok(Verification::NotInEffect) => {
                    (DriftKind::Reverted, "the target holds its values from before the action again".to_string())
                }
                Ok(Verification::Changed(detail)) => (DriftKind::Changed, detail),
                Ok(Verification::InEffect | Verification::Unknown) => continue,
                Err(error) => {
                    tracing::warn!(message = "Could not read an action in effect back.", id = %effect.id, %error);
                    continue;
                }
            };
            out.extend(self.on_drift(effect, original, Drift { at: now, kind, found }, now).await);
        }
        out
    }

    /// Records `drift` on the original decision, counts the effect as gone,
    /// and re-applies it through the policy where it should be.
    async fn on_drift(&mut self, effect: Effect, original: Decision, drift: Drift, now: Nanos) -> Option<Decision> {
        tracing::warn!(
            message = "An action in effect drifted.",
            id = %effect.id,
            action = %effect.action,
            kind = drift.kind.name(),
            found = %drift.found
        );
        let step = Step { at: now, what: format!("drift ({}): {}", drift.kind.name(), drift.found) };
        let (kind, found) = (drift.kind, drift.found.clone());
        let mut record =
            Drifted { id: effect.id.clone(), action: effect.action.clone(), drift: drift.clone(), reapplied_by: None };
        self.mark_original(&effect.id, step, |o| o.drift = Some(drift));
        self.policy.remove_effect(&effect.action);
        self.fleet.undone(&effect).await;
        let reapply = !effect.resolved
            && match kind {
                DriftKind::Reverted => self.policy.reapply_reverted(&effect.action.kind),
                DriftKind::Changed => self.policy.settings().reapply_changed,
            };
        if !reapply {
            self.drifts.push(record);
            return None;
        }
        let mut proposal = original.proposal;
        proposal.decided_at = now;
        proposal.restored = false;
        let mode = self.effective_mode(&proposal.rule, proposal.rule_mode);
        let what = format!("re-applying {}: the target lost it ({}: {found})", effect.id, kind.name());
        let id = self.next_id();
        record.reapplied_by = Some(id.clone());
        self.drifts.push(record);
        let mut d = Decision::new(id, proposal, mode, Step { at: now, what }, self.now());
        self.route_decision(&mut d);
        Some(self.decide(d, now, CheckFor::Reapplied).await)
    }
}
