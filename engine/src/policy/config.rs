//! The safety settings of a playbook, as operators write them.
//!
//! ```toml
//! [limits]
//! window = "10m"                      # the window the counts below are over
//! max_cordons = 3                     # node.cordon per window, fleet-wide
//! max_cordon_percent = 5.0            # nodes cordoned by us at once, % of the inventory
//! max_rails_per_plane = 1             # rails of one plane drained at once
//! max_isolated_ports_per_switch = 2   # ports of one switch isolated at once
//! max_ecn_queues_per_switch = 8       # queues of one switch with ECN lowered at once
//! max_hash_changes_per_plane = 1      # leaves of one plane with a changed ECMP hash at once
//! per_kind = { "ecn.lower" = 20 }     # actions of one kind per window, fleet-wide
//! max_jobs_touched = 2                # running jobs one action may touch without approval
//!
//! [breaker]
//! trip_after = 5                      # limit hits within `window` that trip it
//! window = "10m"
//!
//! [target]
//! cooldown = "5m"                     # after an action on a target, nothing more on it
//! max_per_window = 3                  # actions on one target per `window`
//! window = "1h"
//!
//! [[approval]]
//! actions = ["node.cordon"]           # these wait for `rocemend approve ID`
//! timeout = "15m"                     # then they expire
//!
//! [[canary]]
//! actions = ["ecmp.widen_hash"]       # the first of a plane is a canary; the rest wait for it
//! after = "45s"                       # judged this long after it was made
//! worse = "spread"                    # the rule's window value that must not rise
//! margin = 0.1                        # by more than 10 %
//! hold = "1h"                         # after a revert, none of the kind in that plane
//!
//! [undo]
//! on_resolve = ["ecn.lower", "pfcwd.escalate"]   # undone when the rule resolves
//!
//! [retry]
//! attempts = 3
//! backoff = "200ms"                   # doubled each attempt
//!
//! [verify]
//! every = "10s"                       # actions in effect are read back this often
//! reapply_changed = false             # someone else's change to our target is left alone
//! reapply_reverted = ["pfcwd.escalate", "ecn.lower"]   # default: the kinds lost on a switch restart
//! ```

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

use std::time::Duration;

use crate::config::duration::{self, nanos};
use crate::contracts::kind_matches;
use crate::time::Nanos;

/// `[limits]`: blast-radius limits in topology terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// The window counts are taken over.
    #[serde(default = "ten_minutes", with = "duration")]
    pub window: Duration,
    /// At most this many `node.cordon` per window.
    #[serde(default)]
    pub max_cordons: Option<u32>,
    /// At most this percentage of the fleet cordoned by this daemon at once.
    #[serde(default)]
    pub max_cordon_percent: Option<f64>,
    /// At most this many rails of one plane drained at once (1: never two).
    #[serde(default = "one")]
    pub max_rails_per_plane: Option<u32>,
    /// At most this many ports of one switch isolated at once.
    #[serde(default)]
    pub max_isolated_ports_per_switch: Option<u32>,
    /// At most this many queues of one switch with their ECN thresholds
    /// lowered at once. A switch-wide lowering (an `ecn.lower` whose target
    /// names no port, or port `"*"`: the shared WRED profile, and with it
    /// every queue bound to it) counts as all of them.
    #[serde(default)]
    pub max_ecn_queues_per_switch: Option<u32>,
    /// At most this many leaves of one plane with their ECMP hash changed at once (1: the
    /// first leaf is a canary; the others wait until it is undone). A hash change moves
    /// every flow of the leaf, every job's.
    #[serde(default = "one")]
    pub max_hash_changes_per_plane: Option<u32>,
    /// Per action kind: at most this many per window, fleet-wide.
    #[serde(default)]
    pub per_kind: BTreeMap<String, u32>,
    /// At most this many running jobs (from the job signals) touched by one enforced destructive
    /// action without a human: one whose target reaches more waits for approval, its decision
    /// naming the jobs. Unset: no limit.
    #[serde(default, deserialize_with = "job_count")]
    pub max_jobs_touched: Option<u32>,
}

/// `max_jobs_touched` as written: read as any integer, so a negative one is refused with the
/// field named (serde's own "expected u32" names neither the field nor what it counts).
fn job_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let n = i64::deserialize(d)?;
    u32::try_from(n).map(Some).map_err(|_| {
        D::Error::custom(format!("limits.max_jobs_touched: {n}: expected a number of running jobs, 0 to {}", u32::MAX))
    })
}

/// How long a request over `max_jobs_touched` waits when no `[[approval]]` lists its kind
/// (one that does gives its own `timeout`): the default `timeout` of an `[[approval]]`.
pub const JOBS_APPROVAL_TIMEOUT: Nanos = 900 * crate::time::SECOND;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            window: ten_minutes(),
            max_cordons: None,
            max_cordon_percent: None,
            max_rails_per_plane: one(),
            max_isolated_ports_per_switch: None,
            max_ecn_queues_per_switch: None,
            max_hash_changes_per_plane: one(),
            per_kind: BTreeMap::new(),
            max_jobs_touched: None,
        }
    }
}

/// `[breaker]`: when limits are hit this often, stop all destructive actions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerConfig {
    /// Limit hits within `window` that trip the breaker (0: never trips).
    #[serde(default = "five")]
    pub trip_after: u32,
    /// The window hits are counted over.
    #[serde(default = "ten_minutes", with = "duration")]
    pub window: Duration,
}

impl Default for BreakerConfig {
    fn default() -> BreakerConfig {
        BreakerConfig { trip_after: five(), window: ten_minutes() }
    }
}

/// `[target]`: per-target rate limit and cooldown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetLimits {
    /// After an action on a target, further actions on it are suppressed this long.
    #[serde(default = "five_minutes", with = "duration")]
    pub cooldown: Duration,
    /// At most this many actions on one target per `window`.
    #[serde(default = "three")]
    pub max_per_window: u32,
    /// The window for `max_per_window`.
    #[serde(default = "one_hour", with = "duration")]
    pub window: Duration,
}

impl Default for TargetLimits {
    fn default() -> TargetLimits {
        TargetLimits { cooldown: five_minutes(), max_per_window: three(), window: one_hour() }
    }
}

/// One `[[approval]]`: actions that wait for a human.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// Action kinds (`node.cordon`, `rail.*`, `*`).
    pub actions: Vec<String>,
    /// How long a request waits before it expires.
    #[serde(default = "fifteen_minutes", with = "duration")]
    pub timeout: Duration,
}

/// One `[[canary]]`: actions of these kinds go to one place of a plane
/// first. The rest of the plane waits until the first is judged, `after`
/// it was made, by the rule that asked for it: promoted (the others go
/// ahead) when the rule's clear condition holds on its subject, undone when
/// its window value `worse` rose by more than `margin` over its value when
/// the rule fired, else kept without the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanaryRule {
    /// Action kinds (`ecmp.widen_hash`, `ecmp.*`).
    pub actions: Vec<String>,
    /// How long after the change it is judged: long enough for the rule's
    /// windows to see only what came after.
    #[serde(with = "duration")]
    pub after: Duration,
    /// The proposing rule's window value that must not rise.
    pub worse: String,
    /// How much higher than before counts as a rise (0.1: 10 %).
    #[serde(default = "tenth")]
    pub margin: f64,
    /// After a revert, how long the kind is held in that plane.
    #[serde(default = "one_hour", with = "duration")]
    pub hold: Duration,
}

/// A `[[canary]]` with its durations parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct CanarySettings {
    /// Action kind patterns.
    pub actions: Vec<String>,
    /// Judged this long after.
    pub after: Nanos,
    /// The window value that must not rise.
    pub worse: String,
    /// The rise that counts.
    pub margin: f64,
    /// Held this long after a revert.
    pub hold: Nanos,
}

fn tenth() -> f64 {
    0.1
}

/// `[undo]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoConfig {
    /// Action kinds undone when the rule instance that asked for them resolves.
    #[serde(default)]
    pub on_resolve: Vec<String>,
}

/// `[verify]`: actions in effect are read back from their targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyConfig {
    /// How often every action in effect is read back ("0": only when a
    /// sensor reconnects to its target). A change the target lost while its
    /// incident still fires is re-applied through the policy.
    #[serde(default = "ten_seconds", with = "duration")]
    pub every: Duration,
    /// Re-apply an action whose target someone else changed since. By
    /// default their change stands: it is recorded and left alone.
    #[serde(default)]
    pub reapply_changed: bool,
    /// The action kinds re-applied when their target goes back to what it
    /// held before (while the incident fires). Default: the kinds their
    /// actuators declare a switch loses when it restarts with its saved
    /// configuration (a PFC watchdog escalation, an ECN lowering, a rail's
    /// switch ports). A host link brought back up or a node resumed is more
    /// likely an operator's doing: recorded, and left alone unless listed here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reapply_reverted: Option<Vec<String>>,
}

impl Default for VerifyConfig {
    fn default() -> VerifyConfig {
        VerifyConfig { every: ten_seconds(), reapply_changed: false, reapply_reverted: None }
    }
}

/// `[retry]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Attempts in all (1: no retry).
    #[serde(default = "three")]
    pub attempts: u32,
    /// Wait before the second attempt; doubled for each further one.
    #[serde(default = "two_hundred_ms", with = "duration")]
    pub backoff: Duration,
}

impl Default for RetryConfig {
    fn default() -> RetryConfig {
        RetryConfig { attempts: three(), backoff: two_hundred_ms() }
    }
}

fn ten_seconds() -> Duration {
    Duration::from_secs(10)
}
fn ten_minutes() -> Duration {
    Duration::from_secs(600)
}
fn five_minutes() -> Duration {
    Duration::from_secs(300)
}
fn fifteen_minutes() -> Duration {
    Duration::from_nanos(JOBS_APPROVAL_TIMEOUT as u64)
}
fn one_hour() -> Duration {
    Duration::from_secs(3600)
}
fn two_hundred_ms() -> Duration {
    Duration::from_millis(200)
}
fn one() -> Option<u32> {
    Some(1)
}
fn three() -> u32 {
    3
}
fn five() -> u32 {
    5
}

/// The settings with every duration parsed: what the policy runs on.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySettings {
    /// Blast-radius limits.
    pub limits: Limits,
    /// Their window.
    pub limits_window: Nanos,
    /// Breaker trip count.
    pub trip_after: u32,
    /// Breaker window.
    pub breaker_window: Nanos,
    /// Per-target cooldown.
    pub target_cooldown: Nanos,
    /// Per-target count per window.
    pub target_max: u32,
    /// Per-target window.
    pub target_window: Nanos,
    /// Approval rules with their timeouts.
    pub approvals: Vec<(Vec<String>, Nanos)>,
    /// Kinds undone on resolve.
    pub undo_on_resolve: Vec<String>,
    /// Attempts.
    pub attempts: u32,
    /// First backoff.
    pub backoff: Nanos,
    /// How often actions in effect are read back (0: only on reconnects).
    pub verify_every: Nanos,
    /// Whether someone else's change to our target is overwritten.
    pub reapply_changed: bool,
    /// Kinds re-applied when their target went back to its prior values;
    /// `None`: those whose actuator declares it.
    pub reapply_reverted: Option<Vec<String>>,
    /// Kinds rolled out through a canary.
    pub canaries: Vec<CanarySettings>,
    /// What executed actions must achieve.
    pub outcomes: super::OutcomeSettings,
    /// Escalation ladders: a rule's remedies one at a time.
    pub ladders: super::LadderSettings,
    /// Rules enforced on a canary group only, shadowed elsewhere.
    pub canary_groups: super::CanaryGroupSettings,
}

/// A safety policy setting was refused; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyError(pub(super) String);

impl PolicySettings {
    /// The settings of the raw ones, checked; errors name the field.
    pub fn new(
        limits: &Limits,
        breaker: &BreakerConfig,
        target: &TargetLimits,
        approval: &[ApprovalRule],
        undo: &UndoConfig,
        retry: &RetryConfig,
    ) -> Result<PolicySettings, PolicyError> {
        if let Some(p) = limits.max_cordon_percent {
            if !(0.0..=100.0).contains(&p) {
                return Err(PolicyError(format!("limits.max_cordon_percent = {p}: expected 0..=100")));
            }
        }
        if retry.attempts == 0 {
            return Err(PolicyError("retry.attempts = 0: at least one attempt is needed".into()));
        }
        Ok(PolicySettings {
            limits: limits.clone(),
            limits_window: nanos(limits.window),
            trip_after: breaker.trip_after,
            breaker_window: nanos(breaker.window),
            target_cooldown: nanos(target.cooldown),
            target_max: target.max_per_window,
            target_window: nanos(target.window),
            approvals: approval.iter().map(|a| (a.actions.clone(), nanos(a.timeout))).collect(),
            undo_on_resolve: undo.on_resolve.clone(),
            attempts: retry.attempts,
            backoff: nanos(retry.backoff),
            verify_every: 10 * crate::time::SECOND,
            reapply_changed: false,
            reapply_reverted: None,
            canaries: Vec::new(),
            outcomes: super::OutcomeSettings::default(),
            ladders: super::LadderSettings::default(),
            canary_groups: super::CanaryGroupSettings::default(),
        })
    }

    /// The settings with the `[[canary]]` sections applied; errors name the field.
    pub fn with_canaries(mut self, canaries: &[CanaryRule]) -> Result<PolicySettings, PolicyError> {
        for (i, c) in canaries.iter().enumerate() {
            if c.after.is_zero() {
                return Err(PolicyError(format!("canary[{i}].after = 0: a canary must be given time to show")));
            }
            if !(c.margin.is_finite() && c.margin >= 0.0) {
                return Err(PolicyError(format!("canary[{i}].margin = {}: expected 0 or more", c.margin)));
            }
            if c.worse.trim().is_empty() {
                return Err(PolicyError(format!("canary[{i}].worse is empty: name the rule's window value")));
            }
        }
        self.canaries = canaries
            .iter()
            .map(|c| CanarySettings {
                actions: c.actions.clone(),
                after: nanos(c.after),
                worse: c.worse.clone(),
                margin: c.margin,
                hold: nanos(c.hold),
            })
            .collect();
        Ok(self)
    }

    /// The settings with `[outcomes]` and the `[[expect]]` sections applied; errors name the field.
    pub fn with_outcomes(
        mut self,
        outcomes: &super::OutcomesConfig,
        expects: &[super::ExpectRule],
    ) -> Result<PolicySettings, PolicyError> {
        self.outcomes = super::OutcomeSettings::new(outcomes, expects)?;
        Ok(self)
    }

    /// With the playbook's `[[ladder]]` sections.
    pub fn with_ladders(mut self, ladders: &[super::LadderRule]) -> Result<PolicySettings, PolicyError> {
        self.ladders = super::LadderSettings::new(ladders)?;
        Ok(self)
    }

    /// With the playbook's `[canary_groups]` and the `(rule, group)` pairs of its `enforce_on`s.
    pub fn with_canary_groups<'a>(
        mut self,
        groups: &super::CanaryGroupTables,
        enforced: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<PolicySettings, PolicyError> {
        self.canary_groups = super::CanaryGroupSettings::new(groups, enforced)?;
        Ok(self)
    }

    /// The canary `kind` is rolled out through, if any: its index and settings.
    pub fn canary_for(&self, kind: &str) -> Option<(usize, &CanarySettings)> {
        self.canaries.iter().enumerate().find(|(_, c)| c.actions.iter().any(|p| kind_matches(p, kind)))
    }

    /// The settings with the `[verify]` section applied.
    pub fn verified(mut self, verify: &VerifyConfig) -> PolicySettings {
        self.verify_every = nanos(verify.every);
        self.reapply_changed = verify.reapply_changed;
        self.reapply_reverted = verify.reapply_reverted.clone();
        self
    }

    /// Settings with every default: no cordon limits, one rail per plane,
    /// breaker after 5 hits, 5 min per-target cooldown.
    pub fn defaults() -> PolicySettings {
        PolicySettings::new(
            &Limits::default(),
            &BreakerConfig::default(),
            &TargetLimits::default(),
            &[],
            &UndoConfig::default(),
            &RetryConfig::default(),
        )
        .expect("the defaults parse")
    }

    /// The settings with `attempts` per action, the first retry after
    /// `backoff`.
    pub fn with_retry(mut self, attempts: u32, backoff: Duration) -> PolicySettings {
        self.attempts = attempts;
        self.backoff = nanos(backoff);
        self
    }

    /// The approval timeout for `kind`, if it needs approval.
    pub fn approval_timeout(&self, kind: &str) -> Option<Nanos> {
        self.approvals.iter().find(|(pats, _)| pats.iter().any(|p| kind_matches(p, kind))).map(|(_, t)| *t)
    }

    /// Whether an action of `kind` whose target went back to its prior
    /// values is re-applied (while its incident fires), if the playbook
    /// says; `None`: as its actuator declares
    /// ([`Policy::reapply_reverted`](super::Policy::reapply_reverted)).
    pub fn reapply_reverted(&self, kind: &str) -> Option<bool> {
        self.reapply_reverted.as_ref().map(|kinds| kinds.iter().any(|p| kind_matches(p, kind)))
    }

    /// Whether `kind` is undone when its instance resolves.
    pub fn undo_on_resolve(&self, kind: &str) -> bool {
        self.undo_on_resolve.iter().any(|p| kind_matches(p, kind))
    }
}
