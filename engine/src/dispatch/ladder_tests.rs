//! Escalation ladders: one rung at a time, the next when the current one is
//! ineffective or fails, a page when they run out; repeat offenders start at
//! the rung that worked, remembered across restarts.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::contracts::{OutcomeResult, Proposal};
use crate::evaluator::Observation;
use crate::labels::Labels;
use crate::ledger::Ledger;
use crate::policy::{ExpectRule, LadderRule, OutcomesConfig, PolicySettings};
use crate::testing::Knobs;
use crate::time::SECOND;

const RUNGS: [&str; 3] = ["pfcwd.escalate", "link.isolate", "rail.drain"];

fn dispatcher(knobs: Arc<Knobs>, ledger: &Ledger) -> Dispatcher {
    dispatcher_watching(knobs, ledger, &[])
}

/// The ladder's dispatcher, whose outcome checks watch the rule's window values `worse`.
fn dispatcher_watching(knobs: Arc<Knobs>, ledger: &Ledger, worse: &[&str]) -> Dispatcher {
    let expect = ExpectRule {
        actions: vec!["*".into()],
        within: Duration::from_secs(10),
        worse: worse.iter().map(|w| w.to_string()).collect(),
        margin: 0.1,
        hold: Duration::from_secs(600),
        settle: None,
    };
    let ladder = LadderRule {
        rules: vec!["pfc-storm".into()],
        rungs: RUNGS.iter().map(|s| s.to_string()).collect(),
        repeat: 3,
        repeat_within: Duration::from_secs(3600),
        enforce_on: None,
    };
    let outcomes = OutcomesConfig { page: Some("webhook.notify".into()), ..OutcomesConfig::default() };
    let mut policy =
        PolicySettings::defaults().with_outcomes(&outcomes, &[expect]).unwrap().with_ladders(&[ladder]).unwrap();
    policy.undo_on_resolve = vec!["pfcwd.*".into(), "link.*".into()];
    super::tests::enforcing(knobs, ledger, policy, None)
}

/// The three proposals of one pfc-storm incident on node-04 that began at `at` s.
fn storm(at: i64) -> Vec<Proposal> {
    RUNGS
        .iter()
        .map(|kind| {
            let target = Labels::from_pairs([("node", "node-04"), ("kind", kind)]);
            crate::testing::proposal("pfc-storm", kind, "node-04", target, at * SECOND)
        })
        .collect()
}

async fn dispatch_all(d: &mut Dispatcher, proposals: Vec<Proposal>) -> Vec<Decision> {
    let mut out = Vec::new();
    for p in proposals {
        out.push(d.dispatch(p).await);
    }
    out
}

fn still_fires() -> Option<Observation> {
    Some(Observation { cleared: false, values: Vec::new() })
}

fn clears() -> Option<Observation> {
    Some(Observation { cleared: true, values: Vec::new() })
}

fn result(d: &Decision) -> Option<OutcomeResult> {
    d.outcome.as_ref()?.judged.as_ref().map(|j| j.result)
}

fn executed(d: &Decision) -> bool {
    matches!(d.verdict, Verdict::Executed { .. })
}

#[tokio::test]
async fn one_rung_at_a_time_the_next_when_the_last_was_ineffective_and_a_page_when_they_run_out() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    let first = dispatch_all(&mut d, storm(1)).await;
    assert!(executed(&first[0]), "{:?}", first[0]);
    for kept in &first[1..] {
        assert!(
            matches!(&kept.verdict, Verdict::Suppressed { reason } if reason.contains("proves ineffective")),
            "{:?}",
            kept.verdict
        );
    }
    assert_eq!(knobs.executes(), 1, "only the first rung acted");

    assert!(d.judge_outcome(&first[0].id, still_fires(), 5 * SECOND).await.is_empty(), "before its deadline");
    let out = d.judge_outcome(&first[0].id, still_fires(), 11 * SECOND).await;
    assert_eq!(out.len(), 2, "{out:#?}");
    assert_eq!(result(&out[0]), Some(OutcomeResult::Ineffective));
    assert_eq!(out[1].proposal.action.kind, "link.isolate");
    assert!(executed(&out[1]), "{:?}", out[1]);
    assert!(out[1].steps.iter().any(|s| s.what.starts_with("ladder: rung 2 of 3 (link.isolate) after pfcwd.escalate")));

    // The second rung fails: the third is decided at the next tick.
    let isolate = out[1].id.clone();
    let out = d.judge_outcome(&isolate, still_fires(), 30 * SECOND).await;
    assert_eq!(out[1].proposal.action.kind, "rail.drain", "{out:#?}");
    let drain = out[1].id.clone();
    let out = d.judge_outcome(&drain, still_fires(), 50 * SECOND).await;
    assert_eq!(out.len(), 2, "judged, and the page: {out:#?}");
    assert_eq!(out[1].proposal.action.kind, "webhook.notify");
    assert!(out[1].steps.iter().any(|s| s.what.contains("ladder exhausted")), "{:?}", out[1].steps);
}

#[tokio::test]
async fn a_rung_that_fails_climbs_at_the_next_tick() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    knobs.fail_next(10);
    let first = dispatch_all(&mut d, storm(1)).await;
    assert!(matches!(first[0].verdict, Verdict::Failed { .. }), "{:?}", first[0].verdict);
    knobs.fail_next(0);
    let out = d.climb_due(2 * SECOND).await;
    assert_eq!(out.len(), 1, "{out:#?}");
    assert_eq!(out[0].proposal.action.kind, "link.isolate");
    assert!(out[0].steps.iter().any(|s| s.what.contains(&format!("({} failed)", first[0].id))), "{:?}", out[0].steps);
    assert!(d.climb_due(3 * SECOND).await.is_empty(), "climbed once");
}

#[tokio::test]
async fn the_third_incident_within_the_hour_starts_at_the_rung_that_worked_even_after_a_restart() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    for start in [1, 600] {
        let first = dispatch_all(&mut d, storm(start)).await;
        let out = d.judge_outcome(&first[0].id, still_fires(), (start + 11) * SECOND).await;
        assert_eq!(out[1].proposal.action.kind, "link.isolate");
        let judged = d.judge_outcome(&out[1].id, clears(), (start + 13) * SECOND).await;
        assert_eq!(result(&judged[0]), Some(OutcomeResult::Effective));
        d.instance_resolved("pfc-storm", &first[0].proposal.subject, (start + 14) * SECOND).await;
    }
    let remembered = d.offenders();
    assert_eq!(remembered.len(), 1);
    assert_eq!((remembered[0].firings.len(), remembered[0].worked.as_ref().map(|w| w.rung)), (2, Some(1)));
    let shown = d.standings(700 * SECOND);
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert_eq!((shown[0].incidents, shown[0].repeat, shown[0].repeat_offender), (2, 3, false));
    assert_eq!(shown[0].worked.as_ref().map(|w| w.kind.as_str()), Some("link.isolate"));

    drop(d);
    let mut d = dispatcher(knobs.clone(), &ledger);
    let third = dispatch_all(&mut d, storm(1200)).await;
    assert!(
        matches!(&third[0].verdict, Verdict::Suppressed { reason } if reason.contains("starts at rung 2 of 3")),
        "{:?}",
        third[0].verdict
    );
    assert!(executed(&third[1]), "straight to the rung that worked: {:?}", third[1].verdict);
    assert!(matches!(third[2].verdict, Verdict::Suppressed { .. }));
    let shown = d.standings(1201 * SECOND);
    assert_eq!((shown[0].incidents, shown[0].repeat_offender), (3, true), "{shown:?}");

    // An hour later the count starts again from the first rung.
    let later = dispatch_all(&mut d, storm(1200 + 3700)).await;
    assert_eq!(later[0].proposal.action.kind, "pfcwd.escalate");
    assert!(matches!(later[0].verdict, Verdict::Executed { .. } | Verdict::Duplicate { .. }), "{:?}", later[0].verdict);
}

#[tokio::test]
async fn a_restart_mid_climb_goes_on_from_the_rung_it_reached_without_acting_twice() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    let first = dispatch_all(&mut d, storm(1)).await;
    let out = d.judge_outcome(&first[0].id, still_fires(), 11 * SECOND).await;
    let isolate = out[1].id.clone();
    assert_eq!(knobs.executes(), 2);
    drop(d);

    // The daemon restarts with the incident still firing: its proposals are made again.
    let mut d = dispatcher(knobs.clone(), &ledger);
    let again: Vec<Proposal> = storm(1)
        .into_iter()
        .map(|mut p| {
            p.restored = true;
            p.decided_at = 12 * SECOND;
            p
        })
        .collect();
    let restored = dispatch_all(&mut d, again).await;
    assert_eq!((restored[0].id.as_str(), restored[1].id.as_str()), (first[0].id.as_str(), isolate.as_str()));
    assert!(matches!(restored[2].verdict, Verdict::Suppressed { .. }), "{:?}", restored[2].verdict);
    assert_eq!(knobs.executes(), 2, "nothing acted twice");

    // The isolation's open check was restored from the ledger; ineffective, it climbs on.
    let due = d.outcome_board().due(30 * SECOND);
    assert_eq!(due.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(), vec![isolate.as_str()]);
    let out = d.judge_outcome(&isolate, still_fires(), 30 * SECOND).await;
    assert_eq!(out.len(), 2, "{out:#?}");
    assert_eq!(out[1].proposal.action.kind, "rail.drain");
    assert!(executed(&out[1]));
    assert_eq!(knobs.executes(), 3);
}

#[tokio::test]
async fn a_harmful_rung_is_undone_ends_the_climb_and_pages_a_human() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut d = dispatcher_watching(knobs, &ledger, &["paused"]);
    let proposals: Vec<Proposal> = storm(1)
        .into_iter()
        .map(|mut p| {
            p.values = vec![("paused".into(), 0.6)];
            p
        })
        .collect();
    let first = dispatch_all(&mut d, proposals).await;
    let worse = Some(Observation { cleared: false, values: vec![0.9] });
    let out = d.judge_outcome(&first[0].id, worse, 3 * SECOND).await;
    let kinds: Vec<(&str, bool)> = out.iter().map(|o| (o.proposal.action.kind.as_str(), o.undo_of.is_some())).collect();
    assert_eq!(kinds, vec![("pfcwd.escalate", false), ("pfcwd.escalate", true), ("webhook.notify", false)]);
    assert_eq!(result(&out[0]), Some(OutcomeResult::Harmful));
    let page = &out[2];
    assert!(page.proposal.action.params["reason"].contains("made it worse (paused 0.600"), "{page:?}");
    assert!(d.climb_due(20 * SECOND).await.is_empty(), "the climb ended: nothing more is tried");
}

#[tokio::test]
async fn a_ladder_enforced_on_a_canary_group_climbs_there_and_is_shadowed_elsewhere() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let ladder = LadderRule {
        rules: vec!["pfc-storm".into()],
        rungs: RUNGS.iter().map(|s| s.to_string()).collect(),
        repeat: 3,
        repeat_within: Duration::from_secs(3600),
        enforce_on: Some("canary".into()),
    };
    let groups = std::collections::BTreeMap::from([(
        "canary".to_string(),
        std::collections::BTreeMap::from([("node".to_string(), "node-04".to_string())]),
    )]);
    let policy = PolicySettings::defaults()
        .with_ladders(std::slice::from_ref(&ladder))
        .unwrap()
        .with_canary_groups(&groups, [("pfc-storm", "canary")])
        .unwrap();
    let mut d = super::tests::enforcing(knobs.clone(), &ledger, policy, None);

    let in_group = dispatch_all(&mut d, storm(1)).await;
    assert!(executed(&in_group[0]), "the first rung acts in the group: {:?}", in_group[0]);

    let elsewhere: Vec<Proposal> = storm(2)
        .into_iter()
        .map(|mut p| {
            p.subject = Labels::from_pairs([("node", "node-05")]);
            p.action.target = Labels::from_pairs([("node", "node-05"), ("kind", &p.action.kind)]);
            p
        })
        .collect();
    let shadowed = dispatch_all(&mut d, elsewhere).await;
    let first = &shadowed[0];
    assert_eq!((first.mode, &first.verdict), (Mode::Shadow, &Verdict::Shadowed), "{first:?}");
    let why = "canary group canary {node=\"node-04\"}: pfc-storm is enforced there only; shadowed here";
    assert!(first.steps.iter().any(|s| s.what == why), "{:?}", first.steps);
    assert_eq!(knobs.value(&Labels::from_pairs([("node", "node-05"), ("kind", "pfcwd.escalate")])), None);
}
