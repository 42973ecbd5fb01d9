//! What the tests of the binary share: a daemon started as a child process
//! on a temp dir, the CLI pointed at its control socket, and bounded waits
//! that fail with the daemon's log in the message.

// Each helper is used by some tests only.
#![allow(dead_code)]

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use engine::dispatch::Decision;

/// The longest any single wait may take. A debug build replays the whole
/// demo recording in well under a second; twenty leave room for a loaded CI
/// machine without letting a hung daemon hang the suite.
pub const WAIT: Duration = Duration::from_secs(20);

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(50);

/// A path in the repository.
pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocemend")
}

/// Stdout then stderr of a finished command.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `path` as a TOML basic string (JSON string escapes are valid TOML ones).
pub fn toml_path(path: &Path) -> String {
    serde_json::to_string(&path.display().to_string()).expect("a string serializes")
}

/// Writes an executable `/bin/sh` script.
pub fn script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `path` quoted for `/bin/sh`.
pub fn sh_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

/// Whether a test of daemons coordinating through a real etcd can run with
/// this build here: it needs the `etcd` feature (the daemons are this
/// binary) and etcd's `etcd` and `etcdctl`. If not, says why (a missing
/// etcd fails under `ROCEMEND_REQUIRE_PEERS=1`, at the caller's line).
#[track_caller]
pub fn etcd_here() -> bool {
    if !cfg!(feature = "etcd") {
        // Not a missing peer: `cargo test --workspace` builds without the
        // feature, and .ci/run runs these tests again in a build with it.
        test_peers::skip("the test binary is built without the etcd feature (cargo test --features etcd)");
        return false;
    }
    for (tool, arg) in [("etcd", "--version"), ("etcdctl", "version")] {
        if !Command::new(tool).arg(arg).output().is_ok_and(|o| o.status.success()) {
            test_peers::missing(format!("no `{tool}` here (Debian etcd-server, etcd-client)"));
            return false;
        }
    }
    true
}

/// Writes `dir/playbook.toml`: playbook `name` enforcing the rules in `dir/rules` with one
/// pfcwd actuator, whose `[gnmi]` table is `gnmi`, undoing escalations when they resolve.
pub fn pfcwd_playbook(dir: &Path, name: &str, gnmi: &str) {
    std::fs::write(
        dir.join("playbook.toml"),
        format!(
            "name = \"{name}\"\nmode = \"enforce\"\nrules = \"rules\"\n\
             [undo]\non_resolve = [\"pfcwd.*\"]\n\
             [[actuator]]\nname = \"pfcwd\"\ntype = \"pfcwd\"\nhandles = [\"pfcwd.*\"]\n\
             [actuator.gnmi]\n{gnmi}"
        ),
    )
    .unwrap();
}

/// Whether `/bin/sh` exists; if not, says why the calling test cannot run.
#[track_caller]
pub fn have_sh() -> bool {
    let there = Path::new("/bin/sh").exists();
    if !there {
        test_peers::missing("/bin/sh is missing, and the test's actuator is a shell script");
    }
    there
}

/// A `rocemend run` child process. Dropping it kills the process, so a
/// failed test leaves no daemon behind.
pub struct Daemon {
    child: Child,
    /// Where its stdout and stderr go.
    log: PathBuf,
    /// Its control socket.
    pub socket: PathBuf,
}

impl Daemon {
    /// Starts `rocemend run --config CONFIG`, whose control socket is
    /// `socket`, logging to `log` (appended, so restarts can share one).
    pub fn start(config: &Path, socket: &Path, log: &Path) -> Daemon {
        // sun_path holds 108 bytes; a longer path fails at bind with a less
        // obvious error.
        assert!(socket.as_os_str().len() < 100, "socket path too long for a unix socket: {}", socket.display());
        let out = OpenOptions::new().create(true).append(true).open(log).expect("the log file opens");
        let err = out.try_clone().expect("the log file handle clones");
        let child = Command::new(bin())
            .arg("run")
            .arg("--config")
            .arg(config)
            .current_dir(config.parent().expect("the config is in a directory"))
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("the rocemend binary starts");
        Daemon { child, log: log.to_path_buf(), socket: socket.to_path_buf() }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the daemon has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_else(|e| format!("<cannot read {}: {e}>", self.log.display()))
    }

    /// Runs `rocemend ARGS… --socket SOCKET`.
    pub fn cli(&self, args: &[&str]) -> Output {
        Command::new(bin())
            .args(args)
            .arg("--socket")
            .arg(&self.socket)
            .stdin(Stdio::null())
            .output()
            .expect("the rocemend binary runs")
    }

    /// Runs the CLI and returns its stdout; fails the test, with the
    /// daemon's log, if it does not exit 0.
    pub fn cli_ok(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "`rocemend {}` failed:\n{}\n--- daemon log ---\n{}",
            args.join(" "),
            text(&out),
            self.log()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Calls `probe` until it returns a value, at most [`WAIT`]; fails the
    /// test, with the daemon's log, on timeout or if the daemon exits.
    pub fn wait_for<T>(&mut self, what: &str, mut probe: impl FnMut(&Daemon) -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(value) = probe(self) {
                return value;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the daemon exited ({status}) while the test waited for {what}\n--- daemon log ---\n{}",
                    self.log()
                );
            }
            if Instant::now() >= deadline {
                panic!("gave up after {WAIT:?} waiting for {what}\n--- daemon log ---\n{}", self.log());
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until the control API answers `status`.
    pub fn wait_ready(&mut self) {
        self.wait_for("the control API to answer `status`", |d| {
            d.cli(&["status", "--json"]).status.success().then_some(())
        });
    }

    /// Waits until the log contains `needle`.
    pub fn wait_logged(&mut self, needle: &str) {
        self.wait_for(&format!("{needle:?} in the daemon's log"), |d| d.log().contains(needle).then_some(()));
    }

    /// `rocemend status --json`, parsed.
    pub fn status(&self) -> serde_json::Value {
        let out = self.cli_ok(&["status", "--json"]);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("`status --json` is not JSON ({e}):\n{out}"))
    }

    /// The requests awaiting approval, from `rocemend status --json`.
    pub fn pending(&self) -> Vec<Decision> {
        let status = self.status();
        let pending = status["pending"].as_array().unwrap_or_else(|| panic!("no pending list in {status}"));
        pending.iter().map(|p| serde_json::from_value(p.clone()).expect("a pending request is a decision")).collect()
    }

    /// The ledger, from `rocemend decisions --json`, oldest first.
    pub fn decisions(&self) -> Vec<Decision> {
        decode_lines(&self.cli_ok(&["decisions", "--json"]))
    }

    /// Sends SIGKILL (as a crash or the OOM killer would) and reaps the process.
    pub fn kill(&mut self) {
        self.child.kill().expect("the daemon can be killed");
        self.child.wait().expect("the killed daemon is reaped");
    }

    /// Waits, at most `limit`, for the daemon to exit by itself; whether it did.
    pub fn wait_exit(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(POLL);
        }
        false
    }

    /// Sends SIGTERM and waits, at most [`WAIT`], for the daemon to exit.
    pub fn stop(&mut self) -> ExitStatus {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid fits pid_t");
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our
        // own child, not yet reaped, so it cannot name another process.
        let sent = unsafe { libc::kill(pid, libc::SIGTERM) };
        assert_eq!(sent, 0, "SIGTERM to the daemon: {}", std::io::Error::last_os_error());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("the daemon's status can be read") {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the daemon did not exit within {WAIT:?} of SIGTERM\n--- daemon log ---\n{}", self.log());
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Ledger records, one JSON object a line (`decisions --json`, `explain --json`).
pub fn decode_lines(out: &str) -> Vec<Decision> {
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a ledger record ({e}): {l}")))
        .collect()
}

/// The text of the last note (fault marker) of a recording. The run loop
/// logs a note when it takes the note's batch, after every earlier batch
/// was evaluated, so it marks how far a replay has got; "Sensor finished."
/// does not: the sensor may end while its batches still wait in the channel.
pub fn last_note(recording: &Path) -> String {
    let text = std::fs::read_to_string(recording).expect("the recording is readable");
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("note").is_some())
        .find_map(|v| v["text"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("{} has no note", recording.display()))
}

/// The daemon configuration the tests use: state, control socket and log
/// level in `dir`, the example inventory, `playbook`, the sample clock (the
/// recording's own time), no hot reload, and, if given, a replay of
/// `recording` as fast as the engine takes it.
pub fn daemon_config(dir: &Path, playbook: &Path, recording: Option<&Path>) -> PathBuf {
    let mut text = format!(
        "state_dir = \"state\"\n\
         inventory = {inventory}\n\
         playbook = {playbook}\n\
         [engine]\n\
         clock = \"samples\"\n\
         reload_poll = \"0\"\n\
         [log]\n\
         level = \"info\"\n\
         [control]\n\
         socket = {socket}\n",
        inventory = toml_path(&repo("docs/examples/inventory.toml")),
        playbook = toml_path(playbook),
        socket = toml_path(&dir.join("control.sock")),
    );
    if let Some(recording) = recording {
        text.push_str(&format!("[[sensor]]\ntype = \"replay\"\npath = {}\nspeed = 0.0\n", toml_path(recording)));
    }
    let path = dir.join("rocemend.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A rule on the job signal (tests/it/ops_control.rs, tests/it/ops_timeline.rs): a step slower than 2 s cordons the node.
pub const SLOW_STEP: &str = r#"
fn fire(w) { w.step > 2.0 }
fn clear(w) { w.step <= 2.0 }
#{
    name: "slow-step",
    description: "A training step took more than 2 s",
    severity: "warning",
    mode: "enforce",
    select: ["job_step_time_seconds"],
    group_by: ["job", "node"],
    windows: #{ step: last("job_step_time_seconds") },
    actions: [ #{ action: "node.cordon", target: #{ node: "{node}" } } ],
}
"#;

/// A copy of the standard rules (`rules/`) in `dir/rules`, without the
/// file `left_out`: a second rule set that differs by one rule.
pub fn standard_rules_without(dir: &Path, left_out: &str) -> PathBuf {
    let without = dir.join("rules");
    std::fs::create_dir(&without).unwrap();
    for entry in std::fs::read_dir(repo("rules")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name.ends_with(".rhai") && name != left_out {
            std::fs::copy(&path, without.join(&name)).unwrap();
        }
    }
    without
}

/// The headless browser on this machine, if any (Debian's `chromium`).
pub fn chromium() -> Option<String> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
        .map(String::from)
}

/// Headless Chromium with a fresh profile, for pages that lay themselves
/// out in a script.
pub struct Browser {
    path: String,
    profile: PathBuf,
}

impl Browser {
    /// The browser, its profile in `dir`; `None` (and the reason, which
    /// fails under `ROCEMEND_REQUIRE_PEERS=1`) when none is installed.
    #[track_caller]
    pub fn find(dir: &Path) -> Option<Browser> {
        let Some(path) = chromium() else {
            test_peers::missing("chromium is not installed (Debian chromium)");
            return None;
        };
        Some(Browser { path, profile: dir.join("profile") })
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000"])
            .arg(format!("--user-data-dir={}", self.profile.display()));
        cmd
    }

    /// The DOM of the page at `url` after its scripts ran.
    pub fn dom(&self, url: &str) -> String {
        let out = self.command().arg("--dump-dom").arg(url).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A screenshot of `url` at `size` (`W,H`) into `shot`; checks it is a
    /// PNG and not a blank image.
    pub fn screenshot(&self, url: &str, size: &str, shot: &Path) {
        let out = self
            .command()
            .arg(format!("--screenshot={}", shot.display()))
            .arg(format!("--window-size={size}"))
            .arg(url)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let png = std::fs::read(shot).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert!(png.len() > 10_000, "a page with timelines is not a blank {}-byte image", png.len());
    }
}

/// A playbook `dir/playbook.toml` named `name` over the rule directory
/// `rules`, with `mode` if given and a log actuator for everything.
pub fn log_playbook(dir: &Path, name: &str, mode: Option<&str>, rules: &Path) -> PathBuf {
    let playbook = dir.join("playbook.toml");
    let mode = mode.map(|m| format!("mode = \"{m}\"\n")).unwrap_or_default();
    std::fs::write(
        &playbook,
        format!(
            "name = \"{name}\"\n{mode}rules = {}\n[[actuator]]\nname = \"journal\"\ntype = \"log\"\nhandles = [\"*\"]\nlike = [\"pfcwd\", \"ecn\", \"rail\", \"link\", \"cordon\"]\n",
            toml_path(rules)
        ),
    )
    .unwrap();
    playbook
}

/// The slow-step rule in `dir/rules` and a playbook of it in enforce mode
/// with a log actuator for everything; returns the playbook's path.
pub fn slow_step_playbook(dir: &Path) -> PathBuf {
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(rules.join("slow_step.rhai"), SLOW_STEP).unwrap();
    log_playbook(dir, "ops", Some("enforce"), &rules)
}
pub mod http;
pub mod interop;
pub mod storms;
