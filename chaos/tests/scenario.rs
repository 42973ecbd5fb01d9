//! Scenario files: the library resolves, errors name file:line:col, and
//! the check of a run record says what failed.

use std::path::Path;

use chaos::report::{DecisionRecord, FaultRecord, ProbeSeries, RunRecord, TransitionRecord};
use chaos::scenario::{check, parse, ScenarioError};

fn err(text: &str) -> ScenarioError {
    parse(text, Path::new("s.toml")).unwrap_err()
}

#[test]
fn every_library_scenario_resolves() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let loaded = chaos::scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert!(!loaded.plan.faults.is_empty(), "{}", path.display());
            assert!(loaded.plan.playbook.exists() && loaded.plan.rules_dir.is_dir(), "{}", path.display());
            names.push(loaded.plan.name);
        }
    }
    names.sort();
    for want in ["link_flap_storm", "many_faults", "pfc_storm", "rail_failure", "sensor_outage", "symbol_errors"] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
}

#[test]
fn errors_say_where() {
    let e = err("name = \"x\"\nduration = \"1s\"\n[[fault]]\nkind = \"pfc_strom\"\nat = \"1s\"\n");
    assert_eq!((e.path.as_str(), e.line, e.column), ("s.toml", 4, 8), "{e}");
    assert!(e.message.contains("unknown variant `pfc_strom`"), "{e}");
    let e = err("name = \"x\"\nduration = \"1s\"\n[[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-99\" }\nat = \"1s\"\n");
    assert_eq!((e.line, e.column), (5, 10), "{e}");
    assert!(e.message.contains("matches no NIC"), "{e}");
    let e = err("name = \"x\"\nduration = \"1s\"\n[[fault]]\nkind = \"netem\"\nlink = \"v0\"\nat = \"1s\"\n");
    assert!(e.message.contains("needs real links: set clock = \"wall\""), "{e}");
    let e = err("name = \"x\"\nduration = \"1s\"\n[expect]\nrecover_within = \"soon\"\n");
    assert!(e.to_string().starts_with("s.toml:4:18: recover_within: invalid duration \"soon\""), "{e}");
}

fn record(probe: &[(i64, f64)], decisions: Vec<DecisionRecord>) -> RunRecord {
    RunRecord {
        run: 0,
        seed: 1,
        start: 0,
        end: 3_000,
        faults: vec![FaultRecord { label: "f".into(), nodes: vec!["node-01".into()], start: 1_000, end: None }],
        transitions: vec![TransitionRecord {
            at: 1_200,
            rule: "r".into(),
            subject: Default::default(),
            from: "inactive".into(),
            to: "firing".into(),
        }],
        decisions,
        probes: vec![ProbeSeries { name: "step_time_ratio".into(), points: probe.to_vec() }],
        outcome: Default::default(),
    }
}

fn decision(at: i64, action: &str, node: &str, verdict: &str) -> DecisionRecord {
    DecisionRecord {
        at,
        id: format!("d{at}"),
        rule: "r".into(),
        action: action.into(),
        target: [("node".to_string(), node.to_string())].into(),
        verdict: verdict.into(),
        reason: None,
        undo_of: None,
        requests: Vec::new(),
    }
}

#[test]
fn a_record_is_checked_against_every_expectation() {
    let text = "name = \"x\"\nduration = \"3s\"\n[steady_state]\nhold = \"500ns\"\n[[steady_state.probe]]\nname = \"step_time_ratio\"\nmax = 1.5\n\
        [[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-01\", netdev = \"eth0\" }\nat = \"1s\"\n\
        [expect]\ndetect = { rule = \"r\", within = \"300ns\" }\nmitigate = { action = \"pfcwd.*\", within = \"100ns\" }\nrecover_within = \"1us\"\nmust_not = [{ action = \"node.cordon\" }]\n";
    let plan = parse(text, Path::new("s.toml")).unwrap().plan;
    let points = [(500, 1.0), (1_100, 4.0), (1_300, 4.0), (1_400, 1.0), (2_000, 1.0), (2_900, 1.0)];
    let good = record(&points, vec![decision(1_250, "pfcwd.escalate", "", "executed")]);
    let o = check(&plan, &good);
    assert!(!o.passed);
    assert_eq!(o.failures, ["pfcwd.* executed 0 ms after the fault; expected within 0 ms"]);
    assert_eq!((o.ttd(), o.ttm(), o.ttr()), (Some(200), Some(250), Some(400)));
    let bad = record(&[(500, 2.0), (2_900, 3.0)], vec![decision(1_100, "node.cordon", "node-02", "executed")]);
    let o = check(&plan, &bad);
    let text = o.failures.join("\n");
    assert!(text.contains("steady state did not hold before the fault: step_time_ratio = 2.000 at +0 ms"), "{text}");
    assert!(text.contains("pfcwd.* was never executed"), "{text}");
    assert!(text.contains("the steady state never held again"), "{text}");
    assert!(text.contains("node.cordon {} (executed) must not happen; decision d1100 did"), "{text}");
    assert!(text.contains("healthy node node-02 cordoned"), "{text}");
}
