//! Requests waiting for a human: approve, reject, expire; the breaker reset.

use super::*;

impl Dispatcher {
    /// Approves a request; every check but approval runs again, since the
    /// fleet may have changed while it waited.
    pub async fn approve(&mut self, id: &str, by: &str, now: Nanos) -> Result<Decision, DispatchError> {
        let mut d = self.pending.remove(id).ok_or_else(|| self.not_pending(id))?;
        d.steps.push(Step { at: now, what: format!("approved by {by}") });
        d.phase = Phase::Decided;
        Ok(self.decide(d, now, CheckFor::Approved).await)
    }

    /// Rejects a request.
    pub fn reject(&mut self, id: &str, by: &str, now: Nanos) -> Result<Decision, DispatchError> {
        let mut d = self.pending.remove(id).ok_or_else(|| self.not_pending(id))?;
        d.steps.push(Step { at: now, what: format!("rejected by {by}") });
        d.verdict = Verdict::Rejected { by: by.to_string() };
        Ok(self.finish(d, true))
    }

    fn not_pending(&self, id: &str) -> DispatchError {
        match self.ledger.as_ref().and_then(|l| l.get(id).ok().flatten()) {
            Some(d) => DispatchError::NotPending { id: id.to_string(), verdict: d.verdict.name() },
            None => DispatchError::Unknown(id.to_string()),
        }
    }

    /// Expires requests whose time is up.
    pub fn expire(&mut self, now: Nanos) -> Vec<Decision> {
        let due: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, d)| matches!(d.verdict, Verdict::AwaitingApproval { expires_at } if now >= expires_at))
            .map(|(id, _)| id.clone())
            .collect();
        due.into_iter().filter_map(|id| self.expire_one(&id, now, "nobody approved it in time".into())).collect()
    }

    /// Housekeeping at `now`: expires requests whose time is up, and
    /// compacts the ledger to its retention bounds once per
    /// [`COMPACTION_INTERVAL`]. The run loop calls it on every tick.
    pub fn maintain(&mut self, now: Nanos) -> Vec<Decision> {
        if !self.planned.is_empty() {
            let ids: std::collections::HashSet<&String> = self.policy.in_effect().map(|e| &e.id).collect();
            self.planned.retain(|id| ids.contains(id));
        }
        if now.saturating_sub(self.last_compaction) >= COMPACTION_INTERVAL {
            self.last_compaction = now;
            if let Some(ledger) = &self.ledger {
                // Ages are measured on the clock decisions are stamped with (a
                // replay's recorded time), not the wall clock.
                match ledger.compact(now) {
                    Ok(0) => {}
                    Ok(removed) => tracing::info!(message = "Ledger compacted.", removed, kept = ledger.len()),
                    Err(error) => tracing::error!(message = "Could not compact the ledger.", %error),
                }
            }
        }
        self.expire(now)
    }

    pub(super) fn expire_one(&mut self, id: &str, now: Nanos, reason: String) -> Option<Decision> {
        let mut d = self.pending.remove(id)?;
        d.steps.push(Step { at: now, what: format!("expired: {reason}") });
        d.verdict = Verdict::Expired { reason };
        Some(self.finish(d, true))
    }

    /// Resets the breaker (a human did it).
    pub fn reset_breaker(&mut self, by: &str) -> BreakerState {
        let old = self.policy.breaker().clone();
        self.policy.reset_breaker();
        self.save_breaker();
        tracing::warn!(message = "Circuit breaker reset.", %by, was_tripped_at = ?old.tripped_at);
        old
    }
}
