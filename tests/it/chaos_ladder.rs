//! Outcome checks and escalation ladders on the simulated fabric (chaos/scenarios/ladder and
//! chaos/scenarios/outcomes): every run of each scenario passes, and its decisions carry the
//! outcomes that made the ladder climb or undid a remedy.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

const RUNS: u32 = 20;

/// Runs scenario `chaos/scenarios/{path}.toml` `RUNS` times; every run must pass. Returns the report.
fn passes(path: &str) -> Value {
    let name = path.rsplit('/').next().unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rocemend"))
        .current_dir(&root)
        .args(["chaos", "run", "--quiet", "--runs", &RUNS.to_string(), "--out"])
        .arg(out.path())
        .arg(root.join(format!("chaos/scenarios/{path}.toml")))
        .output()
        .unwrap();
    let report: Value = match std::fs::read(out.path().join(format!("{name}.json"))) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
        Err(e) => panic!("no report for {name}: {e}\n{}", String::from_utf8_lossy(&output.stderr)),
    };
    assert_eq!(output.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&output.stderr));
    assert_eq!((report["passed"].as_u64(), report["failed"].as_u64()), (Some(RUNS as u64), Some(0)));
    report
}

/// The (action, outcome) of each judged decision of `run`, in the order they were judged,
/// without undos.
fn judged(run: &Value) -> Vec<(String, String)> {
    let decisions = run["decisions"].as_array().unwrap();
    decisions
        .iter()
        .filter(|d| d["undo_of"].is_null() && d["outcome"].is_string() && d["outcome"] != "open")
        .map(|d| (d["action"].as_str().unwrap().to_string(), d["outcome"].as_str().unwrap().to_string()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, o)| (a.to_string(), o.to_string())).collect()
}

#[test]
fn a_storm_the_watchdog_and_the_isolation_cannot_stop_is_stopped_by_the_rail_drain_in_every_run() {
    let report = passes("ladder/wedged_storm");
    let expected =
        pairs(&[("pfcwd.escalate", "ineffective"), ("link.isolate", "ineffective"), ("rail.drain", "effective")]);
    for (i, run) in report["runs"].as_array().unwrap().iter().enumerate() {
        assert_eq!(judged(run), expected, "run {i}");
    }
}

#[test]
fn the_third_storm_of_a_nic_goes_straight_to_the_rung_that_worked_in_every_run() {
    let report = passes("ladder/repeat_storms");
    let climb = [("pfcwd.escalate", "ineffective"), ("link.isolate", "effective")];
    let expected = pairs(&[climb[0], climb[1], climb[0], climb[1], ("link.isolate", "effective")]);
    for (i, run) in report["runs"].as_array().unwrap().iter().enumerate() {
        assert_eq!(judged(run), expected, "run {i}");
        let skipped = run["decisions"].as_array().unwrap().iter().any(|d| {
            d["action"] == "pfcwd.escalate" && d["reason"].as_str().is_some_and(|r| r.contains("starts at rung 2 of 3"))
        });
        assert!(skipped, "run {i}: the third storm does not try the watchdog");
    }
}

#[test]
fn a_drain_that_slowed_the_job_is_undone_its_rule_held_and_a_human_paged_in_every_run() {
    let report = passes("outcomes/slowed_job");
    for (i, run) in report["runs"].as_array().unwrap().iter().enumerate() {
        assert_eq!(judged(run), pairs(&[("rail.drain", "harmful")]), "run {i}");
        let decisions = run["decisions"].as_array().unwrap();
        let harmful = decisions.iter().find(|d| d["outcome"] == "harmful").unwrap();
        let judgement = harmful["judgement"].as_str().unwrap();
        assert!(judgement.contains("job.step_time 0.500 \u{2192} 0.55"), "run {i}: {judgement}");
        let undo = decisions.iter().find(|d| d["undo_of"] == harmful["id"]).expect("undone");
        assert_eq!(undo["verdict"], "executed", "run {i}");
        assert!(undo["requests"][0].as_str().unwrap().ends_with("admin_status = \"up\""), "run {i}: {undo}");
        let page = decisions.iter().find(|d| d["action"] == "webhook.notify").expect("paged");
        let sent = page["requests"][0].as_str().unwrap();
        assert!(
            sent.contains("made it worse (job.step_time") && sent.contains("symbol-errors held on it for 1h"),
            "{sent}"
        );
        let drains: std::collections::BTreeSet<&str> = decisions
            .iter()
            .filter(|d| d["action"] == "rail.drain" && d["undo_of"].is_null() && d["verdict"] == "executed")
            .map(|d| d["id"].as_str().unwrap())
            .collect();
        assert_eq!(drains.len(), 1, "run {i}: the rail is not drained again");
    }
}
