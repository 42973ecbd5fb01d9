use super::*;
use engine::contracts::{Action, Proposal};
use engine::dispatch::{Decision, Mode, Phase};
use engine::{Labels, Severity, SECOND};

fn decision(id: &str, verdict: Verdict, sample_at: Nanos, dispatched_at: Nanos, finished_at: Nanos) -> Decision {
    Decision {
        id: id.into(),
        undo_of: None,
        undone_by: None,
        prior: None,
        drift: None,
        canary: None,
        outcome: None,
        waits_for: None,
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
            jobs: Vec::new(),
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
    // The same decision again (an approval) counts neither a second decision nor a second latency.
    m.observe(&DaemonEvent::Decision(Box::new(d.clone())));
    // Said again once its outcome check is judged: counted as an outcome, with its time to effect.
    let mut judged = d;
    judged.outcome = Some(engine::contracts::OutcomeCheck {
        since: 11 * SECOND,
        due: 311 * SECOND,
        worse: vec![],
        jobs_read_after: None,
        margin: 0.1,
        hold: 0,
        judged: Some(engine::contracts::OutcomeJudgement {
            at: 15 * SECOND,
            result: engine::contracts::OutcomeResult::Effective,
            after_ns: 4 * SECOND,
            detail: "pfc-storm resolved".into(),
        }),
    });
    m.observe(&DaemonEvent::Decision(Box::new(judged.clone())));
    m.observe(&DaemonEvent::Decision(Box::new(judged)));
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
        severity: engine::Severity::Critical,
    }));
    let text = m.encode_as(Format::OpenMetrics);
    assert_eq!(
        line(&text, "rocemend_decisions_total{verdict=\"executed\",mode=\"enforce\"}"),
        "rocemend_decisions_total{verdict=\"executed\",mode=\"enforce\"} 1"
    );
    assert!(text.contains("rocemend_action_outcomes_total{rule=\"pfc-storm\",outcome=\"effective\"} 1"), "{text}");
    assert!(text.contains("rocemend_time_to_effect_seconds_sum 4.0"), "{text}");
    assert!(text.contains("rocemend_actuator_outcomes_total{actuator=\"gnmi\",outcome=\"failure\"} 1"), "{text}");
    assert!(text.contains("rocemend_fault_to_decision_seconds_count 2"), "{text}");
    assert!(text.contains("rocemend_fault_to_decision_seconds_sum 0.25"), "{text}");
    assert!(text.contains("rocemend_decision_to_action_seconds_sum 0.75"), "{text}");
    assert!(text.contains("rocemend_action_to_recovery_seconds_sum 30.0"), "{text}");
    assert!(text.contains("rocemend_rule_transitions_total{rule=\"pfc-storm\",to=\"resolved\"} 1"), "{text}");
    assert!(text.ends_with("# EOF\n"), "OpenMetrics text ends with # EOF");
}

fn accept(value: &str) -> Format {
    Format::negotiate(Some(&hyper::header::HeaderValue::from_str(value).unwrap()))
}

#[test]
fn openmetrics_only_for_a_scraper_that_prefers_it() {
    // Prometheus 2.x's scrape Accept header.
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
                      text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(accept(prometheus), Format::OpenMetrics);
    assert_eq!(Format::negotiate(None), Format::Prometheus, "curl without -H Accept");
    assert_eq!(accept("*/*"), Format::Prometheus);
    assert_eq!(accept("text/plain;version=0.0.4"), Format::Prometheus);
    assert_eq!(accept("application/openmetrics-text;q=0"), Format::Prometheus);
    assert_eq!(accept("text/plain;q=1,application/openmetrics-text;q=0.5"), Format::Prometheus);
}

/// Every family of the Prometheus text format: (name, has help, type), in
/// the order the `# HELP` / `# TYPE` lines come.
fn families(text: &str) -> Vec<(String, bool, String)> {
    let mut out: Vec<(String, bool, String)> = Vec::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push((name.into(), !help.trim().is_empty(), String::new()));
        } else if let Some(rest) = l.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            let last = out.last_mut().unwrap_or_else(|| panic!("# TYPE {name} without # HELP:\n{text}"));
            assert_eq!(last.0, name, "# TYPE names another family than # HELP:\n{text}");
            last.2 = kind.into();
        }
    }
    out
}

#[test]
fn the_prometheus_text_names_each_counter_family_as_its_samples() {
    let m = Metrics::new();
    m.observe(&DaemonEvent::Decision(Box::new(decision("d1", Verdict::Failed { error: "x".into() }, 0, 0, 0))));
    let text = m.encode_as(Format::Prometheus);
    assert!(!text.contains("# EOF"), "no OpenMetrics terminator:\n{text}");
    let families = families(&text);
    // Every family the OpenMetrics text has (those with a sample so far).
    let openmetrics = m.encode_as(Format::OpenMetrics);
    assert_eq!(families.len(), openmetrics.matches("# TYPE ").count(), "{families:?}\n{openmetrics}");
    assert!(families.len() >= 15, "{families:?}");
    for (name, help, kind) in &families {
        assert!(help, "{name} has no help text");
        // What promtool's lint asks of a counter.
        assert_eq!(kind == "counter", name.ends_with("_total"), "{name} is a {kind}");
        let samples = text.lines().filter(|l| !l.starts_with('#')).filter(|l| l.starts_with(name.as_str()));
        assert!(samples.count() > 0, "{name} has no sample");
    }
    assert!(text.contains("# HELP rocemend_decisions_total Decisions by verdict and mode."), "{text}");
    assert!(text.contains("rocemend_decisions_total{verdict=\"failed\",mode=\"enforce\"} 1"), "{text}");
}
