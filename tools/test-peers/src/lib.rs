//! What a test needs from the machine it runs on, and what happens when it
//! is not there.
//!
//! Some tests use real peers: root and network namespaces, iproute2, etcd,
//! Slurm, Alertmanager, Prometheus and node_exporter, chromium, node with
//! playwright-core, a Python with the interop requirements
//! (`ROCEMEND_PYTHON`). On a laptop such a test says why it cannot run and
//! passes without running. In CI that would hide a broken install: a run
//! whose etcd or Slurm did not install would go green. So CI sets
//! `ROCEMEND_REQUIRE_PEERS=1`, and under it a missing peer fails the test
//! with the same reason.
//!
//! - [`missing`]: a peer CI installs is not here. Skips, or fails under
//!   `ROCEMEND_REQUIRE_PEERS=1`.
//! - [`skip`]: something CI cannot have either — RDMA or GPU hardware, a
//!   build without a feature that another CI step builds with. Always
//!   skips; the call site says why CI cannot have it.
//! - [`required`]: whether `ROCEMEND_REQUIRE_PEERS=1` is set, for a test
//!   that must decide before it starts.
//! - [`free_ports`]: loopback ports for a peer to listen on, all different.
//!
//! A test calls one of them and returns:
//!
//! ```
//! fn etcd_missing() -> Option<String> {
//!     // The real check runs `etcd --version`.
//!     None
//! }
//!
//! fn a_test_with_a_real_etcd() {
//!     if let Some(reason) = etcd_missing() {
//!         return test_peers::missing(reason);
//!     }
//!     // … the test, with its etcd.
//! }
//! # a_test_with_a_real_etcd();
//! ```
//!
//! The variable's values, and a typo that must not turn the check off:
//!
//! ```
//! use test_peers::required_by;
//!
//! assert_eq!(required_by(None), Ok(false));
//! assert_eq!(required_by(Some("")), Ok(false));
//! assert_eq!(required_by(Some("0")), Ok(false));
//! assert_eq!(required_by(Some("1")), Ok(true));
//! assert!(required_by(Some("yes")).unwrap_err().contains("ROCEMEND_REQUIRE_PEERS=yes"));
//! ```
//!
//! Under `ROCEMEND_REQUIRE_PEERS=1` a missing peer fails the test, naming
//! what is missing:
//!
//! ```should_panic
//! std::env::set_var("ROCEMEND_REQUIRE_PEERS", "1");
//! test_peers::missing("no `etcd` here (Debian etcd-server)");
//! ```
//!
//! and [`skip`] never does:
//!
//! ```
//! std::env::set_var("ROCEMEND_REQUIRE_PEERS", "1");
//! test_peers::skip("this host has an NVIDIA GPU, and the test is about a host without one");
//! ```

#![deny(missing_docs)]

use std::fmt::Display;

/// The variable under which a missing peer fails the test: CI sets it to 1.
pub const REQUIRE: &str = "ROCEMEND_REQUIRE_PEERS";

/// Whether a missing peer fails the test: `ROCEMEND_REQUIRE_PEERS=1`.
///
/// # Panics
///
/// On a value other than unset, empty, `0` or `1`: a CI script that spells
/// it `true` must not let every peer test skip.
pub fn required() -> bool {
    let value = std::env::var(REQUIRE).ok();
    required_by(value.as_deref()).unwrap_or_else(|e| panic!("{e}"))
}

/// [`required`] for the variable's `value`: `Err` names a value that is
/// neither unset, empty, `0` nor `1`.
pub fn required_by(value: Option<&str>) -> Result<bool, String> {
    match value {
        None | Some("" | "0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(format!("{REQUIRE}={other}: set it to 1 (peers must be here) or 0 (tests may skip)")),
    }
}

/// A peer the calling test needs, and CI installs, is missing, for
/// `reason` (what is missing and which package brings it).
///
/// Prints `skipped: <reason>` and returns, so the test can return; under
/// `ROCEMEND_REQUIRE_PEERS=1` it panics with the reason instead, at the
/// caller's line.
#[track_caller]
pub fn missing(reason: impl Display) {
    if required() {
        panic!(
            "{REQUIRE}=1, and a peer this test needs is missing: {reason}\n\
             (install it as .ci/run does, or unset {REQUIRE} to let the test skip)"
        );
    }
    say_skipped(&reason);
}

/// The calling test cannot run here for `reason`, and CI cannot make it
/// run either (hardware CI machines lack, a build without a feature that
/// another CI step builds with). Prints `skipped: <reason>`, whatever
/// `ROCEMEND_REQUIRE_PEERS` says; the call site says why CI cannot have it.
pub fn skip(reason: impl Display) {
    say_skipped(&reason);
}

/// `skipped: <reason>` on stderr, with the test's name when the harness
/// gave its thread one (it does unless tests run on the main thread).
fn say_skipped(reason: &dyn Display) {
    match std::thread::current().name() {
        Some(test) if test != "main" => eprintln!("skipped {test}: {reason}"),
        _ => eprintln!("skipped: {reason}"),
    }
}

/// `N` loopback ports free now, all different: every listener is held until the last one is
/// bound, since a port picked and released at once can be handed out again by the next pick
/// (an etcd given one port as both its client and peer URL fails to start). Another process
/// may still take one before the peer binds it.
pub fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<std::net::TcpListener> =
        (0..N).map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port")).collect();
    std::array::from_fn(|i| held[i].local_addr().expect("a bound listener's address").port())
}
