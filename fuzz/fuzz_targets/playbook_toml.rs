//! Playbook and sensor settings TOML, arbitrary UTF-8.
//!
//! - A playbook (`Playbook::parse`, then `policy()`, as the daemon's plan
//!   builds it): nothing panics; every error is placed within the text; a
//!   playbook that parses has a policy (else `run` would refuse what
//!   `check` accepted) and an action timeout above 0.
//! - The same text as the settings of each sensor kind (`sensors::build`):
//!   nothing panics. Only the `gnmi` sensor reads files when it is built
//!   (its TLS files and credentials file); those settings are removed
//!   before its build, so the target reads no file a fuzzer names. The
//!   daemon's own config is in the binary crate and cannot be fuzzed from
//!   here.

#![no_main]

use engine::playbook::Playbook;
use libfuzzer_sys::fuzz_target;

/// The `gnmi` settings that name a file its `build` reads.
const FILE_SETTINGS: &[&str] = &["ca", "cert", "key", "credentials_file"];

/// Sensor kinds whose `build` reads no file and starts nothing: paths
/// (`replay`, `nccl_tests`, `rdma_sysfs` `root`, `nvml` `library`) are
/// opened only when the sensor runs.
const KINDS: &[&str] = &["prometheus", "ethtool", "nccl_tests", "netlink_link", "nvml", "rdma_sysfs", "replay"];

fn without_files(table: &mut toml::Table) {
    for setting in FILE_SETTINGS {
        table.remove(*setting);
    }
    for (_, value) in table.iter_mut() {
        match value {
            toml::Value::Table(t) => without_files(t),
            toml::Value::Array(items) => {
                for item in items {
                    if let toml::Value::Table(t) = item {
                        without_files(t);
                    }
                }
            }
            _ => {}
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let lines = text.lines().count().max(1);
    match Playbook::parse(text, "p.toml") {
        Ok(playbook) => {
            if let Err(e) = playbook.policy() {
                panic!("the playbook parses, but its policy does not: {e}");
            }
            assert!(!playbook.timeout().is_zero());
            let _ = (playbook.scopes(), playbook.rule_modes(), playbook.allowed_unsafe());
        }
        Err(errors) => {
            assert!(!errors.is_empty());
            for e in &errors {
                assert!(e.line <= lines + 1, "{e} is past the last line {lines}");
            }
        }
    }
    let Ok(mut settings) = toml::from_str::<toml::Table>(text) else { return };
    for kind in KINDS {
        let _ = sensors::build(kind, "fuzz", settings.clone());
    }
    without_files(&mut settings);
    let _ = sensors::build("gnmi", "fuzz", settings);
});
