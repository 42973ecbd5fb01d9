//! The dispatcher: one owner of the safety policy and the ledger, by
//! stage:
//!
//! - [`decide`]: mode, de-duplication, silences, the policy's verdict,
//!   approvals and the fleet token;
//! - [`execute`]: the actuator's call with its timeout and retries;
//! - [`approval`]: requests waiting for a human, and their expiry;
//! - [`canary`]: one place of a plane first, the rest once it proved itself;
//! - [`outcome`]: whether an executed action helped, judged afterwards;
//! - [`ladder`]: a rule's remedies one at a time, repeat offenders up the ladder;
//! - [`undo`]: undoing what a resolved instance put in effect;
//! - [`manual`]: an operator's undo of one action, and an incident ended
//!   by hand, through the same undo path;
//! - [`reconcile`]: settling what a crash interrupted, and undoing what
//!   outlived its incident;
//! - [`reverify`]: reading actions in effect back, and re-applying what a
//!   target lost while its incident fires;
//! - [`adopt`]: actions in effect on switches taken over from another
//!   aggregator, made this daemon's own.
//!
//! Time: decisions are stamped with the proposals' time (a replay's
//! recorded time), and with the dispatcher's clock for when they reached
//! it and were final — the wall clock unless [`Dispatcher::with_clock`]
//! says otherwise.

mod adopt;
mod approval;
mod canary;
mod decide;
mod execute;
mod ladder;
mod manual;
mod outcome;
mod reconcile;
mod reverify;
mod undo;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use crate::catalog::{ActuatorRoute, Catalog};
use crate::contracts::{Actuator, ActuatorError, Outcome, Verification};
use crate::contracts::{Adopted, Coordinator, Scope, Standalone, Token};
use crate::contracts::{Decision, Drift, DriftKind, Drifted, Phase, Step, Verdict};
use crate::contracts::{OutcomeResult, Proposal};
use crate::labels::Labels;
use crate::ledger::{Ledger, ModeSet};
use crate::mode::Mode;
use crate::policy::{BreakerState, Check, CheckFor, Effect, Policy, PolicySettings};
use crate::silence::{Silence, Silences};
use crate::time::{wall_clock_now, Nanos, Span};
use crate::topology::Topology;

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
    /// The routes and what their actuators declare, shared with the policy.
    catalog: Arc<Catalog>,
    policy: Policy,
    ledger: Option<Ledger>,
    /// Decisions awaiting approval, by id.
    pending: BTreeMap<String, Decision>,
    seq: u64,
    /// When the ledger was last compacted.
    last_compaction: Nanos,
    /// When the actions in effect were last read back.
    last_verified: Nanos,
    /// Actions found drifted: the latest, and how many of each kind.
    drifts: DriftLog,
    /// Operators' silences (see [`crate::silence`]).
    silences: Silences,
    /// Fleet coordination ([`Standalone`] unless configured).
    fleet: super::fleet::Fleet,
    /// Undos held because their intent could not be written, with the
    /// first step of each: run when the ledger can be written again. At
    /// most one per action in effect.
    held_undos: Vec<(Effect, String)>,
    /// The ids of effects a dry-run only planned: counted by the policy
    /// (duplicates, limits) as if carried out, but nothing changed, so not
    /// listed in effect ([`Dispatcher::changed_in_effect`]). Pruned on the
    /// tick to the policy's effects.
    planned: std::collections::HashSet<String>,
    /// When the ledger was last tried again while it could not be written.
    last_recovery: Nanos,
    /// When decisions reach the dispatcher and become final.
    clock: Clock,
    /// Canaries made, judged and waited for.
    canaries: canary::Canaries,
    /// Outcome checks open, and rules held after a harmful action.
    outcomes: outcome::Outcomes,
    /// Escalation ladders being climbed.
    climbs: ladder::Climbs,
}

pub use canary::{CanaryBoard, CanaryCheck};
pub use outcome::{OutcomeBoard, OutcomeWatch};

/// The drifts found since start: the last [`DriftLog::KEPT`], and counts.
#[derive(Debug, Default)]
struct DriftLog {
    recent: std::collections::VecDeque<Drifted>,
    reverted: u64,
    changed: u64,
}

impl DriftLog {
    /// Drifts kept for `status`: an operator needs the latest, the ledger has all.
    const KEPT: usize = 64;

    fn push(&mut self, drifted: Drifted) {
        match drifted.drift.kind {
            DriftKind::Reverted => self.reverted += 1,
            DriftKind::Changed => self.changed += 1,
        }
        if self.recent.len() == Self::KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(drifted);
    }
}

/// A source of the current time, ns since the epoch.
pub type Clock = Arc<dyn Fn() -> Nanos + Send + Sync>;

/// Why a request about a decision was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DispatchError {
    /// No decision has that id.
    #[error("no decision {0}")]
    Unknown(String),
    /// The decision exists but is not waiting for approval.
    #[error("decision {id} is not waiting for approval (it is {verdict})")]
    NotPending {
        /// The decision.
        id: String,
        /// What became of it.
        verdict: &'static str,
    },
    /// The silence was refused.
    #[error(transparent)]
    Silence(#[from] crate::silence::SilenceError),
    /// An undo by hand was refused: the decision is not an action in effect
    /// that we may restore (already undone, not executed, drifted).
    #[error("cannot undo {id}: {reason}")]
    NotUndoable {
        /// The decision.
        id: String,
        /// Why.
        reason: String,
    },
    /// The incident cannot be ended: it is over already, or was never firing.
    #[error("cannot resolve {incident}: {reason}")]
    NotResolvable {
        /// The incident, as the caller named it.
        incident: String,
        /// Why.
        reason: String,
    },
}

/// The silences kept in `ledger`, those that ended while the daemon was
/// down dropped (from the ledger too). Silences are set on the wall clock
/// (the control API's), so they are judged by it.
fn restore_silences(ledger: &Ledger) -> Silences {
    let (list, seq) = ledger.silences().unwrap_or_else(|error| {
        tracing::error!(message = "Could not read the silences kept in the ledger; none restored.", %error);
        (Vec::new(), 0)
    });
    let (silences, ended) = Silences::restore(list, seq, wall_clock_now());
    for id in ended {
        if let Err(error) = ledger.remove_silence(&id) {
            tracing::error!(message = "Could not drop an ended silence from the ledger.", %id, %error);
        }
    }
    for s in silences.active(wall_clock_now()) {
        tracing::warn!(message = "Silence kept from before the restart.", id = %s.id, scope = %s.describe());
    }
    silences
}

/// Counts the executed decision `d` in effect again: found in the ledger at
/// start, or adopted from another aggregator.
fn restore_effect_of(policy: &mut Policy, d: &Decision) {
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

/// How often the ledger is compacted to its retention age (its record cap
/// is kept on every tick, [`COMPACTION_STEP`] records at a time).
pub const COMPACTION_INTERVAL: Nanos = 3600 * crate::time::SECOND;

/// The most records one tick removes over the ledger's cap: a few
/// milliseconds of work, so a storm's thousands of records a second are
/// caught up with within seconds without holding the dispatcher.
pub const COMPACTION_STEP: usize = 2_000;

/// The reason of a decision held because its intent could not be written.
pub const LEDGER_UNWRITABLE: &str = "ledger unwritable";

/// How often a ledger that cannot be written is tried again: each try
/// writes a probe of [`crate::store::PROBE_BYTES`], too much for every tick.
pub const LEDGER_RETRY: Nanos = crate::time::SECOND;

impl Dispatcher {
    /// A dispatcher. With a ledger, it restores the breaker, the actions in
    /// effect and the requests awaiting approval; call
    /// [`Dispatcher::reconcile`] next to settle interrupted actions.
    pub fn new(config: DispatchConfig, ledger: Option<Ledger>) -> Dispatcher {
        let mut config = config;
        let catalog = Arc::new(Catalog::new(config.routes.clone()));
        let mut policy = Policy::new(config.policy.clone(), config.topology.clone(), catalog.clone());
        if let Some(set) = ledger.as_ref().and_then(|l| l.mode().unwrap_or(None)) {
            tracing::warn!(
                message = "Mode kept from before the restart.",
                mode = set.mode.as_str(),
                set_by = %set.by,
                set_at = %crate::time::rfc3339(set.at),
                playbook_mode = config.mode.as_str()
            );
            config.mode = set.mode;
        }
        let mut pending = BTreeMap::new();
        let mut canaries = canary::Canaries::default();
        let mut outcomes = outcome::Outcomes::default();
        let silences = ledger.as_ref().map(restore_silences).unwrap_or_default();
        if let Some(ledger) = &ledger {
            match ledger.breaker() {
                Ok(state) => policy.restore_breaker(state),
                Err(error) => tracing::error!(message = "Could not read the breaker state; assuming tripped.", %error),
            }
            match ledger.live() {
                Ok(records) => {
                    for d in records {
                        match &d.verdict {
                            Verdict::Executed { .. } if d.undo_of.is_none() && d.undone_by.is_none() => {
                                restore_effect_of(&mut policy, &d);
                                canaries.restore(&d, &mut policy);
                                outcomes.restore(&d);
                            }
                            Verdict::Held { .. } => canaries.restore(&d, &mut policy),
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
            catalog: catalog.clone(),
            policy,
            ledger,
            pending,
            seq: 0,
            last_compaction: Nanos::MIN,
            last_verified: Nanos::MIN,
            drifts: DriftLog::default(),
            silences,
            fleet: super::fleet::Fleet::new(Arc::new(Standalone), Vec::new(), catalog),
            held_undos: Vec::new(),
            planned: Default::default(),
            last_recovery: Nanos::MIN,
            clock: Arc::new(wall_clock_now),
            canaries,
            outcomes,
            climbs: ladder::Climbs::default(),
        }
    }

    /// Stamps decisions with `clock` instead of the wall clock (tests, and
    /// runs on a virtual clock).
    pub fn with_clock(mut self, clock: Clock) -> Dispatcher {
        self.clock = clock;
        self
    }

    /// The dispatcher's clock now.
    fn now(&self) -> Nanos {
        (self.clock)()
    }

    /// Adds a silence (see [`crate::silence`]); returns it with its id.
    /// It is in the ledger, on disk, before this returns.
    pub fn silence(&mut self, silence: Silence) -> Result<Silence, DispatchError> {
        let set = self.silences.add(silence).map_err(DispatchError::Silence)?;
        if let Some(ledger) = &self.ledger {
            if let Err(error) = ledger.put_silence(&set, self.silences.seq()) {
                tracing::error!(message = "Could not keep a silence in the ledger; it holds until a restart.", id = %set.id, %error);
            }
        }
        Ok(set)
    }

    /// Lifts a silence early; false if there is no such silence.
    pub fn unsilence(&mut self, id: &str) -> bool {
        let lifted = self.silences.remove(id);
        if lifted {
            self.forget_silence(id);
        }
        lifted
    }

    /// The silences in force at `now` (ended ones are dropped, from the
    /// ledger too).
    pub fn silences(&mut self, now: Nanos) -> Vec<Silence> {
        for id in self.silences.expire(now) {
            self.forget_silence(&id);
        }
        self.silences.active(now)
    }

    fn forget_silence(&self, id: &str) {
        if let Some(ledger) = &self.ledger {
            if let Err(error) = ledger.remove_silence(id) {
                tracing::error!(message = "Could not drop a silence from the ledger.", %id, %error);
            }
        }
    }

    /// Consults `coordinator` for fleet-scoped actions: those whose kind
    /// matches a pattern of `scopes` (the playbook's) set to
    /// [`Scope::Fleet`] (first match wins), else whose actuator declares
    /// them fleet-scoped.
    pub fn with_coordinator(mut self, coordinator: Arc<dyn Coordinator>, scopes: Vec<(String, Scope)>) -> Dispatcher {
        self.fleet = super::fleet::Fleet::new(coordinator, scopes, self.catalog.clone());
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

    /// Switches the global mode because `by` asked, at `now`: recorded in
    /// the ledger, durably, so it holds across restarts until set again.
    pub fn set_mode_by(&mut self, mode: Mode, by: &str, now: Nanos) {
        let was = self.config.mode;
        self.config.mode = mode;
        tracing::warn!(message = "Mode set by an operator.", mode = mode.as_str(), was = was.as_str(), %by);
        if let Some(ledger) = &self.ledger {
            let set = ModeSet { mode, by: by.to_string(), at: now };
            if let Err(error) = ledger.set_mode(&set) {
                tracing::error!(message = "Could not record the mode.", %error);
            }
        }
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

    /// The latest actions found drifted, oldest first.
    pub fn drifted(&self) -> impl Iterator<Item = &Drifted> {
        self.drifts.recent.iter()
    }

    /// How many drifts were found since start: (reverted, changed by someone else).
    pub fn drift_counts(&self) -> (u64, u64) {
        (self.drifts.reverted, self.drifts.changed)
    }

    /// The actions this daemon changed a target with and has not undone:
    /// the policy's effects without those a dry-run only planned.
    pub fn changed_in_effect(&self) -> impl Iterator<Item = &Effect> {
        self.policy.in_effect().filter(|e| !self.planned.contains(&e.id))
    }

    /// Whether the ledger can be written (`None`: the dispatcher has none).
    pub fn ledger_health(&self) -> Option<crate::store::WriteHealth> {
        self.ledger.as_ref().map(Ledger::write_health)
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
    pub fn effective_mode(&self, rule: &str, rule_mode: Mode) -> Mode {
        let playbook = self.config.rule_modes.get(rule).copied().unwrap_or(Mode::Enforce);
        self.config.mode.at_most(playbook).at_most(rule_mode).for_dispatch()
    }

    /// The mode `p` is decided in: [`Dispatcher::effective_mode`], or
    /// shadow, with the reason, when its rule is enforced on a canary group
    /// `p` is not in (`policy::CanaryGroupSettings`).
    pub fn mode_for(&self, p: &Proposal) -> (Mode, Option<String>) {
        let mode = self.effective_mode(&p.rule, p.rule_mode);
        if mode == Mode::Shadow {
            return (mode, None);
        }
        match self.policy.settings().canary_groups.shadowed(p) {
            Some(why) => (Mode::Shadow, Some(why)),
            None => (mode, None),
        }
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
        self.catalog.route(kind).cloned()
    }

    /// Which actuator a decision goes to, and whether its action is
    /// destructive (blast-radius limits and the breaker apply).
    fn route_decision(&self, d: &mut Decision) {
        let kind = &d.proposal.action.kind;
        d.actuator = self.catalog.route(kind).map(|r| r.actuator.name().to_string());
        d.destructive = self.catalog.destructive(kind);
    }

    /// Writes `d` (and waits until it is on disk if `durable`); whether it
    /// was. A ledger that cannot be written says so itself, once (see
    /// [`crate::store`]): logging each refused record would repeat it for
    /// every sample of a storm.
    fn save(&self, d: &Decision, durable: bool) -> bool {
        let Some(ledger) = &self.ledger else { return true };
        let result = if durable { ledger.put_durable(d) } else { ledger.put(d) };
        match result {
            Ok(()) => true,
            Err(crate::store::StoreError::Unwritable { .. } | crate::store::StoreError::Reopening) => false,
            Err(error) => {
                tracing::error!(message = "Could not write a decision to the ledger.", id = %d.id, %error);
                false
            }
        }
    }

    /// Why the ledger cannot be written, if it cannot: then no actuator is
    /// called, since an action's intent must be on disk before it is sent.
    fn ledger_unwritable(&self) -> Option<String> {
        self.ledger.as_ref().and_then(Ledger::unwritable)
    }

    /// On every tick: a ledger that cannot be written is opened again if
    /// space is back (see [`crate::store::Store::recover`]); once it can be
    /// written, what it refused meanwhile is written (the breaker too), and
    /// the undos held meanwhile run. Otherwise it flushes what was written
    /// since the last flush, and keeps the ledger under its record cap.
    pub async fn keep_ledger(&mut self, now: Nanos) -> Vec<Decision> {
        let Some(ledger) = self.ledger.clone() else { return Vec::new() };
        if ledger.unwritable().is_some() {
            if now.saturating_sub(self.last_recovery) < LEDGER_RETRY {
                return Vec::new();
            }
            self.last_recovery = now;
            match ledger.recover() {
                Ok(true) => self.save_breaker(),
                Ok(false) => return Vec::new(),
                Err(error) => {
                    tracing::debug!(message = "The ledger could not be opened again yet.", %error);
                    return Vec::new();
                }
            }
        } else if ledger.flush().is_err() {
            return Vec::new();
        }
        match ledger.compact_some(COMPACTION_STEP) {
            Ok(0) | Err(crate::store::StoreError::Unwritable { .. }) => {}
            Ok(removed) => tracing::debug!(message = "Ledger records over its cap removed.", removed),
            Err(error) => tracing::error!(message = "Could not compact the ledger.", %error),
        }
        let mut out = Vec::new();
        for (effect, first) in std::mem::take(&mut self.held_undos) {
            if self.policy.in_effect().any(|e| e.id == effect.id) {
                out.push(self.undo(effect, now, first).await);
            }
        }
        out
    }

    fn save_breaker(&self) {
        if let Some(ledger) = &self.ledger {
            match ledger.set_breaker(self.policy.breaker()) {
                // Said once by the store; written again when it recovers.
                Ok(()) | Err(crate::store::StoreError::Unwritable { .. }) => {}
                Err(error) => tracing::error!(message = "Could not persist the breaker state.", %error),
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

    fn finish(&mut self, mut d: Decision, durable: bool) -> Decision {
        d.finished_at = self.now();
        self.save(&d, durable);
        d
    }

    /// `d` held because its intent could not be written: nothing was sent.
    fn hold_unwritable(&mut self, mut d: Decision, now: Nanos, what: &str) -> Decision {
        if d.phase == Phase::Intent {
            // The step saying the intent is on disk is not true.
            d.steps.pop();
        }
        d.phase = Phase::Decided;
        d.steps.push(Step { at: now, what: format!("held: {LEDGER_UNWRITABLE}; {what}") });
        d.verdict = Verdict::Held { reason: LEDGER_UNWRITABLE.into() };
        self.finish(d, false)
    }
}
