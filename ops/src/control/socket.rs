//! One daemon per control socket. Before binding, the path is probed: a
//! socket that answers a connect belongs to a live daemon and is refused
//! (with its pid, from SO_PEERCRED); only a dead one (a crash left it,
//! connect is refused) is replaced. At exit a daemon removes the socket
//! only if it is still the one it bound (same device and inode): a second
//! daemon started by mistake must not take the first one's socket, nor
//! remove it on its way out.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// The control socket cannot be claimed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SocketError {
    /// A live process listens on it.
    #[error("{}", taken(path, *pid))]
    Taken {
        /// The socket.
        path: PathBuf,
        /// The pid of the process that listens (SO_PEERCRED), if the kernel said.
        pid: Option<u32>,
    },
    /// Something that is not a socket is in its place.
    #[error("control socket {}: the path exists and is not a socket; left alone", path.display())]
    NotSocket {
        /// The path.
        path: PathBuf,
    },
    /// The path cannot be probed, removed or bound.
    #[error("control socket {}", path.display())]
    Io {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

fn taken(path: &Path, pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("another rocemend (pid {pid}) serves {}", path.display()),
        None => format!("another process serves {}", path.display()),
    }
}

/// What is at a control socket's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Nothing.
    Absent,
    /// A socket nobody listens on (connect refused): a crash left it.
    Dead,
    /// A socket a process listens on.
    Live {
        /// Its pid, if the kernel said.
        pid: Option<u32>,
    },
}

/// Looks at `path` without changing it: what `check` reports and what a
/// daemon does before it binds.
pub fn probe(path: &Path) -> Result<Probe, SocketError> {
    let io = |source| SocketError::Io { path: path.to_path_buf(), source };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Probe::Absent),
        Err(e) => return Err(io(e)),
    };
    if !meta.file_type().is_socket() {
        return Err(SocketError::NotSocket { path: path.to_path_buf() });
    }
    match UnixStream::connect(path) {
        Ok(stream) => Ok(Probe::Live { pid: peer_pid(&stream) }),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(Probe::Dead),
        Err(e) => Err(io(e)),
    }
}

/// The pid of the process at the other end of `stream`: for a connection
/// to a listening socket, the process that called `listen`.
fn peer_pid(stream: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED writes a `ucred` of at most `len` bytes into
    // `cred`, which lives through the call; the fd is open (borrowed).
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0 && cred.pid > 0).then_some(cred.pid as u32)
}

/// Makes `path` free for a bind: refused if a live process serves it, a
/// dead socket removed, nothing else touched.
pub fn claim(path: &Path) -> Result<(), SocketError> {
    match probe(path)? {
        Probe::Absent => Ok(()),
        Probe::Live { pid } => Err(SocketError::Taken { path: path.to_path_buf(), pid }),
        Probe::Dead => {
            tracing::info!(message = "Replacing a dead control socket.", socket = %path.display());
            match std::fs::remove_file(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(source) => Err(SocketError::Io { path: path.to_path_buf(), source }),
            }
        }
    }
}

/// The socket file a daemon bound, by device and inode: what it may remove.
#[derive(Debug, Clone)]
pub struct OwnedSocket {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl OwnedSocket {
    /// Notes the file at `path` just bound.
    pub fn bound(path: &Path) -> Result<OwnedSocket, SocketError> {
        let meta =
            std::fs::symlink_metadata(path).map_err(|source| SocketError::Io { path: path.to_path_buf(), source })?;
        Ok(OwnedSocket { path: path.to_path_buf(), dev: meta.dev(), ino: meta.ino() })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the socket if it is still the one bound; one that another
    /// process put in its place is left alone. True if it was removed.
    pub fn remove(&self) -> bool {
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.dev() == self.dev && meta.ino() == self.ino => std::fs::remove_file(&self.path).is_ok(),
            Ok(_) => {
                tracing::warn!(
                    message = "The control socket was replaced by another process; left in place.",
                    socket = %self.path.display()
                );
                false
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_socket_is_refused_with_the_listeners_pid_and_a_dead_one_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control.sock");
        assert_eq!(probe(&path).unwrap(), Probe::Absent);
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let expected = Some(std::process::id());
        assert_eq!(probe(&path).unwrap(), Probe::Live { pid: expected });
        let refused = claim(&path).unwrap_err().to_string();
        assert_eq!(refused, format!("another rocemend (pid {}) serves {}", std::process::id(), path.display()));
        assert!(path.exists(), "a live socket is never removed");
        drop(listener);
        assert_eq!(probe(&path).unwrap(), Probe::Dead);
        claim(&path).unwrap();
        assert!(!path.exists(), "a dead socket is replaced");
    }

    #[test]
    fn a_file_that_is_not_a_socket_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control.sock");
        std::fs::write(&path, "not a socket").unwrap();
        assert!(matches!(claim(&path), Err(SocketError::NotSocket { .. })));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a socket");
    }

    #[test]
    fn a_daemon_removes_only_the_socket_it_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control.sock");
        let _first = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let owned = OwnedSocket::bound(&path).unwrap();
        // Moved away, not removed: its inode stays taken, so the second
        // socket cannot reuse its number.
        std::fs::rename(&path, dir.path().join("moved.sock")).unwrap();
        let _second = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert!(!owned.remove(), "another process's socket in its place is not removed");
        assert!(path.exists());
        let theirs = OwnedSocket::bound(&path).unwrap();
        assert!(theirs.remove());
        assert!(!path.exists());
    }
}
