//! The safety of the real daemon, driven as operators drive it: a crash
//! between an action's intent and its outcome, approvals and the breaker
//! through the CLI, and who may talk to the control socket.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{
    daemon_config, decode_lines, have_sh, last_note, log_playbook, repo, script, sh_quote, text, toml_path, Daemon,
};
use engine::dispatch::{Decision, Phase, Verdict};
use engine::ledger::{Filter, Ledger, Retention};
use engine::store::FLUSH_EVERY_MS;
use engine::{State, Store};

fn of_kind<'a>(decisions: &'a [Decision], kind: &str) -> Vec<&'a Decision> {
    decisions.iter().filter(|d| d.proposal.action.kind == kind && d.undo_of.is_none()).collect()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).map(|t| t.lines().map(str::to_string).collect()).unwrap_or_default()
}

/// A daemon whose `link.*` actuator takes effect at once and then hangs
/// (a tool waiting on a switch that stopped answering), replaying the demo
/// recording; its link flap is isolated at 11 s.
struct HungIsolation {
    config: PathBuf,
    socket: PathBuf,
    /// One line per run of the isolate command.
    invocations: PathBuf,
    /// The pid of the hanging command.
    pid_file: PathBuf,
}

impl HungIsolation {
    fn new(dir: &Path) -> HungIsolation {
        let invocations = dir.join("invocations.log");
        let applied = dir.join("applied");
        let pid_file = dir.join("isolate.pid");
        script(
            &dir.join("isolate.sh"),
            &format!(
                "echo $$ > {pid}\ntouch {applied}\necho \"$*\" >> {log}\nexec sleep 30\n",
                pid = sh_quote(&pid_file),
                applied = sh_quote(&applied),
                log = sh_quote(&invocations),
            ),
        );
        script(&dir.join("verify.sh"), &format!("[ -e {} ] && exit 0\nexit 1\n", sh_quote(&applied)));
        let playbook = dir.join("playbook.toml");
        // Timeouts of a minute, so the hanging command is still in flight when
        // the daemon is killed (at 10 s it would time out, verify, and record an
        // outcome before the crash).
        std::fs::write(
            &playbook,
            format!(
                r#"name = "crash-safety"
mode = "enforce"
rules = {rules}
action_timeout = "60s"

[[actuator]]
name = "isolate"
type = "exec"
handles = ["link.*"]
like = "link"
argv = [{isolate}, "{{kind}}", "{{target.node}}", "{{target.netdev}}"]
verify_argv = [{verify}, "{{target.node}}", "{{target.netdev}}"]
timeout = "60s"

[[actuator]]
name = "journal"
type = "log"
handles = ["*"]
like = ["pfcwd", "ecn", "rail", "link", "cordon"]
"#,
                rules = toml_path(&repo("rules")),
                isolate = toml_path(&dir.join("isolate.sh")),
                verify = toml_path(&dir.join("verify.sh")),
            ),
        )
        .unwrap();
        HungIsolation {
            config: daemon_config(dir, &playbook, Some(&repo("chaos/sim/data/demo.jsonl"))),
            socket: dir.join("control.sock"),
            invocations,
            pid_file,
        }
    }

    /// Starts the daemon and waits until the isolate command runs.
    fn start_until_isolating(&self, log: &Path) -> Daemon {
        let mut daemon = Daemon::start(&self.config, &self.socket, log);
        let invocations = &self.invocations;
        let call = daemon.wait_for("the link.isolate command to run", |_| lines(invocations).into_iter().next());
        assert_eq!(call, "link.isolate node-03 eth6", "the link flap of the recording is isolated");
        daemon
    }

    /// SIGKILLs the daemon, then ends the command it left hanging.
    fn crash(&self, daemon: &mut Daemon) {
        daemon.kill();
        let pid = std::fs::read_to_string(&self.pid_file).ok().and_then(|p| p.trim().parse::<libc::pid_t>().ok());
        if let Some(pid) = pid {
            // SAFETY: kill(2) has no memory-safety preconditions; the pid is
            // the script our daemon started, still sleeping its 30 s.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    /// Starts the daemon again and waits until its replay has been decided.
    fn restart(&self, log: &Path) -> Daemon {
        let mut daemon = Daemon::start(&self.config, &self.socket, log);
        daemon.wait_ready();
        // The recording's last note (22 s) comes after every fault it holds.
        daemon.wait_logged(&last_note(&repo("chaos/sim/data/demo.jsonl")));
        // A round trip through the run loop and the dispatcher: what the
        // replay proposed before that note has been decided by the time it
        // answers.
        daemon.status();
        daemon
    }
}

#[test]
fn a_daemon_killed_between_intent_and_outcome_verifies_and_does_not_repeat() {
    if !have_sh() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let rig = HungIsolation::new(dir);
    let mut first = rig.start_until_isolating(&dir.join("first.log"));
    rig.crash(&mut first);

    // What the crash left on disk: the intent, flushed before the command ran.
    {
        let store = Store::open(&dir.join("state/state.sled")).expect("the state survives a SIGKILL");
        let intents = Ledger::open(&store, Retention::default()).unwrap().open_intents().unwrap();
        assert_eq!(intents.len(), 1, "{intents:#?}\n--- daemon log ---\n{}", first.log());
        assert_eq!(intents[0].proposal.action.kind, "link.isolate");
    }

    // The same daemon again: it reconciles, and the replay plays again from the start.
    let mut second = rig.restart(&dir.join("second.log"));
    let decisions = second.decisions();
    let log = second.log();
    let invocations = &rig.invocations;

    let isolations = of_kind(&decisions, "link.isolate");
    assert_eq!(isolations.len(), 1, "one decision, reconciled, not a second one: {decisions:#?}\n{log}");
    let d = isolations[0];
    assert_eq!(d.phase, Phase::Done, "{d:#?}");
    assert_eq!(d.verdict.name(), "executed", "the verify command found it in effect: {d:#?}");
    assert!(d.steps.iter().any(|s| s.what.contains("reconciled after a restart")), "{:#?}", d.steps);
    assert_eq!(lines(invocations).len(), 1, "the command never ran again:\n{log}");
    // The PFC storm's escalation went out once, before the crash; its
    // restored instance (resolved, in cooldown) does not propose it again.
    let escalations = of_kind(&decisions, "pfcwd.escalate");
    assert_eq!(escalations.len(), 1, "{decisions:#?}");
    assert_eq!(escalations[0].verdict.name(), "executed");

    let status = second.stop();
    assert!(status.success(), "SIGTERM is a clean stop: {status}\n{}", second.log());
}

/// Pins a crash-safety gap: while the dispatcher waits on a hung action,
/// the evaluator goes on, fires the symbol-error rule (15 s) and persists
/// its instance as firing; the proposal waits in the dispatcher's queue, in
/// memory. A crash loses it, and the restored firing instance never
/// proposes again, so the burst never gets a decision.
#[test]
fn a_proposal_queued_behind_a_hung_action_is_decided_after_a_crash() {
    if !have_sh() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let rig = HungIsolation::new(dir);
    let mut first = rig.start_until_isolating(&dir.join("first.log"));
    // Long enough for sled's own flush to write the instance states.
    std::thread::sleep(Duration::from_millis(3 * FLUSH_EVERY_MS));
    rig.crash(&mut first);
    {
        let store = Store::open(&dir.join("state/state.sled")).unwrap();
        let instances = store.instances_of("symbol-errors").unwrap();
        assert!(instances.values().any(|i| i.state == State::Firing), "persisted as firing: {instances:?}");
        let ledger = Ledger::open(&store, Retention::default()).unwrap();
        let drains = ledger.list(&Filter::default()).unwrap();
        assert!(of_kind(&drains, "rail.drain").is_empty(), "and not yet decided: {drains:#?}");
    }

    let mut second = rig.restart(&dir.join("second.log"));
    let decisions = second.decisions();
    assert_eq!(
        of_kind(&decisions, "rail.drain").len(),
        1,
        "the symbol-error burst on node-04 eth1 gets a decision: {decisions:#?}\n{}",
        second.log()
    );
    second.stop();
}

#[test]
fn approve_reject_and_breaker_reset_through_the_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = approvals_config(dir);
    let mut daemon = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();
    let pending = daemon.wait_for("three requests awaiting approval", |d| {
        let pending = d.pending();
        (pending.len() >= 3).then_some(pending)
    });
    assert_eq!(pending.len(), 3, "{pending:#?}");
    let id_of = |kind: &str| {
        let found = of_kind(&pending, kind);
        assert_eq!(found.len(), 1, "one {kind} request: {pending:#?}");
        assert_eq!(found[0].verdict.name(), "awaiting-approval");
        found[0].id.clone()
    };
    let (escalate, isolate, drain) = (id_of("pfcwd.escalate"), id_of("link.isolate"), id_of("rail.drain"));

    let out = daemon.cli_ok(&["approve", &escalate, "--by", "alice"]);
    assert!(out.contains(&escalate) && out.contains("executed"), "{out}");
    let chain = decode_lines(&daemon.cli_ok(&["explain", &escalate, "--json"]));
    assert_eq!(chain.len(), 1, "no undo links: {chain:#?}");
    assert_eq!(chain[0].verdict.name(), "executed", "{:#?}", chain[0]);
    assert_eq!(chain[0].actuator.as_deref(), Some("journal"));
    assert!(chain[0].steps.iter().any(|s| s.what == "approved by alice"), "{:#?}", chain[0].steps);

    let out = daemon.cli_ok(&["reject", &isolate, "--by", "bob"]);
    assert!(out.contains(&isolate) && out.contains("rejected"), "{out}");
    let again = daemon.cli(&["approve", &isolate, "--by", "alice"]);
    // A refused request is a failure (1), not a usage error (2).
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("not waiting for approval"), "{}", text(&again));

    let out = daemon.cli_ok(&["breaker", "reset", "--by", "carol"]);
    assert!(out.contains("breaker reset"), "{out}");

    let decisions = daemon.decisions();
    assert_eq!(decisions.len(), 3, "{decisions:#?}");
    let verdict_of = |id: &str| &decisions.iter().find(|d| d.id == id).unwrap_or_else(|| panic!("no {id}")).verdict;
    assert!(matches!(verdict_of(&escalate), Verdict::Executed { .. }), "{decisions:#?}");
    assert_eq!(verdict_of(&isolate), &Verdict::Rejected { by: "bob".into() });
    assert!(matches!(verdict_of(&drain), Verdict::AwaitingApproval { .. }), "{decisions:#?}");
    let still: Vec<String> = daemon.pending().into_iter().map(|d| d.id).collect();
    assert_eq!(still, [drain], "only the untouched request still waits");

    let status = daemon.stop();
    assert!(status.success(), "SIGTERM is a clean stop: {status}\n{}", daemon.log());
}

/// A daemon config in `dir` replaying the demo recording under a playbook
/// that asks approval for every action.
fn approvals_config(dir: &Path) -> PathBuf {
    // The standard rules, except that the PFC storm stays firing: in the
    // recording it resolves at 10.3 s, before the link flap is proposed at
    // 11 s, and a request whose fault resolved expires. With 10 minutes of
    // `keep_firing_for` all three requests wait together.
    let rules = dir.join("rules");
    std::fs::create_dir(&rules).unwrap();
    for entry in std::fs::read_dir(repo("rules")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rhai") {
            let mut source = std::fs::read_to_string(&path).unwrap();
            if path.file_name().is_some_and(|n| n == "pfc_storm.rhai") {
                let short = "keep_firing_for: \"1s\"";
                assert_eq!(source.matches(short).count(), 1, "pfc_storm.rhai changed; adapt this test");
                source = source.replace(short, "keep_firing_for: \"10m\"");
            }
            std::fs::write(rules.join(path.file_name().unwrap()), source).unwrap();
        }
    }
    let playbook = dir.join("playbook.toml");
    std::fs::write(
        &playbook,
        format!(
            r#"name = "approvals"
mode = "enforce"
rules = {rules}

[[actuator]]
name = "journal"
type = "log"
handles = ["*"]
like = ["pfcwd", "ecn", "rail", "link", "cordon"]

[[approval]]
actions = ["*"]
timeout = "10m"
"#,
            rules = toml_path(&rules),
        ),
    )
    .unwrap();
    daemon_config(dir, &playbook, Some(&repo("chaos/sim/data/demo.jsonl")))
}

#[test]
fn the_control_socket_is_private() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let playbook = log_playbook(dir, "quiet", None, &repo("rules"));
    let config = daemon_config(dir, &playbook, None);
    let socket = dir.join("control.sock");
    let mut daemon = Daemon::start(&config, &socket, &dir.join("daemon.log"));
    // Once it answers, the socket is bound and its mode set.
    daemon.wait_ready();
    let meta = std::fs::metadata(&socket).unwrap();
    assert!(meta.file_type().is_socket(), "{}", socket.display());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "only the daemon's user may connect");

    let status = daemon.stop();
    assert!(status.success(), "SIGTERM is a clean stop: {status}\n{}", daemon.log());
    assert!(!socket.exists(), "a stopped daemon removes its socket");
}
