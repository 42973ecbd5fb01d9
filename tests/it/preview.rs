//! `rocemend preview`: a playbook's rules and whole safety policy on the
//! demo recording (a PFC storm escalated at +3.2 s, a link flap isolated at
//! +11 s, a rail drained at +15 s), and `--diff` between two playbooks; and
//! `replay --diff`'s exit code and summary.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{bin, repo, text, toml_path};

/// A playbook in `dir` named `name`: every action kind to a log actuator,
/// in enforce mode, the repository's rules, then `extra` (tables).
fn playbook(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    // Limits of zero switch a safety off: accepted only when asked for.
    let body = format!(
        "name = \"{name}\"\nmode = \"enforce\"\nrules = {}\nallow_unsafe = true\n\n\
         [[actuator]]\nname = \"fabric\"\ntype = \"log\"\nhandles = [\"pfcwd.*\", \"ecn.*\", \"rail.*\", \"link.*\", \"node.*\", \"nccl.*\", \"ecmp.*\"]\n\
         like = [\"pfcwd\", \"ecn\", \"rail\", \"link\", \"cordon\", \"nccl\", \"ecmp\"]\n\n\
         [[actuator]]\nname = \"notify\"\ntype = \"log\"\nhandles = [\"webhook.*\"]\ndestructive = false\n\n{extra}",
        toml_path(&repo("rules"))
    );
    std::fs::write(&path, body).unwrap();
    path
}

fn rocemend(args: &[&str]) -> Output {
    Command::new(bin()).args(args).current_dir(repo(".")).output().unwrap()
}

fn preview(playbook: &Path, more: &[&str]) -> Output {
    let mut args = vec!["preview", "--playbook", playbook.to_str().unwrap(), "chaos/sim/data/demo.jsonl"];
    args.extend_from_slice(more);
    rocemend(&args)
}

/// The lines about the rail drain.
fn drain_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("rail.drain")).map(str::to_string).collect()
}

#[test]
fn a_limit_that_holds_the_drain_shows_it_held_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let open = playbook(tmp.path(), "open", "");
    let out = preview(&open, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lines = drain_lines(&out);
    assert!(lines.len() == 1 && lines[0].contains("+ 15.000s  enforce  symbol-errors rail.drain"), "{lines:?}");
    assert!(lines[0].ends_with("would execute"), "{lines:?}");

    let strict = playbook(tmp.path(), "strict", "[limits]\nper_kind = { \"rail.drain\" = 0 }\n");
    let out = preview(&strict, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lines = drain_lines(&out);
    assert_eq!(lines.len(), 1, "{}", text(&out));
    assert!(lines[0].contains("held: ") && lines[0].contains("rail.drain"), "the reason names the limit: {lines:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().last().unwrap().contains("1 held"), "{stdout}");
    // The other actions are untouched by a limit on drains.
    assert!(stdout.contains("pfcwd.escalate") && stdout.contains("would execute"), "{stdout}");
}

#[test]
fn an_action_that_needs_approval_waits_and_expires_on_the_recordings_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let approve = playbook(tmp.path(), "approve", "[[approval]]\nactions = [\"rail.drain\"]\ntimeout = \"5s\"\n");
    let out = preview(&approve, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lines = drain_lines(&out);
    assert_eq!(lines.len(), 2, "a request, then its expiry: {}", text(&out));
    assert!(lines[0].starts_with("+ 15.000s") && lines[0].contains("waiting for approval until +20.000s"), "{lines:?}");
    // Nobody approves in a preview: the request expires 5 s later, in recorded time.
    assert!(lines[1].starts_with("+ 20.000s") && lines[1].contains("expired"), "{lines:?}");

    let out = preview(&approve, &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let docs: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let waiting = docs.iter().find(|d| d["verdict"] == "awaiting-approval").expect("a request waiting");
    assert_eq!(waiting["action"], "rail.drain");
    assert_eq!(waiting["mode"], "enforce");
    let summary = &docs.last().unwrap()["summary"];
    assert_eq!(summary["by_category"]["waiting for approval"], 1, "{summary}");
    assert_eq!(summary["decisions"].as_u64(), Some(docs.len() as u64 - 1));
}

#[test]
fn diff_lists_the_changed_decision_and_exits_1_and_0_when_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let old = playbook(tmp.path(), "old", "");
    let new = playbook(tmp.path(), "new", "[limits]\nper_kind = { \"rail.drain\" = 0 }\n");
    let out = preview(&new, &["--diff", old.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "a header, the one changed decision, the summary:\n{stdout}");
    assert!(lines[1].starts_with("+ 15.000s  symbol-errors rail.drain"), "{stdout}");
    assert!(lines[1].contains("OLD would execute [enforce]") && lines[1].contains("NEW held: "), "{stdout}");
    assert_eq!(lines[2], "1 decision differs: 1 would now be held");

    let out = preview(&old, &["--diff", old.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("no decision differs\n"), "{}", text(&out));

    let out = preview(&new, &["--diff", old.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let docs: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(docs.len(), 2, "{docs:?}");
    assert_eq!(
        (docs[0]["old"]["verdict"].as_str(), docs[0]["new"]["verdict"].as_str()),
        (Some("executed"), Some("held"))
    );
    assert_eq!(docs[1]["summary"]["differ"], 1);
}

/// The demo recording with job signals added at its start: train-a on every node, eval-b on
/// node-01 and node-02, serve-c on node-03 and node-04, so every node runs two jobs.
fn demo_with_jobs(dir: &Path) -> PathBuf {
    let demo = std::fs::read_to_string(repo("chaos/sim/data/demo.jsonl")).unwrap();
    let declared = demo.lines().take_while(|l| !l.starts_with("{\"s\":")).count();
    let next = demo.lines().filter(|l| l.starts_with("{\"series\":")).count();
    let t0 = 1_700_000_000_000_000_000_i64;
    let placed = [("train-a", "node-01"), ("train-a", "node-02"), ("train-a", "node-03"), ("train-a", "node-04")]
        .into_iter()
        .chain([("eval-b", "node-01"), ("eval-b", "node-02"), ("serve-c", "node-03"), ("serve-c", "node-04")]);
    let (mut series, mut samples) = (Vec::new(), Vec::new());
    for (i, (job, node)) in placed.enumerate() {
        let id = next + i;
        series.push(format!(
            r#"{{"series":{id},"metric":"job_node_info","labels":{{"job":"{job}","node":"{node}"}},"kind":"gauge"}}"#
        ));
        samples.push(format!(r#"{{"s":{id},"t":{t0},"v":1.0}}"#));
    }
    let lines: Vec<&str> = demo.lines().collect();
    let mut out: Vec<String> = lines[..declared].iter().map(|l| l.to_string()).collect();
    out.extend(series.into_iter().chain(samples));
    out.extend(lines[declared..].iter().map(|l| l.to_string()));
    let path = dir.join("demo-with-jobs.jsonl");
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    path
}

#[test]
fn an_action_touching_more_jobs_than_max_jobs_touched_waits_for_approval_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let recording = demo_with_jobs(tmp.path());
    let run = |max: u32| {
        let limited = playbook(tmp.path(), "jobs", &format!("[limits]\nmax_jobs_touched = {max}\n"));
        rocemend(&["preview", "--playbook", limited.to_str().unwrap(), recording.to_str().unwrap()])
    };
    let out = run(1);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // The drain's target is node-04's NIC: serve-c and train-a run there.
    let lines = drain_lines(&out);
    assert_eq!(lines.len(), 1, "{}", text(&out));
    assert!(lines[0].contains("waiting for approval until +915.000s"), "the default 15 min: {lines:?}");
    assert!(lines[0].ends_with("; touches 2 running jobs: serve-c, train-a"), "{lines:?}");
    // The storm's escalation targets leaf-rail3's port Ethernet4, which faces node-02: its jobs, not the leaf's.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let escalation = stdout.lines().find(|l| l.contains("pfcwd.escalate")).unwrap();
    assert!(escalation.ends_with("; touches 2 running jobs: eval-b, train-a"), "{stdout}");

    let out = run(2);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lines = drain_lines(&out);
    assert!(lines.len() == 1 && lines[0].ends_with("would execute"), "at the limit: {lines:?}");
}

#[test]
fn a_malformed_playbook_is_refused_with_exit_2_at_its_line_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = playbook(tmp.path(), "bad", "[limits]\nmax_rails_per_plane = \"one\"\n");
    let out = preview(&bad, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let written = std::fs::read_to_string(&bad).unwrap();
    let line = written.lines().position(|l| l.starts_with("max_rails_per_plane")).unwrap() + 1;
    // The column of the value, after `max_rails_per_plane = `.
    let place = format!("{}:{line}:23: ", bad.display());
    assert!(stderr.contains(&place) && stderr.contains("expected u32"), "{place} in:\n{stderr}");
    assert!(out.stdout.is_empty(), "nothing previewed: {}", text(&out));
}

#[test]
fn replay_diff_prints_what_differs_and_a_summary_and_exits_as_diff_does() {
    let tmp = tempfile::tempdir().unwrap();
    let without = common::standard_rules_without(tmp.path(), "link_flap.rhai");
    let out =
        rocemend(&["replay", "chaos/sim/data/demo.jsonl", "--rules", "rules", "--diff", without.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "a header, the isolation only A proposes, the summary:\n{stdout}");
    assert!(lines[1].contains("A     + 11.000s") && lines[1].contains("link.isolate"), "{stdout}");
    assert_eq!(lines[2], "1 proposal differs: 1 only in A, 0 only in B, 0 at another time in B; 2 the same");

    let out = rocemend(&["replay", "chaos/sim/data/demo.jsonl", "--rules", "rules", "--diff", "rules"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("no proposal differs (3 the same)\n"), "{}", text(&out));
}

#[test]
fn a_ladder_and_its_outcomes_show_on_the_recording() {
    // The demo's storm goes on after the watchdog's escalation: on the ladder's playbook the
    // preview judges each rung on the recording and climbs to the next.
    let out = rocemend(&["preview", "--playbook", "chaos/scenarios/ladder/playbook.toml", "chaos/sim/data/demo.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let find =
        |what: &str| stdout.lines().position(|l| l.contains(what)).unwrap_or_else(|| panic!("{what}:\n{stdout}"));
    let kept =
        find("suppressed: ladder: rung 2 of 3 (link.isolate) is tried only if pfcwd.escalate proves ineffective");
    let first =
        find("pfcwd.escalate {port=\"Ethernet4\",queue=\"3\",switch=\"leaf-rail3\"}  outcome: ineffective after 2.0 s");
    let second =
        find("link.isolate {netdev=\"eth3\",node=\"node-02\"}  would execute (ladder: rung 2 of 3 (link.isolate)");
    let third = find("would execute (ladder: rung 3 of 3 (rail.drain) after link.isolate");
    assert!(kept < first && first < second && second < third, "{stdout}");
    let worked = find("outcome: effective after");
    assert!(third < worked, "{stdout}");
    let summary = stdout.lines().last().unwrap();
    assert!(summary.contains("2 judged ineffective, 1 judged effective"), "{summary}");
}

#[test]
fn a_rule_on_a_canary_group_is_shadowed_out_of_it_and_its_promotion_shows_in_the_diff() {
    // The demo's rail drain is on node-04, in rack-b: out of a group of rack-a.
    let tmp = tempfile::tempdir().unwrap();
    let groups = "[canary_groups.rack-a]\nrack = \"rack-a\"\n\n";
    let canary = playbook(tmp.path(), "canary", &format!("{groups}[rule.symbol-errors]\nenforce_on = \"rack-a\"\n"));
    let out = preview(&canary, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let header = "canary groups (rules enforced there, shadowed elsewhere): rack-a {rack=\"rack-a\"}: symbol-errors";
    assert!(stdout.lines().any(|l| l == header), "{stdout}");
    let lines = drain_lines(&out);
    let shadowed = "shadow: canary group rack-a {rack=\"rack-a\"}: symbol-errors is enforced there only; shadowed here";
    assert!(lines.len() == 1 && lines[0].contains("shadow ") && lines[0].ends_with(shadowed), "{lines:?}");
    assert!(stdout.lines().last().unwrap().contains("1 shadow (out of its canary group)"), "{stdout}");

    // Promotion to the whole fleet: the same playbook without its `enforce_on` line.
    let promoted = playbook(tmp.path(), "promoted", groups);
    let out = preview(&promoted, &["--diff", canary.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "a difference: {}", text(&out));
    let drain = drain_lines(&out);
    assert!(drain.len() == 1 && drain[0].contains("shadow") && drain[0].contains("would execute"), "{drain:?}");
}
