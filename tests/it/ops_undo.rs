//! An operator's hand on a running daemon, through the CLI: `undo` of an
//! action in effect, `resolve` of an incident, the breaker's trips, approval
//! expiry and silences in `status`, silences kept across a restart, and an
//! undo that a SIGKILL right after does not make the restart repeat.
//!
//! The cordon actuator is an `exec` script that keeps one file per cordoned
//! node and appends every call to a log, so the tests read what was really
//! done to the "fabric", not only what the ledger says.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{
    daemon_config, decode_lines, have_sh, script, sh_quote, slow_step_playbook, text, toml_path, Daemon, SLOW_STEP,
};
use engine::dispatch::{Decision, Phase, Verdict};

/// The script's call log, one `VERB NODE` a line.
fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls")).unwrap_or_default().lines().map(str::to_string).collect()
}

/// The slow-step rule with an `exec` cordon actuator that can verify and
/// undo, in enforce mode, without the target cooldown (so a node can be
/// cordoned again in one test); `extra` is appended to the playbook.
fn cordon_daemon(dir: &Path, extra: &str) -> PathBuf {
    let playbook = slow_step_playbook(dir);
    let actuator = dir.join("cordon.sh");
    let (nodes, log) = (sh_quote(&dir.join("nodes")), sh_quote(&dir.join("calls")));
    script(
        &actuator,
        &format!(
            "mkdir -p {nodes}\necho \"$1 $2\" >> {log}\ncase \"$1\" in\n\
             apply) touch {nodes}/\"$2\" ;;\nundo) rm -f {nodes}/\"$2\" ;;\n\
             verify) test -f {nodes}/\"$2\" ;;\nesac\n"
        ),
    );
    let rules = dir.join("rules");
    let a = toml_path(&actuator);
    let text = format!(
        "name = \"undo\"\nmode = \"enforce\"\nrules = {rules}\nallow_unsafe = true\n\n[target]\ncooldown = \"0s\"\n\n\
         [[actuator]]\nname = \"cordon\"\ntype = \"exec\"\nhandles = [\"node.cordon\"]\nlike = \"cordon\"\n\
         argv = [{a}, \"apply\", \"{{target.node}}\"]\n\
         verify_argv = [{a}, \"verify\", \"{{target.node}}\"]\n\
         undo_argv = [{a}, \"undo\", \"{{target.node}}\"]\n{extra}",
        rules = toml_path(&rules),
    );
    std::fs::write(&playbook, text).unwrap();
    daemon_config(dir, &playbook, None)
}

fn start(config: &Path, dir: &Path) -> Daemon {
    let mut daemon = Daemon::start(config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();
    daemon
}

/// Pushes a step time for `node` of job `llm-7`.
fn push(daemon: &Daemon, node: &str, step: &str) {
    daemon.cli_ok(&["job", "push", "--job", "llm-7", "--node", node, "--step-time", step]);
}

/// Waits until the ledger holds `n` final decisions that are not undos
/// (an action's intent is recorded before its outcome), and returns them.
fn wait_actions(daemon: &mut Daemon, n: usize) -> Vec<Decision> {
    daemon.wait_for(&format!("{n} decisions"), |d| {
        let actions: Vec<Decision> = d.decisions().into_iter().filter(|d| d.undo_of.is_none()).collect();
        (actions.len() >= n && actions.iter().all(|d| d.phase != Phase::Intent)).then_some(actions)
    })
}

fn undos(daemon: &Daemon) -> Vec<Decision> {
    daemon.decisions().into_iter().filter(|d| d.undo_of.is_some()).collect()
}

fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn undo_restores_the_target_reads_it_back_and_refuses_what_is_not_in_effect() {
    if !have_sh() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut daemon = start(&cordon_daemon(dir, ""), dir);
    push(&daemon, "gpu-01", "5.5");
    let cordon = wait_actions(&mut daemon, 1).remove(0);
    assert!(matches!(cordon.verdict, Verdict::Executed { .. }), "{cordon:#?}");
    assert!(dir.join("nodes/gpu-01").exists());

    let out = daemon.cli_ok(&["undo", &cordon.id, "--by", "alice"]);
    assert!(out.contains(&format!("undo of {}", cordon.id)) && out.contains("executed"), "{out}");
    assert!(!dir.join("nodes/gpu-01").exists(), "the cordon is lifted");
    // Verified as we left it, restored, read back.
    assert_eq!(
        calls(dir)[calls(dir).len() - 3..],
        ["verify gpu-01", "undo gpu-01", "verify gpu-01"],
        "{:?}",
        calls(dir)
    );

    let undo = undos(&daemon).remove(0);
    let chain = decode_lines(&daemon.cli_ok(&["explain", &undo.id, "--json"]));
    assert_eq!(chain[0].undo_of.as_deref(), Some(cordon.id.as_str()));
    assert!(chain[0].steps[0].what.ends_with("asked by alice"), "{:#?}", chain[0].steps);
    assert!(matches!(chain[0].verdict, Verdict::Executed { .. }), "{:#?}", chain[0]);
    assert_eq!(chain[1].undone_by.as_deref(), Some(undo.id.as_str()), "{chain:#?}");
    assert_eq!(daemon.status()["in_effect"].as_array().unwrap().len(), 0, "no longer in effect");

    let again = daemon.cli(&["undo", &cordon.id, "--by", "alice"]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains(&format!("already undone by {}", undo.id)), "{}", text(&again));
    let unknown = daemon.cli(&["undo", "00000000ff"]);
    assert_eq!(unknown.status.code(), Some(1), "an unknown id, as approve says it: {}", text(&unknown));
    assert!(text(&unknown).contains("no decision 00000000ff"), "{}", text(&unknown));
    let invalid = daemon.cli(&["undo", "inc-0123456789ab"]);
    assert_eq!(invalid.status.code(), Some(2), "not a decision id at all: {}", text(&invalid));
    assert!(text(&invalid).contains("rocemend resolve"), "{}", text(&invalid));
    assert_eq!(calls(dir).iter().filter(|c| c.starts_with("undo")).count(), 1, "refusals send nothing");

    // No longer in effect: the fault, cleared and back, is acted on again.
    push(&daemon, "gpu-01", "1.0");
    push(&daemon, "gpu-01", "5.5");
    let actions = wait_actions(&mut daemon, 2);
    assert!(matches!(actions[1].verdict, Verdict::Executed { .. }), "{actions:#?}");
    assert!(dir.join("nodes/gpu-01").exists());
    assert!(daemon.stop().success(), "{}", daemon.log());
}

#[test]
fn resolve_ends_an_incident_as_its_rule_would_and_only_once() {
    if !have_sh() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut daemon = start(&cordon_daemon(dir, "\n[undo]\non_resolve = [\"node.cordon\"]\n"), dir);
    push(&daemon, "gpu-01", "5.5");
    let cordon = wait_actions(&mut daemon, 1).remove(0);
    let incidents = json_lines(&daemon.cli_ok(&["incidents", "--json"]));
    assert_eq!((incidents.len(), incidents[0]["state"].as_str()), (1, Some("firing")), "{incidents:#?}");
    let id = incidents[0]["id"].as_str().unwrap().to_string();

    let out = daemon.cli_ok(&["resolve", &id, "--by", "bob"]);
    assert!(out.contains("resolved by bob") && out.contains(&format!("undo of {}", cordon.id)), "{out}");
    assert!(!dir.join("nodes/gpu-01").exists(), "on_resolve undid the cordon");
    let undo = undos(&daemon).remove(0);
    assert!(undo.steps[0].what.starts_with("slow-step resolved by bob: undo"), "{:#?}", undo.steps);
    assert!(matches!(undo.verdict, Verdict::Executed { .. }), "{undo:#?}");

    let incidents = json_lines(&daemon.cli_ok(&["incidents", "--json"]));
    assert_eq!(incidents[0]["state"], "resolved", "{incidents:#?}");
    assert_eq!(incidents[0]["resolved_by"], "bob", "{incidents:#?}");
    // The rule's own instance is left as it is: the condition still holds.
    let instances = json_lines(&daemon.cli_ok(&["instances", "--json"]));
    assert_eq!(instances[0]["state"], "firing", "{instances:#?}");

    let again = daemon.cli(&["resolve", &id, "--by", "bob"]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("it was resolved by bob"), "{}", text(&again));
    let unknown = daemon.cli(&["resolve", "inc-000000000000"]);
    assert_eq!(unknown.status.code(), Some(1), "{}", text(&unknown));
    assert!(text(&unknown).contains("no incident inc-000000000000"), "{}", text(&unknown));
    let invalid = daemon.cli(&["resolve", &cordon.id]);
    assert_eq!(invalid.status.code(), Some(2), "a decision id is not an incident id: {}", text(&invalid));
    assert_eq!(calls(dir).iter().filter(|c| c.starts_with("undo")).count(), 1);
    assert!(daemon.stop().success(), "{}", daemon.log());
}

/// The slow-step rule (`common::SLOW_STEP`) asking for a cordon (waits for
/// approval) and a drain (one per window: the second node's is over the
/// limit, which trips the breaker).
fn cordon_and_drain() -> String {
    let cordon = r#"actions: [ #{ action: "node.cordon", target: #{ node: "{node}" } } ],"#;
    assert!(SLOW_STEP.contains(cordon), "SLOW_STEP asks for a cordon");
    let both = r#"actions: [
        #{ action: "node.cordon", target: #{ node: "{node}" } },
        #{ action: "node.drain", target: #{ node: "{node}" } },
    ],"#;
    SLOW_STEP.replace(cordon, both)
}

#[test]
fn status_shows_the_breakers_trips_when_approvals_expire_and_the_silences() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let playbook = slow_step_playbook(dir);
    std::fs::write(dir.join("rules/slow_step.rhai"), cordon_and_drain()).unwrap();
    let mut text = std::fs::read_to_string(&playbook).unwrap();
    text.push_str(
        "\n[breaker]\ntrip_after = 1\n\n[limits]\nper_kind = { \"node.drain\" = 1 }\n\n\
         [[approval]]\nactions = [\"node.cordon\"]\ntimeout = \"10m\"\n",
    );
    std::fs::write(&playbook, text).unwrap();
    let mut daemon = start(&daemon_config(dir, &playbook, None), dir);
    daemon.cli_ok(&["silence", "--target", "gpu-09", "--for", "2h", "--reason", "maintenance", "--by", "oncall"]);
    daemon.cli_ok(&["job", "push", "--job", "llm-7", "--node", "gpu-01,gpu-02", "--step-time", "5.5"]);
    let decisions = wait_actions(&mut daemon, 4);
    let verdicts: Vec<&str> = decisions.iter().map(|d| d.verdict.name()).collect();
    assert_eq!(verdicts.iter().filter(|v| **v == "awaiting-approval").count(), 2, "{decisions:#?}");
    assert_eq!(verdicts.iter().filter(|v| **v == "held").count(), 1, "{decisions:#?}");
    let request = decisions.iter().find(|d| d.proposal.action.kind == "node.cordon").unwrap();
    let Verdict::AwaitingApproval { expires_at } = request.verdict else { panic!("{decisions:#?}") };
    let expires = engine::time::rfc3339(expires_at);

    let table = daemon.cli_ok(&["status"]);
    assert!(table.contains("breaker   TRIPPED at"), "{table}");
    assert!(table.contains("trips   1 within the last 600s"), "{table}");
    assert!(table.contains("limit: at most 1 node.drain per 600s; 1 already"), "{table}");
    assert!(table.contains(&format!("{}  slow-step  node.cordon", request.id)), "{table}");
    assert!(table.contains(&format!("expires {expires}")) && expires.ends_with('Z'), "{table}");
    assert!(table.contains("s1  rule *  target gpu-09  until") && table.contains("by oncall  maintenance"), "{table}");

    let status = daemon.status();
    assert_eq!(status["breaker_trips"]["in_window"], 1, "{status}");
    assert!(status["breaker_trips"]["last"][0]["reason"].as_str().unwrap().contains("node.drain"), "{status}");
    assert_eq!(status["pending_expiry"][0]["id"], request.id.as_str(), "{status}");
    assert_eq!(status["pending_expiry"][0]["expires_at"], expires.as_str(), "{status}");
    assert_eq!(status["silences"][0]["id"], "s1", "{status}");

    // A reset closes the breaker; its trips stay in the history.
    daemon.cli_ok(&["breaker", "reset", "--by", "carol"]);
    let status = daemon.status();
    assert_eq!(status["breaker"]["tripped_at"], serde_json::Value::Null, "{status}");
    assert_eq!(status["breaker_trips"]["in_window"], 1, "{status}");
    assert!(daemon.stop().success(), "{}", daemon.log());
}

#[test]
fn a_silence_survives_a_sigkill_and_still_suppresses() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = daemon_config(dir, &slow_step_playbook(dir), None);
    let mut daemon = start(&config, dir);
    let set =
        daemon.cli_ok(&["silence", "--target", "gpu-02", "--for", "1h", "--reason", "maintenance", "--by", "oncall"]);
    assert!(set.starts_with("s1 "), "{set}");
    daemon.kill();

    let mut daemon = start(&config, dir);
    let status = daemon.status();
    assert_eq!(status["silences"][0]["id"], "s1", "{status}");
    assert_eq!(status["silences"][0]["by"], "oncall", "{status}");
    daemon.cli_ok(&["job", "push", "--job", "llm-7", "--node", "gpu-01,gpu-02", "--step-time", "5.5"]);
    let decisions = wait_actions(&mut daemon, 2);
    let on = |node: &str| decisions.iter().find(|d| d.proposal.action.target.get("node") == Some(node)).unwrap();
    assert_eq!(on("gpu-01").verdict.name(), "executed", "{decisions:#?}");
    let reason = on("gpu-02").verdict.reason().unwrap_or_default().to_string();
    assert!(reason.starts_with("silenced (s1, target gpu-02, by oncall"), "{decisions:#?}");
    // Ids go on: a new silence never takes the id decisions already quote.
    let next = daemon.cli_ok(&["silence", "--rule", "slow-step", "--for", "1h"]);
    assert!(next.starts_with("s2 "), "{next}");
    daemon.cli_ok(&["unsilence", "s1"]);
    daemon.stop();
    let daemon = start(&config, dir);
    let ids: Vec<String> =
        daemon.status()["silences"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids, ["s2"], "a lifted silence stays lifted");
}

#[test]
fn an_undo_recorded_before_a_sigkill_is_not_repeated_at_restart() {
    if !have_sh() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = cordon_daemon(dir, "");
    let mut daemon = start(&config, dir);
    push(&daemon, "gpu-01", "5.5");
    let cordon = wait_actions(&mut daemon, 1).remove(0);
    daemon.cli_ok(&["undo", &cordon.id, "--by", "alice"]);
    daemon.kill();

    let daemon = start(&config, dir);
    // The instance is still firing in the state database: the next
    // evaluation proposes its cordon again, marked restored.
    push(&daemon, "gpu-01", "5.5");
    std::thread::sleep(Duration::from_millis(500));
    let decisions = daemon.decisions();
    assert_eq!(undos(&daemon).len(), 1, "{decisions:#?}");
    assert!(decisions.iter().all(|d| d.verdict.name() != "interrupted" && d.phase != Phase::Intent), "{decisions:#?}");
    let done: Vec<String> = calls(dir).into_iter().filter(|c| !c.starts_with("verify")).collect();
    assert_eq!(done, ["apply gpu-01", "undo gpu-01"], "nothing repeated: {:?}", calls(dir));
    assert_eq!(daemon.status()["in_effect"].as_array().unwrap().len(), 0);
}
