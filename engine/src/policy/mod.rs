//! The safety policy: what may be done to the fabric, decided before
//! anything is sent.
//!
//! For every proposal, in order:
//!
//! 1. **de-duplication**: the same action on the same target already in
//!    effect is not sent again;
//! 2. **per-target cooldown and rate limit**;
//! 3. for destructive actions, the **circuit breaker** (tripped: nothing
//!    destructive goes out until a human resets it) and the **blast-radius
//!    limits** in topology terms (cordons per window and share of the fleet,
//!    rails per plane, isolated ports per switch, actions per kind), each
//!    counting the kinds whose actuator declares it counts them
//!    ([`LimitClass`], read from the [`Catalog`]);
//!    a proposal over a limit is held with the reason and counts towards
//!    tripping the breaker;
//! 4. **approval**: some kinds wait for `rocemend approve ID`, and so does an
//!    enforced destructive action that touches more running jobs than
//!    `max_jobs_touched` (its step names them).
//!
//! The policy is pure bookkeeping over injected time: [`Policy::check`]
//! decides, [`Policy::commit`] records what was done. The dispatcher owns it.

mod canary_groups;
mod config;
mod ladders;
mod outcomes;

pub use crate::contracts::{kind_matches, Impact};
pub use canary_groups::{CanaryGroupSettings, CanaryGroupTables};
pub use config::{
    ApprovalRule, BreakerConfig, CanaryRule, CanarySettings, Limits, PolicyError, PolicySettings, RetryConfig,
    TargetLimits, UndoConfig, VerifyConfig, JOBS_APPROVAL_TIMEOUT,
};
pub use ladders::{Ladder, LadderRule, LadderSettings};
pub use outcomes::{ExpectRule, Expectation, OutcomeSettings, OutcomesConfig};

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::contracts::{Action, LimitClass, Proposal};
use crate::labels::Labels;
use crate::mode::Mode;
use crate::time::{Nanos, Span};
use crate::topology::Topology;

/// What a proposal is checked as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckFor {
    /// A new proposal: every check, approval included.
    Proposal,
    /// A proposal a human approved: every check but the approval.
    Approved,
    /// An action re-applied because its target lost it (drift): the breaker
    /// and the limits, but not the target's cooldown or rate limit (the
    /// target gets back what it had), and no new approval.
    Reapplied,
}

/// What the policy says about a proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Go ahead.
    Allow,
    /// The same action on the same target is in effect (proposal id). If
    /// `resolved`, the instance that asked for it has resolved since, so the
    /// dispatcher verifies the target before believing it.
    Duplicate {
        /// The decision that put it in effect.
        of: String,
        /// Whether that decision's instance has resolved.
        resolved: bool,
    },
    /// Suppressed by the per-target cooldown or rate limit.
    Suppress(String),
    /// Held by a blast-radius limit or the breaker.
    Hold(String),
    /// Waits for a human until this time.
    NeedsApproval {
        /// When the request expires.
        expires_at: Nanos,
        /// Why, when a limit asks for the human (`max_jobs_touched`: the jobs it
        /// touches); `None` when only an `[[approval]]` of its kind does.
        reason: Option<String>,
    },
}

/// The circuit breaker's state; persisted by the ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerState {
    /// When it tripped, if it is tripped.
    pub tripped_at: Option<Nanos>,
    /// Why.
    pub reason: String,
    /// Its latest trips, oldest first, at most [`BreakerState::TRIPS_KEPT`].
    /// Kept through a reset: a breaker that trips again right after each
    /// reset is the pattern an operator needs to see. Absent in states
    /// written by older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trips: Vec<Trip>,
}

/// One trip of the circuit breaker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trip {
    /// When (the proposal's time that tripped it).
    pub at: Nanos,
    /// Why.
    pub reason: String,
}

impl BreakerState {
    /// Trips kept for `status`: the latest are what matters, the ledger's
    /// held decisions have every one.
    pub const TRIPS_KEPT: usize = 16;

    /// Records a trip at `at` for `reason`: tripped now, and in the history.
    fn trip(&mut self, at: Nanos, reason: String) {
        if self.trips.len() == Self::TRIPS_KEPT {
            self.trips.remove(0);
        }
        self.trips.push(Trip { at, reason: reason.clone() });
        self.tripped_at = Some(at);
        self.reason = reason;
    }

    /// How many of the kept trips happened after `since`.
    pub fn trips_since(&self, since: Nanos) -> usize {
        self.trips.iter().filter(|t| t.at > since).count()
    }
}

/// An action in effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    /// The decision that put it in effect.
    pub id: String,
    /// The rule that asked for it.
    pub rule: String,
    /// Its subject.
    pub subject: Labels,
    /// The action.
    pub action: Action,
    /// Where it lands.
    pub impact: Impact,
    /// Since when.
    pub since: Nanos,
    /// Whether the instance that asked for it has resolved.
    pub resolved: bool,
}

#[derive(Debug, Clone)]
struct Acted {
    at: Nanos,
    kind: String,
}

/// What was acted on recently, indexed so a check costs a few lookups
/// whatever the size of the fleet: by target (cooldown, rate limit) and by
/// kind (limits per window). Entries older than every window are pruned.
#[derive(Debug, Default)]
struct History {
    by_target: HashMap<String, VecDeque<Acted>>,
    by_kind: HashMap<String, VecDeque<Nanos>>,
    /// (time, target, kind) in time order, for pruning.
    order: VecDeque<(Nanos, String, String)>,
}

impl History {
    fn push(&mut self, at: Nanos, kind: &str, target: String) {
        self.by_target.entry(target.clone()).or_default().push_back(Acted { at, kind: kind.to_string() });
        self.by_kind.entry(kind.to_string()).or_default().push_back(at);
        self.order.push_back((at, target, kind.to_string()));
    }

    /// After the clock stepped back, what it holds stamped after `now`
    /// is taken as done at `now`: a cooldown or a window then runs its
    /// length from the step, instead of as long as the step. Times stay in
    /// order, so the lists stay sorted. Bounded by the history kept.
    #[cold]
    fn clamp_after(&mut self, now: Nanos) {
        for q in self.by_target.values_mut() {
            q.iter_mut().rev().take_while(|a| a.at > now).for_each(|a| a.at = now);
        }
        for q in self.by_kind.values_mut() {
            q.iter_mut().rev().take_while(|at| **at > now).for_each(|at| *at = now);
        }
        self.order.iter_mut().rev().take_while(|(at, _, _)| *at > now).for_each(|(at, _, _)| *at = now);
    }

    fn prune(&mut self, now: Nanos, keep: Nanos) {
        if self.order.back().is_some_and(|(at, _, _)| *at > now) {
            self.clamp_after(now);
        }
        while self.order.front().is_some_and(|(at, _, _)| now - *at > keep) {
            let Some((_, target, kind)) = self.order.pop_front() else { break };
            if let Some(q) = self.by_target.get_mut(&target) {
                q.pop_front();
                if q.is_empty() {
                    self.by_target.remove(&target);
                }
            }
            if let Some(q) = self.by_kind.get_mut(&kind) {
                q.pop_front();
                if q.is_empty() {
                    self.by_kind.remove(&kind);
                }
            }
        }
    }

    fn on_target(&self, target: &str) -> impl Iterator<Item = &Acted> {
        self.by_target.get(target).into_iter().flatten()
    }

    /// The kinds acted on within the kept history.
    fn kinds(&self) -> impl Iterator<Item = &str> {
        self.by_kind.keys().map(String::as_str)
    }

    fn of_kind_since(&self, kind: &str, since: Nanos) -> u32 {
        self.by_kind.get(kind).map(|q| q.iter().rev().take_while(|at| **at > since).count() as u32).unwrap_or(0)
    }
}

/// The policy state.
pub struct Policy {
    settings: PolicySettings,
    topology: Option<Arc<Topology>>,
    catalog: Arc<Catalog>,
    history: History,
    in_effect: HashMap<String, Effect>,
    hits: VecDeque<Nanos>,
    breaker: BreakerState,
    /// Canaries promoted: while one is in effect, its plane's limit of its
    /// class does not hold the rest of the plane (see [`Policy::promote`]).
    promoted: std::collections::HashSet<String>,
}

/// The most jobs a reason names: a step is one line of `explain`, and the
/// proposal keeps the whole list.
const JOBS_NAMED: usize = 16;

/// How many of a switch's queues an action counted by
/// [`LimitClass::SwitchEcnQueue`] reaches, out of `max`: one for a queue's
/// own; all of them for a switch-wide one (no port, or port `"*"`: the
/// shared profile).
fn ecn_queues(action: &Action, max: u32) -> u32 {
    if action.target.get("port").is_none_or(|p| p == "*") {
        max
    } else {
        1
    }
}

impl Policy {
    /// A policy with `settings`; `topology` resolves targets to rails,
    /// planes and switches, and gives the fleet size; `catalog` says which
    /// limit counts which kind.
    pub fn new(settings: PolicySettings, topology: Option<Arc<Topology>>, catalog: Arc<Catalog>) -> Policy {
        Policy {
            settings,
            topology,
            catalog,
            history: History::default(),
            in_effect: HashMap::new(),
            hits: VecDeque::new(),
            breaker: BreakerState::default(),
            promoted: Default::default(),
        }
    }

    /// The canary `id` was promoted: while it is in effect, the rest of its
    /// plane is not held by the plane limit of its class (it proved the
    /// change helps; the approval of the canary was the approval of the
    /// rollout).
    pub fn promote(&mut self, id: &str) {
        self.promoted.insert(id.to_string());
    }

    /// Whether a promoted canary of `action`'s class is in effect in its plane.
    fn promoted_in_plane(&self, class: LimitClass, action: &Action) -> bool {
        if self.promoted.is_empty() {
            return false;
        }
        let Some(plane) = self.impact(action).plane else { return false };
        self.in_effect_of(class).any(|e| self.promoted.contains(&e.id) && e.impact.plane.as_deref() == Some(&plane))
    }

    /// The settings.
    pub fn settings(&self) -> &PolicySettings {
        &self.settings
    }

    /// Whether an action of `kind` whose target went back to its prior
    /// values is re-applied (while its incident fires): as `[verify]
    /// reapply_reverted` lists, else as its actuator declares.
    pub fn reapply_reverted(&self, kind: &str) -> bool {
        self.settings.reapply_reverted(kind).unwrap_or_else(|| self.catalog.reapply_reverted(kind))
    }

    /// The breaker.
    pub fn breaker(&self) -> &BreakerState {
        &self.breaker
    }

    /// Restores a persisted breaker state (at start).
    pub fn restore_breaker(&mut self, state: BreakerState) {
        self.breaker = state;
    }

    /// Resets the breaker (a human did it); its trip history stays.
    pub fn reset_breaker(&mut self) {
        let trips = std::mem::take(&mut self.breaker.trips);
        self.breaker = BreakerState { trips, ..BreakerState::default() };
        self.hits.clear();
    }

    /// Actions in effect.
    pub fn in_effect(&self) -> impl Iterator<Item = &Effect> {
        self.in_effect.values()
    }

    /// Where `action` lands in the topology.
    pub fn impact(&self, action: &Action) -> Impact {
        let mut labels = action.target.clone();
        if let Some(t) = &self.topology {
            t.enrich(&mut labels);
            // A rail named without its plane: take the plane of the rail's leaf.
            if labels.get("plane").is_none() {
                if let Some(rail) = labels.get("rail").and_then(|r| r.parse::<u32>().ok()) {
                    if let Some(plane) =
                        t.inventory().switch.iter().find(|s| s.rail == Some(rail)).and_then(|s| s.plane)
                    {
                        labels.insert("plane", plane.to_string());
                    }
                }
            }
        }
        let get = |k: &str| labels.get(k).map(str::to_string);
        Impact { node: get("node"), rail: get("rail"), plane: get("plane"), switch: get("switch") }
    }

    fn prune(&mut self, now: Nanos) {
        let keep = self.settings.limits_window.max(self.settings.target_window).max(self.settings.target_cooldown);
        self.history.prune(now, keep);
        // Breaker hits after `now` (the clock stepped back) count from now.
        self.hits.iter_mut().rev().take_while(|t| **t > now).for_each(|t| *t = now);
        while self.hits.front().is_some_and(|t| now - *t > self.settings.breaker_window) {
            self.hits.pop_front();
        }
    }

    /// Decides about `p` at `now`, as an enforced action. `destructive` is
    /// false for actions routed to an actuator the playbook marks as not
    /// destructive (notifications): those skip the breaker and the
    /// blast-radius limits.
    pub fn check(&mut self, p: &Proposal, destructive: bool, now: Nanos) -> Check {
        self.check_for(CheckFor::Proposal, p, Mode::Enforce, destructive, now)
    }

    /// As [`Policy::check`], for a proposal a human approved: every check
    /// but the approval itself runs again, since the fleet may have changed.
    pub fn check_approved(&mut self, p: &Proposal, destructive: bool, now: Nanos) -> Check {
        self.check_for(CheckFor::Approved, p, Mode::Enforce, destructive, now)
    }

    /// Checks `p` as `what` (see [`CheckFor`]) in `mode`, the mode it will be
    /// dispatched in: only an enforced action touches jobs, so only one waits
    /// for approval over `max_jobs_touched` (a dry run records what it would send).
    pub fn check_for(&mut self, what: CheckFor, p: &Proposal, mode: Mode, destructive: bool, now: Nanos) -> Check {
        self.prune(now);
        let action = &p.action;
        if let Some(e) = self.in_effect.get(&action.dedup_key()) {
            return Check::Duplicate { of: e.id.clone(), resolved: e.resolved };
        }
        if what == CheckFor::Reapplied {
            return self.check_limits(action, destructive, now).unwrap_or(Check::Allow);
        }
        let target = action.target.to_string();
        let on_target: Vec<&Acted> = self.history.on_target(&target).collect();
        if let Some(last) = on_target.iter().rev().find(|a| now - a.at < self.settings.target_cooldown) {
            return Check::Suppress(format!(
                "target cooldown: {} on {target} at {}, nothing more on it for {}",
                last.kind,
                crate::time::rfc3339(last.at),
                Span(self.settings.target_cooldown)
            ));
        }
        let recent = on_target.iter().filter(|a| now - a.at < self.settings.target_window).count();
        if recent as u32 >= self.settings.target_max {
            return Check::Suppress(format!(
                "rate limit: {recent} actions on {target} within {} (at most {})",
                Span(self.settings.target_window),
                self.settings.target_max
            ));
        }
        if let Some(held) = self.check_limits(action, destructive, now) {
            return held;
        }
        if what == CheckFor::Proposal {
            let reason = self.over_jobs_limit(p, mode, destructive);
            let timeout = self.settings.approval_timeout(&action.kind);
            if reason.is_some() || timeout.is_some() {
                let expires_at = now + timeout.unwrap_or(JOBS_APPROVAL_TIMEOUT);
                return Check::NeedsApproval { expires_at, reason };
            }
        }
        Check::Allow
    }

    /// `[limits] max_jobs_touched`: why an enforced destructive `p` needs a
    /// human, naming the running jobs it touches; `None` within the limit.
    fn over_jobs_limit(&self, p: &Proposal, mode: Mode, destructive: bool) -> Option<String> {
        let max = self.settings.limits.max_jobs_touched?;
        let n = p.jobs.len();
        (destructive && mode == Mode::Enforce && n > max as usize).then(|| {
            format!("touches {n} running jobs ({}), over limits.max_jobs_touched = {max}", p.job_list(JOBS_NAMED))
        })
    }

    /// The breaker and the blast-radius limits, for destructive actions: a
    /// hold, counted towards the breaker, or `None`.
    fn check_limits(&mut self, action: &Action, destructive: bool, now: Nanos) -> Option<Check> {
        if !destructive {
            return None;
        }
        if let Some(at) = self.breaker.tripped_at {
            return Some(Check::Hold(format!(
                "circuit breaker tripped at {} ({}); no destructive action until `rocemend breaker reset`",
                crate::time::rfc3339(at),
                self.breaker.reason
            )));
        }
        let reason = self.over_limit(action, now)?;
        self.hits.push_back(now);
        let trip = self.settings.trip_after;
        if trip > 0 && self.hits.len() as u32 >= trip {
            let why =
                format!("{} limit hits within {}; last: {reason}", self.hits.len(), Span(self.settings.breaker_window));
            self.breaker.trip(now, why);
            tracing::error!(message = "Circuit breaker tripped.", reason = %self.breaker.reason);
        }
        Some(Check::Hold(reason))
    }

    /// The first blast-radius limit `action` would go over at `now`: its
    /// kind's own limit, then the topology limit its actuator declares it
    /// counts against.
    fn over_limit(&self, action: &Action, now: Nanos) -> Option<String> {
        let class = self.catalog.limit(&action.kind);
        if matches!(class, LimitClass::RailDrain | LimitClass::SwitchHash) && self.promoted_in_plane(class, action) {
            return self.over_kind_limit(action, now);
        }
        self.over_kind_limit(action, now).or_else(|| match class {
            LimitClass::None => None,
            LimitClass::NodeCordon => self.over_cordon_limits(now),
            LimitClass::RailDrain => self.over_rail_limit(action),
            LimitClass::SwitchPortIsolation => self.over_port_limit(action),
            LimitClass::SwitchEcnQueue => self.over_ecn_limit(action),
            LimitClass::SwitchHash => self.over_hash_limit(action),
        })
    }

    /// `[limits] per_kind`: actions of one kind per window.
    fn over_kind_limit(&self, action: &Action, now: Nanos) -> Option<String> {
        let window = self.settings.limits_window;
        let kind = action.kind.as_str();
        let max = self.settings.limits.per_kind.iter().find(|(p, _)| kind_matches(p, kind)).map(|(_, m)| *m)?;
        let n = self.history.of_kind_since(kind, now - window);
        (n >= max).then(|| format!("limit: at most {max} {kind} per {}; {n} already", Span(window)))
    }

    /// The effects in effect whose kind `class` counts.
    fn in_effect_of(&self, class: LimitClass) -> impl Iterator<Item = &Effect> {
        self.in_effect.values().filter(move |e| self.catalog.limit(&e.action.kind) == class)
    }

    /// Cordons per window, and the share of the fleet cordoned at once.
    fn over_cordon_limits(&self, now: Nanos) -> Option<String> {
        let limits = &self.settings.limits;
        let window = self.settings.limits_window;
        if let Some(max) = limits.max_cordons {
            let since = now - window;
            let n: u32 = self
                .history
                .kinds()
                .filter(|kind| self.catalog.limit(kind) == LimitClass::NodeCordon)
                .map(|kind| self.history.of_kind_since(kind, since))
                .sum();
            if n >= max {
                return Some(format!("limit: at most {max} nodes cordoned per {}; {n} already", Span(window)));
            }
        }
        let pct = limits.max_cordon_percent?;
        let fleet = self.topology.as_ref().map(|t| t.node_count()).unwrap_or(0);
        if fleet == 0 {
            return Some("limit: max_cordon_percent is set but the fleet size is unknown (no inventory)".into());
        }
        let cordoned = self.in_effect_of(LimitClass::NodeCordon).count();
        let after = (cordoned + 1) as f64 * 100.0 / fleet as f64;
        (after > pct).then(|| {
            format!(
                "limit: at most {pct}% of the fleet cordoned; {cordoned} of {fleet} nodes already, one more is {after:.1}%"
            )
        })
    }

    /// The other places (by `place`: a rail, a leaf) of `action`'s plane with an action of
    /// `class` in effect, and the plane; `None` when the action's plane is unknown.
    fn others_in_plane(
        &self,
        class: LimitClass,
        action: &Action,
        place: fn(&Impact) -> Option<&str>,
    ) -> Option<(String, Vec<String>)> {
        let impact = self.impact(action);
        let plane = impact.plane.clone()?;
        let mut others: Vec<String> = self
            .in_effect_of(class)
            .filter(|e| e.impact.plane.as_ref() == Some(&plane))
            .filter_map(|e| place(&e.impact))
            .filter(|p| Some(*p) != place(&impact))
            .map(str::to_string)
            .collect();
        others.sort_unstable();
        others.dedup();
        Some((plane, others))
    }

    /// Rails of one plane drained at once.
    fn over_rail_limit(&self, action: &Action) -> Option<String> {
        let max = self.settings.limits.max_rails_per_plane?;
        let (plane, rails) = self.others_in_plane(LimitClass::RailDrain, action, |i| i.rail.as_deref())?;
        (rails.len() as u32 >= max).then(|| {
            format!(
                "limit: at most {max} rail(s) of plane {plane} drained at once; rail {} already drained",
                rails.join(", ")
            )
        })
    }

    /// Ports of one switch isolated at once.
    fn over_port_limit(&self, action: &Action) -> Option<String> {
        let max = self.settings.limits.max_isolated_ports_per_switch?;
        let switch = self.impact(action).switch?;
        let n = self
            .in_effect_of(LimitClass::SwitchPortIsolation)
            .filter(|e| e.impact.switch.as_ref() == Some(&switch))
            .count() as u32;
        (n >= max).then(|| format!("limit: at most {max} ports of switch {switch} isolated at once; {n} already"))
    }

    /// Queues of one switch with ECN lowered at once.
    fn over_ecn_limit(&self, action: &Action) -> Option<String> {
        let max = self.settings.limits.max_ecn_queues_per_switch?;
        let switch = self.impact(action).switch?;
        let n: u32 = self
            .in_effect_of(LimitClass::SwitchEcnQueue)
            .filter(|e| e.impact.switch.as_ref() == Some(&switch))
            .map(|e| ecn_queues(&e.action, max))
            .sum();
        (n + ecn_queues(action, max) > max).then(|| {
            format!(
                "limit: at most {max} queues of switch {switch} with ECN lowered at once; {n} already \
                 (a switch-wide lowering counts as all {max})"
            )
        })
    }

    /// Leaves of one plane with their ECMP hash changed at once: the first is the canary.
    fn over_hash_limit(&self, action: &Action) -> Option<String> {
        let max = self.settings.limits.max_hash_changes_per_plane?;
        let (plane, leaves) = self.others_in_plane(LimitClass::SwitchHash, action, |i| i.switch.as_deref())?;
        (leaves.len() as u32 >= max).then(|| {
            format!(
                "limit: at most {max} leaf/leaves of plane {plane} with a changed ECMP hash at once; {} changed \
                 (the canary: the others wait until it is undone)",
                leaves.join(", ")
            )
        })
    }

    /// Records that the decision `id` acted (executed, or planned in dry-run)
    /// on `p`'s action at `now`: it counts towards the limits and is in effect.
    pub fn commit(&mut self, id: &str, p: &Proposal, now: Nanos) {
        let action = &p.action;
        self.history.push(now, &action.kind, action.target.to_string());
        let impact = self.impact(action);
        self.in_effect.insert(
            action.dedup_key(),
            Effect {
                id: id.to_string(),
                rule: p.rule.clone(),
                subject: p.subject.clone(),
                action: action.clone(),
                impact,
                since: now,
                resolved: false,
            },
        );
    }

    /// Puts back an effect found at start (from the ledger).
    pub fn restore_effect(&mut self, effect: Effect) {
        self.history.push(effect.since, &effect.action.kind, effect.action.target.to_string());
        self.in_effect.insert(effect.action.dedup_key(), effect);
    }

    /// The instance of `rule` for `subject` resolved: its effects are marked
    /// resolved and returned (for undo).
    pub fn resolved(&mut self, rule: &str, subject: &Labels) -> Vec<Effect> {
        let mut out = Vec::new();
        for e in self.in_effect.values_mut() {
            if e.rule == rule && &e.subject == subject && !e.resolved {
                e.resolved = true;
                out.push(e.clone());
            }
        }
        out
    }

    /// The action `key` is no longer in effect (undone, or verified gone).
    pub fn remove_effect(&mut self, action: &Action) -> Option<Effect> {
        let effect = self.in_effect.remove(&action.dedup_key());
        if let Some(e) = &effect {
            self.promoted.remove(&e.id);
        }
        effect
    }
}

#[cfg(test)]
mod tests;
