//! The game's child processes (etcd members, daemons), each in a process
//! group of its own and killed with it when its guard is dropped: on
//! success, on failure, on Ctrl-C (the runner turns the signal into an
//! error, so the guards drop), and when a phase kills one on purpose.
//!
//! A group of its own, so that a Ctrl-C in the terminal reaches only the
//! runner (which then stops everything in order), and a SIGKILL meant for
//! one daemon reaches that daemon and whatever it started, nothing else.
//!
//! No guard drops when the runner itself is SIGKILLed (or the OOM killer
//! takes it), so each child also asks the kernel for a SIGKILL when its
//! parent dies (`PR_SET_PDEATHSIG`). The kernel sends it when the *thread*
//! that forked the child exits, not the process: every child is therefore
//! forked by one spawner thread that lives as long as the process
//! ([`spawner`]), whichever thread (a runtime's worker, a blocking pool
//! thread that idles out) asked for it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Sender};
use std::sync::OnceLock;

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
        command.process_group(0).stdin(Stdio::null()).stdout(out).stderr(err);
        die_with_parent(&mut command);
        let program = format!("{:?}", command.get_program());
        let child = spawn(command).map_err(|e| FleetDayError::io(format!("starting {name} ({program})"), e))?;
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
        if !kill_group(self.child.id()) {
            // No such group: the child at least.
            let _ = self.child.kill();
        }
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

/// SIGKILL to process group `pgid` (the child's pid: it leads its own
/// group, and it is not reaped yet, so the id is still its group's).
/// Whether the signal was sent.
fn kill_group(pgid: u32) -> bool {
    // 0 and 1 would name the runner's own group and every process.
    let Some(pgid) = libc::pid_t::try_from(pgid).ok().filter(|p| *p > 1) else { return false };
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; a
    // pid below -1 names exactly that process group.
    unsafe { libc::kill(-pgid, libc::SIGKILL) == 0 }
}

/// Has the kernel SIGKILL the child when the thread that forks it ends:
/// for a [`Proc`] that is the spawner, which lives until the runner exits.
/// A child forked elsewhere (the etcd watch, on a runtime thread) may be
/// killed early if its thread ends before the runner; only one that is
/// started again anyway may rely on this alone.
pub(super) fn die_with_parent(command: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: prctl(2) and getppid(2)
    // are plain system calls, and it allocates nothing (an OS error is a
    // number, not a box).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The runner died before the request was made: the signal will
            // never come, so do not start at all.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// A command to spawn, and where to send the child (or why not).
type Job = (Command, Sender<std::io::Result<Child>>);

/// Spawns `command` from the [`spawner`] thread.
fn spawn(command: Command) -> std::io::Result<Child> {
    let gone = || std::io::Error::other("the chaos spawner thread could not start");
    let spawner = spawner().as_ref().ok_or_else(gone)?;
    let (tx, rx) = mpsc::channel();
    spawner.send((command, tx)).map_err(|_| gone())?;
    rx.recv().map_err(|_| gone())?
}

/// The thread that forks every child, started on first use and never
/// ended (it waits for the next command until the process exits), so that
/// no child's parent-death signal fires before the runner itself exits.
/// `None` if it could not be started.
fn spawner() -> &'static Option<Sender<Job>> {
    static SPAWNER: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let serve = move || {
            for (mut command, reply) in rx {
                let _ = reply.send(command.spawn());
            }
        };
        std::thread::Builder::new().name("chaos-spawner".into()).spawn(serve).ok().map(|_| tx)
    })
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
    fn a_child_outlives_the_thread_that_started_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        // Forked by this short-lived thread, the child would get its
        // parent-death SIGKILL as soon as the thread ends.
        let mut p = std::thread::spawn(move || {
            let mut cmd = Command::new("sleep");
            cmd.arg("60");
            Proc::spawn("sleeper", cmd, &log).unwrap()
        })
        .join()
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(p.exited(), None, "killed with the thread that asked for it");
        p.kill();
        assert!(p.exited().is_some());
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
