//! The `link` actuator against real links: a veth pair in a network
//! namespace of its own, so nothing on the host is touched.
//!
//! Needs root and `ip` (iproute2); without them it prints `skipped: <reason>`
//! and passes. The actuator runs on a thread that entered the namespace
//! (`setns(CLONE_NEWNET)`) before any netlink socket was opened, with its own
//! current-thread runtime: a socket belongs to the namespace it was created in.

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;

use actuators::LinkConfig;
use engine::{Action, Actuator, Labels, Verification};

/// A network namespace with a veth pair, deleted (links and all) on drop.
struct Namespace {
    name: String,
    veth: String,
}

impl Namespace {
    fn create() -> Namespace {
        let id = std::process::id() % 100_000;
        let ns = Namespace { name: format!("rocemend-link-{id}"), veth: format!("rmv{id}a") };
        let peer = format!("rmv{id}b");
        ip(&["netns", "add", &ns.name]);
        ip(&["-n", &ns.name, "link", "add", &ns.veth, "type", "veth", "peer", "name", &peer]);
        for link in [ns.veth.as_str(), peer.as_str()] {
            ip(&["-n", &ns.name, "link", "set", link, "up"]);
        }
        ns
    }

    /// `ip -o link show` of the veth, in the namespace.
    fn show(&self) -> String {
        let out = Command::new("ip").args(["-n", &self.name, "-o", "link", "show", &self.veth]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs `f` on a thread inside the namespace, on a runtime of its own.
    fn run<T: Send + 'static, F: std::future::Future<Output = T>>(&self, f: impl FnOnce() -> F + Send + 'static) -> T {
        let path = format!("/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).unwrap();
            // SAFETY: setns on a valid namespace fd only changes this thread's namespace.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(f())
        })
        .join()
        .unwrap()
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).status();
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

fn missing() -> Option<String> {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false);
    if !root {
        return Some("not root (network namespaces need it)".into());
    }
    if !["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].iter().any(|p| Path::new(p).exists()) {
        return Some("ip (iproute2) is missing".into());
    }
    None
}

fn isolate(netdev: &str) -> Action {
    Action {
        kind: "link.isolate".into(),
        target: Labels::from_pairs([("node", "gpu-07"), ("netdev", netdev)]),
        params: BTreeMap::from([("reason".into(), "flap".into())]),
    }
}

#[test]
fn a_veth_in_a_namespace_is_taken_down_verified_and_brought_back_up() {
    if let Some(reason) = missing() {
        println!("skipped: {reason}");
        return;
    }
    let ns = Namespace::create();
    assert!(ns.show().contains(",UP"), "{}", ns.show());
    let veth = ns.veth.clone();
    let (plan, applied, in_effect) = ns.run(move || async move {
        let link = LinkConfig { node: Some("gpu-07".into()), ..Default::default() }.build("link").unwrap();
        let action = isolate(&veth);
        assert_eq!(link.verify(&action, None).await.unwrap(), Verification::NotInEffect);
        let plan = link.dry_run(&action).await.unwrap();
        let applied = link.execute(&action).await.unwrap();
        let in_effect = link.verify(&action, Some(&applied)).await.unwrap();
        (plan, applied, in_effect)
    });
    assert_eq!(plan.requests, [format!("rtnetlink RTM_SETLINK {} down", ns.veth)]);
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    assert_eq!(applied.prior, Some(serde_json::json!({ "admin": "up", "oper": "up" })));
    assert_eq!(in_effect, Verification::InEffect);
    let shown = ns.show();
    assert!(!shown.contains(",UP") && shown.contains("state DOWN"), "{shown}");

    let veth = ns.veth.clone();
    let undo_applied = applied.clone();
    let (undo_plan, undone, after) = ns.run(move || async move {
        let link = LinkConfig { node: Some("gpu-07".into()), ..Default::default() }.build("link").unwrap();
        let action = isolate(&veth);
        let undo_plan = link.dry_run_undo(&action, &undo_applied).await.unwrap();
        let undone = link.undo(&action, &undo_applied).await.unwrap();
        let after = link.verify(&action, Some(&undo_applied)).await.unwrap();
        (undo_plan, undone, after)
    });
    assert_eq!(undo_plan.requests, [format!("rtnetlink RTM_SETLINK {} up", ns.veth)]);
    assert_eq!(undone.requests, undo_plan.requests, "dry_run_undo and undo differ");
    assert_eq!(after, Verification::NotInEffect);
    assert!(ns.show().contains(",UP"), "{}", ns.show());

    // A link that is gone is not ours to bring back.
    ip(&["-n", &ns.name, "link", "del", &ns.veth]);
    let veth = ns.veth.clone();
    let gone = ns.run(move || async move {
        let link = LinkConfig { node: Some("gpu-07".into()), ..Default::default() }.build("link").unwrap();
        link.verify(&isolate(&veth), None).await.unwrap()
    });
    assert_eq!(gone, Verification::Changed(format!("link {} no longer exists", ns.veth)));
}
