//! The systemd unit passes `systemd-analyze verify` with no warning and
//! grants only NET_ADMIN.

use std::process::Command;

use crate::common::repo;

#[test]
fn the_systemd_unit_verifies_without_warnings() {
    if Command::new("systemd-analyze").arg("--version").output().is_err() {
        return test_peers::missing("systemd-analyze is not installed (Debian package systemd)");
    }
    let unit = std::fs::read_to_string(repo("packaging/systemd/rocemend.service")).unwrap();
    // verify checks that ExecStart's binary exists: point it at the one just built.
    let unit = unit.replace("/usr/bin/rocemend", env!("CARGO_BIN_EXE_rocemend"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rocemend.service");
    std::fs::write(&path, unit).unwrap();
    let out = Command::new("systemd-analyze").arg("verify").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "systemd-analyze verify failed:\n{stderr}");
    // Unknown keys and bad values are warnings with exit 0: any line about our unit is a failure.
    let about_unit: Vec<&str> = stderr.lines().filter(|l| l.contains("rocemend.service")).collect();
    assert!(about_unit.is_empty(), "systemd-analyze warns about the unit:\n{}", about_unit.join("\n"));
}

#[test]
fn the_unit_grants_only_net_admin() {
    let unit = std::fs::read_to_string(repo("packaging/systemd/rocemend.service")).unwrap();
    let value = |key: &str| -> Vec<String> {
        unit.lines().filter_map(|l| l.strip_prefix(&format!("{key}="))).map(str::to_string).collect()
    };
    assert_eq!(value("CapabilityBoundingSet"), ["CAP_NET_ADMIN"]);
    assert_eq!(value("AmbientCapabilities"), ["CAP_NET_ADMIN"]);
    assert_eq!(value("ProtectSystem"), ["strict"]);
    assert_eq!(value("NoNewPrivileges"), ["yes"]);
}
