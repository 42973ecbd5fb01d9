//! Acting: the target read first, the intent with what it held and what
//! the action sets flushed to disk, then the change under its timeout with
//! retries, then the outcome, flushed too.
//!
//! The order is what makes a crash harmless. Killed before the intent is on
//! disk, nothing was sent. Killed after it, the restart reads the target and
//! compares it with the intent ([`super::reconcile`]): the desired values
//! mean the change landed and is ours to undo with the intent's prior; the
//! prior values mean it did not; anything else is someone else's.

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
            return self.dry_run(d, actuator.as_ref(), now).await;
        }
        let action = d.proposal.action.clone();
        let mut waits = retry_waits(Duration::from_nanos(self.policy.settings().backoff.max(0) as u64));
        let attempts = self.policy.settings().attempts;
        for attempt in 1..=attempts {
            d.attempts = attempt;
            let result = match self.prepare_intent(&mut d, actuator.as_ref(), now).await {
                Ok(Intent::Held(detail)) => {
                    d.steps.push(Step { at: now, what: format!("the target already holds it ({detail}); not sent") });
                    d.verdict = Verdict::AlreadyHeld { detail };
                    return self.finish(d, false);
                }
                Ok(Intent::Unwritable) => {
                    return self.hold_unwritable(d, now, "its intent could not be written, so it was not sent");
                }
                Ok(Intent::Ready) => match &d.prior {
                    Some(prior) => self.call(actuator.apply(&action, prior)).await,
                    None => self.call(actuator.execute(&action)).await,
                },
                Err(e) => Err(e),
            };
            match result {
                Ok(mut outcome) => {
                    if outcome.prior.is_none() {
                        outcome.prior = d.prior.clone();
                    }
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
                    if self.landed_despite(&mut d, actuator.as_ref(), &e, now).await {
                        break;
                    }
                    if attempt == attempts {
                        d.verdict = Verdict::Failed { error: format!("{e} (after {attempt} attempts)") };
                        break;
                    }
                    let wait = waits.next().unwrap_or_default();
                    let shown = Span(i64::try_from(wait.as_nanos()).unwrap_or(i64::MAX));
                    d.steps.push(Step { at: now, what: format!("retrying in {shown}") });
                    tokio::time::sleep(wait).await;
                }
            }
        }
        if matches!(d.verdict, Verdict::Executed { .. }) {
            self.policy.commit(&d.id, &d.proposal, now);
        }
        d.phase = Phase::Done;
        // Durable: with the outcome on disk a restart has nothing to
        // reconcile. Losing it is still safe (the intent holds the prior).
        self.finish(d, true)
    }

    async fn dry_run(&mut self, mut d: Decision, actuator: &dyn Actuator, now: Nanos) -> Decision {
        match self.call(actuator.dry_run(&d.proposal.action)).await {
            Ok(plan) => {
                d.steps.push(Step {
                    at: now,
                    what: format!("dry-run: {} would send {}", plan.actuator, plan.requests.join(" ; ")),
                });
                self.policy.commit(&d.id, &d.proposal, now);
                self.planned.insert(d.id.clone());
                d.verdict = Verdict::DryRun { plan };
            }
            Err(e) => {
                d.steps.push(Step { at: now, what: format!("dry-run failed: {e}") });
                d.verdict = Verdict::Failed { error: e.to_string() };
            }
        }
        self.finish(d, false)
    }

    /// Reads the target and writes the intent, with the prior, to disk. On
    /// a retry the target is read again: a failed attempt may have changed it
    /// (then it is verified in [`Dispatcher::landed_despite`] first).
    async fn prepare_intent(
        &mut self,
        d: &mut Decision,
        actuator: &dyn Actuator,
        now: Nanos,
    ) -> Result<Intent, ActuatorError> {
        if d.phase != Phase::Intent {
            if self.ledger_unwritable().is_some() {
                return Ok(Intent::Unwritable);
            }
            let prepared = self.call(actuator.prepare(&d.proposal.action)).await?;
            if let Some(prepared) = &prepared {
                if prepared.holds_already {
                    return Ok(Intent::Held(prepared.sets.clone()));
                }
            }
            d.prior = prepared.map(|p| p.prior);
            d.phase = Phase::Intent;
            let read = if d.prior.is_some() { "target read; " } else { "" };
            d.steps.push(Step { at: now, what: format!("{read}intent on disk; calling {}", actuator.name()) });
            if !self.save(d, true) {
                return Ok(Intent::Unwritable);
            }
        }
        Ok(Intent::Ready)
    }

    /// A failed or timed-out call may still have taken effect: looks before
    /// sending it again, and records it executed if it did.
    async fn landed_despite(
        &mut self,
        d: &mut Decision,
        actuator: &dyn Actuator,
        error: &ActuatorError,
        now: Nanos,
    ) -> bool {
        if d.phase != Phase::Intent {
            return false;
        }
        let applied =
            d.prior.clone().map(|prior| Outcome { summary: String::new(), requests: vec![], prior: Some(prior) });
        if let Ok(Verification::InEffect) = self.call(actuator.verify(&d.proposal.action, applied.as_ref())).await {
            d.steps.push(Step { at: now, what: "verified in effect despite the error; not sent again".into() });
            d.verdict = Verdict::Executed {
                outcome: Outcome {
                    summary: format!("in effect after: {error}"),
                    requests: vec![],
                    prior: d.prior.clone(),
                },
            };
            return true;
        }
        false
    }
}

/// The waits before each retry: `first`, then doubled each time (backon's
/// exponential backoff, without jitter or cap: the attempts are few,
/// `MAX_ATTEMPTS`). backon multiplies in `f32`; every wait is `first` times
/// a power of two, so it is rounded back to a whole multiple of `first` and
/// stays exact to the nanosecond (the decision says how long it waited).
fn retry_waits(first: Duration) -> impl Iterator<Item = Duration> {
    use backon::BackoffBuilder;
    let waits = backon::ExponentialBuilder::new()
        .with_min_delay(first)
        .with_factor(2.0)
        .without_max_delay()
        .without_max_times()
        .build();
    waits.map(move |wait| {
        if first.is_zero() {
            return wait;
        }
        let times = (wait.as_secs_f64() / first.as_secs_f64()).round();
        first.checked_mul(times as u32).unwrap_or(Duration::MAX)
    })
}

/// What reading the target before acting found.
enum Intent {
    /// Go on: the intent is on disk.
    Ready,
    /// The target already holds what the action sets (what, for people).
    Held(String),
    /// The intent could not be written: nothing may be sent.
    Unwritable,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_waits_double_exactly_from_the_first() {
        let waits: Vec<Duration> = retry_waits(Duration::from_millis(200)).take(10).collect();
        let expected: Vec<Duration> = (0..10).map(|k| Duration::from_millis(200) * (1 << k)).collect();
        assert_eq!(waits, expected);
        assert_eq!(retry_waits(Duration::ZERO).next(), Some(Duration::ZERO));
    }
}
