//! A command line that never lies: what can be checked without the daemon
//! is refused by the flag parser (exit 2) before connecting; what only the
//! daemon knows (its rules) is refused by it, with a suggestion, exit 2
//! too; a refused reload exits non-zero; `--json` means JSON; and no Rust
//! debug text reaches a person.

use crate::common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{bin, daemon_config, log_playbook, repo, text, Daemon, SLOW_STEP};

/// `rocemend ARGS…` from the repository, against a socket nobody serves:
/// a verb that connects before checking its arguments fails with exit 1
/// and "connecting", not exit 2.
fn offline(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env("ROCEMEND_SOCKET", "/nonexistent/rocemend-test/control.sock")
        .current_dir(repo("."))
        .stdin(Stdio::null())
        .output()
        .expect("the rocemend binary runs")
}

fn assert_usage(args: &[&str], needles: &[&str]) {
    let out = offline(args);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "`rocemend {}` is a usage error:\n{t}", args.join(" "));
    assert!(!t.contains("connecting"), "`rocemend {}` was refused only after connecting:\n{t}", args.join(" "));
    for needle in needles {
        assert!(t.contains(needle), "`rocemend {}` should say {needle:?}:\n{t}", args.join(" "));
    }
}

#[test]
fn usage_errors_of_control_verbs_exit_2_before_connecting() {
    assert_usage(&["mode", "enforced"], &["enforce, dry-run, shadow", "a similar value exists: 'enforce'"]);
    assert_usage(&["silence", "--rule", "pfc-storm", "--for", "2x"], &["\"2x\"", "unknown unit"]);
    assert_usage(&["silence", "--target", "gpu-01", "--for", "0"], &["longer than 0"]);
    assert_usage(&["silence", "--for", "1h"], &["--rule", "--target"]);
    assert_usage(&["decisions", "--since", "5x"], &["\"5x\""]);
    assert_usage(&["incidents", "--since", "5x"], &["\"5x\""]);
    assert_usage(&["watch", "--kind", "bogus"], &["transition, decision, note, reload, mode, sensor, stale, error"]);
    assert_usage(&["watch", "--kind", "decison"], &["a similar value exists: 'decision'"]);
    assert_usage(&["job", "push", "--job", "has space", "--step-time", "1"], &["contains ' '"]);
    assert_usage(&["job", "push", "--job", "j", "--step-time=-1"], &["finite number >= 0"]);
    assert_usage(&["job", "push", "--job", "j"], &["--step-time"]);
    assert_usage(&["status", "--addr", "localhost:1"], &["--ca"]);
}

#[test]
fn the_daemon_unreachable_exits_1_and_names_the_os_error_once() {
    let out = offline(&["status"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("is `rocemend run` running?"), "{t}");
    assert_eq!(t.matches("No such file or directory (os error 2)").count(), 1, "the OS error once:\n{t}");
}

#[test]
fn chaos_rule_mode_typo_is_refused_with_the_rule_it_meant() {
    let out = dir_out(&["chaos", "run", "chaos/scenarios/pfc_storm.toml", "--rule-mode", "switch-pfc-strom=dry-run"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("no rule \"switch-pfc-strom\"") && t.contains("did you mean \"switch-pfc-storm\"?"), "{t}");
    assert!(!t.contains("passed"), "no run may start:\n{t}");

    let out = dir_out(&["chaos", "run", "chaos/scenarios/pfc_storm.toml", "--rule-mode", "switch-pfc-storm=dryrun"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("expected enforce, dry-run, shadow or off"), "{t}");
}

/// `rocemend ARGS… --out TEMP` from the repository (chaos writes reports there).
fn dir_out(args: &[&str]) -> Output {
    let out = tempfile::tempdir().unwrap();
    Command::new(bin()).args(args).arg("--out").arg(out.path()).current_dir(repo(".")).output().unwrap()
}

#[test]
fn replay_diff_json_is_one_json_document() {
    let tmp = tempfile::tempdir().unwrap();
    let without = common::standard_rules_without(tmp.path(), "link_flap.rhai");
    let recording = repo("chaos/sim/data/demo.jsonl");
    let out = Command::new(bin())
        .arg("replay")
        .arg(&recording)
        .args(["--rules", "rules", "--diff"])
        .arg(&without)
        .arg("--json")
        .current_dir(repo("."))
        .output()
        .unwrap();
    // The sets differ (one rule fewer): exit 1, as `diff` does.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("`replay --diff --json` is not JSON ({e}):\n{stdout}"));
    assert_eq!(doc["summary"]["only_a"], doc["only_a"], "{doc:#}");
    assert_eq!(doc["b"], without.display().to_string());
    let proposals = doc["proposals"].as_array().unwrap_or_else(|| panic!("no proposals in {doc}"));
    let only_a: Vec<&serde_json::Value> = proposals.iter().filter(|p| p["in"] == "a").collect();
    assert!(!only_a.is_empty() && only_a.iter().all(|p| p["b"].is_null()), "{doc:#}");
    assert!(
        only_a.iter().any(|p| p["key"].as_str().is_some_and(|k| k.contains("link.isolate"))),
        "link-flap's isolation is only in A: {doc:#}"
    );
    assert!(proposals.iter().any(|p| p["in"] == "both"), "the other rules agree: {doc:#}");
    assert_eq!(doc["only_a"].as_u64(), Some(only_a.len() as u64));
}

/// The slow-step rule (it declares `enforce`) in `dir/rules`, under a
/// playbook whose global mode is dry-run.
fn dry_run_daemon(dir: &Path) -> Daemon {
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(rules.join("slow_step.rhai"), SLOW_STEP).unwrap();
    let playbook = log_playbook(dir, "usage", Some("dry-run"), &rules);
    let config = daemon_config(dir, &playbook, None);
    let mut daemon = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();
    daemon
}

#[test]
fn the_daemon_refuses_unknown_rules_and_bad_reloads_and_rules_shows_the_mode_in_effect() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut daemon = dry_run_daemon(dir);

    // An unknown rule: refused by the daemon, with the rule it has, exit 2.
    let out = daemon.cli(&["silence", "--rule", "slow-stpe", "--for", "1h"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}\n--- daemon log ---\n{}", daemon.log());
    assert!(t.contains("no rule \"slow-stpe\" is loaded; did you mean \"slow-step\"?"), "{t}");
    assert_eq!(daemon.status()["silences"].as_array().map(Vec::len), Some(0), "nothing was silenced");
    // A known one is silenced, and logged without Rust's Option around it.
    daemon.cli_ok(&["silence", "--rule", "slow-step", "--for", "1h"]);
    daemon.wait_logged("Silence set.");
    let log = daemon.log();
    let line = log.lines().find(|l| l.contains("Silence set.")).unwrap();
    assert!(line.contains("slow-step") && !line.contains("Some("), "{line}");
    // An unknown id stays a failed request, exit 1.
    let out = daemon.cli(&["unsilence", "s99"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    // The mode in effect, not the file's own.
    let rules = daemon.cli_ok(&["rules", "--json"]);
    let rule: serde_json::Value = serde_json::from_str(rules.lines().next().unwrap()).unwrap();
    assert_eq!((rule["mode"].as_str(), rule["declared_mode"].as_str()), (Some("dry-run"), Some("enforce")), "{rule}");
    daemon.cli_ok(&["mode", "shadow"]);
    let table = daemon.cli_ok(&["rules"]);
    let row = table.lines().find(|l| l.starts_with("slow-step")).unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains(" shadow "), "the global mode applies: {row}");

    // A reload the daemon refuses: non-zero, with its reason.
    std::fs::write(dir.join("rules/broken.rhai"), "fn fire(w) {\n    w.x > \n}\n#{ name: \"broken\" }\n").unwrap();
    let out = daemon.cli(&["reload"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "a refused reload fails:\n{t}");
    assert!(t.contains("broken.rhai"), "the daemon's reason names the file:\n{t}");
    assert!(!t.contains("reloaded:"), "{t}");
    assert!(daemon.stop().success(), "{}", daemon.log());
}

#[test]
fn rules_shows_the_playbooks_mode_for_a_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(rules.join("slow_step.rhai"), SLOW_STEP).unwrap();
    let playbook = log_playbook(dir, "usage", Some("enforce"), &rules);
    let mut text = std::fs::read_to_string(&playbook).unwrap();
    text.push_str("[rule.slow-step]\nmode = \"dry-run\"\n");
    std::fs::write(&playbook, text).unwrap();
    let config = daemon_config(dir, &playbook, None);
    let mut daemon = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();
    let rules = daemon.cli_ok(&["rules", "--json"]);
    let rule: serde_json::Value = serde_json::from_str(rules.lines().next().unwrap()).unwrap();
    assert_eq!((rule["mode"].as_str(), rule["declared_mode"].as_str()), (Some("dry-run"), Some("enforce")), "{rule}");
    assert!(daemon.stop().success(), "{}", daemon.log());
}

#[test]
fn sensors_without_a_config_runs_this_nodes_sensors_with_defaults() {
    if Path::new("/etc/rocemend/rocemend.toml").exists() {
        // Not a missing peer: this machine runs a configured daemon, which a
        // test must not read (CI machines have none).
        return test_peers::skip("/etc/rocemend/rocemend.toml exists, and `sensors` would use it");
    }
    let out = Command::new(bin()).args(["sensors", "--seconds", "1"]).stdin(Stdio::null()).output().unwrap();
    let t = text(&out);
    assert!(matches!(out.status.code(), Some(0 | 1)), "a report, not a usage error:\n{t}");
    assert!(t.contains("this node's sensors with their default settings"), "{t}");
    for sensor in ["netlink_link", "rdma_sysfs", "ethtool", "nvml"] {
        assert!(t.lines().any(|l| l.starts_with(sensor)), "{sensor} is reported:\n{t}");
    }
}

#[test]
fn bad_numbers_for_sensors_seconds_and_demo_speed_exit_2_instead_of_panicking() {
    for bad in ["-1", "nan", "inf", "1e300"] {
        assert_usage(&["sensors", &format!("--seconds={bad}")], &["--seconds", bad]);
    }
    for bad in ["-1", "nan", "-inf"] {
        assert_usage(&["demo", &format!("--speed={bad}")], &["--speed", bad]);
    }
}

#[test]
fn demo_into_a_pipe_closed_after_one_line_ends_quietly() {
    let mut demo = Command::new(bin())
        .args(["demo", "--speed", "0"])
        .current_dir(repo("."))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(demo.stdout.take().unwrap()), &mut first).unwrap();
    assert!(first.starts_with("rocemend demo"), "{first}");
    // The reader is gone: the demo's next line meets a closed pipe.
    let out = demo.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn replay_of_an_endless_input_that_is_no_recording_stops_with_exit_2() {
    let out = offline(&["replay", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // A zero byte starts the magic of a recording of blocks: read as one, it holds no frame.
    assert!(text(&out).contains("/dev/zero:1: frame at byte 0: no frame in 256 MiB"), "{}", text(&out));
}
