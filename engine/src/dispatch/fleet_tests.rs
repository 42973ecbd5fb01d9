//! The dispatcher with a coordinator: fleet-scoped actions take a token,
//! local ones never ask; unreachable means held; tokens go back.

use super::*;
use crate::contracts::{Action, Proposal};
use crate::contracts::{ActionKindDecl, Actuator, ActuatorError, LimitClass, Outcome, RequestPlan};
use crate::contracts::{
    Admission, CoordinationError, Coordinator, FleetBreaker, Health, Release, Scope, Standalone, Token, TokenRequest,
};
use crate::labels::Labels;
use crate::mode::Mode;
use crate::policy::{BreakerConfig, Limits, PolicySettings, RetryConfig, TargetLimits, UndoConfig};
use crate::time::SECOND;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An in-memory budget of `max` tokens, which can be made unreachable.
struct Budget {
    max: usize,
    taken: Mutex<Vec<String>>,
    asked: AtomicUsize,
    down: AtomicBool,
    breaker: Mutex<FleetBreaker>,
}

impl Budget {
    fn new(max: usize) -> Arc<Budget> {
        Arc::new(Budget {
            max,
            taken: Mutex::new(vec![]),
            asked: AtomicUsize::new(0),
            down: AtomicBool::new(false),
            breaker: Mutex::new(FleetBreaker::default()),
        })
    }
}

#[async_trait]
impl Coordinator for Budget {
    fn name(&self) -> &str {
        "memory"
    }
    fn identity(&self) -> &str {
        "n1"
    }
    async fn acquire(&self, request: &TokenRequest) -> Admission {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return Admission::Unavailable("connection refused".into());
        }
        let mut taken = self.taken.lock().unwrap();
        if taken.len() >= self.max {
            return Admission::Refused(format!("fleet budget cordon: {}/{} in use", taken.len(), self.max));
        }
        taken.push(request.decision.clone());
        Admission::Granted(Token {
            decision: request.decision.clone(),
            holder: "n1".into(),
            budgets: vec!["cordon (fleet)".into()],
            keys: vec![request.decision.clone()],
        })
    }
    async fn release(&self, token: &Token, _why: Release) -> Result<(), CoordinationError> {
        self.taken.lock().unwrap().retain(|d| d != &token.decision);
        Ok(())
    }
    fn breaker(&self) -> FleetBreaker {
        self.breaker.lock().unwrap().clone()
    }
    async fn trip(&self, reason: &str) -> Result<(), CoordinationError> {
        *self.breaker.lock().unwrap() =
            FleetBreaker { tripped: true, by: "n1".into(), reason: reason.into(), at: Some(0) };
        Ok(())
    }
    async fn reset(&self, _by: &str) -> Result<FleetBreaker, CoordinationError> {
        Ok(std::mem::take(&mut *self.breaker.lock().unwrap()))
    }
    fn health(&self) -> Health {
        Health::Reachable
    }
}

/// Succeeds, or fails every call when `fail` is set. It declares the
/// kinds these tests propose as fleet-scoped, as the fabric's actuators do.
struct Recorder {
    kinds: Vec<ActionKindDecl>,
    executed: AtomicUsize,
    fail: AtomicBool,
}

impl Default for Recorder {
    fn default() -> Recorder {
        Recorder {
            kinds: vec![
                ActionKindDecl::new("node.cordon", &["node"]).fleet().limited_by(LimitClass::NodeCordon),
                ActionKindDecl::new("rail.drain", &["node", "rail"]).fleet().limited_by(LimitClass::RailDrain),
                ActionKindDecl::new("pfcwd.escalate", &["switch", "port"]).fleet().lost_on_switch_restart(),
                ActionKindDecl::new("*", &[]),
            ],
            executed: AtomicUsize::default(),
            fail: AtomicBool::default(),
        }
    }
}

#[async_trait]
impl Actuator for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }
    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan { actuator: "recorder".into(), requests: vec![action.to_string()] })
    }
    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(ActuatorError::Invalid("refused by the target".into()));
        }
        self.executed.fetch_add(1, Ordering::SeqCst);
        Ok(Outcome { summary: action.to_string(), requests: vec![], prior: None })
    }
}

fn proposal(kind: &str, node: &str, at: i64) -> Proposal {
    let target = Labels::from_pairs([("node", node), ("netdev", "eth0")]);
    crate::testing::proposal("spine-fault", kind, node, target, at)
}

fn dispatcher(actuator: Arc<Recorder>, mode: Mode, undo: Vec<String>) -> Dispatcher {
    let policy = PolicySettings::new(
        &Limits::default(),
        &BreakerConfig { trip_after: 100, window: std::time::Duration::from_secs(600) },
        &TargetLimits::default(),
        &[],
        &UndoConfig { on_resolve: undo },
        &RetryConfig { attempts: 1, backoff: std::time::Duration::from_millis(1) },
    )
    .unwrap();
    Dispatcher::new(
        DispatchConfig {
            mode,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute { pattern: "*".into(), actuator, destructive: true }],
            timeout: Duration::from_secs(1),
            policy,
            topology: None,
        },
        None,
    )
}

#[tokio::test]
async fn fleet_actions_take_a_token_and_are_held_when_the_budget_is_spent() {
    let budget = Budget::new(2);
    let actuator = Arc::new(Recorder::default());
    let mut d = dispatcher(actuator.clone(), Mode::Enforce, vec![]).with_coordinator(budget.clone(), vec![]);
    let verdicts: Vec<Decision> =
        dispatch_all(&mut d, (0..4).map(|i| proposal("node.cordon", &format!("n{i}"), i * SECOND)).collect()).await;
    assert_eq!(verdicts.iter().filter(|d| matches!(d.verdict, Verdict::Executed { .. })).count(), 2);
    let held: Vec<&str> = verdicts.iter().filter_map(|d| d.verdict.reason()).collect();
    assert_eq!(held.len(), 2);
    assert!(held.iter().all(|r| r.contains("fleet budget cordon: 2/2")), "{held:?}");
    assert!(verdicts[0].steps.iter().any(|s| s.what.contains("fleet token taken from cordon (fleet)")));
    assert_eq!(actuator.executed.load(Ordering::SeqCst), 2);
    assert_eq!(d.fleet_tokens().count(), 2);
}

#[tokio::test]
async fn local_actions_never_ask_the_coordinator() {
    let budget = Budget::new(5);
    budget.down.store(true, Ordering::SeqCst);
    let actuator = Arc::new(Recorder::default());
    let mut d = dispatcher(actuator.clone(), Mode::Enforce, vec![]).with_coordinator(budget.clone(), vec![]);
    let link = d.dispatch(proposal("link.isolate", "n1", SECOND)).await;
    assert!(matches!(link.verdict, Verdict::Executed { .. }), "{:?}", link.verdict);
    assert_eq!(budget.asked.load(Ordering::SeqCst), 0);
    let cordon = d.dispatch(proposal("node.cordon", "n2", 2 * SECOND)).await;
    assert_eq!(cordon.verdict.reason(), Some("coordination unavailable: connection refused"));
    assert_eq!(budget.asked.load(Ordering::SeqCst), 1);
    // Back: the next proposal goes through, no restart.
    budget.down.store(false, Ordering::SeqCst);
    let again = d.dispatch(proposal("node.cordon", "n3", 3 * SECOND)).await;
    assert!(matches!(again.verdict, Verdict::Executed { .. }), "{:?}", again.verdict);
}

#[tokio::test]
async fn the_playbook_scope_overrides_the_kind_default() {
    let budget = Budget::new(0);
    let actuator = Arc::new(Recorder::default());
    let scopes = vec![("node.cordon".to_string(), Scope::Local), ("link.*".to_string(), Scope::Fleet)];
    let mut d = dispatcher(actuator, Mode::Enforce, vec![]).with_coordinator(budget.clone(), scopes);
    let cordon = d.dispatch(proposal("node.cordon", "n1", SECOND)).await;
    assert!(matches!(cordon.verdict, Verdict::Executed { .. }), "{:?}", cordon.verdict);
    let link = d.dispatch(proposal("link.isolate", "n2", 2 * SECOND)).await;
    assert!(link.verdict.reason().is_some_and(|r| r.contains("fleet budget")), "{:?}", link.verdict);
}

#[tokio::test]
async fn a_failed_action_gives_its_token_back_and_an_undone_one_too() {
    let budget = Budget::new(1);
    let actuator = Arc::new(Recorder::default());
    let mut d =
        dispatcher(actuator.clone(), Mode::Enforce, vec!["rail.*".into()]).with_coordinator(budget.clone(), vec![]);
    actuator.fail.store(true, Ordering::SeqCst);
    let failed = d.dispatch(proposal("rail.drain", "n1", SECOND)).await;
    assert!(matches!(failed.verdict, Verdict::Failed { .. }), "{:?}", failed.verdict);
    assert!(budget.taken.lock().unwrap().is_empty(), "a failed action keeps no token");
    actuator.fail.store(false, Ordering::SeqCst);
    let drained = d.dispatch(proposal("rail.drain", "n1", 2 * SECOND)).await;
    assert!(matches!(drained.verdict, Verdict::Executed { .. }), "{:?}", drained.verdict);
    assert_eq!(budget.taken.lock().unwrap().len(), 1);
    let subject = Labels::from_pairs([("node", "n1")]);
    let undone = d.instance_resolved("spine-fault", &subject, 3 * SECOND).await;
    assert_eq!(undone.len(), 1);
    assert!(budget.taken.lock().unwrap().is_empty(), "the undo gave the token back");
    assert_eq!(d.fleet_tokens().count(), 0);
}

#[tokio::test]
async fn a_tripped_fleet_breaker_holds_every_destructive_action() {
    let budget = Budget::new(10);
    let actuator = Arc::new(Recorder::default());
    let mut d = dispatcher(actuator.clone(), Mode::Enforce, vec![]).with_coordinator(budget.clone(), vec![]);
    budget.trip("spine-1 flapping").await.unwrap();
    for (i, kind) in ["node.cordon", "link.isolate"].into_iter().enumerate() {
        let held = d.dispatch(proposal(kind, &format!("n{i}"), (i as i64 + 1) * SECOND)).await;
        assert_eq!(held.verdict.reason(), Some("fleet circuit breaker tripped by n1: spine-1 flapping"));
    }
    assert_eq!(actuator.executed.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn dry_run_takes_no_token() {
    let budget = Budget::new(0);
    let actuator = Arc::new(Recorder::default());
    let mut d = dispatcher(actuator, Mode::DryRun, vec![]).with_coordinator(budget.clone(), vec![]);
    let planned = d.dispatch(proposal("node.cordon", "n1", SECOND)).await;
    assert!(matches!(planned.verdict, Verdict::DryRun { .. }), "{:?}", planned.verdict);
    assert_eq!(budget.asked.load(Ordering::SeqCst), 0);
}

async fn dispatch_all(d: &mut Dispatcher, proposals: Vec<Proposal>) -> Vec<Decision> {
    let mut out = Vec::new();
    for p in proposals {
        out.push(d.dispatch(p).await);
    }
    out
}

#[tokio::test]
async fn the_local_breaker_tripping_trips_the_fleet_breaker() {
    let budget = Budget::new(10);
    let policy = PolicySettings::new(
        &Limits::default(),
        &BreakerConfig { trip_after: 1, window: std::time::Duration::from_secs(600) },
        &TargetLimits::default(),
        &[],
        &UndoConfig::default(),
        &RetryConfig { attempts: 1, backoff: std::time::Duration::from_millis(1) },
    )
    .unwrap();
    let mut d = Dispatcher::new(
        DispatchConfig {
            mode: Mode::Enforce,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute {
                pattern: "*".into(),
                actuator: Arc::new(Recorder::default()),
                destructive: true,
            }],
            timeout: Duration::from_secs(1),
            policy,
            topology: None,
        },
        None,
    )
    .with_coordinator(budget.clone(), vec![]);
    let drain = |rail: &str, at: i64| {
        let mut p = proposal("rail.drain", &format!("n{rail}"), at);
        p.action.target = Labels::from_pairs([("plane", "1"), ("rail", rail)]);
        p
    };
    assert!(matches!(d.dispatch(drain("1", SECOND)).await.verdict, Verdict::Executed { .. }));
    // A second rail of plane 1: over the local limit, one hit, the breaker trips.
    let held = d.dispatch(drain("2", 2 * SECOND)).await;
    assert!(matches!(held.verdict, Verdict::Held { .. }), "{:?}", held.verdict);
    assert!(d.breaker().tripped_at.is_some());
    let fleet = budget.breaker();
    assert!(fleet.tripped, "the fleet breaker was not tripped");
    assert!(fleet.reason.contains("limit"), "{}", fleet.reason);
}

/// An aggregator sharing its switches: it owns `leaf-1` only, records what
/// it changes, and offers one action taken over from `agg-1`.
#[derive(Default)]
struct Sharing {
    recorded: Mutex<Vec<(String, String)>>,
    restored: Mutex<Vec<String>>,
    offered: Mutex<Vec<crate::contracts::Adopted>>,
}

#[async_trait]
impl Coordinator for Sharing {
    fn name(&self) -> &str {
        "sharing"
    }
    fn identity(&self) -> &str {
        "agg-2"
    }
    // Grants, budgets and the breaker as without a fleet: only ownership
    // and what is recorded differ.
    async fn acquire(&self, request: &TokenRequest) -> Admission {
        match Standalone.acquire(request).await {
            Admission::Granted(token) => Admission::Granted(Token { holder: "agg-2".into(), ..token }),
            refused => refused,
        }
    }
    async fn release(&self, token: &Token, why: Release) -> Result<(), CoordinationError> {
        Standalone.release(token, why).await
    }
    fn breaker(&self) -> FleetBreaker {
        Standalone.breaker()
    }
    async fn trip(&self, reason: &str) -> Result<(), CoordinationError> {
        Standalone.trip(reason).await
    }
    async fn reset(&self, by: &str) -> Result<FleetBreaker, CoordinationError> {
        Standalone.reset(by).await
    }
    fn health(&self) -> Health {
        Standalone.health()
    }
    async fn may_change_switch(&self, switch: &str) -> Result<(), crate::contracts::NotOwner> {
        if switch == "leaf-1" {
            Ok(())
        } else {
            Err(crate::contracts::NotOwner { switch: switch.into(), group: "pod-a".into(), owner: "agg-2".into() })
        }
    }
    async fn switch_changed(&self, decision: &Decision, switch: &str) {
        self.recorded.lock().unwrap().push((decision.id.clone(), switch.to_string()));
    }
    async fn switch_restored(&self, action: &Action, _switch: &str) {
        self.restored.lock().unwrap().push(action.dedup_key());
    }
    fn take_adopted(&self) -> Vec<crate::contracts::Adopted> {
        std::mem::take(&mut *self.offered.lock().unwrap())
    }
}

fn on_switch(switch: &str, at: i64) -> Proposal {
    let target = Labels::from_pairs([("switch", switch), ("port", "Ethernet8"), ("queue", "3")]);
    crate::testing::proposal("switch-pfc-storm", "pfcwd.escalate", "agg", target, at)
}

#[tokio::test]
async fn a_sharing_aggregator_changes_only_its_switches_and_records_what_it_changed() {
    let sharing = Arc::new(Sharing::default());
    let actuator = Arc::new(Recorder::default());
    // Local scope: ownership is checked whatever the scope.
    let scopes = vec![("pfcwd.*".to_string(), Scope::Local)];
    let mut d = dispatcher(actuator.clone(), Mode::Enforce, vec![]).with_coordinator(sharing.clone(), scopes);
    let theirs = d.dispatch(on_switch("leaf-2", SECOND)).await;
    assert_eq!(
        theirs.verdict.reason(),
        Some("switch leaf-2 is not this aggregator's to change: shard group pod-a gives it to agg-2")
    );
    let ours = d.dispatch(on_switch("leaf-1", 2 * SECOND)).await;
    assert!(matches!(ours.verdict, Verdict::Executed { .. }), "{:?}", ours.verdict);
    assert_eq!(actuator.executed.load(Ordering::SeqCst), 1);
    assert_eq!(*sharing.recorded.lock().unwrap(), [(ours.id.clone(), "leaf-1".to_string())]);
}

#[tokio::test]
async fn an_action_taken_over_is_adopted_once_under_an_id_of_our_own_and_not_sent_again() {
    let sharing = Arc::new(Sharing::default());
    let actuator = Arc::new(Recorder::default());
    let mut d = dispatcher(actuator.clone(), Mode::Enforce, vec![]).with_coordinator(sharing.clone(), vec![]);
    let mut taken = Decision::new(
        "0000000007".into(),
        on_switch("leaf-1", SECOND),
        Mode::Enforce,
        Step { at: SECOND, what: "fired".into() },
        SECOND,
    );
    taken.verdict =
        Verdict::Executed { outcome: Outcome { summary: "escalated".into(), requests: vec![], prior: None } };
    let offer = crate::contracts::Adopted { decision: taken, from: "agg-1".into(), switch: "leaf-1".into() };
    sharing.offered.lock().unwrap().push(offer.clone());
    d.adopt_taken_over(2 * SECOND).await;
    let in_effect: Vec<&crate::policy::Effect> = d.policy().in_effect().collect();
    assert_eq!(in_effect.len(), 1);
    let adopted_id = in_effect[0].id.clone();
    assert_ne!(adopted_id, "0000000007", "decision ids are each daemon's own");
    assert_eq!(*sharing.recorded.lock().unwrap(), [(adopted_id.clone(), "leaf-1".to_string())], "recorded in our name");
    // Offered again (the switch moved away and back): still one.
    sharing.offered.lock().unwrap().push(offer);
    d.adopt_taken_over(3 * SECOND).await;
    assert_eq!(d.policy().in_effect().count(), 1);
    // Our own instance of the rule finds it in place: nothing is sent.
    let again = d.dispatch(on_switch("leaf-1", 4 * SECOND)).await;
    assert!(matches!(&again.verdict, Verdict::Duplicate { of } if *of == adopted_id), "{:?}", again.verdict);
    assert_eq!(actuator.executed.load(Ordering::SeqCst), 0);
}
