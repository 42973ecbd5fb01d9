//! Reconciliation after a crash: interrupted actions are read back from
//! their targets and recorded as found, never sent again blindly; actions
//! left in effect by instances that are no longer firing are undone.
//!
//! An intent on disk holds what the target held before and what the action
//! sets (see [`super::execute`]). Reading the target settles it:
//!
//! - it holds what the action sets: the change landed; it is in effect, ours,
//!   and undone later with the intent's prior;
//! - it holds the prior: the change did not land; recorded so, and a
//!   proposal made again for the still-firing fault is decided afresh;
//! - anything else: drift, someone else's values; recorded, surfaced, left alone.
//!
//! An undo's intent is settled the same way against the original: the
//! original's values still there mean the undo did not land, and it runs
//! again (the target still holds exactly what we wrote); the prior there
//! means it did.

use super::undo::{applied_of, not_ours_to_undo};
use super::*;

impl Dispatcher {
    /// Settles what a crash interrupted: actions whose call was under way are
    /// verified with their actuator and recorded as found; none is sent
    /// again blindly. (Proposals a crash lost come back from the evaluator,
    /// which proposes again for instances it finds firing at start.)
    pub async fn reconcile(&mut self, now: Nanos) -> Vec<Decision> {
        let intents = match &self.ledger {
            Some(l) => l.open_intents().unwrap_or_else(|error| {
                tracing::error!(message = "Could not read interrupted intents.", %error);
                Vec::new()
            }),
            None => return Vec::new(),
        };
        let mut out = Vec::new();
        for d in intents {
            let settled = match d.undo_of.clone() {
                Some(original) => self.reconcile_undo(d, &original, now).await,
                None => self.reconcile_action(d, now).await,
            };
            tracing::warn!(message = "Interrupted action reconciled.", id = %settled.id, verdict = settled.verdict.name());
            out.push(settled);
        }
        out
    }

    async fn reconcile_action(&mut self, mut d: Decision, now: Nanos) -> Decision {
        let applied =
            d.prior.clone().map(|prior| Outcome { summary: String::new(), requests: vec![], prior: Some(prior) });
        let found = match self.route(&d.proposal.action.kind) {
            Some(r) => self.call(r.actuator.verify(&d.proposal.action, applied.as_ref())).await,
            None => Ok(Verification::Unknown),
        };
        d.verdict = match found {
            Ok(Verification::InEffect) => {
                self.policy.commit(&d.id, &d.proposal, d.proposal.decided_at);
                Verdict::Executed {
                    outcome: Outcome {
                        summary: "found in effect after a restart; the outcome was lost in the crash".into(),
                        requests: vec![],
                        prior: d.prior.clone(),
                    },
                }
            }
            Ok(Verification::NotInEffect) => Verdict::Interrupted {
                found: "not applied: the target holds what it held before; not repeated".into(),
                applied: false,
            },
            Ok(Verification::Changed(detail)) => {
                d.drift = Some(Drift { at: now, kind: DriftKind::Changed, found: detail.clone() });
                Verdict::Interrupted { found: format!("drift: the target holds other values: {detail}"), applied: true }
            }
            Ok(Verification::Unknown) => Verdict::Interrupted {
                found: "the actuator cannot read the target back; check it by hand (not repeated)".into(),
                applied: true,
            },
            Err(e) => Verdict::Interrupted { found: format!("verification failed: {e} (not repeated)"), applied: true },
        };
        self.settled(d, now)
    }

    async fn reconcile_undo(&mut self, mut d: Decision, original_id: &str, now: Nanos) -> Decision {
        let original = self.ledger.as_ref().and_then(|l| l.get(original_id).ok().flatten());
        let (Some(route), Some(applied)) =
            (self.route(&d.proposal.action.kind), original.as_ref().and_then(applied_of))
        else {
            d.verdict = Verdict::Interrupted {
                found: format!("no actuator or no record of what {original_id} changed; check it by hand"),
                applied: true,
            };
            return self.settled(d, now);
        };
        let effect = self.policy.in_effect().find(|e| e.id == original_id).cloned();
        let found = self.call(route.actuator.verify(&d.proposal.action, Some(&applied))).await;
        match (found, effect) {
            (Ok(Verification::NotInEffect), effect) => {
                d.verdict = Verdict::Executed {
                    outcome: Outcome {
                        summary: "restored before the crash; found so after the restart".into(),
                        requests: vec![],
                        prior: None,
                    },
                };
                if let Some(effect) = effect {
                    self.policy.remove_effect(&effect.action);
                }
                let undo = d.id.clone();
                self.mark_original(original_id, Step { at: now, what: format!("undone by {undo}") }, |o| {
                    o.undone_by = Some(undo.clone())
                });
                self.settled(d, now)
            }
            (Ok(Verification::InEffect), Some(effect)) => {
                // Still exactly what we wrote: the undo did not land. The
                // intent is on disk already; restore now.
                d.steps.push(Step { at: now, what: "the undo did not land before the restart; restoring now".into() });
                self.restore(d, route.actuator.as_ref(), &effect, &applied, now).await
            }
            (found, effect) => {
                let reason = not_ours_to_undo(found, route.actuator.name())
                    .unwrap_or_else(|| format!("{original_id} is no longer counted in effect"));
                if let Some(effect) = effect {
                    self.policy.remove_effect(&effect.action);
                }
                d.verdict = Verdict::Skipped { reason };
                self.settled(d, now)
            }
        }
    }

    fn settled(&mut self, mut d: Decision, now: Nanos) -> Decision {
        d.steps.push(Step {
            at: now,
            what: format!("reconciled after a restart: {}", d.verdict.reason().unwrap_or("found in effect")),
        });
        d.phase = Phase::Done;
        self.finish(d, true)
    }

    /// Undoes, where the playbook asks, the actions in effect whose instance
    /// is no longer firing (`firing(rule, subject)` says which still are): a
    /// crash between an instance resolving and its undo must not leave the
    /// change behind. Call it once at start, after [`Dispatcher::reconcile`].
    pub async fn settle_orphans(&mut self, firing: impl Fn(&str, &Labels) -> bool, now: Nanos) -> Vec<Decision> {
        let orphans: Vec<(String, Labels)> = self
            .policy
            .in_effect()
            .filter(|e| !e.resolved && !firing(&e.rule, &e.subject))
            .map(|e| (e.rule.clone(), e.subject.clone()))
            .collect();
        let mut out = Vec::new();
        for (rule, subject) in orphans {
            tracing::info!(message = "An action in effect outlived its incident; resolving it.", %rule, %subject);
            // It resolved while no one watched: when, and whether through the action, is unknown.
            self.unwatch_outcomes_of(&rule, &subject);
            out.extend(self.instance_resolved(&rule, &subject, now).await);
        }
        out
    }
}
