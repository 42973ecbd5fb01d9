//! Acting: the actuator's call under its timeout, with retries, the
//! intent recorded before it and the outcome after.

use super::*;

impl Dispatcher {
    pub(super) async fn act(&mut self, mut d: Decision, now: Nanos) -> Decision {
        let Some(route) = self.route(&d.proposal.action.kind) else {
            d.steps.push(Step { at: now, what: "no actuator of the playbook handles this action".into() });
            d.verdict = Verdict::NoActuator;
            return self.finish(d, false);
        };
        let actuator = route.actuator;
        if d.mode == Mode::DryRun {
            match self.call(actuator.dry_run(&d.proposal.action)).await {
                Ok(plan) => {
                    d.steps.push(Step {
                        at: now,
                        what: format!("dry-run: {} would send {}", plan.actuator, plan.requests.join(" ; ")),
                    });
                    self.policy.commit(&d.id, &d.proposal, now);
                    d.verdict = Verdict::DryRun { plan };
                }
                Err(e) => {
                    d.steps.push(Step { at: now, what: format!("dry-run failed: {e}") });
                    d.verdict = Verdict::Failed { error: e.to_string() };
                }
            }
            return self.finish(d, false);
        }
        d.phase = Phase::Intent;
        d.steps.push(Step { at: now, what: format!("intent on disk; calling {}", actuator.name()) });
        self.save(&d, true);
        let action = d.proposal.action.clone();
        let mut backoff = self.policy.settings().backoff.max(0) as u64;
        let attempts = self.policy.settings().attempts;
        for attempt in 1..=attempts {
            d.attempts = attempt;
            match self.call(actuator.execute(&action)).await {
                Ok(outcome) => {
                    d.steps.push(Step { at: now, what: format!("executed: {}", outcome.summary) });
                    d.verdict = Verdict::Executed { outcome };
                    break;
                }
                Err(e @ (ActuatorError::Invalid(_) | ActuatorError::NotSupported(_))) => {
                    d.steps.push(Step { at: now, what: format!("attempt {attempt}: {e}; not retried") });
                    d.verdict = Verdict::Failed { error: e.to_string() };
                    break;
                }
                Err(e) => {
                    d.steps.push(Step { at: now, what: format!("attempt {attempt}: {e}") });
                    // A timed-out call may still have taken effect: look before
                    // sending it again.
                    if let Ok(Verification::InEffect) = self.call(actuator.verify(&action, None)).await {
                        d.steps.push(Step {
                            at: now,
                            what: "verified in effect despite the error; not sent again".into(),
                        });
                        d.verdict = Verdict::Executed {
                            outcome: Outcome {
                                summary: format!("in effect after: {e}"),
                                requests: vec![],
                                prior: None,
                            },
                        };
                        break;
                    }
                    if attempt == attempts {
                        d.verdict = Verdict::Failed { error: format!("{e} (after {attempt} attempts)") };
                        break;
                    }
                    d.steps.push(Step { at: now, what: format!("retrying in {}", Span(backoff as i64)) });
                    tokio::time::sleep(Duration::from_nanos(backoff)).await;
                    backoff = backoff.saturating_mul(2);
                }
            }
        }
        if matches!(d.verdict, Verdict::Executed { .. }) {
            self.policy.commit(&d.id, &d.proposal, now);
        }
        d.phase = Phase::Done;
        // Buffered: sled flushes within `store::FLUSH_EVERY_MS`. A crash before that
        // leaves the record in the intent phase, and the restart verifies the
        // target instead of trusting or repeating anything.
        self.finish(d, false)
    }
}
