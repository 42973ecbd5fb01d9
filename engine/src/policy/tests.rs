use super::*;
use crate::catalog::ActuatorRoute;
use crate::contracts::{ActionKindDecl, Severity};
use crate::mode::Mode;
use crate::testing::Knobs;
use crate::time::{MS, SECOND};
use std::collections::BTreeMap;

/// The kinds these tests propose, declared as the workspace's actuators
/// declare them: the policy names none of them itself.
fn catalog() -> Arc<Catalog> {
    let kinds = vec![
        ActionKindDecl::new("node.cordon", &["node"]).fleet().limited_by(LimitClass::NodeCordon),
        ActionKindDecl::new("rail.drain", &["node", "rail"]).fleet().limited_by(LimitClass::RailDrain),
        ActionKindDecl::new("link.isolate", &["node", "netdev"]).limited_by(LimitClass::SwitchPortIsolation),
        ActionKindDecl::new("ecn.lower", &["switch", "port", "queue"]).fleet().limited_by(LimitClass::SwitchEcnQueue),
        ActionKindDecl::new("ecmp.widen_hash", &["switch"]).fleet().limited_by(LimitClass::SwitchHash),
        ActionKindDecl::new("*", &[]),
    ];
    let route = ActuatorRoute { pattern: "*".into(), actuator: Arc::new(Knobs::declaring(kinds)), destructive: true };
    Arc::new(Catalog::new(vec![route]))
}

fn topology() -> Arc<Topology> {
    Arc::new(Topology::parse(crate::topology::EXAMPLE_INVENTORY, "inventory").unwrap())
}

fn proposal(kind: &str, target: &[(&str, &str)]) -> Proposal {
    Proposal {
        id: format!("{kind}{target:?}"),
        rule: "r".into(),
        rule_hash: String::new(),
        rule_mode: Mode::Enforce,
        severity: Severity::Critical,
        subject: Labels::from_pairs(target.iter().copied()),
        action: Action {
            kind: kind.into(),
            target: Labels::from_pairs(target.iter().copied()),
            params: BTreeMap::new(),
        },
        jobs: Vec::new(),
        values: vec![],
        active_at: 0,
        sample_at: 0,
        decided_at: 0,
        restored: false,
    }
}

fn settings(edit: impl FnOnce(&mut Limits, &mut BreakerConfig, &mut Vec<ApprovalRule>)) -> PolicySettings {
    let (mut l, mut b, mut a) = (Limits::default(), BreakerConfig::default(), Vec::new());
    edit(&mut l, &mut b, &mut a);
    PolicySettings::new(&l, &b, &TargetLimits::default(), &a, &UndoConfig::default(), &RetryConfig::default()).unwrap()
}

#[test]
fn fifty_node_faults_with_a_limit_of_three_cordons_hold_forty_seven() {
    let s = settings(|l, b, _| {
        l.max_cordons = Some(3);
        b.trip_after = 10;
    });
    let mut policy = Policy::new(s, None, catalog());
    let mut allowed = 0;
    let mut held = Vec::new();
    for i in 0..50 {
        let node = format!("node-{i:03}");
        let p = proposal("node.cordon", &[("node", &node)]);
        match policy.check(&p, true, SECOND + i * MS) {
            Check::Allow => {
                allowed += 1;
                policy.commit(&p.id, &p, SECOND + i * MS);
            }
            Check::Hold(reason) => held.push(reason),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(allowed, 3);
    assert_eq!(held.len(), 47);
    // The first ten holds are the limit; they trip the breaker, which holds the rest.
    assert!(held[0].contains("at most 3 nodes cordoned per 600s; 3 already"), "{}", held[0]);
    assert!(held[9].starts_with("limit:"), "{}", held[9]);
    assert!(held[10].starts_with("circuit breaker tripped"), "{}", held[10]);
    assert!(held[46].starts_with("circuit breaker tripped"));
    assert!(policy.breaker().tripped_at.is_some());
}

#[test]
fn a_tripped_breaker_stays_tripped_until_reset_and_spares_non_destructive_actions() {
    let s = settings(|l, b, _| {
        l.max_cordons = Some(0);
        b.trip_after = 1;
    });
    let mut policy = Policy::new(s, None, catalog());
    assert!(matches!(policy.check(&proposal("node.cordon", &[("node", "a")]), true, 0), Check::Hold(_)));
    assert!(policy.breaker().tripped_at.is_some());
    // An hour later it is still tripped.
    let later = 3600 * SECOND;
    let ecn = proposal("ecn.lower", &[("switch", "leaf-rail0"), ("port", "Ethernet0")]);
    assert!(matches!(policy.check(&ecn, true, later), Check::Hold(r) if r.contains("breaker")));
    let notify = proposal("notify.page", &[("team", "fabric")]);
    assert_eq!(policy.check(&notify, false, later), Check::Allow);
    policy.reset_breaker();
    assert_eq!(policy.check(&ecn, true, later), Check::Allow);
}

#[test]
fn two_rails_of_one_plane_are_never_drained_together() {
    let mut policy = Policy::new(settings(|_, _, _| {}), Some(topology()), catalog());
    // Rails 1 and 2 are both in plane 0 in the example inventory; rail 5 is in plane 1.
    let rail1 = proposal("rail.drain", &[("node", "node-01"), ("netdev", "eth1"), ("rail", "1")]);
    let rail2 = proposal("rail.drain", &[("node", "node-03"), ("netdev", "eth2"), ("rail", "2")]);
    let rail5 = proposal("rail.drain", &[("rail", "5")]);
    assert_eq!(policy.check(&rail1, true, 0), Check::Allow);
    policy.commit("a", &rail1, 0);
    match policy.check(&rail2, true, SECOND) {
        Check::Hold(r) => assert!(r.contains("plane 0") && r.contains("rail 1 already drained"), "{r}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(policy.check(&rail5, true, SECOND), Check::Allow, "the other plane is free");
    // The same rail on another node is the same rail: allowed.
    let rail1_again = proposal("rail.drain", &[("node", "node-02"), ("netdev", "eth1"), ("rail", "1")]);
    assert_eq!(policy.check(&rail1_again, true, SECOND), Check::Allow);
}

#[test]
fn ports_of_one_switch_are_limited() {
    let mut policy =
        Policy::new(settings(|l, _, _| l.max_isolated_ports_per_switch = Some(1)), Some(topology()), catalog());
    let a = proposal("link.isolate", &[("node", "node-01"), ("netdev", "eth4")]);
    let b = proposal("link.isolate", &[("node", "node-02"), ("netdev", "eth4")]);
    let c = proposal("link.isolate", &[("node", "node-02"), ("netdev", "eth5")]);
    assert_eq!(policy.check(&a, true, 0), Check::Allow);
    policy.commit("a", &a, 0);
    assert!(matches!(policy.check(&b, true, 0), Check::Hold(r) if r.contains("switch leaf-rail4")));
    assert_eq!(policy.check(&c, true, 0), Check::Allow, "another switch");
}

#[test]
fn ecn_lowerings_count_the_queues_they_reach() {
    let mut policy =
        Policy::new(settings(|l, _, _| l.max_ecn_queues_per_switch = Some(2)), Some(topology()), catalog());
    let queue = |port: &str| proposal("ecn.lower", &[("switch", "leaf-rail5"), ("port", port), ("queue", "3")]);
    let switch_wide = proposal("ecn.lower", &[("switch", "leaf-rail5"), ("port", "*")]);
    assert_eq!(policy.check(&switch_wide, true, 0), Check::Allow, "nothing lowered yet");
    let (a, b, c) = (queue("Ethernet0"), queue("Ethernet4"), queue("Ethernet8"));
    assert_eq!(policy.check(&a, true, 0), Check::Allow);
    policy.commit("a", &a, 0);
    // One queue lowered: a switch-wide lowering would reach both allowed and more.
    assert!(matches!(policy.check(&switch_wide, true, 0), Check::Hold(r) if r.contains("switch-wide")));
    assert_eq!(policy.check(&b, true, 0), Check::Allow);
    policy.commit("b", &b, 0);
    assert!(matches!(policy.check(&c, true, 0), Check::Hold(r) if r.contains("at most 2 queues of switch leaf-rail5")));
    let other = proposal("ecn.lower", &[("switch", "leaf-rail6"), ("port", "Ethernet0"), ("queue", "3")]);
    assert_eq!(policy.check(&other, true, 0), Check::Allow, "another switch");
}

#[test]
fn one_leaf_of_a_plane_changes_its_hash_at_a_time_by_default() {
    let mut policy = Policy::new(settings(|_, _, _| {}), Some(topology()), catalog());
    let widen = |leaf: &str| proposal("ecmp.widen_hash", &[("switch", leaf)]);
    // leaf-rail0..3 are plane 0, leaf-rail4..7 plane 1.
    let (canary, next, other_plane) = (widen("leaf-rail1"), widen("leaf-rail2"), widen("leaf-rail5"));
    assert_eq!(policy.check(&canary, true, 0), Check::Allow);
    policy.commit("canary", &canary, 0);
    let held = policy.check(&next, true, 0);
    assert!(matches!(&held, Check::Hold(r) if r.contains("plane 0") && r.contains("leaf-rail1 changed")), "{held:?}");
    assert_eq!(policy.check(&other_plane, true, 0), Check::Allow, "another plane has its own canary");
}

#[test]
fn the_share_of_the_fleet_cordoned_is_limited() {
    // 4 nodes: 25% allows one node, not two.
    let mut policy = Policy::new(settings(|l, _, _| l.max_cordon_percent = Some(25.0)), Some(topology()), catalog());
    let a = proposal("node.cordon", &[("node", "node-01")]);
    assert_eq!(policy.check(&a, true, 0), Check::Allow);
    policy.commit("a", &a, 0);
    let b = proposal("node.cordon", &[("node", "node-02")]);
    assert!(matches!(policy.check(&b, true, 0), Check::Hold(r) if r.contains("1 of 4 nodes already")));
}

#[test]
fn an_action_in_effect_is_not_sent_again_and_a_target_cools_down() {
    let mut policy = Policy::new(settings(|_, _, _| {}), None, catalog());
    let p = proposal("ecn.lower", &[("switch", "s"), ("port", "Ethernet0")]);
    policy.commit("first", &p, 0);
    assert_eq!(policy.check(&p, true, SECOND), Check::Duplicate { of: "first".into(), resolved: false });
    policy.remove_effect(&p.action);
    assert!(matches!(policy.check(&p, true, SECOND), Check::Suppress(r) if r.contains("target cooldown")));
    assert_eq!(policy.check(&p, true, 301 * SECOND), Check::Allow, "after the 5 min cooldown");
}

#[test]
fn after_the_clock_steps_back_a_day_a_cooldown_runs_its_length_not_the_days() {
    let mut policy = Policy::new(settings(|_, _, _| {}), None, catalog());
    let p = proposal("ecn.lower", &[("switch", "s"), ("port", "Ethernet0")]);
    let day = 86_400 * SECOND;
    policy.commit("first", &p, day);
    policy.remove_effect(&p.action);
    // The clock steps back a day: the action counts as done at the step.
    assert!(matches!(policy.check(&p, true, SECOND), Check::Suppress(r) if r.contains("target cooldown")));
    assert!(matches!(policy.check(&p, true, 300 * SECOND), Check::Suppress(_)), "the 5 min still run");
    assert_eq!(policy.check(&p, true, 302 * SECOND), Check::Allow, "5 min after the step, not a day");
}

#[test]
fn approval_is_asked_for_with_an_expiry() {
    let s = settings(|_, _, a| {
        a.push(ApprovalRule { actions: vec!["node.*".into()], timeout: std::time::Duration::from_secs(900) })
    });
    let mut policy = Policy::new(s, None, catalog());
    let p = proposal("node.cordon", &[("node", "n")]);
    assert_eq!(policy.check(&p, true, 0), Check::NeedsApproval { expires_at: 900 * SECOND, reason: None });
    assert_eq!(policy.check_approved(&p, true, 10 * SECOND), Check::Allow);
}

/// A cordon of `node` that touches `jobs`, as the evaluator proposes it.
fn cordon_touching(node: &str, jobs: &[&str]) -> Proposal {
    Proposal { jobs: jobs.iter().map(|j| j.to_string()).collect(), ..proposal("node.cordon", &[("node", node)]) }
}

fn jobs_limit(max: Option<u32>) -> PolicySettings {
    settings(|l, _, _| l.max_jobs_touched = max)
}

#[test]
fn an_action_over_max_jobs_touched_waits_for_approval_naming_the_jobs() {
    let mut policy = Policy::new(jobs_limit(Some(2)), None, catalog());
    let p = cordon_touching("n1", &["eval-c", "train-a", "train-b"]);
    assert_eq!(
        policy.check(&p, true, SECOND),
        Check::NeedsApproval {
            expires_at: SECOND + JOBS_APPROVAL_TIMEOUT,
            reason: Some("touches 3 running jobs (eval-c, train-a, train-b), over limits.max_jobs_touched = 2".into()),
        }
    );
    assert_eq!(policy.check_approved(&p, true, 2 * SECOND), Check::Allow, "a human said yes");
}

#[test]
fn an_action_over_max_jobs_touched_waits_as_long_as_its_kinds_approval_says() {
    let s = settings(|l, _, a| {
        l.max_jobs_touched = Some(0);
        a.push(ApprovalRule { actions: vec!["node.*".into()], timeout: std::time::Duration::from_secs(60) });
    });
    let mut policy = Policy::new(s, None, catalog());
    match policy.check(&cordon_touching("n1", &["train-a"]), true, 0) {
        Check::NeedsApproval { expires_at, reason: Some(reason) } => {
            assert_eq!(expires_at, 60 * SECOND, "the [[approval]]'s timeout, not the default");
            assert!(reason.contains("touches 1 running jobs (train-a)"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Touching no job, it waits for the [[approval]] alone, with no reason of its own.
    let none = cordon_touching("n2", &[]);
    assert_eq!(policy.check(&none, true, 0), Check::NeedsApproval { expires_at: 60 * SECOND, reason: None });
}

#[test]
fn an_action_at_max_jobs_touched_or_with_no_limit_goes_ahead() {
    let two = cordon_touching("n1", &["train-a", "train-b"]);
    let mut at_the_limit = Policy::new(jobs_limit(Some(2)), None, catalog());
    assert_eq!(at_the_limit.check(&two, true, 0), Check::Allow);
    let many: Vec<String> = (0..100).map(|i| format!("job-{i:03}")).collect();
    let hundred = Proposal { jobs: many, ..two };
    let mut unlimited = Policy::new(jobs_limit(None), None, catalog());
    assert_eq!(unlimited.check(&hundred, true, 0), Check::Allow);
}

#[test]
fn max_jobs_touched_spares_dry_runs_shadow_and_notifications() {
    let mut policy = Policy::new(jobs_limit(Some(1)), None, catalog());
    let p = cordon_touching("n1", &["train-a", "train-b"]);
    for mode in [Mode::DryRun, Mode::Shadow] {
        assert_eq!(policy.check_for(CheckFor::Proposal, &p, mode, true, 0), Check::Allow, "{mode:?}");
    }
    assert_eq!(policy.check(&p, false, 0), Check::Allow, "not destructive");
    assert!(matches!(
        policy.check_for(CheckFor::Proposal, &p, Mode::Enforce, true, 0),
        Check::NeedsApproval { reason: Some(_), .. }
    ));
}

#[test]
fn a_reason_names_sixteen_jobs_and_counts_the_rest() {
    let mut policy = Policy::new(jobs_limit(Some(2)), None, catalog());
    let jobs: Vec<String> = (0..40).map(|i| format!("job-{i:02}")).collect();
    let p = Proposal { jobs, ..cordon_touching("n1", &[]) };
    let Check::NeedsApproval { reason: Some(reason), .. } = policy.check(&p, true, 0) else { panic!("not held") };
    assert!(reason.starts_with("touches 40 running jobs (job-00, job-01,"), "{reason}");
    assert!(reason.contains("job-15, and 24 more), over limits.max_jobs_touched = 2"), "{reason}");
    assert!(!reason.contains("job-16"), "{reason}");
}
