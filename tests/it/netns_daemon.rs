//! The daemon end to end on a real Linux link: `rocemend run` inside a
//! network namespace with the `netlink_link` sensor and the standard
//! link-flap rule, a veth flapped with `ip link`, and the decision read back
//! over the control socket. Needs root and iproute2; skipped otherwise.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, decode_lines, log_playbook, repo, toml_path};
use net::netns::{self, Netns};

#[test]
fn the_daemon_in_a_namespace_isolates_a_flapping_veth() {
    if let Some(reason) = netns::missing_part(&["ip"]) {
        return test_peers::missing(reason);
    }
    let ns = Netns::create(&format!("rmd-e2e-{}", std::process::id())).unwrap();
    ns.add_veth("veth0", "veth1").unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let playbook = log_playbook(dir, "e2e", Some("dry-run"), &repo("rules"));
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
        .args(["netns", "exec", &ns.name, bin(), "run", "--config"])
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
        ns.ip(&["link", "set", "veth0", "down"]).unwrap();
        ns.ip(&["link", "set", "veth0", "up"]).unwrap();
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
