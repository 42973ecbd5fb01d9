//! A network namespace with a veth pair for tests of host actuators, and a
//! way to run code inside it ([`net::netns`], with the tests' names).

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Namespaces made by this process so far: the files of the test binary
/// run at once in one process, and `Netns::create` deletes a namespace of
/// the same name first, so each needs a name of its own.
static MADE: AtomicU32 = AtomicU32::new(0);

/// A network namespace with a veth pair, deleted (links and all) on drop.
pub struct Namespace {
    inner: net::netns::Netns,
    /// Its name under /run/netns.
    pub name: String,
    /// The veth inside it.
    pub veth: String,
}

impl Namespace {
    pub fn create() -> Namespace {
        let id = std::process::id() % 100_000;
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let inner = net::netns::Netns::create(&format!("rocemend-link-{id}-{n}")).unwrap();
        let veth = format!("rmv{id}a");
        inner.add_veth(&veth, &format!("rmv{id}b")).unwrap();
        Namespace { name: inner.name.clone(), inner, veth }
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
        self.inner.block_on(f).unwrap()
    }
}

pub fn ip(args: &[&str]) {
    net::netns::run_tool("ip", args).unwrap();
}

pub fn missing() -> Option<String> {
    net::netns::missing_part(&["ip"])
}
