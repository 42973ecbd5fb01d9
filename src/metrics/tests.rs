use super::*;
use engine::action::{Action, Proposal};
use engine::dispatch::{Decision, Mode, Phase};
use engine::{Labels, Severity, SECOND};

fn decision(id: &str, verdict: Verdict, sample_at: Nanos, dispatched_at: Nanos, finished_at: Nanos) -> Decision {
    Decision {
        id: id.into(),
        undo_of: None,
        undone_by: None,
        prior: None,
        drift: None,
        proposal: Proposal {
            id: format!("p-{id}"),
            rule: "pfc-storm".into(),
            rule_hash: "ab".repeat(32),
            rule_mode: Mode::Enforce,
            severity: Severity::Critical,
            subject: Labels::from_pairs([("node", "gpu-01")]),
            action: Action {
                kind: "pfcwd.escalate".into(),
                target: Labels::from_pairs([("node", "gpu-01")]),
                params: Default::default(),
            },
            values: vec![],
            active_at: sample_at,
            sample_at,
            decided_at: sample_at,
            restored: false,
        },
        mode: Mode::Enforce,
        actuator: Some("gnmi".into()),
        destructive: false,
        verdict,
        phase: Phase::Done,
        attempts: 1,
        steps: vec![],
        dispatched_at,
        finished_at,
    }
}

fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no line {prefix}:\n{text}"))
}

#[test]
fn decisions_outcomes_and_the_three_latencies_are_exported() {
    let m = Metrics::new();
    let executed = Verdict::Executed {
        outcome: engine::contracts::Outcome { summary: "ok".into(), requests: vec![], prior: None },
    };
    let d = decision("d1", executed, 10 * SECOND, 10 * SECOND + SECOND / 4, 11 * SECOND);
    m.observe(&DaemonEvent::Decision(Box::new(d.clone())));
    // The same decision again (an approval) does not count a second latency.
    m.observe(&DaemonEvent::Decision(Box::new(d)));
    m.observe(&DaemonEvent::Decision(Box::new(decision(
        "d2",
        Verdict::Failed { error: "switch busy".into() },
        SECOND,
        SECOND,
        SECOND,
    ))));
    m.observe(&DaemonEvent::Engine(EngineEvent::Transition {
        rule: "pfc-storm".into(),
        subject: Labels::from_pairs([("node", "gpu-01")]),
        from: State::Firing,
        to: State::Resolved,
        at: 41 * SECOND,
        values: vec![],
    }));
    let text = m.encode();
    assert_eq!(
        line(&text, "rocemend_decisions_total{verdict=\"executed\",mode=\"enforce\"}"),
        "rocemend_decisions_total{verdict=\"executed\",mode=\"enforce\"} 2"
    );
    assert!(text.contains("rocemend_actuator_outcomes_total{actuator=\"gnmi\",outcome=\"failure\"} 1"), "{text}");
    assert!(text.contains("rocemend_fault_to_decision_seconds_count 2"), "{text}");
    assert!(text.contains("rocemend_fault_to_decision_seconds_sum 0.25"), "{text}");
    assert!(text.contains("rocemend_decision_to_action_seconds_sum 0.75"), "{text}");
    assert!(text.contains("rocemend_action_to_recovery_seconds_sum 30.0"), "{text}");
    assert!(text.ends_with("# EOF\n"), "OpenMetrics text ends with # EOF");
}
