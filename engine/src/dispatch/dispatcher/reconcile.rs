//! Reconciliation after a crash: interrupted actions are verified and
//! recorded as found, never sent again.

use super::*;

impl Dispatcher {
    /// Settles what a crash interrupted: actions whose call was under way are
    /// verified with their actuator and recorded as found; none is sent
    /// again. (Proposals a crash lost come back from the evaluator, which
    /// proposes again for instances it finds firing at start.)
    pub async fn reconcile(&mut self, now: Nanos) -> Vec<Decision> {
        self.reconcile_intents(now).await
    }

    async fn reconcile_intents(&mut self, now: Nanos) -> Vec<Decision> {
        let intents = match &self.ledger {
            Some(l) => l.open_intents().unwrap_or_else(|error| {
                tracing::error!(message = "Could not read interrupted intents.", %error);
                Vec::new()
            }),
            None => return Vec::new(),
        };
        let mut out = Vec::new();
        for mut d in intents {
            let found = match self.route(&d.proposal.action.kind) {
                Some(r) => self.call(r.actuator.verify(&d.proposal.action, None)).await,
                None => Ok(Verification::Unknown),
            };
            d.verdict = match found {
                Ok(Verification::InEffect) => {
                    if d.undo_of.is_none() {
                        self.policy.commit(&d.id, &d.proposal, d.proposal.decided_at);
                    }
                    Verdict::Executed {
                        outcome: Outcome {
                            summary: "found in effect after a restart; the outcome was lost in the crash".into(),
                            requests: vec![],
                            prior: None,
                        },
                    }
                }
                Ok(Verification::NotInEffect) => Verdict::Interrupted {
                    found: "not in effect: the action did not take, and it is not repeated".into(),
                },
                Ok(Verification::Changed(detail)) => {
                    Verdict::Interrupted { found: format!("changed by someone else: {detail}") }
                }
                Ok(Verification::Unknown) => Verdict::Interrupted {
                    found: "the actuator cannot read the target back; check it by hand (not repeated)".into(),
                },
                Err(e) => Verdict::Interrupted { found: format!("verification failed: {e} (not repeated)") },
            };
            d.steps.push(Step {
                at: now,
                what: format!("reconciled after a restart: {}", d.verdict.reason().unwrap_or("found in effect")),
            });
            d.phase = Phase::Done;
            tracing::warn!(message = "Interrupted action reconciled.", id = %d.id, verdict = d.verdict.name());
            out.push(self.finish(d, true));
        }
        out
    }
}
