//! Canaries: the first hash change of a plane is judged before the rest
//! of the plane follows; promoted, reverted, and kept across a restart.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::contracts::{ActionKindDecl, CanaryOutcome, LimitClass, Proposal};
use crate::evaluator::Reading;
use crate::labels::Labels;
use crate::ledger::Ledger;
use crate::policy::{CanaryRule, PolicySettings};
use crate::testing::Knobs;
use crate::time::SECOND;
use crate::topology::Topology;

fn knobs() -> Arc<Knobs> {
    Arc::new(Knobs::declaring(vec![
        ActionKindDecl::new("ecmp.widen_hash", &["switch"]).fleet().limited_by(LimitClass::SwitchHash),
        ActionKindDecl::new("*", &[]),
    ]))
}

fn dispatcher(knobs: Arc<Knobs>, ledger: &Ledger) -> Dispatcher {
    let canary = CanaryRule {
        actions: vec!["ecmp.*".into()],
        after: Duration::from_secs(45),
        worse: "spread".into(),
        margin: 0.1,
        hold: Duration::from_secs(3600),
    };
    let policy = PolicySettings::defaults().with_canaries(&[canary]).unwrap();
    let topology = Arc::new(Topology::parse(crate::topology::EXAMPLE_INVENTORY, "inventory").unwrap());
    super::tests::enforcing(knobs, ledger, policy, Some(topology))
}

/// ecmp-imbalance asking to widen `leaf`'s hash at `at` s, its spread `spread`.
fn widen(leaf: &str, spread: f64, at: i64) -> Proposal {
    let target = Labels::from_pairs([("switch", leaf)]);
    let mut p = crate::testing::proposal("ecmp-imbalance", "ecmp.widen_hash", leaf, target.clone(), at * SECOND);
    p.subject = target;
    p.values = vec![("spread".into(), spread), ("marks_per_s".into(), 4000.0)];
    p
}

fn reading(value: f64, cleared: bool) -> Reading {
    Reading { value, cleared }
}

#[tokio::test]
async fn the_rest_of_the_plane_waits_for_the_canary_and_follows_when_it_is_promoted() {
    let (knobs, ledger) = (knobs(), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    // leaf-rail0..3 are plane 0, leaf-rail4..7 plane 1.
    let canary = d.dispatch(widen("leaf-rail1", 3.0, 1)).await;
    assert!(matches!(canary.verdict, Verdict::Executed { .. }), "{canary:?}");
    let c = canary.canary.clone().expect("the first of plane 0 is its canary");
    assert_eq!((c.group.as_str(), c.before, c.judge_at), ("plane 0", 3.0, 46 * SECOND));
    let waiting = d.dispatch(widen("leaf-rail2", 2.5, 2)).await;
    assert!(matches!(&waiting.verdict, Verdict::Held { reason } if reason.contains(&canary.id)), "{waiting:?}");
    assert_eq!(waiting.waits_for.as_deref(), Some(canary.id.as_str()));
    let other_plane = d.dispatch(widen("leaf-rail5", 2.0, 3)).await;
    assert!(other_plane.canary.is_some(), "plane 1 has its own canary");
    assert_eq!(knobs.executes(), 2);

    let board = d.canary_board();
    assert!(board.take_due(45 * SECOND).is_empty(), "not due before `after`");
    let due = board.take_due(46 * SECOND);
    assert_eq!(due.len(), 1);
    assert_eq!((due[0].id.as_str(), due[0].signal.as_str()), (canary.id.as_str(), "spread"));
    assert!(board.take_due(47 * SECOND).is_empty(), "handed out once");

    let out = d.judge_canary(&canary.id, reading(1.2, true), 46 * SECOND).await;
    let judged = out[0].canary.as_ref().and_then(|c| c.judged.clone()).expect("judged");
    assert_eq!(judged.outcome, CanaryOutcome::Promoted);
    assert_eq!(out[1].id, waiting.id);
    assert!(matches!(out[1].verdict, Verdict::Executed { .. }), "{:?}", out[1]);
    assert_eq!(knobs.executes(), 3);
    // Promoted, the plane's limit no longer holds the rest of it.
    let later = d.dispatch(widen("leaf-rail3", 2.2, 60)).await;
    assert!(matches!(later.verdict, Verdict::Executed { .. }), "{later:?}");
    assert_eq!(
        ledger.get(&canary.id).unwrap().unwrap().canary.unwrap().judged.unwrap().outcome,
        CanaryOutcome::Promoted
    );
}

#[tokio::test]
async fn a_canary_that_made_it_worse_is_undone_and_its_plane_held() {
    let (knobs, ledger) = (knobs(), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    let canary = d.dispatch(widen("leaf-rail1", 2.0, 1)).await;
    let waiting = d.dispatch(widen("leaf-rail2", 2.5, 2)).await;
    let out = d.judge_canary(&canary.id, reading(2.4, false), 46 * SECOND).await;
    let outcome = out[0].canary.as_ref().and_then(|c| c.judged.as_ref()).map(|j| j.outcome);
    assert_eq!(outcome, Some(CanaryOutcome::Reverted), "2.4 is more than 10 % over 2.0");
    assert_eq!(out[1].undo_of.as_deref(), Some(canary.id.as_str()));
    assert!(matches!(out[1].verdict, Verdict::Executed { .. }), "{:?}", out[1]);
    assert_eq!(knobs.undos(), 1);
    assert_eq!(out[2].id, waiting.id);
    assert!(matches!(&out[2].verdict, Verdict::Expired { reason } if reason.contains("made it worse")));
    let after = d.dispatch(widen("leaf-rail3", 2.2, 60)).await;
    assert!(matches!(&after.verdict, Verdict::Held { reason } if reason.contains("was reverted")), "{after:?}");
    assert_eq!(knobs.executes(), 1);
}

#[tokio::test]
async fn neither_better_nor_worse_keeps_the_canary_and_stale_data_judges_nothing() {
    let (knobs, ledger) = (knobs(), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    let canary = d.dispatch(widen("leaf-rail1", 2.0, 1)).await;
    let waiting = d.dispatch(widen("leaf-rail2", 2.5, 2)).await;
    let out = d.judge_canary(&canary.id, Reading::UNREAD, 46 * SECOND).await;
    assert_eq!(out[0].canary.as_ref().and_then(|c| c.judged.as_ref()).map(|j| j.outcome), Some(CanaryOutcome::Unread));
    assert!(matches!(&out[1].verdict, Verdict::Expired { reason } if reason.contains("not promoted (unread)")));
    assert_eq!(waiting.id, out[1].id);
    assert_eq!((knobs.executes(), knobs.undos()), (1, 0), "the canary stays; nothing else happens");

    let other = d.dispatch(widen("leaf-rail5", 2.0, 3)).await;
    let out = d.judge_canary(&other.id, reading(2.1, false), 48 * SECOND).await;
    assert_eq!(out[0].canary.as_ref().and_then(|c| c.judged.as_ref()).map(|j| j.outcome), Some(CanaryOutcome::Kept));
    assert_eq!(knobs.undos(), 0);
}

#[tokio::test]
async fn a_restart_keeps_the_canary_and_what_waits_for_it() {
    let (knobs, ledger) = (knobs(), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    let canary = d.dispatch(widen("leaf-rail1", 3.0, 1)).await;
    let waiting = d.dispatch(widen("leaf-rail2", 2.5, 2)).await;
    drop(d);
    let mut d = dispatcher(knobs.clone(), &ledger);
    assert_eq!(d.waiting_for_canaries().map(|w| w.id.clone()).collect::<Vec<_>>(), vec![waiting.id.clone()]);
    let due = d.canary_board().take_due(46 * SECOND);
    assert_eq!(due.len(), 1, "{due:?}");
    let out = d.judge_canary(&canary.id, reading(1.1, true), 46 * SECOND).await;
    assert!(matches!(out[1].verdict, Verdict::Executed { .. }), "{:?}", out[1]);
    assert_eq!(knobs.executes(), 2);
    // A waiting proposal whose fault resolves meanwhile expires instead.
    let mut d = dispatcher(knobs.clone(), &ledger);
    let next = d.dispatch(widen("leaf-rail5", 3.0, 100)).await;
    let wait = d.dispatch(widen("leaf-rail6", 3.0, 101)).await;
    assert_eq!(wait.waits_for.as_deref(), Some(next.id.as_str()));
    let resolved = d.instance_resolved("ecmp-imbalance", &wait.proposal.subject, 110 * SECOND).await;
    assert!(resolved.iter().any(|r| r.id == wait.id && matches!(r.verdict, Verdict::Expired { .. })), "{resolved:?}");
    assert_eq!(d.waiting_for_canaries().count(), 0);
}
