//! One daemon per state directory, and a clear word when a second one
//! tries: the first takes an exclusive lock on `state_dir/rocemend.pid`
//! and writes its pid there once it holds it; a second finds the lock taken
//! and names the pid it reads. sled locks its database as well, but its
//! refusal says only "could not acquire lock … WouldBlock".

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The state directory's lock, held while the daemon runs; the kernel
/// releases it when the process ends, however it ends.
#[derive(Debug)]
pub(super) struct StateLock {
    _file: File,
}

use ops::plan::taken::PID_FILE;

/// The state directory cannot be claimed.
#[derive(Debug, thiserror::Error)]
pub(super) enum StateLockError {
    /// Another process holds it.
    #[error("state_dir {}: another rocemend (pid {pid}) holds it; stop it first or give this one another state_dir", dir.display())]
    Held {
        /// The state directory.
        dir: PathBuf,
        /// The pid written in the lock file (`unknown` if it was not yet).
        pid: String,
    },
    /// The lock file cannot be opened, locked or written.
    #[error("state_dir {}: lock file {PID_FILE}", dir.display())]
    Io {
        /// The state directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl StateLock {
    /// Takes the lock of `dir` (which exists) and writes this process's pid.
    pub(super) fn take(dir: &Path) -> Result<StateLock, StateLockError> {
        let io = |source| StateLockError::Io { dir: dir.to_path_buf(), source };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(dir.join(PID_FILE))
            .map_err(io)?;
        // SAFETY: flock on an open fd we own; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::WouldBlock {
                return Err(io(error));
            }
            // Bounded: a pid is a few bytes; whatever else is there is not ours.
            let mut text = String::new();
            let _ = (&file).take(64).read_to_string(&mut text);
            let pid = match text.trim() {
                "" => "unknown".to_string(),
                pid => pid.to_string(),
            };
            return Err(StateLockError::Held { dir: dir.to_path_buf(), pid });
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(StateLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_names_the_pid_of_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let first = StateLock::take(dir.path()).unwrap();
        let pid = std::fs::read_to_string(dir.path().join(PID_FILE)).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
        let refused = StateLock::take(dir.path()).unwrap_err().to_string();
        assert!(refused.contains(&format!("another rocemend (pid {})", std::process::id())), "{refused}");
        drop(first);
        StateLock::take(dir.path()).expect("free again once the first is gone");
    }
}
