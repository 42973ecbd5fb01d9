//! Network namespaces with veth pairs, made with iproute2's `ip` and
//! entered per thread with `setns(2)`: real links for the wall-clock chaos
//! scenarios and for the tests of the link sensor and actuators, without
//! touching the host's own links.
//!
//! A namespace is named under `/run/netns` (as `ip netns add` makes it) and
//! deleted, links and all, when its [`Netns`] is dropped.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;

use crate::NetError;

/// Why namespaces cannot be made here, if they cannot: not root, or one of
/// `tools` (`ip`, `tc`) is not installed. Tests skip with this reason.
pub fn missing_part(tools: &[&str]) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (network namespaces and tc need CAP_NET_ADMIN and CAP_SYS_ADMIN)".into());
    }
    for tool in tools {
        match Command::new(tool).arg("-V").output() {
            Ok(out) if out.status.success() => {}
            _ => return Some(format!("`{tool}` (iproute2) is not installed")),
        }
    }
    None
}

/// Runs `tool args…` and waits; an error carries its stderr.
pub fn run_tool(tool: &str, args: &[&str]) -> Result<(), NetError> {
    let command = format!("{tool} {}", args.join(" "));
    let out = Command::new(tool).args(args).output().map_err(|e| NetError::io(&command, e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetError::Tool { command, stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() })
    }
}

/// Enters the namespace `name` on the calling thread: sockets it opens
/// afterwards are in that namespace. Other threads are not affected.
pub fn enter(name: &str) -> Result<(), NetError> {
    let path = format!("/run/netns/{name}");
    let file = File::open(&path).map_err(|e| NetError::io(format!("opening {path}"), e))?;
    // SAFETY: a valid namespace fd; setns changes only the calling thread.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(NetError::io(format!("setns {path}"), std::io::Error::last_os_error()));
    }
    Ok(())
}

/// A network namespace, deleted on drop.
#[derive(Debug)]
pub struct Netns {
    /// Its name under `/run/netns`.
    pub name: String,
}

impl Netns {
    /// Creates the namespace `name`, deleting a stale one of that name
    /// first (left by a killed run).
    pub fn create(name: &str) -> Result<Netns, NetError> {
        let _ = Command::new("ip").args(["netns", "del", name]).output();
        run_tool("ip", &["netns", "add", name])?;
        Ok(Netns { name: name.to_string() })
    }

    /// Adds the veth pair `link`–`peer` inside, both ends up.
    pub fn add_veth(&self, link: &str, peer: &str) -> Result<(), NetError> {
        self.ip(&["link", "add", link, "type", "veth", "peer", "name", peer])?;
        self.ip(&["link", "set", peer, "up"])?;
        self.ip(&["link", "set", link, "up"])
    }

    /// Runs `ip -n <name> args…`.
    pub fn ip(&self, args: &[&str]) -> Result<(), NetError> {
        run_tool("ip", &[&["-n", self.name.as_str()], args].concat())
    }

    /// Runs `f` on a new thread that has entered the namespace, so every
    /// socket it opens is in it.
    pub fn spawn_in<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<Result<T, NetError>> {
        let name = self.name.clone();
        std::thread::spawn(move || {
            enter(&name)?;
            Ok(f())
        })
    }

    /// Runs the future `f` makes on a current-thread runtime on a thread
    /// inside the namespace, and waits for it.
    pub fn block_on<T, F>(&self, f: impl FnOnce() -> F + Send + 'static) -> Result<T, NetError>
    where
        T: Send + 'static,
        F: std::future::Future<Output = T>,
    {
        let thread = self.spawn_in(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|runtime| runtime.block_on(f()))
                .map_err(|e| NetError::io("starting a runtime in the namespace", e))
        });
        match thread.join() {
            Ok(result) => result?,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_veth_pair_in_a_namespace_is_up_and_seen_only_inside() {
        if let Some(reason) = missing_part(&["ip"]) {
            return test_peers::missing(reason);
        }
        let ns = Netns::create(&format!("rm-net-{}", std::process::id())).unwrap();
        ns.add_veth("rmt0", "rmt0p").unwrap();
        let inside = ns
            .block_on(|| async {
                let handle = crate::link::connect().unwrap();
                crate::link::read(&handle, "rmt0").await.unwrap()
            })
            .unwrap();
        assert!(inside.is_some_and(|l| l.admin_up), "{inside:?}");
        let outside = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
            let handle = crate::link::connect().unwrap();
            crate::link::read(&handle, "rmt0").await.unwrap()
        });
        assert_eq!(outside, None, "the namespace's link is not on the host");
        let downed = ns
            .block_on(|| async {
                let handle = crate::link::connect().unwrap();
                crate::link::set(&handle, "rmt0", false).await.unwrap();
                crate::link::read(&handle, "rmt0").await.unwrap()
            })
            .unwrap();
        assert!(downed.is_some_and(|l| !l.admin_up), "{downed:?}");
        let name = ns.name.clone();
        drop(ns);
        assert!(!std::path::Path::new(&format!("/run/netns/{name}")).exists(), "deleted on drop");
    }

    #[test]
    fn a_failing_tool_reports_its_command_and_stderr() {
        let Err(NetError::Tool { command, stderr }) = run_tool("sh", &["-c", "echo nope >&2; exit 3"]) else {
            panic!("expected a tool error");
        };
        assert_eq!(command, "sh -c echo nope >&2; exit 3");
        assert_eq!(stderr, "nope");
    }
}
