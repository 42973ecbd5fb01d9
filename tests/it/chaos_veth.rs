//! Wall-clock chaos scenarios on real veth pairs in network namespaces: a
//! link flap isolated by the real `link` actuator, flaps on two links at
//! once each isolated on its own, and netem/tbf that the daemon must leave
//! alone. Needs root and iproute2; skipped otherwise (CI runs them as
//! root).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    for tool in ["ip", "tc"] {
        if !Command::new(tool).arg("-V").output().is_ok_and(|o| o.status.success()) {
            return Some(format!("{tool} (iproute2) missing"));
        }
    }
    None
}

/// Runs a wall scenario; `None` when the kernel lacks a qdisc it needs
/// (`sch_netem`, `sch_tbf` are modules some kernels leave out): the runner
/// says so — tc's own words in the reason, or a `skipped:` line.
fn run_or_skip(name: &str, runs: u32) -> Option<(i32, Value, String)> {
    let out = tempfile::tempdir().unwrap();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("chaos/scenarios/wall/{name}.toml"));
    let output = Command::new(env!("CARGO_BIN_EXE_rocemend"))
        .args(["chaos", "run", "--quiet", "--runs", &runs.to_string(), "--out"])
        .arg(out.path())
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    if stderr.contains("qdisc kind is unknown") || stderr.contains("skipped:") {
        // Not a missing install: the qdiscs are the kernel's (modules .ci/run
        // loads where the kernel has them), and CI cannot choose its kernel.
        test_peers::skip(format!("this kernel lacks a qdisc the scenario needs: {}", stderr.trim()));
        return None;
    }
    let report = std::fs::read(out.path().join(format!("{name}.json")))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or_else(|e| panic!("no report: {e}\n{stderr}"));
    Some((output.status.code().unwrap_or(-1), report, stderr))
}

fn run(name: &str, runs: u32) -> (i32, Value, String) {
    run_or_skip(name, runs).unwrap_or_else(|| panic!("{name} needs no qdisc, yet a qdisc was missing"))
}

/// A run that failed only because a detection or an action came later than the scenario's
/// wall-clock bound passes here: this debug binary shares the cores with the other tests (one
/// link flap was seen 11 ms after its trigger against 10 ms). The bounds are held by the release
/// runs of these scenarios in `.ci/run` ("chaos: real links"); here every run must still have
/// done the right thing, once, and every failure must be a late one.
fn assert_passed_but_for_lateness(code: i32, report: &Value, stderr: &str) {
    if code == 0 {
        return;
    }
    for run in report["runs"].as_array().unwrap() {
        let outcome = &run["outcome"];
        assert!(outcome["aborted"].is_null(), "run {} aborted: {stderr}", run["run"]);
        for failure in outcome["failures"].as_array().unwrap() {
            let failure = failure.as_str().unwrap();
            assert!(failure.contains(" after ") && failure.contains("; expected within "), "not a late one: {failure}");
            eprintln!("late (the release runs hold the bound): run {}: {failure}", run["run"]);
        }
    }
}

#[test]
fn a_real_link_flap_is_isolated_through_rtnetlink() {
    if let Some(reason) = skip_reason() {
        return test_peers::missing(reason);
    }
    let (code, report, stderr) = run("veth_link_flap", 10);
    let s = &report["summary"];
    eprintln!(
        "veth link flap over {} runs: detection p50 {} p99 {} ms, isolation p50 {} p99 {} ms (targets 10 and 50 ms)",
        report["runs"].as_array().unwrap().len(),
        s["detect_from_trigger"]["p50"],
        s["detect_from_trigger"]["p99"],
        s["mitigate_from_trigger"]["p50"],
        s["mitigate_from_trigger"]["p99"]
    );
    assert_passed_but_for_lateness(code, &report, &stderr);
    for run in report["runs"].as_array().unwrap() {
        let isolations: Vec<&Value> = run["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["action"] == "link.isolate" && d["verdict"] == "executed")
            .collect();
        assert_eq!(isolations.len(), 1, "one isolation per run: {run}");
        assert!(run["faults"].as_array().unwrap().len() >= 3, "at least three flaps before it");
    }
}

#[test]
fn netem_and_tbf_on_a_real_link_cause_no_action() {
    if let Some(reason) = skip_reason() {
        return test_peers::missing(reason);
    }
    let Some((code, report, stderr)) = run_or_skip("veth_netem", 1) else { return };
    assert_eq!(code, 0, "{stderr}");
    let faults = report["runs"][0]["faults"].as_array().unwrap();
    let labels: Vec<&str> = faults.iter().map(|f| f["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["netem rcv0", "tbf rcv0"]);
    assert!(faults.iter().all(|f| f["end"].as_i64().unwrap() > f["start"].as_i64().unwrap()));
}

#[test]
fn flaps_on_two_real_links_isolate_each_link_on_its_own() {
    if let Some(reason) = skip_reason() {
        return test_peers::missing(reason);
    }
    let (code, report, stderr) = run("veth_two_links", 3);
    assert_passed_but_for_lateness(code, &report, &stderr);
    for run in report["runs"].as_array().unwrap() {
        let decisions = run["decisions"].as_array().unwrap();
        for link in ["rcv0", "rcv1"] {
            let isolations = decisions
                .iter()
                .filter(|d| {
                    d["action"] == "link.isolate" && d["verdict"] == "executed" && d["target"]["netdev"] == link
                })
                .count();
            assert_eq!(isolations, 1, "{link} isolated once: {decisions:?}");
            let flaps = run["faults"].as_array().unwrap().iter().filter(|f| f["label"] == format!("veth_flap {link}"));
            assert!(flaps.count() >= 3, "{link} flapped at least three times: {}", run["faults"]);
        }
        // Each link is its own fault, detected and isolated on itself.
        let faults = run["outcome"]["faults"].as_array().unwrap();
        assert_eq!(faults.len(), 2, "{faults:?}");
        for (fault, link) in faults.iter().zip(["rcv0", "rcv1"]) {
            let by = fault["mitigated_by"].as_str().unwrap_or_default();
            assert_eq!(by, format!("link.isolate {{netdev={link}, node=chaos-veth}}"), "{fault}");
            assert!(fault["detected_by"].as_str().unwrap_or_default().contains(&format!("netdev={link}")), "{fault}");
            let (start, detected) = (fault["fault_at"].as_i64().unwrap(), fault["detected_at"].as_i64().unwrap());
            // The third flap comes 400 ms after the first.
            assert!(
                detected - start >= 390_000_000,
                "{link} detected {} ms after its first flap",
                (detected - start) / 1_000_000
            );
        }
    }
    let s = &report["summary"]["faults"];
    eprintln!(
        "two links over {} runs: rcv0 isolated p50 {} ms, rcv1 p50 {} ms from each link's first flap",
        report["runs"].as_array().unwrap().len(),
        s[0]["mitigate"]["p50"],
        s[1]["mitigate"]["p50"]
    );
}
