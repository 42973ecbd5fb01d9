//! A network namespace with a veth pair for tests of host actuators, and a
//! way to run code inside it.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;

/// A network namespace with a veth pair, deleted (links and all) on drop.
pub struct Namespace {
    /// Its name under /run/netns.
    pub name: String,
    /// The veth inside it.
    pub veth: String,
}

impl Namespace {
    pub fn create() -> Namespace {
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
    pub fn show(&self) -> String {
        let out = Command::new("ip").args(["-n", &self.name, "-o", "link", "show", &self.veth]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs `f` on a thread inside the namespace, on a runtime of its own.
    pub fn run<T: Send + 'static, F: std::future::Future<Output = T>>(
        &self,
        f: impl FnOnce() -> F + Send + 'static,
    ) -> T {
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

pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

pub fn missing() -> Option<String> {
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
