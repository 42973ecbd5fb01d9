//! The dispatcher: policy, approvals, actuator calls with timeouts and
//! retries, undo, and reconciliation after a crash.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use super::silence::{Silence, Silences};
use super::types::{Decision, Mode, Phase, Step, Verdict};
use crate::action::Proposal;
use crate::contracts::{Actuator, ActuatorError, Outcome, Verification};
use crate::coordination::{Coordinator, Scope, Standalone, Token};
use crate::labels::Labels;
use crate::ledger::Ledger;
use crate::policy::{kind_matches, BreakerState, Check, Effect, Policy, PolicySettings};
use crate::rule::RuleMode;
use crate::time::{wall_clock_now, Nanos, Span};
use crate::topology::Topology;

/// Which actuator handles which action kinds: `pfcwd.escalate` exactly,
/// `pfcwd.*` for every verb, or `*` for everything.
#[derive(Clone)]
pub struct ActuatorRoute {
    /// The pattern.
    pub pattern: String,
    /// The actuator.
    pub actuator: Arc<dyn Actuator>,
    /// Whether its actions count against blast-radius limits and stop when
    /// the breaker trips (false for notifications).
    pub destructive: bool,
}

/// The dispatcher's configuration.
#[derive(Clone)]
pub struct DispatchConfig {
    /// The global mode.
    pub mode: Mode,
    /// Per-rule modes set by the playbook.
    pub rule_modes: HashMap<String, Mode>,
    /// Routes, first match wins.
    pub routes: Vec<ActuatorRoute>,
    /// How long one actuator call may take.
    pub timeout: Duration,
    /// The safety policy.
    pub policy: PolicySettings,
    /// The inventory, for limits in topology terms.
    pub topology: Option<Arc<Topology>>,
}

/// The dispatcher. Owned by one task; proposals are handled in order, so
/// the policy's counts are never raced.
pub struct Dispatcher {
    config: DispatchConfig,
    policy: Policy,
    ledger: Option<Ledger>,
    /// Decisions awaiting approval, by id.
    pending: BTreeMap<String, Decision>,
    seq: u64,
    /// When the ledger was last compacted.
    last_compaction: Nanos,
    /// Operators' silences (see [`super::silence`]).
    silences: Silences,
    /// Fleet coordination ([`Standalone`] unless configured).
    fleet: super::fleet::Fleet,
}

/// How often the ledger is compacted to its retention bounds.
pub const COMPACTION_INTERVAL: Nanos = 3600 * crate::time::SECOND;

impl Dispatcher {
    /// A dispatcher. With a ledger, it restores the breaker, the actions in
    /// effect and the requests awaiting approval; call
    /// [`Dispatcher::reconcile`] next to settle interrupted actions.
    pub fn new(config: DispatchConfig, ledger: Option<Ledger>) -> Dispatcher {
        let mut policy = Policy::new(config.policy.clone(), config.topology.clone());
        let mut pending = BTreeMap::new();
        if let Some(ledger) = &ledger {
            match ledger.breaker() {
                Ok(state) => policy.restore_breaker(state),
                Err(error) => tracing::error!(message = "Could not read the breaker state; assuming tripped.", %error),
            }
            match ledger.list(&Default::default()) {
                Ok(records) => {
                    for d in records {
                        match &d.verdict {
                            Verdict::Executed { .. } if d.undo_of.is_none() && d.undone_by.is_none() => {
                                let impact = policy.impact(&d.proposal.action);
                                policy.restore_effect(Effect {
                                    id: d.id.clone(),
                                    rule: d.proposal.rule.clone(),
                                    subject: d.proposal.subject.clone(),
                                    action: d.proposal.action.clone(),
                                    impact,
                                    since: d.proposal.decided_at,
                                    resolved: false,
                                });
                            }
                            Verdict::AwaitingApproval { .. } => {
                                pending.insert(d.id.clone(), d);
                            }
                            _ => {}
                        }
                    }
                }
                Err(error) => tracing::error!(message = "Could not read the ledger.", %error),
            }
        }
        Dispatcher {
            config,
            policy,
            ledger,
            pending,
            seq: 0,
            last_compaction: Nanos::MIN,
            silences: Silences::default(),
            fleet: super::fleet::Fleet::new(Arc::new(Standalone), Vec::new()),
        }
    }

    /// Adds a silence (see [`super::silence`]); returns it with its id.
    pub fn silence(&mut self, silence: Silence) -> Result<Silence, String> {
        self.silences.add(silence)
    }

    /// Lifts a silence early; false if there is no such silence.
    pub fn unsilence(&mut self, id: &str) -> bool {
        self.silences.remove(id)
    }

    /// The silences in force at `now` (ended ones are dropped).
    pub fn silences(&mut self, now: Nanos) -> Vec<Silence> {
        self.silences.expire(now);
        self.silences.active(now)
    }

    /// Consults `coordinator` for fleet-scoped actions: those whose kind
    /// matches a pattern of `scopes` set to [`Scope::Fleet`] (first match
    /// wins), else whose kind [`Scope::default_for`] makes fleet-scoped.
    pub fn with_coordinator(mut self, coordinator: Arc<dyn Coordinator>, scopes: Vec<(String, Scope)>) -> Dispatcher {
        self.fleet = super::fleet::Fleet::new(coordinator, scopes);
        self
    }

    /// The fleet coordinator.
    pub fn coordinator(&self) -> &Arc<dyn Coordinator> {
        self.fleet.coordinator()
    }

    /// Fleet tokens this daemon holds for actions in effect, by decision.
    pub fn fleet_tokens(&self) -> impl Iterator<Item = &Token> {
        self.fleet.tokens()
    }

    /// Switches the global mode at run time.
    pub fn set_mode(&mut self, mode: Mode) {
        self.config.mode = mode;
    }

    /// The global mode.
    pub fn mode(&self) -> Mode {
        self.config.mode
    }

    /// The breaker.
    pub fn breaker(&self) -> &BreakerState {
        self.policy.breaker()
    }

    /// The policy (for status).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The ledger, if any.
    pub fn ledger(&self) -> Option<&Ledger> {
        self.ledger.as_ref()
    }

    /// Requests awaiting approval.
    pub fn pending(&self) -> impl Iterator<Item = &Decision> {
        self.pending.values()
    }

    /// The mode that applies to a proposal of `rule` declared with `rule_mode`.
    pub fn effective_mode(&self, rule: &str, rule_mode: RuleMode) -> Mode {
        let playbook = self.config.rule_modes.get(rule).copied().unwrap_or(Mode::Enforce);
        self.config.mode.at_most(playbook).at_most(Mode::of_rule(rule_mode))
    }

    fn next_id(&mut self) -> String {
        if let Some(ledger) = &self.ledger {
            match ledger.next_id() {
                Ok(id) => return id,
                Err(error) => tracing::error!(message = "Could not take a decision id from the ledger.", %error),
            }
        }
        self.seq += 1;
        format!("m{:09x}", self.seq)
    }

    fn route(&self, kind: &str) -> Option<ActuatorRoute> {
        self.config.routes.iter().find(|r| kind_matches(&r.pattern, kind)).cloned()
    }

    fn save(&self, d: &Decision, durable: bool) {
        if let Some(ledger) = &self.ledger {
            let result = if durable { ledger.put_durable(d) } else { ledger.put(d) };
            if let Err(error) = result {
                tracing::error!(message = "Could not write a decision to the ledger.", id = %d.id, %error);
            }
        }
    }

    fn save_breaker(&self) {
        if let Some(ledger) = &self.ledger {
            if let Err(error) = ledger.set_breaker(self.policy.breaker()) {
                tracing::error!(message = "Could not persist the breaker state.", %error);
            }
        }
    }

    async fn call<T>(
        &self,
        fut: impl std::future::Future<Output = Result<T, ActuatorError>>,
    ) -> Result<T, ActuatorError> {
        match tokio::time::timeout(self.config.timeout, fut).await {
            Ok(result) => result,
            Err(_) => Err(ActuatorError::Timeout(self.config.timeout.as_millis() as u64)),
        }
    }

    /// Decides about one proposal, at the proposal's own time.
    ///
    /// A proposal made again after a restart (`restored`) that the ledger
    /// shows decided before the crash is not decided twice: the earlier
    /// decision is returned, marked as such, and nothing is written.
    pub async fn dispatch(&mut self, proposal: Proposal) -> Decision {
        if proposal.restored {
            if let Some(mut earlier) = self.decided_before(&proposal) {
                earlier.steps.push(Step {
                    at: proposal.decided_at,
                    what: "proposed again after a restart; already decided, not decided twice".into(),
                });
                return earlier;
            }
        }
        self.dispatch_inner(proposal).await
    }

    fn decided_before(&self, p: &Proposal) -> Option<Decision> {
        let ledger = self.ledger.as_ref()?;
        let filter = crate::ledger::Filter { since: Some(p.active_at), rule: Some(p.rule.clone()), target: None };
        let key = p.action.dedup_key();
        ledger
            .list(&filter)
            .ok()?
            .into_iter()
            .find(|d| d.undo_of.is_none() && d.proposal.subject == p.subject && d.proposal.action.dedup_key() == key)
    }

    async fn dispatch_inner(&mut self, proposal: Proposal) -> Decision {
        let now = proposal.decided_at;
        let route = self.route(&proposal.action.kind);
        let mode = self.effective_mode(&proposal.rule, proposal.rule_mode);
        let mut d = Decision {
            id: self.next_id(),
            undo_of: None,
            undone_by: None,
            actuator: route.as_ref().map(|r| r.actuator.name().to_string()),
            destructive: route.as_ref().is_none_or(|r| r.destructive),
            mode,
            verdict: Verdict::Shadowed,
            phase: Phase::Decided,
            attempts: 0,
            steps: vec![Step {
                at: now,
                what: format!(
                    "proposed by {} ({}) for {}",
                    proposal.rule,
                    &proposal.rule_hash[..12.min(proposal.rule_hash.len())],
                    proposal.subject
                ),
            }],
            dispatched_at: wall_clock_now(),
            finished_at: 0,
            proposal,
        };
        if let Some(silence) = self.silences.matching(&d.proposal, now) {
            let reason = silence.describe();
            d.steps.push(Step { at: now, what: reason.clone() });
            d.verdict = Verdict::Suppressed { reason };
            return self.finish(d, false);
        }
        if mode == Mode::Shadow {
            d.steps.push(Step { at: now, what: "shadow mode: recorded, not acted on".into() });
            return self.finish(d, false);
        }
        self.decide(d, now, true).await
    }

    async fn decide(&mut self, mut d: Decision, now: Nanos, ask_approval: bool) -> Decision {
        let destructive = d.destructive;
        let tripped_before = self.policy.breaker().tripped_at;
        let mut check = if ask_approval {
            self.policy.check(&d.proposal, destructive, now)
        } else {
            self.policy.check_approved(&d.proposal, destructive, now)
        };
        if let Check::Duplicate { of, resolved: true } = &check {
            // The instance that asked for it is gone: believe "in effect" only
            // if the target says so.
            let of = of.clone();
            let found = match self.route(&d.proposal.action.kind) {
                Some(r) => {
                    self.call(r.actuator.verify(&d.proposal.action, None)).await.unwrap_or(Verification::Unknown)
                }
                None => Verification::Unknown,
            };
            if found == Verification::InEffect {
                check = Check::Duplicate { of, resolved: true };
            } else {
                d.steps.push(Step { at: now, what: format!("{of} is no longer known to be in effect ({found:?})") });
                self.policy.remove_effect(&d.proposal.action);
                check = if ask_approval {
                    self.policy.check(&d.proposal, destructive, now)
                } else {
                    self.policy.check_approved(&d.proposal, destructive, now)
                };
            }
        }
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
            Check::NeedsApproval { expires_at } => {
                d.steps.push(Step { at: now, what: format!("waiting for approval until {expires_at}") });
                d.verdict = Verdict::AwaitingApproval { expires_at };
                self.save(&d, true);
                self.pending.insert(d.id.clone(), d.clone());
                d
            }
            Check::Allow => {
                let token = if destructive && d.mode == Mode::Enforce {
                    let scope = self.fleet.scope(&d.proposal.action.kind);
                    let impact = self.policy.impact(&d.proposal.action);
                    match self.fleet.admit(&mut d, scope, impact, now).await {
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
                d
            }
        }
    }

    async fn act(&mut self, mut d: Decision, now: Nanos) -> Decision {
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

    fn finish(&mut self, mut d: Decision, durable: bool) -> Decision {
        d.finished_at = wall_clock_now();
        self.save(&d, durable);
        d
    }

    /// Approves a request; every check but approval runs again, since the
    /// fleet may have changed while it waited.
    pub async fn approve(&mut self, id: &str, by: &str, now: Nanos) -> Result<Decision, String> {
        let mut d = self.pending.remove(id).ok_or_else(|| self.not_pending(id))?;
        d.steps.push(Step { at: now, what: format!("approved by {by}") });
        d.phase = Phase::Decided;
        Ok(self.decide(d, now, false).await)
    }

    /// Rejects a request.
    pub fn reject(&mut self, id: &str, by: &str, now: Nanos) -> Result<Decision, String> {
        let mut d = self.pending.remove(id).ok_or_else(|| self.not_pending(id))?;
        d.steps.push(Step { at: now, what: format!("rejected by {by}") });
        d.verdict = Verdict::Rejected { by: by.to_string() };
        Ok(self.finish(d, true))
    }

    fn not_pending(&self, id: &str) -> String {
        match self.ledger.as_ref().and_then(|l| l.get(id).ok().flatten()) {
            Some(d) => format!("decision {id} is not waiting for approval (it is {})", d.verdict.name()),
            None => format!("no decision {id}"),
        }
    }

    /// Expires requests whose time is up, and compacts the ledger to its
    /// retention bounds once per [`COMPACTION_INTERVAL`].
    pub fn expire(&mut self, now: Nanos) -> Vec<Decision> {
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
        let due: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, d)| matches!(d.verdict, Verdict::AwaitingApproval { expires_at } if now >= expires_at))
            .map(|(id, _)| id.clone())
            .collect();
        due.into_iter().filter_map(|id| self.expire_one(&id, now, "nobody approved it in time".into())).collect()
    }

    fn expire_one(&mut self, id: &str, now: Nanos, reason: String) -> Option<Decision> {
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

    async fn undo(&mut self, effect: Effect, now: Nanos) -> Decision {
        let d = self.undo_inner(effect.clone(), now).await;
        // Whatever became of the undo, the effect is no longer counted here;
        // its fleet token goes back with it.
        if !self.policy.in_effect().any(|e| e.id == effect.id) {
            self.fleet.undone(&effect.id).await;
        }
        d
    }

    async fn undo_inner(&mut self, effect: Effect, now: Nanos) -> Decision {
        let original = self.ledger.as_ref().and_then(|l| l.get(&effect.id).ok().flatten());
        let route = self.route(&effect.action.kind);
        let mut proposal = original.as_ref().map(|o| o.proposal.clone()).unwrap_or_else(|| Proposal {
            id: effect.id.clone(),
            rule: effect.rule.clone(),
            rule_hash: String::new(),
            rule_mode: RuleMode::Enforce,
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
        let mut d = Decision {
            id: self.next_id(),
            undo_of: Some(effect.id.clone()),
            undone_by: None,
            actuator: route.as_ref().map(|r| r.actuator.name().to_string()),
            destructive: false,
            mode,
            verdict: Verdict::Shadowed,
            phase: Phase::Decided,
            attempts: 0,
            steps: vec![Step {
                at: now,
                what: format!("{} resolved: undo {} of {}", effect.rule, effect.action, effect.id),
            }],
            dispatched_at: wall_clock_now(),
            finished_at: 0,
            proposal,
        };
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
