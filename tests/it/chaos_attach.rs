//! A game day against a daemon that is already running: `rocemend chaos run
//! --daemon SOCKET` starts no daemon of its own, flaps the link of the
//! namespace it runs in, and reads the decisions back from the running
//! daemon's control socket. Both processes run in a private network
//! namespace with a veth pair, the daemon with its ordinary `netlink_link`
//! sensor and the real `link` actuator. Needs root and iproute2; skipped
//! otherwise (CI runs it as root).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !Command::new("ip").arg("-V").output().is_ok_and(|o| o.status.success()) {
        return Some("ip (iproute2) missing".into());
    }
    None
}

fn ip(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A namespace with the veth pair `rcv0`/`rcv0p`, both up; deleted on drop.
struct Netns(String);

impl Netns {
    fn new() -> Netns {
        let name = format!("rm-attach-{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let ns = Netns(name);
        ip(&["-n", &ns.0, "link", "add", "rcv0", "type", "veth", "peer", "name", "rcv0p"]);
        ip(&["-n", &ns.0, "link", "set", "rcv0p", "up"]);
        ip(&["-n", &ns.0, "link", "set", "rcv0", "up"]);
        ns
    }

    /// `rocemend ARGS…` inside the namespace.
    fn rocemend(&self, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).arg(env!("CARGO_BIN_EXE_rocemend")).args(args);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// The daemon; killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn config(dir: &Path) -> PathBuf {
    let text = format!(
        "node = \"chaos-veth\"\n\
         state_dir = \"state\"\n\
         playbook = {playbook:?}\n\
         [engine]\n\
         reload_poll = \"0\"\n\
         [control]\n\
         socket = {socket:?}\n\
         [[sensor]]\n\
         type = \"netlink_link\"\n\
         include = [\"rcv0\"]\n",
        playbook = repo("playbooks/veth.toml").display().to_string(),
        socket = dir.join("control.sock").display().to_string(),
    );
    let path = dir.join("rocemend.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_game_day_attaches_to_a_running_daemon_and_reads_its_decisions() {
    if let Some(reason) = skip_reason() {
        return test_peers::missing(reason);
    }
    let ns = Netns::new();
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let socket = dir.path().join("control.sock");
    let log = std::fs::File::create(dir.path().join("daemon.log")).unwrap();
    let daemon = Running(
        ns.rocemend(&["run", "--config", config.to_str().unwrap()])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap(),
    );
    let daemon_log = || std::fs::read_to_string(dir.path().join("daemon.log")).unwrap_or_default();
    // Ready once it answers on its control socket.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = Command::new(env!("CARGO_BIN_EXE_rocemend"))
            .args(["status", "--socket", socket.to_str().unwrap()])
            .output()
            .unwrap();
        if status.status.success() {
            break;
        }
        assert!(Instant::now() < deadline, "the daemon never answered:\n{}", daemon_log());
        std::thread::sleep(Duration::from_millis(100));
    }
    // Let the sensor read the link once before the flaps.
    std::thread::sleep(Duration::from_millis(300));

    let out = tempfile::tempdir().unwrap();
    let scenario = repo("chaos/scenarios/wall/veth_link_flap.toml");
    let run = ns
        .rocemend(&["chaos", "run", "--quiet", "--runs", "1", "--daemon", socket.to_str().unwrap(), "--out"])
        .arg(out.path())
        .arg(&scenario)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).to_string();
    let report: Value = std::fs::read(out.path().join("veth_link_flap.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or_else(|e| panic!("no report: {e}\n{stderr}\n--- daemon ---\n{}", daemon_log()));
    assert_eq!(run.status.code(), Some(0), "{stderr}\n--- daemon ---\n{}", daemon_log());

    // The decisions are the running daemon's, read back over its socket.
    let decisions = report["runs"][0]["decisions"].as_array().unwrap();
    let isolated: Vec<&Value> =
        decisions.iter().filter(|d| d["action"] == "link.isolate" && d["verdict"] == "executed").collect();
    assert_eq!(isolated.len(), 1, "one isolation: {decisions:?}");
    assert_eq!(isolated[0]["target"]["netdev"], "rcv0");
    assert_eq!(isolated[0]["target"]["node"], "chaos-veth");
    // And it really took the link down, in the namespace both ran in.
    let link = ip(&["-n", &ns.0, "-o", "link", "show", "rcv0"]);
    let flags = link.split('<').nth(1).and_then(|f| f.split('>').next()).unwrap_or_default();
    assert!(!flags.split(',').any(|f| f == "UP"), "rcv0 is still up: {link}");
    drop(daemon);
}
