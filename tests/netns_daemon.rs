//! The daemon end to end on a real Linux link: `rocemend run` inside a
//! network namespace with the `netlink_link` sensor and the standard
//! link-flap rule, a veth flapped with `ip link`, and the decision read back
//! over the control socket. Needs root and iproute2; skipped otherwise.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, decode_lines, repo, toml_path};

fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: network namespaces need root".into());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("`ip` (iproute2) is not installed".into());
    }
    None
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Deletes the namespace even when the test fails.
struct Namespace(String);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

#[test]
fn the_daemon_in_a_namespace_isolates_a_flapping_veth() {
    if let Some(reason) = skip_reason() {
        println!("skipped: {reason}");
        return;
    }
    let ns = Namespace(format!("rmd-e2e-{}", std::process::id()));
    ip(&["netns", "add", &ns.0]);
    ip(&["-n", &ns.0, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1"]);
    ip(&["-n", &ns.0, "link", "set", "veth1", "up"]);
    ip(&["-n", &ns.0, "link", "set", "veth0", "up"]);

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let playbook = dir.join("playbook.toml");
    std::fs::write(
        &playbook,
        format!(
            "name = \"e2e\"\nmode = \"dry-run\"\nrules = {}\n[[actuator]]\nname = \"journal\"\ntype = \"log\"\nhandles = [\"*\"]\n",
            toml_path(&repo("rules"))
        ),
    )
    .unwrap();
    let socket = dir.join("control.sock");
    let config = dir.join("rocemend.toml");
    std::fs::write(
        &config,
        format!(
            "node = \"test-node\"\nstate_dir = {}\nplaybook = {}\n[engine]\nreload_poll = \"0\"\n[control]\nsocket = {}\n[[sensor]]\ntype = \"netlink_link\"\ninclude = [\"veth0\"]\nexclude = []\n",
            toml_path(&dir.join("state")),
            toml_path(&playbook),
            toml_path(&socket)
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("daemon.log")).unwrap();
    let mut daemon = Command::new("ip")
        .args(["netns", "exec", &ns.0, bin(), "run", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("ip netns exec runs the daemon");
    let logged = || std::fs::read_to_string(dir.join("daemon.log")).unwrap_or_default();
    let started = Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "the daemon did not start:\n{}", logged());
        std::thread::sleep(Duration::from_millis(50));
    }
    // Give the sensor its first dump of the link before flapping it.
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..3 {
        ip(&["-n", &ns.0, "link", "set", "veth0", "down"]);
        ip(&["-n", &ns.0, "link", "set", "veth0", "up"]);
    }
    let started = Instant::now();
    let decision = loop {
        let out = Command::new(bin()).args(["decisions", "--json", "--socket"]).arg(&socket).output().unwrap();
        let found = decode_lines(&String::from_utf8_lossy(&out.stdout))
            .into_iter()
            .find(|d| d.proposal.action.kind == "link.isolate");
        if let Some(d) = found {
            break d;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "no link.isolate decision:\n{}", logged());
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(decision.proposal.rule, "link-flap");
    assert_eq!(decision.proposal.action.target.get("netdev"), Some("veth0"));
    assert_eq!(decision.proposal.action.target.get("node"), Some("test-node"));
    assert_eq!(decision.verdict.name(), "dry-run");
    let flaps = decision.proposal.values.iter().find(|(k, _)| k == "carrier_losses").map(|(_, v)| *v);
    assert!(flaps.is_some_and(|v| v >= 3.0), "three carrier losses in the evidence: {:?}", decision.proposal.values);
    // SAFETY: kill sends a signal to our own child.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    let _ = daemon.wait();
}
