//! Deciding: a proposal's mode, de-duplication, silences, the safety
//! policy's verdict, approvals and the fleet token, up to the call.

use super::*;

impl Dispatcher {
    /// Decides about one proposal, at the proposal's own time.
    ///
    /// A proposal made again after a restart (`restored`) that the ledger
    /// shows decided before the crash is not decided twice: the earlier
    /// decision is returned, marked as such, and nothing is written.
    pub async fn dispatch(&mut self, proposal: Proposal) -> Decision {
        let on_ladder = match self.onto_ladder(&proposal) {
            ladder::OnLadder::Kept(d) => return *d,
            ladder::OnLadder::Current => true,
            ladder::OnLadder::Off => false,
        };
        let d = self.dispatch_once(proposal).await;
        if on_ladder {
            self.rung_decided(&d);
        }
        d
    }

    async fn dispatch_once(&mut self, proposal: Proposal) -> Decision {
        if proposal.restored {
            if let Some(mut earlier) = self.decided_before(&proposal) {
                earlier.steps.push(Step {
                    at: proposal.decided_at,
                    what: "proposed again after a restart; already decided, not decided twice".into(),
                });
                return earlier;
            }
        }
        self.dispatch_noted(proposal, None).await
    }

    pub(super) fn decided_before(&self, p: &Proposal) -> Option<Decision> {
        let ledger = self.ledger.as_ref()?;
        let earlier = ledger.latest_for(p, p.active_at).unwrap_or_else(|error| {
            tracing::error!(message = "Could not read the ledger.", %error);
            None
        })?;
        // Found not applied after the crash: the fault still fires and
        // nothing acts on it, so this proposal is decided afresh.
        match earlier.verdict {
            Verdict::Interrupted { applied: false, .. } => None,
            _ => Some(earlier),
        }
    }

    /// Decides `proposal` afresh; `note` (why it is decided now, e.g. a
    /// ladder's next rung) follows the first step.
    pub(super) async fn dispatch_noted(&mut self, proposal: Proposal, note: Option<String>) -> Decision {
        let now = proposal.decided_at;
        let (mode, out_of_group) = self.mode_for(&proposal);
        let first = Step {
            at: now,
            what: format!(
                "proposed by {} ({}) for {}",
                proposal.rule,
                &proposal.rule_hash[..12.min(proposal.rule_hash.len())],
                proposal.subject
            ),
        };
        let id = self.next_id();
        let mut d = Decision::new(id, proposal, mode, first, self.now());
        d.steps.extend(note.map(|what| Step { at: now, what }));
        self.route_decision(&mut d);
        if let Some(silence) = self.silences.matching(&d.proposal, now) {
            let reason = silence.describe();
            d.steps.push(Step { at: now, what: reason.clone() });
            d.verdict = Verdict::Suppressed { reason };
            return self.finish(d, false);
        }
        if mode == Mode::Shadow {
            let what = out_of_group.unwrap_or_else(|| "shadow mode: recorded, not acted on".into());
            d.steps.push(Step { at: now, what });
            return self.finish(d, false);
        }
        self.decide(d, now, CheckFor::Proposal).await
    }

    pub(super) async fn decide(&mut self, mut d: Decision, now: Nanos, what: CheckFor) -> Decision {
        if what != CheckFor::Reapplied {
            if let Some((reason, of)) = self.canary_gate(&d, now) {
                return self.hold_for_canary(d, now, reason, of);
            }
        }
        let tripped_before = self.policy.breaker().tripped_at;
        let check = self.check(&mut d, now, what).await;
        match check {
            Check::Duplicate { of, .. } => {
                d.steps.push(Step { at: now, what: format!("already in effect through {of}") });
                d.verdict = Verdict::Duplicate { of };
                self.finish(d, false)
            }
            Check::Suppress(reason) => {
                d.steps.push(Step { at: now, what: format!("suppressed: {reason}") });
                d.verdict = Verdict::Suppressed { reason };
                self.finish(d, false)
            }
            Check::Hold(reason) => {
                d.steps.push(Step { at: now, what: format!("held: {reason}") });
                if tripped_before.is_none() && self.policy.breaker().tripped_at.is_some() {
                    d.steps.push(Step {
                        at: now,
                        what: format!("circuit breaker tripped: {}", self.policy.breaker().reason),
                    });
                    self.save_breaker();
                    self.fleet.trip(&self.policy.breaker().reason).await;
                }
                d.verdict = Verdict::Held { reason };
                self.finish(d, false)
            }
            Check::NeedsApproval { expires_at, reason } => {
                if let Some(reason) = reason {
                    d.steps.push(Step { at: now, what: format!("needs approval: {reason}") });
                }
                d.steps.push(Step {
                    at: now,
                    what: format!("waiting for approval until {}", crate::time::rfc3339(expires_at)),
                });
                d.verdict = Verdict::AwaitingApproval { expires_at };
                self.save(&d, true);
                self.pending.insert(d.id.clone(), d.clone());
                d
            }
            Check::Allow => {
                let d = self.admit_and_act(d, now).await;
                let d = self.maybe_canary(d, now);
                self.maybe_outcome(d, now)
            }
        }
    }

    /// The policy's verdict on `d`. A duplicate of an action whose instance
    /// has resolved since is believed in effect only if its target says so;
    /// otherwise the effect is forgotten and `d` checked afresh.
    async fn check(&mut self, d: &mut Decision, now: Nanos, what: CheckFor) -> Check {
        let check = self.policy.check_for(what, &d.proposal, d.mode, d.destructive, now);
        let Check::Duplicate { of, resolved: true } = &check else { return check };
        let found = match self.route(&d.proposal.action.kind) {
            Some(r) => self.call(r.actuator.verify(&d.proposal.action, None)).await.unwrap_or(Verification::Unknown),
            None => Verification::Unknown,
        };
        if found == Verification::InEffect {
            return check;
        }
        d.steps.push(Step { at: now, what: format!("{of} is no longer known to be in effect ({found:?})") });
        self.policy.remove_effect(&d.proposal.action);
        self.policy.check_for(what, &d.proposal, d.mode, d.destructive, now)
    }

    /// An allowed decision: the fleet's admission for an enforced
    /// destructive action, then the call, then the fleet told.
    async fn admit_and_act(&mut self, mut d: Decision, now: Nanos) -> Decision {
        let enforced = d.destructive && d.mode == Mode::Enforce;
        let impact = self.policy.impact(&d.proposal.action);
        let token = if enforced {
            let scope = self.fleet.scope(&d.proposal.action.kind);
            match self.fleet.admit(&mut d, scope, impact.clone(), now).await {
                Ok(token) => token,
                Err(reason) => {
                    d.verdict = Verdict::Held { reason };
                    return self.finish(d, false);
                }
            }
        } else {
            None
        };
        let d = self.act(d, now).await;
        if let Some(token) = token {
            self.fleet.settle(&d, token).await;
        }
        if enforced && matches!(d.verdict, Verdict::Executed { .. }) {
            self.fleet.executed(&d, &impact).await;
        }
        d
    }
}
