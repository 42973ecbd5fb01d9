//! What `check` reports of the machine it runs on: a control socket a live
//! daemon serves, and a listen address (metrics, web console, control over
//! TCP) another process holds. `run` would fail on either at start; `check`
//! says so before, instead of passing a config that cannot start beside
//! the daemon already running.

use std::net::ToSocketAddrs;
use std::path::Path;

use engine::config::{Locator, TomlError};

use crate::config::DaemonConfig;
use crate::control::socket::{probe, Probe, SocketError};

/// What `check` found in use: problems, and what is in use by this
/// config's own daemon, running (not a problem: `check` of a live config).
#[derive(Debug, Default)]
pub struct InUse {
    /// Taken by another process.
    pub errors: Vec<TomlError>,
    /// The pid of the daemon running on this config's `state_dir`, if one is.
    pub own_daemon: Option<u32>,
}

/// Every socket and address of `config` that is already in use; `socket`
/// is the control socket the daemon would bind. When a daemon holds this
/// config's `state_dir` (its lock file, see `rocemend run`), the socket it
/// serves and the addresses in use are its own: `check` of the config a
/// daemon runs on is not refused for them.
pub fn in_use(config: &DaemonConfig, socket: &Path, at: &Locator) -> InUse {
    let own = state_holder(&config.state_dir);
    if own.is_some() {
        return InUse { errors: Vec::new(), own_daemon: own };
    }
    let mut errors = Vec::new();
    let socket_key: Vec<engine::config::Key<'_>> = if config.control.socket.is_some() {
        vec!["control".into(), "socket".into()]
    } else {
        vec!["state_dir".into()]
    };
    match probe(socket) {
        Ok(Probe::Live { pid }) => {
            let taken = SocketError::Taken { path: socket.to_path_buf(), pid };
            errors.push(at.error(&socket_key, format!("control socket: {taken}")));
        }
        Err(e @ SocketError::NotSocket { .. }) => errors.push(at.error(&socket_key, e.to_string())),
        // Absent or dead: `run` binds it. A path this user cannot probe is
        // `run`'s to report, under the user it runs as.
        Ok(_) | Err(_) => {}
    }
    let listens =
        [("metrics", &config.metrics.listen), ("web", &config.web.listen), ("control", &config.control.listen)];
    for (section, addr) in listens {
        let Some(addr) = addr else { continue };
        if let Some(why) = taken_addr(addr) {
            errors.push(at.error(&[section.into(), "listen".into()], format!("{section}.listen {addr:?}: {why}")));
        }
    }
    InUse { errors, own_daemon: None }
}

/// The lock file a running daemon holds in its state directory, with its pid.
pub const PID_FILE: &str = "rocemend.pid";

/// The pid of the daemon holding `state_dir`'s lock, if one does: the lock
/// is tried without waiting and let go at once.
pub fn state_holder(state_dir: &Path) -> Option<u32> {
    use std::io::Read;
    use std::os::unix::io::AsRawFd;
    let mut file = std::fs::File::open(state_dir.join(PID_FILE)).ok()?;
    // SAFETY: flock on an fd this function owns; no memory is involved.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0 {
        return None; // Nobody holds it (closing the file lets it go).
    }
    let mut text = String::new();
    // Bounded: a pid is a few bytes.
    file.by_ref().take(64).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// Why `addr` cannot be bound because another process holds it, if so. A
/// bind tried and let go at once; port 0 is always free. Other failures
/// (a name that does not resolve, a port this user may not bind) are left
/// to the checks and the start that own them.
fn taken_addr(addr: &str) -> Option<String> {
    let first = addr.to_socket_addrs().ok()?.next()?;
    if first.port() == 0 {
        return None;
    }
    match std::net::TcpListener::bind(first) {
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            Some(format!("address {first} already in use by another process"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_held_by_another_listener_is_reported_and_a_free_one_is_not() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = held.local_addr().unwrap().to_string();
        let why = taken_addr(&addr).expect("a held port is reported");
        assert!(why.contains("already in use"), "{why}");
        drop(held);
        assert_eq!(taken_addr(&addr), None);
        assert_eq!(taken_addr("127.0.0.1:0"), None);
    }
}
