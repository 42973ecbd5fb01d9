//! The game's child processes (etcd members, daemons), each in a process
//! group of its own and killed with it when its guard is dropped: on
//! success, on failure, on Ctrl-C (the runner turns the signal into an
//! error, so the guards drop), and when a phase kills one on purpose.
//!
//! A group of its own, so that a Ctrl-C in the terminal reaches only the
//! runner (which then stops everything in order), and a SIGKILL meant for
//! one daemon reaches that daemon and whatever it started, nothing else.
//! The chaos crate has no libc binding, so a group is signalled through the
//! shell's `kill` builtin (`kill -s KILL -- -PGID`); the child itself is
//! then killed through `std` as well, in case no shell is there.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use super::FleetDayError;

/// A child process in a process group of its own, killed (group and all)
/// when dropped.
#[derive(Debug)]
pub struct Proc {
    child: Child,
    log: PathBuf,
    /// Set once it has been reaped.
    status: Option<ExitStatus>,
}

impl Proc {
    /// Starts `command` as `name`, stdout and stderr appended to `log`.
    pub fn spawn(name: &str, mut command: Command, log: &Path) -> Result<Proc, FleetDayError> {
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| FleetDayError::io(format!("creating {}", log.display()), e))?;
        let err = out.try_clone().map_err(|e| FleetDayError::io(format!("opening {}", log.display()), e))?;
        let child = command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| FleetDayError::io(format!("starting {name} ({:?})", command.get_program()), e))?;
        Ok(Proc { child, log: log.to_path_buf(), status: None })
    }

    /// Its exit status, if it has exited (reaped without waiting).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// SIGKILL to its whole process group, then waits for it.
    pub fn kill(&mut self) {
        if self.status.is_some() {
            return;
        }
        kill_group(self.child.id());
        // Without a shell the group kill did nothing: the child at least.
        let _ = self.child.kill();
        self.status = self.child.wait().ok();
    }

    /// The last `lines` lines of its log, for an error message.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILL to process group `pgid`, through the shell's `kill` builtin.
fn kill_group(pgid: u32) {
    let _ = Command::new("sh")
        .args(["-c", "kill -s KILL -- \"-$1\" 2>/dev/null", "sh"])
        .arg(pgid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The last `lines` lines of the file at `path` (at most its last 64 KiB).
pub fn tail(path: &Path, lines: usize) -> String {
    const MAX: u64 = 64 << 10;
    let Ok(mut file) = File::open(path) else { return String::new() };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(MAX)));
    let mut text = String::new();
    let _ = file.take(MAX).read_to_string(&mut text);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_guard_kills_the_child_and_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild");
        let mut cmd = Command::new("sh");
        // The shell starts a grandchild and waits: only a group kill
        // reaches both.
        cmd.args(["-c", &format!("sleep 60 & echo $! > {}; wait", pidfile.display())]);
        let mut p = Proc::spawn("sleeper", cmd, &dir.path().join("log")).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !pidfile.exists() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
            assert!(std::time::Instant::now() < deadline, "the shell did not start its child");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let grandchild = std::fs::read_to_string(&pidfile).unwrap().trim().to_string();
        assert!(p.exited().is_none());
        drop(p);
        // Killed, the grandchild is reaped by init soon after; until then it
        // is a zombie, which counts as gone.
        let gone = || {
            std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
                .map(|s| s.split_whitespace().nth(2) == Some("Z"))
                .unwrap_or(true)
        };
        while !gone() {
            assert!(std::time::Instant::now() < deadline, "the grandchild {grandchild} outlived the guard");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[test]
    fn the_tail_of_a_log_is_its_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, "a\nb\nc\n").unwrap();
        assert_eq!(tail(&log, 2), "b\nc");
        assert_eq!(tail(&dir.path().join("none"), 2), "");
    }
}
