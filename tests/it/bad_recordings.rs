//! Recordings with bad data, replayed as a user replays them: the standard
//! rules on the demo recording decide its three faults and nothing else,
//! whatever one bad line adds (regression tests of phantom actions and
//! missed faults seen with the release build).

use crate::common;

use std::path::Path;
use std::process::Output;

use common::{bin, repo, text};
use serde_json::Value;

fn demo() -> Vec<String> {
    std::fs::read_to_string(repo("chaos/sim/data/demo.jsonl")).unwrap().lines().map(str::to_string).collect()
}

/// The recording-local id of the series `metric` of `node`/`netdev`.
fn series_id(lines: &[String], metric: &str, node: &str, netdev: &str) -> u64 {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["metric"] == metric && v["labels"]["node"] == node && v["labels"]["netdev"] == netdev)
        .and_then(|v| v["series"].as_u64())
        .unwrap_or_else(|| panic!("no {metric} series for {node} {netdev} in the demo"))
}

/// The index of the `n`th sample line of series `id`, and its value.
fn nth_sample(lines: &[String], id: u64, n: usize) -> (usize, Value) {
    lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| serde_json::from_str::<Value>(l).ok().map(|v| (i, v)))
        .filter(|(_, v)| v["s"].as_u64() == Some(id))
        .nth(n)
        .expect("the series has that many samples")
}

fn replay(dir: &Path, lines: &[String]) -> Output {
    let path = dir.join("recording.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    std::process::Command::new(bin())
        .arg("replay")
        .arg(&path)
        .arg("--rules")
        .arg(repo("rules"))
        .arg("--inventory")
        .arg(repo("docs/examples/inventory.toml"))
        .output()
        .expect("rocemend runs")
}

/// The actions the replay would have taken, in order.
fn actions(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "replay failed:\n{}", text(out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.lines().filter_map(|l| l.split_once("would ").map(|(_, a)| a.trim().to_string())).collect()
}

const FAULTS: [&str; 3] = ["pfcwd.escalate", "link.isolate", "rail.drain"];

fn assert_three_faults(out: &Output, what: &str) {
    let actions = actions(out);
    let kinds: Vec<&str> = actions.iter().filter_map(|a| a.split_whitespace().next()).collect();
    assert_eq!(kinds, FAULTS, "{what}: {actions:#?}\n{}", text(out));
}

#[test]
fn the_demo_recording_decides_its_three_faults() {
    let dir = tempfile::tempdir().unwrap();
    assert_three_faults(&replay(dir.path(), &demo()), "the demo as recorded");
}

#[test]
fn a_pause_counter_read_one_lower_does_not_fire_a_storm() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = demo();
    let id = series_id(&lines, "ethtool_tx_prio_pause_duration_us", "node-01", "eth0");
    let (i, sample) = nth_sample(&lines, id, 40);
    let lowered = sample["v"].as_u64().unwrap() - 1;
    lines[i] = format!(r#"{{"s":{id},"t":{},"v":{lowered}}}"#, sample["t"]);
    assert_three_faults(&replay(dir.path(), &lines), "a counter read one lower");
}

#[test]
fn values_no_counter_can_hold_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = demo();
    let id = series_id(&lines, "ethtool_tx_prio_pause_duration_us", "node-01", "eth1");
    for (n, bad) in [(30, "1e30"), (31, "18446744073709551616"), (32, "1.5"), (33, "-4")] {
        let (i, sample) = nth_sample(&lines, id, n);
        lines[i] = format!(r#"{{"s":{id},"t":{},"v":{bad}}}"#, sample["t"]);
    }
    assert_three_faults(&replay(dir.path(), &lines), "out-of-range counter values");
}

#[test]
fn a_sample_stamped_far_ahead_neither_hides_a_fault_nor_stops_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = demo();
    // A sample at the end of time on an unrelated series, early on.
    let quiet = series_id(&lines, "ethtool_tx_prio_pause_duration_us", "node-04", "eth7");
    let (i, sample) = nth_sample(&lines, quiet, 5);
    lines.insert(i + 1, format!(r#"{{"s":{quiet},"t":{},"v":{}}}"#, i64::MAX, sample["v"]));
    // A sample a day ahead on the storming series, just before its storm.
    let storming = series_id(&lines, "ethtool_tx_prio_pause_duration_us", "node-02", "eth3");
    let (i, sample) = nth_sample(&lines, storming, 25);
    let day_ahead = sample["t"].as_i64().unwrap() + 86_400_000_000_000;
    lines.insert(i + 1, format!(r#"{{"s":{storming},"t":{day_ahead},"v":{}}}"#, sample["v"]));
    assert_three_faults(&replay(dir.path(), &lines), "samples stamped far ahead");
}

#[test]
fn a_series_declared_again_with_other_labels_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = demo();
    let declaration: Value = serde_json::from_str(&lines[1]).unwrap();
    let mut other = declaration.clone();
    other["labels"]["netdev"] = "eth6".into();
    lines.insert(200, other.to_string());
    let out = replay(dir.path(), &lines);
    assert!(!out.status.success(), "a re-declared series must not replay:\n{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(":201: series 0 is declared again as"), "{stderr}");
}

#[test]
fn a_huge_label_and_a_huge_line_are_refused_without_being_held() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = demo();
    let mut huge = serde_json::from_str::<Value>(&lines[1]).unwrap();
    huge["series"] = 9999.into();
    huge["labels"]["netdev"] = "x".repeat(300).into();
    lines.insert(2, huge.to_string());
    let out = replay(dir.path(), &lines);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the value of label \"netdev\" is 300 bytes long; at most 256 are accepted"), "{stderr}");

    let mut lines = demo();
    lines.insert(2, format!(r#"{{"note":"x","t":1,"text":"{}"}}"#, "a".repeat(64 << 20)));
    let out = replay(dir.path(), &lines);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(":3: a line of 67108"), "{stderr}");
}
