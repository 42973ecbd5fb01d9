//! Tests of the runner: passing and failing cases, test-file errors, and
//! the shadow windows behind failure reports.

use super::*;
use crate::evaluator::{EngineEvent, Evaluator};
use crate::labels::Labels;
use crate::series::{Sample, SampleKind, SeriesSpec, SeriesTable, Value};
use crate::CounterSpec;

/// Fires when `m` grows by more than 10/s over 4 s, for 2 s; clears below 1/s.
const RULE: &str = r#"
fn fire(w) { w.rate > 10.0 }
fn clear(w) { w.rate < 1.0 }
#{
    name: "hot",
    select: ["m"],
    group_by: ["node"],
    windows: #{ rate: rate("m", "4s"), moved: changes("m", "4s") },
    "for": "2s",
    actions: [ #{ action: "node.cordon", target: #{ node: "{node}" }, params: #{ reason: "hot" } } ],
}
"#;

/// With 1 s steps a 4 s window holds the newest four samples, so `rate` is
/// the sum of the last four increases over 4: 25 at 3 s, 50 at 4 s, 100 at
/// 6 s, back to 0 at 10 s. Pending at 3 s, firing at 5 s, resolved at 10 s.
const SERIES: &str = r#"
[[case.series]]
series = 'm{node="n1"}'
values = "0x2 100+100x3 400x4"
[[case.series]]
series = 'm{node="n2"}'
values = "0+1x11"
"#;

fn case(body: &str) -> String {
    format!("[[case]]\nname = \"hot node\"\ninterval = \"1s\"\n{SERIES}{body}")
}

fn run(tests: &str) -> Result<FileReport, TestFileError> {
    run_sources("hot.rhai", RULE, "hot.test.toml", tests)
}

fn expect(at: &str, state: &str) -> String {
    format!("[[case.expect]]\nat = \"{at}\"\nstate = \"{state}\"\nsubject = {{ node = \"n1\" }}\n")
}

const ACTION_AT_5S: &str = r#"
[[case.action]]
at = "5s"
kind = "node.cordon"
target = { node = "n1" }
params = { reason = "hot" }
"#;

#[test]
fn a_case_that_matches_the_engine_passes() {
    let mut body = String::new();
    for (at, state) in [
        ("0s", "inactive"),
        ("2s", "inactive"),
        ("3s", "pending"),
        ("4s", "pending"),
        ("5s", "firing"),
        ("9s", "firing"),
        ("10s", "resolved"),
        ("11s", "inactive"),
    ] {
        body.push_str(&expect(at, state));
    }
    body.push_str("[[case.expect]]\nat = \"11s\"\nstate = \"inactive\"\nsubject = { node = \"n2\" }\nstale = false\n");
    body.push_str(ACTION_AT_5S);
    let report = run(&case(&body)).unwrap();
    assert!(report.passed(), "{report}");
    assert_eq!(report.rule, "hot");
    assert_eq!(report.cases[0].steps, 12);
    assert!(report.to_string().starts_with("PASS  hot.rhai (hot): 1 cases"), "{report}");
}

#[test]
fn a_wrong_state_fails_with_the_windows_and_the_history() {
    let report = run(&case(&format!("{}{ACTION_AT_5S}", expect("4s", "firing")))).unwrap();
    assert!(!report.passed());
    let failures = &report.cases[0].failures;
    assert_eq!(failures.len(), 1, "{report}");
    assert_eq!(
        failures[0].to_string(),
        r#"at 4s: hot{node="n1"} expected firing, got pending (windows: moved=2, rate=50; transitions: 3s inactive→pending)"#
    );
    let text = report.to_string();
    assert!(text.contains("FAIL  hot.rhai (hot): 1 of 1 cases failed (hot.test.toml)"), "{text}");
    assert!(text.contains("FAIL  hot node"), "{text}");
}

#[test]
fn an_expected_staleness_is_checked() {
    // n1's series stops after step 11; with the default stale_after of 5 s
    // the firing-free subject is stale from the first scan after 16 s.
    let tests = r#"
[[case]]
name = "silent sensor"
interval = "1s"
steps = 20
[[case.series]]
series = 'm{node="n1"}'
values = "0+1x11"
[[case.expect]]
at = "19s"
state = "inactive"
stale = false
"#;
    let report = run(tests).unwrap();
    let text = report.to_string();
    assert!(text.contains("expected inactive (fresh), got inactive (stale)"), "{text}");
}

#[test]
fn missing_and_unexpected_actions_are_both_reported() {
    let early = ACTION_AT_5S.replace("\"5s\"", "\"4s\"");
    let report = run(&case(&early)).unwrap();
    let failures: Vec<String> = report.cases[0].failures.iter().map(ToString::to_string).collect();
    assert_eq!(
        failures,
        [
            r#"missing action at 4s: node.cordon {node="n1"} (reason=hot)"#,
            r#"unexpected action at 5s: node.cordon {node="n1"} (reason=hot) from {node="n1"}"#,
        ]
    );
    // The parameters are part of the match when the row gives them.
    let wrong_params = ACTION_AT_5S.replace("reason = \"hot\"", "reason = \"cold\"");
    let report = run(&case(&wrong_params)).unwrap();
    assert_eq!(report.cases[0].failures.len(), 2, "{report}");
    // A case that lists no action asserts that none is proposed.
    let report = run(&case("")).unwrap();
    assert!(matches!(report.cases[0].failures[..], [Failure::UnexpectedAction { at: 5_000_000_000, .. }]));
}

fn error(tests: &str) -> String {
    run(tests).unwrap_err().to_string()
}

#[test]
fn times_off_the_step_grid_or_past_the_end_are_file_errors() {
    let text = error(&case(&expect("2500ms", "firing")));
    assert!(text.starts_with("hot.test.toml:12:6: "), "{text}");
    assert!(text.contains("not a multiple of the interval 1s"), "{text}");
    let text = error(&case(&expect("12s", "firing")));
    assert!(text.contains("after the last step (11s, step 11)"), "{text}");
}

#[test]
fn schema_errors_name_the_line_and_column() {
    let text = error(&case("[[case.expect]]\nat = \"1s\"\nstate = \"firing\"\nsubjekt = {}\n"));
    assert!(text.starts_with("hot.test.toml:14:1: "), "{text}");
    assert!(text.contains("unknown field `subjekt`"), "{text}");
    let text = error(&case("[[case.expect]]\nat = \"1s\"\nstate = \"fired\"\n"));
    assert!(text.contains("hot.test.toml:13:9"), "{text}");
    let text = error(
        "[[case]]\nname = \"x\"\ninterval = \"1s\"\n[[case.series]]\nseries = 'm{node=\"n1\"}'\nvalues = \"0 1 2+x\"\n",
    );
    assert!(text.starts_with("hot.test.toml:6:15: "), "{text}");
    let text = error("[[case]]\nname = \"x\"\ninterval = \"1s\"\n[[case.series]]\nseries = 'm{node=\"n1\"}'\nbits = 8\nvalues = \"0 256\"\n");
    assert!(text.contains("256 does not fit a counter of 8 bits (0 to 255)"), "{text}");
    assert!(error("").contains("no [[case]]"));
}

#[test]
fn subjects_must_be_named_when_ambiguous_and_must_exist() {
    let text = error(&case("[[case.expect]]\nat = \"1s\"\nstate = \"inactive\"\n"));
    assert!(
        text.contains(r#"`subject` is needed: this case has 2 subjects of hot: {node="n1"}, {node="n2"}"#),
        "{text}"
    );
    let text = error(&case("[[case.expect]]\nat = \"1s\"\nstate = \"inactive\"\nsubject = { node = \"n3\" }\n"));
    assert!(text.contains(r#"subject {node="n3"} matches none of the subjects of hot"#), "{text}");
}

#[test]
fn the_inventory_adds_topology_labels_to_subjects() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("inventory.toml"), crate::topology::EXAMPLE_INVENTORY).unwrap();
    let rule = RULE
        .replace("#{ node: \"{node}\" }", "#{ node: \"{node}\", \"switch\": \"{switch}\" }")
        .replace("select: [\"m\"]", "select: [\"m{rail=\\\"3\\\"}\"]")
        // A subject grouped by node alone carries no switch: by its NIC, the inventory gives it one.
        .replace("group_by: [\"node\"]", "group_by: [\"node\", \"netdev\"]");
    let tests = r#"
inventory = "inventory.toml"
[[case]]
name = "rail 3 only"
interval = "1s"
[[case.series]]
series = 'm{node="node-02",netdev="eth3"}'
values = "0x2 100+100x3 400x4"
[[case.series]]
series = 'm{node="node-03",netdev="eth4"}'
values = "0x2 100+100x3 400x4"
[[case.expect]]
at = "5s"
state = "firing"
subject = { switch_port = "Ethernet4" }
[[case.action]]
at = "5s"
kind = "node.cordon"
target = { node = "node-02", switch = "leaf-rail3" }
"#;
    let rule_path = dir.path().join("hot.rhai");
    let test_path = dir.path().join("hot.test.toml");
    std::fs::write(&rule_path, rule).unwrap();
    std::fs::write(&test_path, tests).unwrap();
    let report = run_file(&rule_path, &test_path).unwrap();
    assert!(report.passed(), "{report}");

    std::fs::write(&test_path, tests.replace("inventory.toml", "missing.toml")).unwrap();
    let text = run_file(&rule_path, &test_path).unwrap_err().to_string();
    assert!(text.contains("hot.test.toml:2:13: inventory: "), "{text}");
}

#[test]
fn a_directory_reports_untested_rules_and_orphan_tests() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hot.rhai"), RULE).unwrap();
    std::fs::write(dir.path().join("hot.test.toml"), case(ACTION_AT_5S)).unwrap();
    std::fs::write(dir.path().join("cold.rhai"), RULE.replace("\"hot\"", "\"cold\"")).unwrap();
    std::fs::write(dir.path().join("gone.test.toml"), case("")).unwrap();
    let report = run_dir(dir.path()).unwrap();
    let kinds: Vec<&str> = report
        .files
        .iter()
        .map(|f| match &f.result {
            FileResult::Ran(r) if r.passed() => "pass",
            FileResult::Ran(_) => "fail",
            FileResult::NoTests => "untested",
            FileResult::NoRule => "orphan",
            FileResult::Error(_) => "error",
        })
        .collect();
    assert_eq!(kinds, ["untested", "pass", "orphan"]);
    assert!(!report.passed());
    let text = report.to_string();
    assert!(
        text.ends_with("3 files, 1 cases: 1 passed, 0 failed, 1 untested, 1 orphan test files, 0 errors"),
        "{text}"
    );
}

/// A rule reading every window function, over counters that wrap and
/// saturate, a gauge and events.
const EVERY_WINDOW: &str = r#"
fn fire(w) { w.inc > 5.0 || w.hi > 3.0 || w.ev >= 2.0 }
fn clear(w) { w.inc < 1.0 && w.hi < 1.0 && w.ev < 1.0 }
#{
    name: "all",
    select: ["c", "s", "g", "e"],
    group_by: ["node"],
    windows: #{
        inc: increase("c", "3s"), r: rate("s", "2s"), ch: changes("c", "5s"),
        lo: min_over("c", "3s"), hi: max_over("g", "3s"), avg: avg_over("g", "4s"),
        last: last("s"), sm: ewma("g", "2s"), ev: count_events("e", "3s"), gone: absent("e", "2s"),
    },
}
"#;

/// The series of [`EVERY_WINDOW`], in the order of its samples.
const EVERY_WINDOW_SERIES: [(&str, SampleKind); 4] = [
    ("c", SampleKind::Counter(CounterSpec::wrapping(8))),
    ("s", SampleKind::Counter(CounterSpec::saturating(8))),
    ("g", SampleKind::Gauge),
    ("e", SampleKind::Event),
];

/// The samples of step `k` at `now`: a counter that wraps and resets, one
/// that saturates, a gauge, and events on some steps.
fn every_window_step(ids: &[crate::series::SeriesId], k: usize, now: crate::time::Nanos) -> Vec<Sample> {
    const C: [u64; 16] = [250, 253, 2, 9, 9, 9, 1, 1, 1, 40, 41, 41, 41, 41, 41, 41];
    const S: [u64; 16] = [10, 100, 200, 255, 255, 255, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    const G: [f64; 16] = [0.0, 1.0, 5.0, 2.0, 0.5, 0.0, 0.0, 4.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    // An event on steps 1, 2, 8 and 9 (NaN: none).
    const E: [f64; 16] = [
        f64::NAN,
        79.0,
        48.0,
        f64::NAN,
        f64::NAN,
        f64::NAN,
        f64::NAN,
        f64::NAN,
        1.0,
        2.0,
        f64::NAN,
        f64::NAN,
        f64::NAN,
        f64::NAN,
        f64::NAN,
        f64::NAN,
    ];
    let mut samples = vec![
        Sample { series: ids[0], ts: now, value: Value::Count(C[k]) },
        Sample { series: ids[1], ts: now, value: Value::Count(S[k]) },
        Sample { series: ids[2], ts: now, value: Value::Real(G[k]) },
    ];
    if !E[k].is_nan() {
        samples.push(Sample { series: ids[3], ts: now, value: Value::Real(E[k]) });
    }
    samples
}

#[test]
fn shadow_windows_agree_with_the_engine_on_every_transition() {
    // Through every window function: the values a failure report shows
    // must be the ones the engine decided on.
    let rules = rule::load_sources(&[("all.rhai".into(), EVERY_WINDOW.into())], Helpers::default()).unwrap();
    let the_rule = rules.rules[0].clone();
    let table = SeriesTable::default();
    let mut ev = Evaluator::new(table.clone(), rules, None).unwrap();
    let sensor = table.add_sensor("t", 10);
    let ids: Vec<_> = EVERY_WINDOW_SERIES
        .iter()
        .map(|(m, kind)| {
            let spec = SeriesSpec { metric: m.to_string(), labels: Labels::from_pairs([("node", "n1")]), kind: *kind };
            table.register(sensor, &spec).unwrap()
        })
        .collect();
    let routes: Vec<_> = EVERY_WINDOW_SERIES.iter().map(|(m, k)| (Some(0), m.to_string(), *k)).collect();
    let mut shadow = shadow::Shadow::new(&the_rule, &routes, 1);
    let mut transitions = 0;
    for k in 0..16 {
        let now = CASE_EPOCH + k as i64 * 700 * crate::time::MS;
        let samples = every_window_step(&ids, k, now);
        for (i, sample) in samples.iter().enumerate() {
            shadow.observe(i, sample);
        }
        ev.ingest(&samples);
        let mut events = Vec::new();
        ev.evaluate(now, &mut events);
        for event in events {
            if let EngineEvent::Transition { values, .. } = event {
                transitions += 1;
                let engine: Vec<String> = values.iter().map(|(n, v)| format!("{n}={v:?}")).collect();
                let ours: Vec<String> = the_rule
                    .windows
                    .iter()
                    .zip(shadow.values(0, now))
                    .map(|((n, _), v)| format!("{n}={v:?}"))
                    .collect();
                assert_eq!(engine, ours, "step {k}");
            }
        }
    }
    assert!(transitions >= 4, "the data must drive the rule through its states, saw {transitions} transitions");
}

#[test]
fn a_rule_file_runs_alone_and_an_untested_broken_rule_and_a_name_clash_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = "fn fire(w) { w.x > 1.0 }\n#{ name: \"same\", select: [\"m\"], windows: #{ x: last(\"m\") } }\n";
    std::fs::write(dir.path().join("a.rhai"), good).unwrap();
    std::fs::write(dir.path().join("b.rhai"), good).unwrap();
    std::fs::write(dir.path().join("broken.rhai"), "fn fire(w) { w.x > }\n#{ name: \"broken\" }\n").unwrap();

    let report = run_path(&dir.path().join("a.rhai")).unwrap();
    assert_eq!(report.files.len(), 1, "one file");
    assert!(matches!(report.files[0].result, FileResult::NoTests));

    let report = run_dir(dir.path()).unwrap();
    assert!(!report.passed());
    let text = report.to_string();
    assert!(text.contains("broken.rhai:1:"), "the untested rule's load error is shown: {text}");
    assert!(text.contains("rule name \"same\" is also used by"), "the clash is shown: {text}");

    let err = run_path(&dir.path().join("a.test.toml")).unwrap_err().to_string();
    assert!(err.contains("neither a rule directory nor a .rhai file"), "{err}");
}
