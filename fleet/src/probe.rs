//! One daemon's fleet-scoped dispatch, reduced to what the fleet's own
//! checks need: a cordon budget, an enforcing dispatcher whose actuator
//! changes nothing, and the proposal every daemon under a failed spine
//! makes. `rocemend-fleet-probe` (a daemon in a process of its own), the
//! fleet tests and the token bench are built from these, so they test the
//! same thing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use engine::contracts::Coordinator;
use engine::dispatch::{ActuatorRoute, DispatchConfig, Dispatcher, Mode};
use engine::policy::PolicySettings;
use engine::{
    Action, ActionKindDecl, ActuatorError, Labels, LimitClass, Nanos, Outcome, Proposal, RequestPlan, Severity,
};

use crate::settings::{BudgetConfig, FleetConfig, Per};

/// A flag of a probe binary's command line with no value after it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} needs a value")]
pub struct MissingValue(pub String);

/// The `--flag value` pairs of a probe binary's command line (without the
/// program's name), in order: both binaries take only flags with a value.
pub fn flag_values(args: impl IntoIterator<Item = String>) -> Result<Vec<(String, String)>, MissingValue> {
    let mut args = args.into_iter();
    let mut pairs = Vec::new();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| MissingValue(flag.clone()))?;
        pairs.push((flag, value));
    }
    Ok(pairs)
}

/// The `[fleet]` table of daemon `identity` on `endpoints`: one fleet-wide
/// cordon budget of `max` per `window` (none: held until released), a
/// lease of `ttl_secs`.
pub fn cordon_budget(
    endpoints: &[String],
    identity: &str,
    max: u32,
    window: Option<Duration>,
    ttl_secs: u64,
) -> FleetConfig {
    FleetConfig {
        etcd: endpoints.to_vec(),
        identity: Some(identity.into()),
        lease_ttl: Duration::from_secs(ttl_secs),
        // Generous: a test machine's cores are shared with other builds.
        request_timeout: Duration::from_secs(2),
        prefix: "/rocemend/fleet/".into(),
        fleet_size: None,
        aggregator: None,
        shard: None,
        budget: vec![BudgetConfig {
            name: "cordon".into(),
            kinds: vec!["node.cordon".into()],
            max,
            window,
            max_percent: None,
            per: Per::Fleet,
        }],
    }
}

/// Counts what it is asked to do; changes nothing. The decisions are what
/// the checks look at. It declares the kinds the checks propose as the
/// fabric's actuators declare them: a cordon and a PFC watchdog escalation
/// fleet-scoped, anything else (a host link) local.
#[derive(Debug)]
pub struct Counting {
    /// Executes so far.
    pub executed: AtomicUsize,
    kinds: Vec<ActionKindDecl>,
}

impl Default for Counting {
    fn default() -> Counting {
        let kinds = vec![
            ActionKindDecl::new("node.cordon", &["node"]).fleet().limited_by(LimitClass::NodeCordon),
            ActionKindDecl::new("pfcwd.escalate", &["switch", "port", "queue"]).fleet().lost_on_switch_restart(),
            ActionKindDecl::new("*", &[]),
        ];
        Counting { executed: AtomicUsize::default(), kinds }
    }
}

#[async_trait::async_trait]
impl engine::Actuator for Counting {
    fn name(&self) -> &str {
        "counting"
    }
    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }
    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan { actuator: "counting".into(), requests: vec![action.to_string()] })
    }
    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        self.executed.fetch_add(1, Ordering::SeqCst);
        Ok(Outcome { summary: action.to_string(), requests: vec![], prior: None })
    }
}

/// A daemon's dispatcher in enforce mode, every action kind routed to
/// `actuator` (one attempt), consulting `coordinator`.
pub fn dispatcher(actuator: Arc<Counting>, coordinator: Arc<dyn Coordinator>) -> Dispatcher {
    let policy = PolicySettings::defaults().with_retry(1, std::time::Duration::from_millis(1));
    Dispatcher::new(
        DispatchConfig {
            mode: Mode::Enforce,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute { pattern: "*".into(), actuator, destructive: true }],
            timeout: Duration::from_secs(5),
            policy,
            topology: None,
        },
        None,
    )
    .with_coordinator(coordinator, vec![])
}

/// The proposal every daemon under the failed spine makes: `kind` on its
/// `node` (netdev `eth0`), decided at `at`.
pub fn proposal(kind: &str, node: &str, at: Nanos) -> Proposal {
    Proposal {
        id: format!("p-{kind}-{node}-{at}"),
        rule: "spine-fault".into(),
        rule_hash: "00".repeat(32),
        rule_mode: Mode::Enforce,
        severity: Severity::Critical,
        subject: Labels::from_pairs([("node", node)]),
        action: Action {
            kind: kind.into(),
            target: Labels::from_pairs([("node", node), ("netdev", "eth0")]),
            params: Default::default(),
        },
        jobs: Vec::new(),
        values: vec![],
        active_at: at,
        sample_at: at,
        decided_at: at,
        restored: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_come_in_pairs_and_a_missing_value_names_its_flag() {
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let pairs = flag_values(args(&["--etcd", "http://a:1", "--ttl", "2"])).unwrap();
        assert_eq!(pairs, [("--etcd".to_string(), "http://a:1".to_string()), ("--ttl".into(), "2".into())]);
        let missing = flag_values(args(&["--etcd", "http://a:1", "--ttl"])).unwrap_err();
        assert_eq!(missing.to_string(), "--ttl needs a value");
    }
}
