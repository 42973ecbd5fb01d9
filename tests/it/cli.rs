//! The binary end to end: the README's demo, `check`, `test`, `run` with a
//! recording and `replay` of what it recorded.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rocemend(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocemend"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the rocemend binary runs")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn the_demo_detects_every_fault_and_plans_its_remediation() {
    let out = rocemend(&["demo", "--speed", "0"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert_eq!(t.matches("FAULT ").count(), 3, "three faults in the recording:\n{t}");
    assert!(!t.contains("NOT DETECTED"), "{t}");
    for rule in ["pfc-storm", "link-flap", "symbol-errors"] {
        assert!(t.contains(&format!("firing    {rule}")), "{rule} fires:\n{t}");
    }
    assert!(t.contains("pfcwd.escalate"), "{t}");
    assert!(t.contains("link.isolate"), "{t}");
    assert!(t.contains("rail.drain"), "{t}");
    assert!(t.contains("[dry-run]"), "the default playbook only plans:\n{t}");
    // Nothing fires on the 29 healthy NICs of each metric.
    assert_eq!(t.matches("  firing    ").count(), 3, "only the three faulty subjects fire:\n{t}");
}

#[test]
fn check_names_file_line_and_column_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.rhai"), std::fs::read_to_string(repo("rules/link_flap.rhai")).unwrap())
        .unwrap();
    std::fs::write(dir.path().join("bad.rhai"), "fn fire(w) {\n    w.x > \n}\n#{ name: \"bad\" }\n").unwrap();
    let out = rocemend(&["check", "--rules", dir.path().to_str().unwrap()]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    let bad = dir.path().join("bad.rhai");
    assert!(t.contains(&format!("{}:3:1:", bad.display())), "position of the syntax error:\n{t}");
}

#[test]
fn check_accepts_the_shipped_playbook_rules_and_inventory() {
    let out =
        rocemend(&["check", "--playbook", "playbooks/default.toml", "--inventory", "docs/examples/inventory.toml"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("12 rules"), "{t}");
    assert!(t.contains("conditions: 12 of 12 rules run natively"), "{t}");
    assert!(t.contains("4 nodes"), "{t}");
}

#[test]
fn rule_tests_pass_and_a_wrong_expectation_exits_1() {
    let out = rocemend(&["test", "rules"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo("rules/link_flap.rhai"), dir.path().join("link_flap.rhai")).unwrap();
    let cases = std::fs::read_to_string(repo("rules/link_flap.test.toml")).unwrap();
    assert!(cases.contains("state = \"firing\""), "the link-flap tests expect a firing state");
    // The tests name the inventory beside them.
    std::fs::copy(repo("rules/inventory.toml"), dir.path().join("inventory.toml")).unwrap();
    let wrong = cases.replacen("state = \"firing\"", "state = \"inactive\"", 1);
    std::fs::write(dir.path().join("link_flap.test.toml"), wrong).unwrap();
    let out = rocemend(&["test", dir.path().to_str().unwrap()]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("expected inactive, got firing"), "a readable diff:\n{t}");
}

#[test]
fn run_records_what_it_sees_and_replay_shows_what_it_would_do() {
    let dir = tempfile::tempdir().unwrap();
    let recording = dir.path().join("demo.jsonl");
    std::fs::write(&recording, chaos_recording()).unwrap();
    let recorded = dir.path().join("recorded.jsonl");
    let config = dir.path().join("rocemend.toml");
    std::fs::write(
        &config,
        format!(
            r#"state_dir = "state"
inventory = "{inventory}"
playbook = "{playbook}"
record = "recorded.jsonl"
[engine]
clock = "samples"
reload_poll = "0"
exit_when_sensors_end = true
[log]
level = "warn"
[[sensor]]
type = "replay"
path = "demo.jsonl"
speed = 0.0
"#,
            inventory = repo("docs/examples/inventory.toml").display(),
            playbook = repo("playbooks/default.toml").display(),
        ),
    )
    .unwrap();
    let out = rocemend(&["run", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(dir.path().join("state/state.sled").exists(), "the sled state is where the config says");

    let out = rocemend(&["replay", recorded.to_str().unwrap(), "--rules", "rules"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    for action in ["pfcwd.escalate", "link.isolate", "rail.drain"] {
        assert!(t.contains(&format!("would     {action}")), "{action} in the replay of the recording:\n{t}");
    }
}

fn chaos_recording() -> &'static [u8] {
    include_bytes!("../../chaos/sim/data/demo.jsonl")
}
