//! Outcome checks: every enforced change is judged effective, harmful
//! (undone, its rule held on the subject), ineffective or unread; a
//! restart finds the open checks in the ledger.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::contracts::{OutcomeResult, Proposal};
use crate::evaluator::Observation;
use crate::labels::Labels;
use crate::ledger::Ledger;
use crate::policy::{ExpectRule, OutcomesConfig, PolicySettings};
use crate::testing::Knobs;
use crate::time::SECOND;

fn dispatcher_with(knobs: Arc<Knobs>, ledger: &Ledger, outcomes: OutcomesConfig, mode: Mode) -> Dispatcher {
    let expect = ExpectRule {
        actions: vec!["ecn.*".into()],
        within: Duration::from_secs(60),
        worse: vec!["marked".into()],
        margin: 0.1,
        hold: Duration::from_secs(600),
        settle: None,
    };
    let policy = PolicySettings::defaults().with_outcomes(&outcomes, &[expect]).unwrap();
    Dispatcher::new(
        DispatchConfig {
            mode,
            rule_modes: Default::default(),
            routes: vec![ActuatorRoute { pattern: "*".into(), actuator: knobs, destructive: true }],
            timeout: Duration::from_secs(1),
            policy,
            topology: None,
        },
        Some(ledger.clone()),
    )
}

/// A dispatcher whose ECN changes must not slow the jobs they touch by more than 5 %.
fn dispatcher_watching_jobs(knobs: Arc<Knobs>, ledger: &Ledger) -> Dispatcher {
    let expect = ExpectRule {
        actions: vec!["ecn.*".into()],
        within: Duration::from_secs(60),
        worse: vec![crate::evaluator::STEP_TIME.into()],
        margin: 0.05,
        hold: Duration::from_secs(600),
        settle: None,
    };
    let policy = PolicySettings::defaults().with_outcomes(&OutcomesConfig::default(), &[expect]).unwrap();
    let routes = vec![ActuatorRoute { pattern: "*".into(), actuator: knobs, destructive: true }];
    let config = DispatchConfig {
        mode: Mode::Enforce,
        rule_modes: Default::default(),
        routes,
        timeout: Duration::from_secs(1),
        policy,
        topology: None,
    };
    Dispatcher::new(config, Some(ledger.clone()))
}

/// As [`lower`], the action touching job train-a, whose last step took `step` s.
fn lower_under_job(node: &str, step: f64, at: i64) -> Proposal {
    let mut p = lower(node, 100.0, at);
    p.jobs = vec!["train-a".into()];
    p.values.push((crate::evaluator::STEP_TIME.into(), step));
    p
}

fn dispatcher(knobs: Arc<Knobs>, ledger: &Ledger) -> Dispatcher {
    dispatcher_with(knobs, ledger, OutcomesConfig::default(), Mode::Enforce)
}

/// ecn-marks asking to lower ECN on `node` at `at` s, its marks `marked`.
fn lower(node: &str, marked: f64, at: i64) -> Proposal {
    let target = Labels::from_pairs([("node", node)]);
    let mut p = crate::testing::proposal("ecn-marks", "ecn.lower", node, target, at * SECOND);
    p.values = vec![("marked".into(), marked)];
    p
}

fn seen(cleared: bool, marked: f64) -> Option<Observation> {
    Some(Observation { cleared, values: vec![marked] })
}

fn result(d: &Decision) -> Option<OutcomeResult> {
    d.outcome.as_ref()?.judged.as_ref().map(|j| j.result)
}

#[tokio::test]
async fn a_change_whose_rule_clears_is_effective_with_its_time_to_effect() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    let acted = d.dispatch(lower("a", 100.0, 1)).await;
    let check = acted.outcome.clone().expect("an executed change carries its check");
    assert_eq!((check.since, check.due, check.worse[0].before), (SECOND, 61 * SECOND, 100.0));
    assert!(acted.steps.iter().any(|s| s.what.starts_with("outcome due by")), "{:?}", acted.steps);
    let board = d.outcome_board();
    let due = board.due(2 * SECOND);
    assert_eq!((due.len(), due[0].values.as_slice()), (1, &["marked".to_string()][..]));
    assert!(board.due(2 * SECOND + 1).is_empty(), "read at most once a second");

    assert!(d.judge_outcome(&acted.id, seen(false, 90.0), 3 * SECOND).await.is_empty(), "not yet");
    let judged = d.judge_outcome(&acted.id, seen(true, 10.0), 5 * SECOND).await;
    assert_eq!(judged.len(), 1);
    assert_eq!(result(&judged[0]), Some(OutcomeResult::Effective));
    assert_eq!(judged[0].outcome.as_ref().unwrap().judged.as_ref().unwrap().after_ns, 4 * SECOND);
    assert_eq!(result(&ledger.get(&acted.id).unwrap().unwrap()), Some(OutcomeResult::Effective), "on disk");
    assert!(board.due(10 * SECOND).is_empty(), "closed");
    assert_eq!(knobs.value(&Labels::from_pairs([("node", "a")])).as_deref(), Some("ours"), "left in effect");
}

#[tokio::test]
async fn a_change_that_made_it_worse_is_undone_and_its_rule_held_on_that_subject() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    let acted = d.dispatch(lower("a", 100.0, 1)).await;
    let out = d.judge_outcome(&acted.id, seen(false, 150.0), 3 * SECOND).await;
    assert_eq!(out.len(), 2, "{out:#?}");
    assert_eq!(result(&out[0]), Some(OutcomeResult::Harmful));
    let detail = &out[0].outcome.as_ref().unwrap().judged.as_ref().unwrap().detail;
    assert_eq!(detail, "marked 100.000 \u{2192} 150.000");
    assert_eq!(out[1].undo_of.as_deref(), Some(acted.id.as_str()));
    assert!(matches!(out[1].verdict, Verdict::Executed { .. }), "{:?}", out[1]);
    assert!(out[1].steps[0].what.contains("made it worse"), "{:?}", out[1].steps);
    assert_eq!(knobs.value(&Labels::from_pairs([("node", "a")])).as_deref(), Some("default"));

    let again = d.dispatch(lower("a", 150.0, 4)).await;
    assert!(
        matches!(&again.verdict, Verdict::Suppressed { reason }
            if reason.contains("rule ecn-marks on {node=\"a\"}, by rocemend") && reason.contains(&acted.id)),
        "{again:?}"
    );
    let silences = d.silences(5 * SECOND);
    assert_eq!((silences.len(), silences[0].until), (1, 603 * SECOND), "kept, listed, liftable: {silences:?}");
    let (kept, _) = ledger.silences().unwrap();
    assert_eq!(kept, silences, "in the ledger: a restart keeps the hold");
    let elsewhere = d.dispatch(lower("b", 100.0, 5)).await;
    assert!(matches!(elsewhere.verdict, Verdict::Executed { .. }), "another subject is not held: {elsewhere:?}");
    let after_hold = d.dispatch(lower("a", 150.0, 700)).await;
    assert!(matches!(after_hold.verdict, Verdict::Executed { .. }), "the hold ends: {after_hold:?}");
}

#[tokio::test]
async fn a_change_that_did_not_help_in_time_is_ineffective_and_an_unreadable_rule_judges_nothing() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut d = dispatcher(knobs.clone(), &ledger);
    let a = d.dispatch(lower("a", 100.0, 1)).await;
    let b = d.dispatch(lower("b", 100.0, 1)).await;
    assert!(d.judge_outcome(&a.id, seen(false, 105.0), 30 * SECOND).await.is_empty(), "within the margin");
    assert!(d.judge_outcome(&b.id, None, 30 * SECOND).await.is_empty(), "stale before the deadline: wait");
    let late = d.judge_outcome(&a.id, seen(false, 100.0), 61 * SECOND).await;
    assert_eq!(result(&late[0]), Some(OutcomeResult::Ineffective));
    assert_eq!(late[0].outcome.as_ref().unwrap().judged.as_ref().unwrap().detail, "ecn-marks still fires");
    let unread = d.judge_outcome(&b.id, None, 61 * SECOND).await;
    assert_eq!(result(&unread[0]), Some(OutcomeResult::Unread));
    assert_eq!(knobs.undos(), 0, "neither is undone");
}

#[tokio::test]
async fn a_restart_finds_the_open_checks_and_a_resolution_is_effective_before_its_undo() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let acted = dispatcher(knobs.clone(), &ledger).dispatch(lower("a", 100.0, 1)).await;
    let mut restarted = dispatcher(knobs.clone(), &ledger);
    let due = restarted.outcome_board().due(2 * SECOND);
    assert_eq!(due.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(), [acted.id.as_str()]);
    let resolved = restarted.instance_resolved("ecn-marks", &Labels::from_pairs([("node", "a")]), 9 * SECOND).await;
    assert_eq!(resolved.len(), 1, "ecn.lower is not undone on resolve here: {resolved:#?}");
    assert_eq!(result(&resolved[0]), Some(OutcomeResult::Effective));
    assert_eq!(resolved[0].outcome.as_ref().unwrap().judged.as_ref().unwrap().after_ns, 8 * SECOND);
}

#[tokio::test]
async fn dry_runs_undos_and_a_playbook_that_checks_nothing_carry_no_check() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut dry = dispatcher_with(knobs.clone(), &ledger, OutcomesConfig::default(), Mode::DryRun);
    assert!(dry.dispatch(lower("a", 100.0, 1)).await.outcome.is_none());
    let off = OutcomesConfig { check: false, ..OutcomesConfig::default() };
    let mut unchecked = dispatcher_with(knobs.clone(), &super::tests::ledger(), off, Mode::Enforce);
    let acted = unchecked.dispatch(lower("a", 100.0, 1)).await;
    assert!(matches!(acted.verdict, Verdict::Executed { .. }) && acted.outcome.is_none(), "{acted:?}");
    let undo = unchecked.undo_by_hand(&acted.id, "alice", 2 * SECOND).await.unwrap();
    assert!(undo.outcome.is_none());
}

fn stepped(cleared: bool, step: f64) -> Option<Observation> {
    Some(Observation { cleared, values: vec![step] })
}

#[tokio::test]
async fn a_change_that_slowed_the_job_is_harmful_once_a_step_run_after_it_is_read() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut d = dispatcher_watching_jobs(knobs.clone(), &ledger);
    let acted = d.dispatch(lower_under_job("a", 0.5, 1)).await;
    let check = acted.outcome.clone().unwrap();
    assert_eq!(check.jobs_read_after, Some(SECOND + 1_500_000_000), "three steps of 0.5 s after the action");
    let due = d.outcome_board().due(2 * SECOND);
    let request = due[0].request();
    assert_eq!((request.jobs, request.jobs_read_after), (&["train-a".to_string()][..], SECOND + 1_500_000_000));

    // The rule clears at once; nothing is judged before the job is read, nor on its resolution.
    assert!(d.judge_outcome(&acted.id, stepped(true, f64::NAN), 2 * SECOND).await.is_empty());
    let subject = Labels::from_pairs([("node", "a")]);
    let resolved = d.instance_resolved("ecn-marks", &subject, 2 * SECOND).await;
    assert!(resolved.iter().all(|r| result(r).is_none()), "{resolved:#?}");
    assert_eq!(d.outcome_board().due(3 * SECOND).len(), 1, "still watched");

    let out = d.judge_outcome(&acted.id, stepped(true, 0.56), 4 * SECOND).await;
    assert_eq!(result(&out[0]), Some(OutcomeResult::Harmful), "{out:#?}");
    assert_eq!(out[0].outcome.as_ref().unwrap().judged.as_ref().unwrap().detail, "job.step_time 0.500 \u{2192} 0.560");
    assert_eq!(out[1].undo_of.as_deref(), Some(acted.id.as_str()), "undone");
    assert_eq!(knobs.value(&subject).as_deref(), Some("default"));
    assert_eq!(d.silences(5 * SECOND).len(), 1, "the rule held on that subject");
}

#[tokio::test]
async fn a_change_the_job_did_not_feel_is_effective_once_read_or_at_its_deadline_unread() {
    let (knobs, ledger) = (Arc::new(Knobs::default()), super::tests::ledger());
    let mut d = dispatcher_watching_jobs(knobs.clone(), &ledger);
    let felt_not = d.dispatch(lower_under_job("a", 0.5, 1)).await;
    let judged = d.judge_outcome(&felt_not.id, stepped(true, 0.51), 4 * SECOND).await;
    assert_eq!(result(&judged[0]), Some(OutcomeResult::Effective));
    assert_eq!(judged[0].outcome.as_ref().unwrap().judged.as_ref().unwrap().detail, "ecn-marks clears");

    let never_read = d.dispatch(lower_under_job("b", 0.5, 1)).await;
    assert!(d.judge_outcome(&never_read.id, stepped(true, f64::NAN), 60 * SECOND).await.is_empty());
    let late = d.judge_outcome(&never_read.id, stepped(true, f64::NAN), 61 * SECOND).await;
    assert_eq!(result(&late[0]), Some(OutcomeResult::Effective));
    assert_eq!(
        late[0].outcome.as_ref().unwrap().judged.as_ref().unwrap().detail,
        "ecn-marks clears, the jobs not read"
    );

    // An action that touches no job has no step time to wait for.
    let no_job = d.dispatch(lower("c", 100.0, 1)).await;
    assert_eq!(no_job.outcome.as_ref().unwrap().jobs_read_after, None);
    let at_once = d.judge_outcome(&no_job.id, stepped(true, f64::NAN), 2 * SECOND).await;
    assert_eq!(result(&at_once[0]), Some(OutcomeResult::Effective));
}
