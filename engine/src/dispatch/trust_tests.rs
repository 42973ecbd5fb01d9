//! The action path under crashes and drift: what a restart finds on the
//! target decides what the ledger says, and nothing is applied twice or
//! left behind.

use super::tests::{dispatcher, knobs, ledger, proposal, Setup};
use super::*;
use crate::labels::Labels;
use crate::time::SECOND;

fn undoing() -> Setup {
    Setup { undo: vec!["node.*".into()], reapply_reverted: Some(vec!["node.*".into()]), ..Setup::default() }
}

fn node(n: &str) -> Labels {
    Labels::from_pairs([("node", n)])
}

/// Dispatches a proposal and leaves its record as a crash after the change
/// and before the outcome leaves it: the intent, with its prior, on disk.
async fn crash_after_the_change(d: &mut Dispatcher, l: &crate::ledger::Ledger, n: &str) -> Decision {
    let mut rec = d.dispatch(proposal("r", n, 0)).await;
    assert!(matches!(rec.verdict, Verdict::Executed { .. }), "{rec:?}");
    rec.phase = Phase::Intent;
    rec.verdict = Verdict::Shadowed;
    l.put_durable(&rec).unwrap();
    rec
}

#[tokio::test]
async fn a_change_whose_outcome_was_lost_is_found_in_effect_and_undone_with_the_intents_prior() {
    let knobs = knobs();
    knobs.set_by_hand(&node("a"), "operator-value");
    let l = ledger();
    let mut d = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
    let rec = crash_after_the_change(&mut d, &l, "a").await;
    assert_eq!(
        rec.prior.as_ref().map(|p| p.as_json().clone()),
        Some(serde_json::json!({ "before": "operator-value", "after": "ours" }))
    );

    let mut restarted = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
    let settled = restarted.reconcile(SECOND).await;
    assert!(matches!(&settled[0].verdict, Verdict::Executed { outcome } if outcome.prior == rec.prior), "{settled:?}");
    assert_eq!(restarted.policy().in_effect().count(), 1, "ours, in effect");

    let undone = restarted.instance_resolved("r", &node("a"), 2 * SECOND).await;
    assert!(matches!(undone[0].verdict, Verdict::Executed { .. }), "{undone:?}");
    assert_eq!(knobs.value(&node("a")).unwrap(), "operator-value", "the true original is back");
    assert_eq!(knobs.executes(), 1, "applied once");
}

#[tokio::test]
async fn a_change_that_did_not_land_is_recorded_so_and_the_fault_is_decided_afresh() {
    let knobs = knobs();
    let l = ledger();
    let mut d = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
    let rec = crash_after_the_change(&mut d, &l, "a").await;
    knobs.set_by_hand(&node("a"), "default"); // the Set never reached the switch

    let mut restarted = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
    let settled = restarted.reconcile(SECOND).await;
    assert!(matches!(settled[0].verdict, Verdict::Interrupted { applied: false, .. }), "{settled:?}");
    assert_eq!(restarted.policy().in_effect().count(), 0);

    // The instance still fires after the restart and proposes again.
    let mut again = proposal("r", "a", 0);
    again.restored = true;
    again.decided_at = 2 * SECOND;
    let decided = restarted.dispatch(again).await;
    assert!(matches!(decided.verdict, Verdict::Executed { .. }), "{decided:?}");
    assert_ne!(decided.id, rec.id);
    assert_eq!(knobs.value(&node("a")).unwrap(), "ours");
}

#[tokio::test]
async fn an_undo_cut_off_by_a_crash_runs_again_once_and_a_finished_one_is_recognised() {
    for undo_landed in [false, true] {
        let knobs = knobs();
        let l = ledger();
        let mut d = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
        let original = d.dispatch(proposal("r", "a", 0)).await;
        // The undo's intent reached the disk; then the crash.
        let mut undo = original.clone();
        undo.id = l.next_id().unwrap();
        undo.undo_of = Some(original.id.clone());
        undo.phase = Phase::Intent;
        undo.verdict = Verdict::Shadowed;
        l.put_durable(&undo).unwrap();
        if undo_landed {
            knobs.set_by_hand(&node("a"), "default");
        }

        let mut restarted = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
        let settled = restarted.reconcile(SECOND).await;
        assert!(matches!(settled[0].verdict, Verdict::Executed { .. }), "{undo_landed}: {settled:?}");
        assert_eq!(knobs.value(&node("a")).unwrap(), "default");
        assert_eq!(knobs.undos(), usize::from(!undo_landed), "restored exactly once");
        assert_eq!(l.get(&original.id).unwrap().unwrap().undone_by.as_deref(), Some(undo.id.as_str()));
        assert_eq!(restarted.policy().in_effect().count(), 0);
    }
}

#[tokio::test]
async fn an_undo_answered_too_late_is_recorded_executed_when_the_target_is_restored() {
    let knobs = knobs();
    let l = ledger();
    let mut d = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
    let original = d.dispatch(proposal("r", "a", 0)).await;
    knobs.answer_late_to_next_undos(1);
    let resolved = d.instance_resolved("r", &node("a"), SECOND).await;
    // The original judged effective (its rule cleared), then its undo.
    let undone: Vec<&Decision> = resolved.iter().filter(|d| d.undo_of.is_some()).collect();
    assert_eq!(resolved.len(), 2, "{resolved:?}");
    assert!(
        matches!(&undone[0].verdict, Verdict::Executed { outcome } if outcome.summary.contains("restored after: failed: timed out")),
        "{undone:?}"
    );
    assert_eq!(knobs.value(&node("a")).unwrap(), "default");
    assert_eq!(knobs.undos(), 1, "looked at, not sent again");
    assert_eq!(l.get(&original.id).unwrap().unwrap().undone_by.as_deref(), Some(undone[0].id.as_str()));
    assert_eq!(d.policy().in_effect().count(), 0);
}

#[tokio::test]
async fn a_target_that_already_holds_the_change_is_neither_sent_nor_recorded_as_ours() {
    let knobs = knobs();
    knobs.set_by_hand(&node("a"), "ours");
    let l = ledger();
    let mut d = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
    let decided = d.dispatch(proposal("r", "a", 0)).await;
    assert!(matches!(decided.verdict, Verdict::AlreadyHeld { .. }), "{decided:?}");
    assert_eq!(knobs.executes(), 0);
    assert_eq!(d.policy().in_effect().count(), 0, "nothing of ours to undo later");
    assert!(d.instance_resolved("r", &node("a"), SECOND).await.is_empty());
    assert_eq!(knobs.value(&node("a")).unwrap(), "ours", "left as it was");
}

#[tokio::test]
async fn a_change_the_target_lost_is_reapplied_while_the_incident_fires_and_someone_elses_is_left_alone() {
    let knobs = knobs();
    let l = ledger();
    let mut d = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
    let lost = d.dispatch(proposal("r", "a", 0)).await;
    let theirs = d.dispatch(proposal("r", "b", 0)).await;
    assert!(d.reverify_if_due(SECOND).await.is_empty(), "all in effect");

    knobs.set_by_hand(&node("a"), "default"); // the switch restarted with its saved config
    knobs.set_by_hand(&node("b"), "operator-value");
    assert!(d.reverify_if_due(5 * SECOND).await.is_empty(), "not due before the period");
    let decided = d.reverify_if_due(11 * SECOND).await;
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert!(matches!(decided[0].verdict, Verdict::Executed { .. }), "{decided:?}");
    assert_eq!(knobs.value(&node("a")).unwrap(), "ours", "re-applied");
    assert_eq!(knobs.value(&node("b")).unwrap(), "operator-value", "someone else's change stands");

    let a = l.get(&lost.id).unwrap().unwrap();
    assert_eq!(a.drift.as_ref().map(|d| d.kind), Some(DriftKind::Reverted));
    let b = l.get(&theirs.id).unwrap().unwrap();
    assert_eq!(b.drift.as_ref().map(|d| d.kind), Some(DriftKind::Changed));
    let in_effect: Vec<String> = d.policy().in_effect().map(|e| e.id.clone()).collect();
    assert_eq!(in_effect, [decided[0].id.clone()], "only the re-applied action is ours now");
}

#[tokio::test]
async fn an_action_that_outlived_its_incident_across_a_restart_is_undone() {
    let knobs = knobs();
    let l = ledger();
    let mut d = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
    d.dispatch(proposal("r", "a", 0)).await;
    d.dispatch(proposal("r", "b", 0)).await;

    let mut restarted = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
    // At start, only b's instance is still firing.
    let undone = restarted.settle_orphans(|_, subject| subject == &node("b"), SECOND).await;
    assert_eq!(undone.len(), 1, "{undone:?}");
    assert_eq!(knobs.value(&node("a")).unwrap(), "default");
    assert_eq!(knobs.value(&node("b")).unwrap(), "ours");
}

#[tokio::test]
async fn a_reverted_host_action_not_listed_for_reapply_is_left_to_the_operator() {
    let knobs = knobs();
    let setup = Setup { undo: vec!["node.*".into()], ..Setup::default() };
    let mut d = dispatcher(setup, knobs.clone(), Some(ledger()));
    d.dispatch(proposal("r", "a", 0)).await;
    knobs.set_by_hand(&node("a"), "default"); // an operator put it back
    assert!(d.reverify_if_due(SECOND).await.is_empty(), "not re-applied");
    assert_eq!(knobs.value(&node("a")).unwrap(), "default");
    assert_eq!(d.drift_counts(), (1, 0), "recorded as reverted");
    assert_eq!(d.policy().in_effect().count(), 0, "no longer ours");
}

#[tokio::test]
async fn a_mode_an_operator_set_is_kept_across_a_restart() {
    let knobs = knobs();
    let l = ledger();
    let mut d = dispatcher(undoing(), knobs.clone(), Some(l.clone()));
    assert_eq!(d.mode(), Mode::Enforce);
    d.set_mode_by(Mode::DryRun, "oncall", SECOND);
    let restarted = dispatcher(undoing(), knobs, Some(l.clone()));
    assert_eq!(restarted.mode(), Mode::DryRun, "the playbook says enforce; the operator's dry-run stands");
    assert_eq!(l.mode().unwrap().map(|m| (m.by, m.at)), Some(("oncall".to_string(), SECOND)));
}
