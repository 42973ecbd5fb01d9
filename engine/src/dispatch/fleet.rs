//! The dispatcher's side of fleet coordination: which actions need a fleet
//! token, taking it after the local policy admitted the action, and giving
//! it back when the action did not happen or was undone.
//!
//! Local actions never reach the coordinator: the only thing they consult
//! is the fleet breaker, which the coordinator keeps current in the
//! background, so their path makes no network call.

use std::collections::HashMap;
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::contracts::{kind_matches, Admission, Coordinator, Impact, Release, Scope, Token, TokenRequest};
use crate::contracts::{Decision, Step, Verdict};
use crate::policy::Effect;
use crate::time::Nanos;

/// The coordinator, the playbook's scopes, the actuators' declarations and
/// the tokens held.
pub(super) struct Fleet {
    coordinator: Arc<dyn Coordinator>,
    scopes: Vec<(String, Scope)>,
    catalog: Arc<Catalog>,
    /// Tokens of executed actions still in effect, by decision id.
    held: HashMap<String, Token>,
}

impl Fleet {
    pub(super) fn new(coordinator: Arc<dyn Coordinator>, scopes: Vec<(String, Scope)>, catalog: Arc<Catalog>) -> Fleet {
        Fleet { coordinator, scopes, catalog, held: HashMap::new() }
    }

    pub(super) fn coordinator(&self) -> &Arc<dyn Coordinator> {
        &self.coordinator
    }

    pub(super) fn tokens(&self) -> impl Iterator<Item = &Token> {
        self.held.values()
    }

    /// The scope of `kind`: the playbook's first matching pattern, else
    /// what its actuator declares.
    pub(super) fn scope(&self, kind: &str) -> Scope {
        self.scopes
            .iter()
            .find(|(pattern, _)| kind_matches(pattern, kind))
            .map(|(_, s)| *s)
            .unwrap_or_else(|| self.catalog.scope(kind))
    }

    /// Admits a destructive action the local policy allowed: the fleet
    /// breaker must be clear, a switch it changes must be this daemon's to
    /// change, and, for a fleet-scoped action, a token must be granted.
    /// `Err` is the reason to hold it.
    pub(super) async fn admit(
        &mut self,
        d: &mut Decision,
        scope: Scope,
        impact: Impact,
        now: Nanos,
    ) -> Result<Option<Token>, String> {
        let breaker = self.coordinator.breaker();
        if breaker.tripped {
            let reason = format!("fleet circuit breaker tripped by {}: {}", breaker.by, breaker.reason);
            d.steps.push(Step { at: now, what: format!("held: {reason}") });
            return Err(reason);
        }
        // Ownership before scope: a local switch action (a PFC watchdog
        // escalation) still changes a switch another aggregator may own.
        if let Some(switch) = &impact.switch {
            if let Err(refused) = self.coordinator.may_change_switch(switch).await {
                let reason = refused.to_string();
                d.steps.push(Step { at: now, what: format!("held: {reason}") });
                return Err(reason);
            }
        }
        if scope == Scope::Local {
            return Ok(None);
        }
        let request = TokenRequest { decision: d.id.clone(), kind: d.proposal.action.kind.clone(), impact, at: now };
        match self.coordinator.acquire(&request).await {
            Admission::Granted(token) => {
                if !token.budgets.is_empty() {
                    d.steps.push(Step {
                        at: now,
                        what: format!(
                            "fleet token taken from {} by {} ({})",
                            token.budgets.join(", "),
                            token.holder,
                            self.coordinator.name()
                        ),
                    });
                }
                Ok(Some(token))
            }
            Admission::Refused(reason) => {
                d.steps.push(Step { at: now, what: format!("held: {reason}") });
                Err(reason)
            }
            Admission::Unavailable(why) => {
                let reason = format!("coordination unavailable: {why}");
                d.steps.push(Step { at: now, what: format!("held: {reason}") });
                tracing::warn!(message = "Fleet-scoped action held: coordination unavailable.", id = %d.id, %why);
                Err(reason)
            }
        }
    }

    /// After the actuator ran: an executed action keeps its token while in
    /// effect; anything else gives it back at once.
    pub(super) async fn settle(&mut self, d: &Decision, token: Token) {
        if token.keys.is_empty() {
            return;
        }
        if matches!(d.verdict, Verdict::Executed { .. }) {
            self.held.insert(d.id.clone(), token);
        } else if let Err(error) = self.coordinator.release(&token, Release::NotDone).await {
            // The lease returns it when it lapses.
            tracing::warn!(message = "Could not give a fleet token back.", id = %d.id, %error);
        }
    }

    /// The action of `effect` was undone (or is no longer ours): its token
    /// goes back, and a switch's record of it goes.
    pub(super) async fn undone(&mut self, effect: &Effect) {
        let id = &effect.id;
        if let Some(token) = self.held.remove(id) {
            if let Err(error) = self.coordinator.release(&token, Release::Undone).await {
                tracing::warn!(message = "Could not give a fleet token back.", %id, %error);
            }
        }
        if let Some(switch) = &effect.impact.switch {
            self.coordinator.switch_restored(&effect.action, switch).await;
        }
    }

    /// The executed `d` changed what `impact` names: a switch's next owner
    /// must be able to find it.
    pub(super) async fn executed(&self, d: &Decision, impact: &Impact) {
        if let Some(switch) = &impact.switch {
            self.coordinator.switch_changed(d, switch).await;
        }
    }

    /// The local breaker tripped: trip the fleet's too.
    pub(super) async fn trip(&self, reason: &str) {
        if let Err(error) = self.coordinator.trip(reason).await {
            tracing::error!(message = "Could not trip the fleet breaker.", %error);
        }
    }
}
