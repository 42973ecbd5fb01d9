//! An operator's undo, an incident ended by hand, silences kept in the
//! ledger, and the breaker's trip history.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::tests::{dispatcher, knobs, ledger, proposal, Setup};
use super::*;
use crate::contracts::Action;
use crate::contracts::{ActionKindDecl, Actuator, ActuatorError, Outcome, RequestPlan};
use crate::labels::Labels;
use crate::policy::{Limits, PolicySettings};
use crate::time::{wall_clock_now, SECOND};

fn node(n: &str) -> Labels {
    Labels::from_pairs([("node", n)])
}

#[tokio::test]
async fn an_undo_by_hand_restores_reads_back_records_who_and_is_not_done_twice() {
    let knobs = knobs();
    let l = ledger();
    let mut d = dispatcher(Setup::default(), knobs.clone(), Some(l.clone()));
    let acted = d.dispatch(proposal("r", "a", 0)).await;
    assert!(matches!(acted.verdict, Verdict::Executed { .. }), "{acted:?}");

    let undo = d.undo_by_hand(&acted.id, "alice", SECOND).await.unwrap();
    assert!(
        matches!(&undo.verdict, Verdict::Executed { outcome } if outcome.summary == "restored default"),
        "{undo:?}"
    );
    assert_eq!(knobs.undos(), 1);
    assert_eq!(knobs.value(&node("a")).as_deref(), Some("default"));
    let steps: Vec<&str> = undo.steps.iter().map(|s| s.what.as_str()).collect();
    assert_eq!(steps[0], format!("undo of {} (node.cordon {{node=\"a\"}}) asked by alice", acted.id), "{steps:#?}");
    assert!(steps.contains(&"read back: the target holds its values from before the action"), "{steps:#?}");

    let stored = l.get(&undo.id).unwrap().unwrap();
    assert_eq!(stored.undo_of.as_deref(), Some(acted.id.as_str()));
    assert_eq!(stored.steps, undo.steps, "the ledger holds the decision as returned");
    assert_eq!(l.get(&acted.id).unwrap().unwrap().undone_by.as_deref(), Some(undo.id.as_str()));
    assert!(d.policy().in_effect().next().is_none(), "no longer in effect");

    let again = d.undo_by_hand(&acted.id, "alice", 2 * SECOND).await.unwrap_err();
    assert_eq!(
        again,
        DispatchError::NotUndoable { id: acted.id.clone(), reason: format!("it was already undone by {}", undo.id) }
    );
    let of_undo = d.undo_by_hand(&undo.id, "alice", 2 * SECOND).await.unwrap_err();
    assert!(
        matches!(&of_undo, DispatchError::NotUndoable { reason, .. } if reason.contains("itself the undo")),
        "{of_undo}"
    );
    assert_eq!(
        d.undo_by_hand("00000000ff", "alice", 2 * SECOND).await.unwrap_err(),
        DispatchError::Unknown("00000000ff".into())
    );
    assert_eq!(knobs.undos(), 1, "refusals send nothing");

    // Not in effect any more: the same action, proposed again after the
    // target's cooldown, is sent again rather than called a duplicate.
    let later = d.dispatch(proposal("r", "a", 600 * SECOND)).await;
    assert!(matches!(later.verdict, Verdict::Executed { .. }), "{later:?}");
    assert_eq!(knobs.executes(), 2);
}

#[tokio::test]
async fn an_undo_by_hand_in_dry_run_is_planned_and_the_action_stays_in_effect() {
    let knobs = knobs();
    let l = ledger();
    let mut d = dispatcher(Setup::default(), knobs.clone(), Some(l.clone()));
    let acted = d.dispatch(proposal("r", "a", 0)).await;
    d.set_mode(Mode::DryRun);
    let undo = d.undo_by_hand(&acted.id, "alice", SECOND).await.unwrap();
    assert!(
        matches!(&undo.verdict, Verdict::DryRun { plan } if plan.requests == ["set {node=\"a\"} default"]),
        "{undo:?}"
    );
    assert_eq!(knobs.undos(), 0, "nothing sent");
    assert_eq!(knobs.value(&node("a")).as_deref(), Some("ours"));
    assert!(d.policy().in_effect().any(|e| e.id == acted.id), "still in effect: nothing changed");
    assert_eq!(l.get(&acted.id).unwrap().unwrap().undone_by, None);

    d.set_mode(Mode::Shadow);
    let shadowed = d.undo_by_hand(&acted.id, "alice", 2 * SECOND).await.unwrap();
    assert_eq!(shadowed.verdict, Verdict::Shadowed);
    assert_eq!(shadowed.undo_of.as_deref(), Some(acted.id.as_str()));

    d.set_mode(Mode::Enforce);
    let done = d.undo_by_hand(&acted.id, "alice", 3 * SECOND).await.unwrap();
    assert!(matches!(done.verdict, Verdict::Executed { .. }), "{done:?}");
    assert_eq!(knobs.undos(), 1);
}

/// An actuator that acts and cannot undo (a notification, a command without
/// `undo_argv`).
struct NoUndo;

#[async_trait]
impl Actuator for NoUndo {
    fn name(&self) -> &str {
        "once"
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &[]
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan { actuator: "once".into(), requests: vec![action.to_string()] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        Ok(Outcome { summary: format!("did {action}"), requests: vec![], prior: None })
    }
}

#[tokio::test]
async fn an_undo_by_hand_of_a_kind_without_undo_or_not_executed_is_refused() {
    let policy = PolicySettings::defaults().with_retry(1, std::time::Duration::from_millis(10));
    let config = DispatchConfig {
        mode: Mode::Enforce,
        rule_modes: HashMap::new(),
        routes: vec![ActuatorRoute { pattern: "*".into(), actuator: Arc::new(NoUndo), destructive: true }],
        timeout: Duration::from_secs(1),
        policy,
        topology: None,
    };
    let l = ledger();
    let mut d = Dispatcher::new(config, Some(l.clone()));
    let acted = d.dispatch(proposal("r", "a", 0)).await;
    assert!(matches!(acted.verdict, Verdict::Executed { .. }), "{acted:?}");
    let refused = d.undo_by_hand(&acted.id, "alice", SECOND).await.unwrap_err();
    assert!(
        matches!(&refused, DispatchError::NotUndoable { reason, .. } if reason.starts_with("node.cordon has no undo")),
        "{refused}"
    );
    // Suppressed by the target's cooldown: recorded, never executed.
    let suppressed = d.dispatch(proposal("r", "a", SECOND)).await;
    let refused = d.undo_by_hand(&suppressed.id, "alice", SECOND).await.unwrap_err();
    assert!(
        matches!(&refused, DispatchError::NotUndoable { reason, .. } if reason.contains("verdict is duplicate")),
        "{refused}"
    );
    let records = l.len();
    assert_eq!(records, 2, "refusals record nothing");
}

#[tokio::test]
async fn an_incident_resolved_by_hand_undoes_expires_and_is_refused_twice() {
    let knobs = knobs();
    let l = ledger();
    let approval = vec![crate::policy::ApprovalRule {
        actions: vec!["node.cordon".into()],
        timeout: std::time::Duration::from_secs(900),
    }];
    let mut d = dispatcher(Setup { undo: vec!["node.*".into()], ..Setup::default() }, knobs.clone(), Some(l.clone()));
    let acted = d.dispatch(proposal("r", "a", 0)).await;
    let mut waits = dispatcher(Setup { approval, ..Setup::default() }, knobs.clone(), Some(ledger()));
    let waiting = waits.dispatch(proposal("r", "b", 0)).await;
    assert!(matches!(waiting.verdict, Verdict::AwaitingApproval { .. }));

    let (resolution, decisions) = d.resolve_incident("inc-1", "r", &node("a"), 0, "bob", SECOND).await.unwrap();
    assert_eq!(decisions.len(), 1, "{decisions:#?}");
    assert_eq!(decisions[0].undo_of.as_deref(), Some(acted.id.as_str()));
    assert!(matches!(decisions[0].verdict, Verdict::Executed { .. }), "{decisions:#?}");
    assert!(decisions[0].steps[0].what.starts_with("r resolved by bob: undo"), "{:#?}", decisions[0].steps);
    assert_eq!(knobs.undos(), 1);
    assert_eq!((resolution.by.as_str(), resolution.decisions.clone()), ("bob", vec![decisions[0].id.clone()]));
    assert_eq!(l.resolution("r", &node("a"), 0).unwrap(), Some(resolution));

    let again = d.resolve_incident("inc-1", "r", &node("a"), 0, "bob", 2 * SECOND).await.unwrap_err();
    assert!(
        matches!(&again, DispatchError::NotResolvable { reason, .. } if reason.starts_with("it was resolved by bob")),
        "{again}"
    );
    // The rule's own resolution later finds nothing left to do.
    assert!(d.instance_resolved("r", &node("a"), 3 * SECOND).await.is_empty());

    let (_, expired) = waits.resolve_incident("inc-2", "r", &node("b"), 0, "bob", SECOND).await.unwrap();
    assert!(
        matches!(&expired[0].verdict, Verdict::Expired { reason } if reason == "the incident it was for was resolved by bob"),
        "{expired:#?}"
    );
    assert_eq!(waits.pending().count(), 0);
}

#[tokio::test]
async fn silences_are_kept_in_the_ledger_and_ended_ones_dropped_at_start() {
    let knobs = knobs();
    let l = ledger();
    let mut d = dispatcher(Setup::default(), knobs.clone(), Some(l.clone()));
    let now = wall_clock_now();
    let silence = |target: &str, until| Silence {
        id: String::new(),
        rule: None,
        target: Some(target.into()),
        until,
        by: "oncall".into(),
        reason: "maintenance".into(),
    };
    let kept = d.silence(silence("a", now + 3600 * SECOND)).unwrap();
    let ended = d.silence(silence("b", now - SECOND)).unwrap();
    let lifted = d.silence(silence("c", now + 3600 * SECOND)).unwrap();
    assert!(d.unsilence(&lifted.id));
    drop(d);

    let mut restarted = dispatcher(Setup::default(), knobs.clone(), Some(l.clone()));
    assert_eq!(restarted.silences(wall_clock_now()), vec![kept.clone()]);
    assert_eq!(l.silences().unwrap().0, vec![kept.clone()], "{} and {} are gone from the ledger", ended.id, lifted.id);
    let suppressed = restarted.dispatch(proposal("r", "a", now)).await;
    assert!(
        matches!(&suppressed.verdict, Verdict::Suppressed { reason } if reason.starts_with("silenced (s1, target a")),
        "{suppressed:?}"
    );
    assert_eq!(knobs.executes(), 0);
    let next = restarted.silence(silence("d", now + 3600 * SECOND)).unwrap();
    assert_eq!(next.id, "s4", "ids are never reused: decisions quote them");
}

#[tokio::test]
async fn the_breaker_keeps_its_trips_through_a_reset_and_a_restart() {
    let knobs = knobs();
    let l = ledger();
    let setup =
        || Setup { limits: Limits { max_cordons: Some(1), ..Limits::default() }, trip_after: 1, ..Setup::default() };
    let mut d = dispatcher(setup(), knobs.clone(), Some(l.clone()));
    d.dispatch(proposal("r", "a", 0)).await;
    let held = d.dispatch(proposal("r", "b", SECOND)).await;
    assert!(matches!(held.verdict, Verdict::Held { .. }), "{held:?}");
    assert_eq!(d.breaker().trips.len(), 1);
    assert_eq!(d.breaker().trips[0].at, SECOND);
    assert!(d.breaker().trips[0].reason.contains("at most 1 nodes cordoned"), "{:?}", d.breaker());

    d.reset_breaker("sre");
    assert_eq!(d.breaker().tripped_at, None);
    assert_eq!(l.breaker().unwrap().trips.len(), 1, "the history is kept through a reset");
    d.dispatch(proposal("r", "c", 2 * SECOND)).await;
    let mut restarted = dispatcher(setup(), knobs, Some(l.clone()));
    assert_eq!(restarted.breaker().trips.iter().map(|t| t.at).collect::<Vec<_>>(), [SECOND, 2 * SECOND]);
    assert_eq!(restarted.breaker().trips_since(SECOND), 1);
    restarted.reset_breaker("sre");
    assert_eq!(restarted.breaker().trips_since(0), 2);
}
