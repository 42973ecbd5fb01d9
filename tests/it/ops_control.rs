//! The control API as operators and job launchers use it, against a real
//! daemon: TCP only with TLS and a token (and the read token only reads),
//! the unix socket for its owner only, and silence / unsilence / job push /
//! watch / incidents / rules (with each rule's record from the ledger) /
//! instances through the CLI.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, daemon_config, decode_lines, slow_step_playbook, text, Daemon, WAIT};

/// A playbook with the slow-step rule and a log actuator for everything,
/// in enforce mode; `extra` is appended to the daemon config.
fn setup(dir: &Path, extra: &str) -> PathBuf {
    let playbook = slow_step_playbook(dir);
    let config = daemon_config(dir, &playbook, None);
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(extra);
    std::fs::write(&config, text).unwrap();
    config
}

fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The address logged after `message`'s `addr=` field.
fn logged_addr(daemon: &mut Daemon, message: &str) -> String {
    daemon.wait_for(&format!("{message:?} with its address in the log"), |d| {
        let log = d.log();
        let line = log.lines().find(|l| l.contains(message))?;
        let rest = &line[line.find("addr=")? + 5..];
        Some(rest.split_whitespace().next()?.trim_matches('"').to_string())
    })
}

fn write_secret(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn tcp_needs_tls_and_the_full_token_for_every_mutating_call() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.join("control.crt"), cert.cert.pem()).unwrap();
    write_secret(&dir.join("control.key"), &cert.key_pair.serialize_pem());
    let (full, read) = ("f0".repeat(16), "r0".repeat(16));
    write_secret(&dir.join("full.token"), &full);
    write_secret(&dir.join("read.token"), &read);
    write_secret(&dir.join("wrong.token"), &"x1".repeat(16));
    let config = setup(
        dir,
        "listen = \"127.0.0.1:0\"\ntls_cert = \"control.crt\"\ntls_key = \"control.key\"\n\
         token_file = \"full.token\"\nread_token_file = \"read.token\"\n",
    );
    let mut daemon = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();
    let addr = logged_addr(&mut daemon, "Control API listening on TCP");
    let port = addr.rsplit(':').next().unwrap().to_string();
    let remote = format!("localhost:{port}");
    let ca = dir.join("control.crt");
    let tcp = |token: Option<&str>, args: &[&str]| {
        let mut cmd = Command::new(bin());
        cmd.args(args).arg("--addr").arg(&remote).arg("--ca").arg(&ca);
        if let Some(t) = token {
            cmd.arg("--token-file").arg(dir.join(t));
        }
        cmd.stdin(Stdio::null()).output().unwrap()
    };

    // No token: nothing, not even a read.
    for args in [&["status"][..], &["mode", "shadow"], &["breaker", "reset"], &["reload"], &["approve", "d1"]] {
        let out = tcp(None, args);
        assert_eq!(out.status.code(), Some(1), "{args:?} without a token: {}", text(&out));
        assert!(text(&out).contains("no bearer token"), "{args:?}: {}", text(&out));
    }
    let out = tcp(Some("wrong.token"), &["mode", "shadow"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("wrong token"), "{}", text(&out));

    // The read token reads, and is refused every mutating call.
    let out = tcp(Some("read.token"), &["status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for args in [
        &["mode", "shadow"][..],
        &["breaker", "reset"],
        &["reload"],
        &["reject", "d1"],
        &["silence", "--target", "gpu-01", "--for", "1h"],
        &["job", "push", "--job", "j", "--node", "gpu-01", "--step-time", "1"],
    ] {
        let out = tcp(Some("read.token"), args);
        assert_eq!(out.status.code(), Some(1), "{args:?} with the read token: {}", text(&out));
        assert!(text(&out).contains("read-only token"), "{args:?}: {}", text(&out));
    }
    assert_eq!(daemon.status()["mode"], "enforce", "no refused call changed the mode");

    // The full token can.
    let out = tcp(Some("full.token"), &["mode", "shadow"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(daemon.status()["mode"], "shadow");

    // A client that does not trust the certificate does not talk.
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.join("other.crt"), other.cert.pem()).unwrap();
    let out = Command::new(bin())
        .args(["status", "--addr", &remote, "--ca"])
        .arg(dir.join("other.crt"))
        .arg("--token-file")
        .arg(dir.join("full.token"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));

    assert!(daemon.stop().success(), "{}", daemon.log());
}

#[test]
fn tcp_without_tls_settings_does_not_start() {
    let tmp = tempfile::tempdir().unwrap();
    let config = setup(tmp.path(), "listen = \"127.0.0.1:0\"\n");
    let out = Command::new(bin()).args(["run", "--config"]).arg(&config).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("needs control.tls_cert"), "{}", text(&out));
}

#[test]
fn the_unix_socket_refuses_other_users_even_when_its_mode_is_opened() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return test_peers::missing("not root; connecting as another user needs setuid");
    }
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // The other user must reach the socket: open the path to it.
    for d in [dir.to_path_buf(), dir.join("state")] {
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = setup(dir, "");
    let socket = dir.join("control.sock");
    let mut daemon = Daemon::start(&config, &socket, &dir.join("daemon.log"));
    daemon.wait_ready();
    // Mode 0666: only SO_PEERCRED is left between nobody and the daemon.
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    // Several times: the daemon hangs up while the client may still be
    // writing its request, and that must end in a refusal, never in SIGPIPE.
    for _ in 0..20 {
        let out = Command::new(bin())
            .args(["mode", "shadow", "--socket"])
            .arg(&socket)
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "nobody must be refused: {:?} {}", out.status, text(&out));
    }
    daemon.wait_logged("Control connection refused: not the daemon's user.");
    assert_eq!(daemon.status()["mode"], "enforce");
    assert!(daemon.stop().success(), "{}", daemon.log());
}

/// `rocemend watch --json` in the background, its lines collected by a thread.
struct Watch {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Watch {
    fn start(socket: &Path) -> Watch {
        let mut child = Command::new(bin())
            .args(["watch", "--json", "--kind", "decision", "--kind", "transition", "--socket"])
            .arg(socket)
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Watch { child, lines }
    }

    /// Events until `n` decisions were seen (or the wait runs out).
    fn until_decisions(&self, n: usize) -> Vec<serde_json::Value> {
        let deadline = Instant::now() + WAIT;
        let mut seen = Vec::new();
        while seen.iter().filter(|e: &&serde_json::Value| e["kind"] == "decision").count() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => seen.push(serde_json::from_str(&line).unwrap()),
                Err(_) => panic!("watch saw {} events, not {n} decisions: {seen:#?}", seen.len()),
            }
        }
        seen
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn silence_job_push_watch_and_the_lists_through_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = setup(dir, "");
    let mut daemon = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();

    let rules = json_lines(&daemon.cli_ok(&["rules", "--json"]));
    assert_eq!(rules.len(), 1, "{rules:#?}");
    assert_eq!((rules[0]["name"].as_str(), rules[0]["health"].as_str()), (Some("slow-step"), Some("ok")));
    assert_eq!(rules[0]["proposals"], 0, "an empty ledger: {rules:#?}");
    assert!(rules[0]["effective_percent"].is_null(), "nothing judged is no share: {rules:#?}");

    silence_gpu_02(&daemon);
    let silenced = push_while_watching(&daemon);
    the_lists_show_both_nodes_firing(&daemon);
    gpu_01_recovers_and_rules_counts_its_cordon_effective(&mut daemon);
    unsilence_and_refuse_a_bad_job_name(&daemon);
    let explain = decode_lines(&daemon.cli_ok(&["explain", &silenced, "--json"]));
    assert_eq!(explain[0].id, silenced);
    assert!(daemon.stop().success(), "{}", daemon.log());
}

/// `silence --target gpu-02` answers silence s1; a silence of nothing is a usage error.
fn silence_gpu_02(daemon: &Daemon) {
    let silence = daemon.cli_ok(&[
        "silence",
        "--target",
        "gpu-02",
        "--for",
        "1h",
        "--reason",
        "maintenance",
        "--by",
        "oncall",
        "--json",
    ]);
    let silence: serde_json::Value = serde_json::from_str(&silence).unwrap();
    assert_eq!(silence["id"], "s1");
    let usage = daemon.cli(&["silence", "--for", "1h"]);
    assert_eq!(usage.status.code(), Some(2), "a silence of nothing is a usage error: {}", text(&usage));
}

/// A job pushed on gpu-01 and gpu-02 while `watch` follows the daemon: the
/// watch sees both decisions, gpu-01's executed and gpu-02's suppressed by
/// the silence. Returns the suppressed decision's id.
fn push_while_watching(daemon: &Daemon) -> String {
    let watch = Watch::start(&daemon.socket);
    // The watch stream is open once the daemon answers the next call; give the
    // subscription a moment to be registered before the push.
    std::thread::sleep(Duration::from_millis(300));
    let out = daemon.cli_ok(&[
        "job",
        "push",
        "--job",
        "llm-7",
        "--node",
        "gpu-01,gpu-02",
        "--step-time",
        "5.5",
        "--busbw",
        "120",
    ]);
    assert_eq!(out.trim(), "6 samples", "2 nodes x (step time, busbw, job_node_info)");

    let events = watch.until_decisions(2);
    assert!(events.iter().any(|e| e["kind"] == "transition" && e["event"]["to"] == "firing"), "{events:#?}");
    let decisions = daemon.decisions();
    assert_eq!(decisions.len(), 2, "{decisions:#?}");
    let on = |node: &str| decisions.iter().find(|d| d.proposal.action.target.get("node") == Some(node)).unwrap();
    assert_eq!(on("gpu-01").verdict.name(), "executed", "{decisions:#?}");
    let silenced = on("gpu-02");
    assert_eq!(silenced.verdict.name(), "suppressed");
    let reason = silenced.verdict.reason().unwrap();
    assert!(reason.contains("silenced (s1, target gpu-02, by oncall") && reason.ends_with(": maintenance"), "{reason}");
    silenced.id.clone()
}

/// `status`, `instances`, `rules` and `incidents` (JSON and table) show the
/// silence and the two firing instances, one incident each.
fn the_lists_show_both_nodes_firing(daemon: &Daemon) {
    let status = daemon.status();
    assert_eq!(status["silences"][0]["id"], "s1", "{status}");
    assert_eq!(status["offenders"], serde_json::json!([]), "no rule climbs a ladder here: {status}");
    let instances = json_lines(&daemon.cli_ok(&["instances", "--json"]));
    assert_eq!(instances.len(), 2, "{instances:#?}");
    assert!(instances.iter().all(|i| i["state"] == "firing" && i["subject"]["job"] == "llm-7"), "{instances:#?}");
    let rules = json_lines(&daemon.cli_ok(&["rules", "--json"]));
    assert_eq!(rules[0]["firing"], 2, "{rules:#?}");
    let record = [&rules[0]["proposals"], &rules[0]["executed"], &rules[0]["effective"], &rules[0]["ineffective"]];
    assert_eq!(record, [2, 1, 0, 0], "gpu-01's cordon executed, gpu-02's suppressed, none judged: {rules:#?}");
    let incidents = json_lines(&daemon.cli_ok(&["incidents", "--json"]));
    assert_eq!(incidents.len(), 2, "one incident per node: {incidents:#?}");
    for i in &incidents {
        assert!(i["id"].as_str().unwrap().starts_with("inc-"));
        assert_eq!(i["state"], "firing");
        assert_eq!(i["decisions"].as_array().unwrap().len(), 1, "{i}");
    }
    let table = daemon.cli_ok(&["incidents"]);
    assert!(table.contains("slow-step") && table.contains("2 incidents"), "{table}");
}

/// gpu-01's step time recovers: the outcome check of its cordon judges it
/// effective, and `rules` shows the rule's record as the ledger holds it:
/// two proposals (gpu-01's executed, gpu-02's suppressed), one executed,
/// one effective, and the median time to effect the check measured.
fn gpu_01_recovers_and_rules_counts_its_cordon_effective(daemon: &mut Daemon) {
    let out = daemon.cli_ok(&["job", "push", "--job", "llm-7", "--node", "gpu-01", "--step-time", "1.5"]);
    assert_eq!(out.trim(), "2 samples", "step time and job_node_info");
    let rule = daemon.wait_for("the outcome check of gpu-01's cordon to be judged", |d| {
        let rule = json_lines(&d.cli_ok(&["rules", "--json"])).into_iter().next()?;
        let judged: u64 =
            ["effective", "ineffective", "harmful", "unread"].iter().filter_map(|k| rule[k].as_u64()).sum();
        (judged > 0).then_some(rule)
    });
    let cordon = daemon
        .decisions()
        .into_iter()
        .find(|d| d.proposal.action.target.get("node") == Some("gpu-01") && d.undo_of.is_none())
        .expect("gpu-01's cordon in the ledger");
    let judged = cordon.outcome.and_then(|o| o.judged).expect("its judgement in the ledger");
    assert_eq!(judged.result.name(), "effective", "{judged:?}");
    assert!(judged.after_ns > 0, "{judged:?}");
    let counts: Vec<u64> = ["proposals", "executed", "effective", "ineffective", "harmful", "unread"]
        .iter()
        .map(|k| rule[k].as_u64().unwrap_or_else(|| panic!("no {k} in {rule}")))
        .collect();
    assert_eq!(counts, [2, 1, 1, 0, 0, 0], "{rule}");
    assert_eq!(rule["effective_percent"].as_f64(), Some(100.0), "{rule}");
    assert_eq!(rule["median_time_to_effect_ns"].as_i64(), Some(judged.after_ns), "of one effective action: {rule}");
    let table = daemon.cli_ok(&["rules"]);
    let row = table.lines().find(|l| l.starts_with("slow-step")).unwrap_or_else(|| panic!("{table}"));
    let to_effect = format!("{:.1} s", judged.after_ns as f64 / 1e9);
    assert!(row.contains(" 1/1 100% ") && row.contains(&to_effect), "{to_effect}: {table}");
}

/// `unsilence s1` works once, then says there is no s1; a job name with a
/// space is a usage error.
fn unsilence_and_refuse_a_bad_job_name(daemon: &Daemon) {
    daemon.cli_ok(&["unsilence", "s1"]);
    let again = daemon.cli(&["unsilence", "s1"]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("no silence s1"), "{}", text(&again));
    assert_eq!(daemon.status()["silences"].as_array().unwrap().len(), 0);

    let bad = daemon.cli(&["job", "push", "--job", "has space", "--step-time", "1"]);
    assert_eq!(bad.status.code(), Some(2), "a bad job name is a usage error: {}", text(&bad));
    assert!(text(&bad).contains("contains ' '"), "{}", text(&bad));
}

#[test]
fn usage_errors_exit_2_and_completions_are_printed() {
    let out = Command::new(bin()).args(["silence", "--rule"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(bin()).args(["completions", shell]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains("rocemend") && script.contains("silence"), "{shell}: {script}");
    }
}

#[test]
fn a_hundred_thousand_decisions_are_listed_through_the_cli_in_pages() {
    use engine::dispatch::{Decision, Mode, Step};
    use engine::ledger::{Ledger, Retention};
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "");
    // 100,000 records of about 1 KiB of JSON each: 100 MB, which one reply
    // of gRPC's 4 MiB could not carry (it failed at 6,200).
    let now = engine::time::wall_clock_now();
    {
        let store = engine::Store::open(&dir.path().join("state").join("state.sled")).unwrap();
        let ledger = Ledger::open(&store, Retention::default()).unwrap();
        for i in 0..100_000 {
            let node = format!("gpu-{:03}", i % 500);
            let target = engine::Labels::from_pairs([("node", node.as_str())]);
            let at = now - 1_000_000 + i;
            let proposal = engine::Proposal {
                id: format!("p{i}"),
                rule: "slow-step".into(),
                rule_hash: "ab".repeat(32),
                rule_mode: Mode::Enforce,
                severity: engine::Severity::Warning,
                subject: target.clone(),
                action: engine::Action { kind: "node.cordon".into(), target, params: Default::default() },
                jobs: Vec::new(),
                values: vec![("step".into(), 2.5)],
                active_at: at,
                sample_at: at,
                decided_at: at,
                restored: false,
            };
            let first = Step { at: now, what: format!("proposed by slow-step for node {node}; shadow mode: recorded") };
            ledger.put(&Decision::new(ledger.next_id().unwrap(), proposal, Mode::Shadow, first, now)).unwrap();
        }
        ledger.flush().unwrap();
    }
    let log = dir.path().join("daemon.log");
    let mut daemon = Daemon::start(&config, &dir.path().join("control.sock"), &log);
    daemon.wait_ready();
    let listed = daemon.decisions();
    assert_eq!(listed.len(), 100_000);
    // `rules` counts them all in one scan, within the CLI's deadline.
    let rules = json_lines(&daemon.cli_ok(&["rules", "--json"]));
    assert_eq!((&rules[0]["proposals"], &rules[0]["executed"]), (&100_000.into(), &0.into()), "{rules:#?}");
    assert!(listed.windows(2).all(|w| w[0].id < w[1].id), "oldest first, none twice");
    // A filter still applies: one node's records, every page of them.
    let out = daemon.cli_ok(&["decisions", "--json", "--target", "gpu-007"]);
    assert_eq!(decode_lines(&out).len(), 200);
    daemon.stop();
}

/// A socket whose daemon accepts and never answers (hung, or a refusal the
/// kernel queued before the daemon saw it): a verb ends with an error within
/// seconds instead of waiting for ever.
#[test]
fn a_socket_that_accepts_and_never_answers_ends_the_verb_with_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("control.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    // Accept, hold every connection open, say nothing.
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for conn in listener.incoming().take(1) {
            open.push(conn.unwrap());
        }
        std::thread::sleep(std::time::Duration::from_secs(40));
        drop(open);
    });
    let started = std::time::Instant::now();
    let out = Command::new(bin()).args(["mode", "shadow", "--socket"]).arg(&socket).output().unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(took < std::time::Duration::from_secs(30), "the verb waited {took:?}");
    drop(held);
}
