//! A second daemon started beside a first, by mistake: on the same control
//! socket it is refused with the first one's pid and leaves the socket in
//! place; on the same state directory it is refused with one clear line.
//! `check` says the same of the second one's config before it starts.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{bin, daemon_config, slow_step_playbook, text, Daemon, WAIT};

/// The first daemon's config in `dir`, and a second one's: the first's
/// text with `from` replaced by `to`.
fn configs(dir: &Path, from: &str, to: &str) -> (PathBuf, PathBuf) {
    let first = daemon_config(dir, &slow_step_playbook(dir), None);
    let text = std::fs::read_to_string(&first).unwrap();
    assert!(text.contains(from), "the config holds {from:?}:\n{text}");
    let second = dir.join("second.toml");
    std::fs::write(&second, text.replace(from, to)).unwrap();
    (first, second)
}

/// Starts the second daemon and waits for it to give up; its log.
fn second_refused(config: &Path, socket: &Path, log: &Path) -> String {
    let mut second = Daemon::start(config, socket, log);
    assert!(second.wait_exit(WAIT), "the second daemon was refused and exited\n{}", second.log());
    second.log()
}

#[test]
fn a_second_daemon_on_the_same_socket_is_refused_and_the_first_stays_in_control() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (first_config, second_config) = configs(dir, "state_dir = \"state\"", "state_dir = \"state-2\"");
    let socket = dir.join("control.sock");
    let mut first = Daemon::start(&first_config, &socket, &dir.join("first.log"));
    first.wait_ready();
    let refusal = format!("another rocemend (pid {}) serves {}", first.pid(), socket.display());

    let check =
        |config: &Path| Command::new(bin()).arg("check").arg("--config").arg(config).stdin(Stdio::null()).output();
    let checked = check(&second_config).unwrap();
    assert!(!checked.status.success(), "check passed a config whose socket is served:\n{}", text(&checked));
    assert!(text(&checked).contains(&refusal), "check names the daemon that serves it:\n{}", text(&checked));
    // The first daemon's own config still passes: what is in use is its own.
    let own = check(&first_config).unwrap();
    assert!(own.status.success(), "check of the running daemon's own config:\n{}", text(&own));
    assert!(text(&own).contains(&format!("its daemon runs (pid {})", first.pid())), "{}", text(&own));

    let log = second_refused(&second_config, &socket, &dir.join("second.log"));
    assert!(log.contains(&refusal), "the refusal names the first daemon's pid:\n{log}");
    assert!(socket.exists(), "the second daemon left the first one's socket in place");
    first.cli_ok(&["mode", "shadow"]);
    assert_eq!(first.status()["mode"], "shadow", "the mode reached the first daemon");
    assert!(first.stop().success());
    assert!(!socket.exists(), "the first daemon removed its own socket at exit");
}

#[test]
fn a_second_daemon_on_the_same_state_is_refused_once_with_the_holders_pid() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let socket = dir.join("control.sock");
    let second_socket = dir.join("second.sock");
    let (first_config, second_config) = configs(dir, &common::toml_path(&socket), &common::toml_path(&second_socket));
    let mut first = Daemon::start(&first_config, &socket, &dir.join("first.log"));
    first.wait_ready();

    let log = second_refused(&second_config, &second_socket, &dir.join("second.log"));
    let refusal = format!("another rocemend (pid {}) holds it", first.pid());
    assert_eq!(log.matches(&refusal).count(), 1, "said once, with the pid:\n{log}");
    assert!(!log.contains("Os {"), "no raw OS error:\n{log}");
    assert!(!second_socket.exists(), "the refused daemon bound nothing");
    first.wait_ready();
    assert!(first.stop().success());
}
