use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::contracts::{ActionKindDecl, LimitClass, Proposal};
use crate::labels::Labels;
use crate::ledger::{Ledger, Retention};
use crate::mode::Mode;
use crate::policy::{ApprovalRule, BreakerConfig, Limits, PolicySettings, RetryConfig, TargetLimits, UndoConfig};
use crate::store::Store;
use crate::testing::Knobs;
use crate::time::SECOND;

pub(super) fn proposal(rule: &str, node: &str, at: i64) -> Proposal {
    let mut p = crate::testing::proposal(rule, "node.cordon", node, Labels::from_pairs([("node", node)]), at);
    p.values = vec![("xids".into(), 1.0)];
    p
}

/// Knobs standing in for a cordon actuator: they declare `node.cordon` as
/// it does (fleet-scoped, counted by the cordon limits), and every other
/// kind plainly.
pub(super) fn knobs() -> Arc<Knobs> {
    Arc::new(Knobs::declaring(vec![
        ActionKindDecl::new("node.cordon", &["node"]).fleet().limited_by(LimitClass::NodeCordon),
        ActionKindDecl::new("*", &[]),
    ]))
}

/// A dispatcher enforcing `policy`, every kind routed to `knobs` (destructive), with `ledger`.
pub(super) fn enforcing(
    knobs: Arc<Knobs>,
    ledger: &Ledger,
    policy: PolicySettings,
    topology: Option<Arc<crate::topology::Topology>>,
) -> Dispatcher {
    let config = DispatchConfig {
        mode: Mode::Enforce,
        rule_modes: Default::default(),
        routes: vec![ActuatorRoute { pattern: "*".into(), actuator: knobs, destructive: true }],
        timeout: Duration::from_secs(1),
        policy,
        topology,
    };
    Dispatcher::new(config, Some(ledger.clone()))
}

pub(super) struct Setup {
    pub limits: Limits,
    pub approval: Vec<ApprovalRule>,
    pub undo: Vec<String>,
    pub mode: Mode,
    pub trip_after: u32,
    /// `[verify] reapply_reverted`; `None`: the default (switch actions).
    pub reapply_reverted: Option<Vec<String>>,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            limits: Limits::default(),
            approval: vec![],
            undo: vec![],
            mode: Mode::Enforce,
            trip_after: 5,
            reapply_reverted: None,
        }
    }
}

pub(super) fn dispatcher(setup: Setup, knobs: Arc<Knobs>, ledger: Option<Ledger>) -> Dispatcher {
    let policy = PolicySettings::new(
        &setup.limits,
        &BreakerConfig { trip_after: setup.trip_after, window: std::time::Duration::from_secs(600) },
        &TargetLimits::default(),
        &setup.approval,
        &UndoConfig { on_resolve: setup.undo },
        &RetryConfig { attempts: 3, backoff: std::time::Duration::from_millis(10) },
    )
    .unwrap();
    let mut policy = policy;
    if let Some(kinds) = setup.reapply_reverted {
        policy.reapply_reverted = Some(kinds);
    }
    Dispatcher::new(
        DispatchConfig {
            mode: setup.mode,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute { pattern: "node.*".into(), actuator: knobs, destructive: true }],
            timeout: Duration::from_secs(1),
            policy,
            topology: None,
        },
        ledger,
    )
}

pub(super) fn ledger() -> Ledger {
    Ledger::open(&Store::temporary().unwrap(), Retention::default()).unwrap()
}

#[tokio::test]
async fn fifty_faults_three_cordons_forty_seven_held_and_the_breaker_trips() {
    let knobs = knobs();
    let limits = Limits { max_cordons: Some(3), ..Limits::default() };
    let l = ledger();
    let mut d = dispatcher(Setup { limits, ..Setup::default() }, knobs.clone(), Some(l.clone()));
    let mut verdicts = Vec::new();
    for i in 0..50 {
        verdicts.push(d.dispatch(proposal("gpu-xid", &format!("node-{i:02}"), SECOND + i)).await.verdict);
    }
    assert_eq!(verdicts.iter().filter(|v| matches!(v, Verdict::Executed { .. })).count(), 3);
    let held: Vec<&str> = verdicts
        .iter()
        .filter_map(|v| match v {
            Verdict::Held { reason } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(held.len(), 47);
    assert_eq!(knobs.executes(), 3);
    assert!(held[..5].iter().all(|r| r.contains("at most 3 nodes cordoned")), "{held:?}");
    assert!(held[5..].iter().all(|r| r.starts_with("circuit breaker tripped")), "{held:?}");
    // The breaker is persisted and survives a restart of the dispatcher.
    assert!(l.breaker().unwrap().tripped_at.is_some());
    let mut again = dispatcher(Setup::default(), knobs.clone(), Some(l.clone()));
    assert!(matches!(again.dispatch(proposal("gpu-xid", "node-99", 10 * SECOND)).await.verdict, Verdict::Held { .. }));
    again.reset_breaker("sre@example");
    assert!(matches!(
        again.dispatch(proposal("gpu-xid", "node-98", 11 * SECOND)).await.verdict,
        Verdict::Executed { .. }
    ));
    // Every proposal has a record.
    assert_eq!(l.len(), 52);
}

#[tokio::test]
async fn approval_executes_rejection_and_expiry_do_not() {
    let knobs = knobs();
    let approval =
        vec![ApprovalRule { actions: vec!["node.cordon".into()], timeout: std::time::Duration::from_secs(900) }];
    let mut d = dispatcher(Setup { approval, ..Setup::default() }, knobs.clone(), Some(ledger()));
    let a = d.dispatch(proposal("gpu-xid", "a", 0)).await;
    let b = d.dispatch(proposal("gpu-xid", "b", 0)).await;
    let c = d.dispatch(proposal("gpu-xid", "c", 0)).await;
    assert!(matches!(a.verdict, Verdict::AwaitingApproval { expires_at } if expires_at == 900 * SECOND));
    assert_eq!(knobs.executes(), 0);

    let approved = d.approve(&a.id, "alice", 60 * SECOND).await.unwrap();
    assert!(matches!(approved.verdict, Verdict::Executed { .. }), "{approved:?}");
    let rejected = d.reject(&b.id, "bob", 60 * SECOND).unwrap();
    assert_eq!(rejected.verdict, Verdict::Rejected { by: "bob".into() });
    assert!(d.expire(899 * SECOND).is_empty());
    let expired = d.expire(900 * SECOND);
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].id, c.id);
    assert_eq!(knobs.executes(), 1, "only the approved one ran");
    assert_eq!(
        d.approve(&b.id, "alice", 61 * SECOND).await.unwrap_err(),
        DispatchError::NotPending { id: b.id.clone(), verdict: "rejected" }
    );
    assert_eq!(d.reject("no-such-id", "bob", 61 * SECOND).unwrap_err(), DispatchError::Unknown("no-such-id".into()));
}

/// A cordon of `node` that touches `jobs`, as the evaluator proposes it.
fn touching(node: &str, jobs: &[&str], at: i64) -> Proposal {
    Proposal { jobs: jobs.iter().map(|j| j.to_string()).collect(), ..proposal("gpu-xid", node, at) }
}

#[tokio::test]
async fn an_action_over_max_jobs_touched_awaits_approval_and_its_decision_names_the_jobs() {
    let knobs = knobs();
    let limits = Limits { max_jobs_touched: Some(2), ..Limits::default() };
    let l = ledger();
    let mut d = dispatcher(Setup { limits, ..Setup::default() }, knobs.clone(), Some(l.clone()));
    let wide = d.dispatch(touching("a", &["eval-c", "train-a", "train-b"], SECOND)).await;
    assert!(
        matches!(wide.verdict, Verdict::AwaitingApproval { expires_at } if expires_at == SECOND + 900 * SECOND),
        "{wide:?}"
    );
    let steps: Vec<&str> = wide.steps.iter().map(|s| s.what.as_str()).collect();
    assert!(
        steps.contains(
            &"needs approval: touches 3 running jobs (eval-c, train-a, train-b), over limits.max_jobs_touched = 2"
        ),
        "{steps:?}"
    );
    // The ledger keeps the jobs with the request, for `explain` and after a restart.
    assert_eq!(l.get(&wide.id).unwrap().unwrap().proposal.jobs, ["eval-c", "train-a", "train-b"]);
    let narrow = d.dispatch(touching("b", &["train-a", "train-b"], SECOND)).await;
    assert!(matches!(narrow.verdict, Verdict::Executed { .. }), "at the limit: {narrow:?}");
    assert_eq!(knobs.executes(), 1, "the wide one waits");
    let approved = d.approve(&wide.id, "alice", 60 * SECOND).await.unwrap();
    assert!(matches!(approved.verdict, Verdict::Executed { .. }), "{approved:?}");
    assert_eq!(knobs.executes(), 2);
}

#[tokio::test]
async fn a_dry_run_over_max_jobs_touched_is_planned_without_approval() {
    let knobs = knobs();
    let limits = Limits { max_jobs_touched: Some(0), ..Limits::default() };
    let mut d = dispatcher(Setup { limits, mode: Mode::DryRun, ..Setup::default() }, knobs.clone(), None);
    let planned = d.dispatch(touching("a", &["train-a"], SECOND)).await;
    assert!(matches!(planned.verdict, Verdict::DryRun { .. }), "{planned:?}");
    assert_eq!(knobs.executes(), 0);
}

#[tokio::test]
async fn undo_restores_our_change_and_skips_a_target_changed_by_hand() {
    let knobs = knobs();
    let undo = vec!["node.*".into()];
    let l = ledger();
    let mut d = dispatcher(Setup { undo, ..Setup::default() }, knobs.clone(), Some(l.clone()));
    let ours = d.dispatch(proposal("r", "a", 0)).await;
    let theirs = d.dispatch(proposal("r", "b", 0)).await;
    assert!(matches!(ours.verdict, Verdict::Executed { .. }));
    // Someone changes b by hand while the rule is still firing.
    knobs.set_by_hand(&Labels::from_pairs([("node", "b")]), "set-by-hand");

    let resolved = d.instance_resolved("r", &Labels::from_pairs([("node", "a")]), SECOND).await;
    // The action judged first (its rule cleared: effective), then undone.
    assert_eq!(resolved.len(), 2, "{resolved:#?}");
    let judged = resolved[0].outcome.as_ref().and_then(|o| o.judged.as_ref()).expect("judged");
    assert_eq!(
        (resolved[0].id.as_str(), judged.result),
        (ours.id.as_str(), crate::contracts::OutcomeResult::Effective)
    );
    let undone = &resolved[1..];
    assert!(matches!(&undone[0].verdict, Verdict::Executed { outcome } if outcome.summary == "restored default"));
    assert_eq!(l.get(&ours.id).unwrap().unwrap().undone_by.as_deref(), Some(undone[0].id.as_str()));

    let skipped = d.instance_resolved("r", &Labels::from_pairs([("node", "b")]), SECOND).await;
    let skipped: Vec<Decision> = skipped.into_iter().filter(|d| d.undo_of.is_some()).collect();
    assert!(
        matches!(&skipped[0].verdict, Verdict::Skipped { reason } if reason.contains("value is set-by-hand")),
        "{skipped:?}"
    );
    assert_eq!(knobs.value(&Labels::from_pairs([("node", "b")])).unwrap(), "set-by-hand");
    assert_eq!(skipped[0].undo_of.as_deref(), Some(theirs.id.as_str()));
}

#[tokio::test]
async fn a_failed_call_is_retried_with_backoff_and_recorded() {
    let knobs = knobs();
    knobs.fail_next(2);
    let mut d = dispatcher(Setup::default(), knobs.clone(), None);
    let decision = d.dispatch(proposal("r", "a", 0)).await;
    assert!(matches!(decision.verdict, Verdict::Executed { .. }), "{decision:?}");
    assert_eq!(decision.attempts, 3);
    assert!(decision.steps.iter().any(|s| s.what == "retrying in 20ms"), "{:?}", decision.steps);
}

#[tokio::test]
async fn an_interrupted_intent_is_verified_not_repeated() {
    let knobs = knobs();
    let l = ledger();
    // A record left in the intent phase, as a crash leaves it, whose action did take.
    let mut d = dispatcher(Setup::default(), knobs.clone(), Some(l.clone()));
    let mut rec = d.dispatch(proposal("r", "a", 0)).await;
    rec.phase = Phase::Intent;
    rec.verdict = Verdict::Shadowed;
    l.put_durable(&rec).unwrap();
    // And one whose action did not take.
    let mut lost = rec.clone();
    lost.id = "ffffffffff".into();
    lost.proposal.action.target = Labels::from_pairs([("node", "z")]);
    l.put_durable(&lost).unwrap();
    let before = knobs.executes();

    let mut restarted = dispatcher(Setup::default(), knobs.clone(), Some(l.clone()));
    let settled = restarted.reconcile(SECOND).await;
    assert_eq!(settled.len(), 2);
    assert_eq!(knobs.executes(), before, "nothing was sent again");
    let a = l.get(&rec.id).unwrap().unwrap();
    assert!(matches!(a.verdict, Verdict::Executed { .. }) && a.phase == Phase::Done, "{a:?}");
    let z = l.get("ffffffffff").unwrap().unwrap();
    assert!(matches!(&z.verdict, Verdict::Interrupted { found, .. } if found.contains("not repeated")), "{z:?}");
    assert!(l.open_intents().unwrap().is_empty());
}

#[tokio::test]
async fn dry_run_plans_and_shadow_only_records() {
    let knobs = knobs();
    let mut d = dispatcher(Setup { mode: Mode::DryRun, ..Setup::default() }, knobs.clone(), None);
    let planned = d.dispatch(proposal("r", "a", 0)).await;
    assert!(
        matches!(planned.verdict, Verdict::DryRun { ref plan } if plan.requests == vec!["set {node=\"a\"} ours".to_string()])
    );
    let mut shadow = proposal("r", "b", 0);
    shadow.rule_mode = Mode::Shadow;
    assert_eq!(d.dispatch(shadow).await.verdict, Verdict::Shadowed);
    assert_eq!(knobs.executes(), 0);
}

fn silence(rule: Option<&str>, target: Option<&str>, until: i64) -> Silence {
    Silence {
        id: String::new(),
        rule: rule.map(Into::into),
        target: target.map(Into::into),
        until,
        by: "oncall".into(),
        reason: "maintenance".into(),
    }
}

#[tokio::test]
async fn a_silenced_target_is_recorded_as_suppressed_and_nothing_is_sent_until_the_silence_ends() {
    let knobs = knobs();
    let l = ledger();
    let mut d = dispatcher(Setup::default(), knobs.clone(), Some(l.clone()));
    let s = d.silence(silence(None, Some("node-07"), 10 * SECOND)).unwrap();
    assert_eq!(s.id, "s1");

    let silenced = d.dispatch(proposal("gpu-xid", "node-07", SECOND)).await;
    match &silenced.verdict {
        Verdict::Suppressed { reason } => {
            assert!(reason.starts_with("silenced (s1, target node-07, by oncall"), "{reason}");
            assert!(reason.ends_with(": maintenance"), "{reason}");
        }
        other => panic!("expected suppressed, got {other:?}"),
    }
    assert_eq!(knobs.executes(), 0, "a silenced proposal must not reach the actuator");
    assert!(l.get(&silenced.id).unwrap().is_some(), "a silenced proposal is still in the ledger");

    // Another target is not covered.
    let other = d.dispatch(proposal("gpu-xid", "node-08", 2 * SECOND)).await;
    assert!(matches!(other.verdict, Verdict::Executed { .. }), "{:?}", other.verdict);

    // After the silence ends, the same target is acted on again.
    let later = d.dispatch(proposal("gpu-xid", "node-07", 11 * SECOND)).await;
    assert!(matches!(later.verdict, Verdict::Executed { .. }), "{:?}", later.verdict);
    assert_eq!(knobs.executes(), 2);
    assert!(d.silences(11 * SECOND).is_empty());
}

#[tokio::test]
async fn a_rule_silence_covers_only_that_rule_and_can_be_lifted_early() {
    let knobs = knobs();
    let mut d = dispatcher(Setup::default(), knobs.clone(), None);
    let s = d.silence(silence(Some("gpu-xid"), None, 100 * SECOND)).unwrap();
    assert_eq!(d.silences(SECOND).len(), 1);

    let v = d.dispatch(proposal("gpu-xid", "node-01", SECOND)).await.verdict;
    assert!(matches!(v, Verdict::Suppressed { .. }), "{v:?}");
    let v = d.dispatch(proposal("pfc-storm", "node-02", 2 * SECOND)).await.verdict;
    assert!(matches!(v, Verdict::Executed { .. }), "{v:?}");

    assert!(d.unsilence(&s.id));
    assert!(!d.unsilence(&s.id), "lifting twice reports that nothing was lifted");
    let v = d.dispatch(proposal("gpu-xid", "node-03", 3 * SECOND)).await.verdict;
    assert!(matches!(v, Verdict::Executed { .. }), "{v:?}");
}

#[test]
fn a_silence_with_neither_rule_nor_target_is_refused() {
    let mut s = silence::Silences::default();
    let err = s.add(silence(None, None, SECOND)).unwrap_err();
    assert_eq!(err, crate::silence::SilenceError::Unscoped);
}
