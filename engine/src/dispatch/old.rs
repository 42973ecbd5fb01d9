//! The dispatch point: the one place where proposals become actions.
//!
//! Every proposal passes here on its way to an actuator, and every proposal
//! gets a [`Decision`], whether or not anything was sent. This issue's
//! policy: the mode (`enforce`, `dry-run`, `shadow`, most conservative of
//! global / playbook / rule wins) and de-duplication (an action already in
//! effect on a target is not sent again until the instance that asked for
//! it resolves).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::action::Proposal;
use crate::contracts::{Actuator, ActuatorError, Outcome, Plan};
use crate::labels::Labels;
use crate::rule::RuleMode;
use crate::time::{wall_clock_now, Nanos};

/// How far decisions may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Carry actions out.
    Enforce,
    /// Ask the actuator exactly what it would send, and record that.
    DryRun,
    /// Decide and record; never touch an actuator.
    Shadow,
}

impl Mode {
    /// The more conservative of two modes.
    pub fn at_most(self, other: Mode) -> Mode {
        self.max(other)
    }

    /// The mode a rule's own declaration allows.
    pub fn of_rule(mode: RuleMode) -> Mode {
        match mode {
            RuleMode::Enforce => Mode::Enforce,
            RuleMode::Shadow | RuleMode::Off => Mode::Shadow,
        }
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::DryRun => "dry-run",
            Mode::Shadow => "shadow",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "enforce" => Ok(Mode::Enforce),
            "dry-run" => Ok(Mode::DryRun),
            "shadow" => Ok(Mode::Shadow),
            other => Err(format!("unknown mode {other:?}: expected enforce, dry-run or shadow")),
        }
    }
}

/// What became of a proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Sent, and the actuator reports success.
    Executed {
        /// What it did.
        outcome: Outcome,
    },
    /// Dry-run: what would have been sent.
    DryRun {
        /// The plan.
        plan: Plan,
    },
    /// Shadow mode: recorded only.
    Shadowed,
    /// The same action on the same target is already in effect.
    Duplicate {
        /// The proposal that put it in effect.
        of: String,
    },
    /// No actuator of the playbook handles this action kind.
    NoActuator,
    /// The actuator failed.
    Failed {
        /// Why.
        error: String,
    },
}

impl Verdict {
    /// Short name.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Executed { .. } => "executed",
            Verdict::DryRun { .. } => "dry-run",
            Verdict::Shadowed => "shadowed",
            Verdict::Duplicate { .. } => "duplicate",
            Verdict::NoActuator => "no-actuator",
            Verdict::Failed { .. } => "failed",
        }
    }
}

/// A proposal with what was decided about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The proposal and its evidence.
    pub proposal: Proposal,
    /// The mode that applied.
    pub mode: Mode,
    /// The actuator it went to, if any.
    pub actuator: Option<String>,
    /// What became of it.
    pub verdict: Verdict,
    /// Wall-clock time it reached the dispatcher.
    pub dispatched_at: Nanos,
    /// Wall-clock time the verdict was known.
    pub finished_at: Nanos,
}

/// Which actuator handles which action kinds: `pfcwd.escalate` exactly,
/// `pfcwd.*` for every verb, or `*` for everything.
#[derive(Clone)]
pub struct ActuatorRoute {
    /// The pattern.
    pub pattern: String,
    /// The actuator.
    pub actuator: Arc<dyn Actuator>,
}

impl ActuatorRoute {
    fn matches(&self, kind: &str) -> bool {
        match self.pattern.strip_suffix('*') {
            Some(prefix) => kind.starts_with(prefix),
            None => self.pattern == kind,
        }
    }
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
}

/// The dispatcher. Owned by one task; proposals are handled in order.
pub struct Dispatcher {
    config: DispatchConfig,
    /// Dedup key → (proposal id, rule, subject) of the action in effect.
    in_effect: HashMap<String, (String, String, Labels)>,
}

impl Dispatcher {
    /// A dispatcher with `config`.
    pub fn new(config: DispatchConfig) -> Dispatcher {
        Dispatcher { config, in_effect: HashMap::new() }
    }

    /// Switches the global mode at run time.
    pub fn set_mode(&mut self, mode: Mode) {
        self.config.mode = mode;
    }

    /// The global mode.
    pub fn mode(&self) -> Mode {
        self.config.mode
    }

    /// The mode that applies to a proposal of `rule` declared with `rule_mode`.
    pub fn effective_mode(&self, rule: &str, rule_mode: RuleMode) -> Mode {
        let playbook = self.config.rule_modes.get(rule).copied().unwrap_or(Mode::Enforce);
        self.config.mode.at_most(playbook).at_most(Mode::of_rule(rule_mode))
    }

    /// The instance of `rule` for `subject` resolved: what it put in effect
    /// is no longer in effect (an undo, next issue, goes through here too).
    pub fn instance_resolved(&mut self, rule: &str, subject: &Labels) {
        self.in_effect.retain(|_, (_, r, s)| !(r == rule && s == subject));
    }

    /// Decides about one proposal and, depending on the mode, asks the
    /// actuator to carry it out or to say what it would send.
    pub async fn dispatch(&mut self, proposal: Proposal) -> Decision {
        let dispatched_at = wall_clock_now();
        let mode = self.effective_mode(&proposal.rule, proposal.rule_mode);
        let key = proposal.action.dedup_key();
        let route = self.config.routes.iter().find(|r| r.matches(&proposal.action.kind)).cloned();
        let actuator_name = route.as_ref().map(|r| r.actuator.name().to_string());
        let verdict = if let Some((of, _, _)) = self.in_effect.get(&key) {
            Verdict::Duplicate { of: of.clone() }
        } else {
            let verdict = match (mode, &route) {
                (Mode::Shadow, _) => Verdict::Shadowed,
                (_, None) => Verdict::NoActuator,
                (Mode::DryRun, Some(r)) => match self.call(r.actuator.dry_run(&proposal.action)).await {
                    Ok(plan) => Verdict::DryRun { plan },
                    Err(e) => Verdict::Failed { error: e.to_string() },
                },
                (Mode::Enforce, Some(r)) => match self.call(r.actuator.execute(&proposal.action)).await {
                    Ok(outcome) => Verdict::Executed { outcome },
                    Err(e) => Verdict::Failed { error: e.to_string() },
                },
            };
            if !matches!(verdict, Verdict::Failed { .. } | Verdict::NoActuator) {
                self.in_effect
                    .insert(key, (proposal.id.clone(), proposal.rule.clone(), proposal.subject.clone()));
            }
            verdict
        };
        Decision {
            proposal,
            mode,
            actuator: actuator_name,
            verdict,
            dispatched_at,
            finished_at: wall_clock_now(),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Action;
    use crate::rule::Severity;
    use async_trait::async_trait;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting(AtomicUsize, AtomicUsize);

    #[async_trait]
    impl Actuator for Counting {
        fn name(&self) -> &str {
            "counting"
        }
        async fn dry_run(&self, action: &Action) -> Result<Plan, ActuatorError> {
            self.1.fetch_add(1, Ordering::SeqCst);
            Ok(Plan { actuator: "counting".into(), requests: vec![action.to_string()] })
        }
        async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(Outcome { summary: "done".into(), requests: vec![action.to_string()], prior: None })
        }
    }

    fn proposal(id: &str, rule_mode: RuleMode) -> Proposal {
        Proposal {
            id: id.into(),
            rule: "r".into(),
            rule_hash: "0".repeat(64),
            rule_mode,
            severity: Severity::Critical,
            subject: Labels::from_pairs([("node", "n1")]),
            action: Action {
                kind: "node.cordon".into(),
                target: Labels::from_pairs([("node", "n1")]),
                params: Default::default(),
            },
            values: vec![],
            active_at: 0,
            sample_at: 0,
            decided_at: 0,
        }
    }

    fn dispatcher(mode: Mode, actuator: Arc<Counting>) -> Dispatcher {
        Dispatcher::new(DispatchConfig {
            mode,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute { pattern: "node.*".into(), actuator }],
            timeout: Duration::from_secs(1),
        })
    }

    #[tokio::test]
    async fn enforce_executes_once_and_deduplicates_until_resolved() {
        let act = Arc::new(Counting(AtomicUsize::new(0), AtomicUsize::new(0)));
        let mut d = dispatcher(Mode::Enforce, act.clone());
        assert_eq!(d.dispatch(proposal("a", RuleMode::Enforce)).await.verdict.name(), "executed");
        let dup = d.dispatch(proposal("b", RuleMode::Enforce)).await;
        assert_eq!(dup.verdict, Verdict::Duplicate { of: "a".into() });
        assert_eq!(act.0.load(Ordering::SeqCst), 1);
        d.instance_resolved("r", &Labels::from_pairs([("node", "n1")]));
        assert_eq!(d.dispatch(proposal("c", RuleMode::Enforce)).await.verdict.name(), "executed");
        assert_eq!(act.0.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn dry_run_asks_for_the_plan_and_never_executes() {
        let act = Arc::new(Counting(AtomicUsize::new(0), AtomicUsize::new(0)));
        let mut d = dispatcher(Mode::DryRun, act.clone());
        let decision = d.dispatch(proposal("a", RuleMode::Enforce)).await;
        assert!(matches!(decision.verdict, Verdict::DryRun { .. }));
        assert_eq!((act.0.load(Ordering::SeqCst), act.1.load(Ordering::SeqCst)), (0, 1));
    }

    #[tokio::test]
    async fn the_most_conservative_mode_wins() {
        let act = Arc::new(Counting(AtomicUsize::new(0), AtomicUsize::new(0)));
        let mut d = dispatcher(Mode::Enforce, act.clone());
        let decision = d.dispatch(proposal("a", RuleMode::Shadow)).await;
        assert_eq!(decision.verdict, Verdict::Shadowed);
        assert_eq!(decision.mode, Mode::Shadow);
        assert_eq!(act.0.load(Ordering::SeqCst) + act.1.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn an_unrouted_action_is_recorded_as_such() {
        let act = Arc::new(Counting(AtomicUsize::new(0), AtomicUsize::new(0)));
        let mut d = dispatcher(Mode::Enforce, act);
        let mut p = proposal("a", RuleMode::Enforce);
        p.action.kind = "link.isolate".into();
        assert_eq!(d.dispatch(p).await.verdict, Verdict::NoActuator);
    }
}
