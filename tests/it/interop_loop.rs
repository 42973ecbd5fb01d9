//! The whole loop against a switch rocemend was not written with:
//! `tests/interop/sonic_target.py`, a SONiC-like gNMI target in Python on
//! PyPI's `gnmi-pb` stubs, strict where gNMI and sonic-gnmi are.
//!
//! A PFC storm on the target is seen by `rocemend run`'s gnmi sensor, the
//! standard `switch-pfc-storm` rule fires, the pfcwd actuator escalates the
//! port's watchdog with a gNMI Set, pygnmi (an independent client) reads the
//! new value back, the storm ends, the rule resolves and the watchdog is
//! restored to what it was. Once in each SONiC path style: with the switch
//! written once, in the inventory, and the sensor and actuator naming it;
//! and in the lab form, the address in each.
//!
//! Runs with the Python in `$ROCEMEND_PYTHON` that has
//! `tests/interop/requirements.txt` installed (`.ci/run` sets it up); skips,
//! saying why, without it.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::interop::SonicTarget;
use common::{repo, toml_path, Daemon};

/// The stormed port and priority (a lossless one of the target's startup
/// config, `pfc_enable 3,4`).
const PORT: &str = "Ethernet4";
const PRIO: u8 = 3;

/// How long the loop may take from the storm to the Set, and from its end
/// to the restore: the rule needs 3 s of samples to fire and 3 s of quiet
/// (plus `keep_firing_for`) to clear; the rest is slack for a loaded CI.
const LOOP: Duration = Duration::from_secs(40);

/// Where the switch is written.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    /// Once, in the inventory; the sensor and the actuator name it.
    Inventory,
    /// Its address and path style in the sensor and in the actuator.
    Lab,
}

/// Writes the daemon config, the playbook, the inventory and a rule
/// directory holding the switch-side PFC storm rule; returns the config's path.
fn write_config(dir: &Path, target: &SonicTarget, style: &str, form: Form) -> std::path::PathBuf {
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::copy(repo("rules/switch_pfc_storm.rhai"), rules.join("switch_pfc_storm.rhai")).unwrap();
    let address = &target.address;
    std::fs::write(
        dir.join("inventory.toml"),
        format!(
            "[[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\naddress = \"{address}\"\npath_style = \"{style}\"\n"
        ),
    )
    .unwrap();
    let (switches, sensor_target) = match form {
        Form::Inventory => ("switches = [\"leaf-rail0\"]".to_string(), String::new()),
        Form::Lab => (
            format!("switches = {{ leaf-rail0 = \"{address}\" }}\npath_style = \"{style}\""),
            format!("address = \"{address}\"\npath_style = \"{style}\"\n"),
        ),
    };
    common::pfcwd_playbook(dir, "interop", &format!("{switches}\ntimeout = \"5s\"\n"));
    let config = dir.join("rocemend.toml");
    std::fs::write(
        &config,
        format!(
            "node = \"node-01\"\nstate_dir = \"state\"\nplaybook = \"playbook.toml\"\ninventory = \"inventory.toml\"\n\
             [engine]\nreload_poll = \"0\"\n\
             [log]\nlevel = \"info\"\n\
             [control]\nsocket = {socket}\n\
             [[sensor]]\ntype = \"gnmi\"\npresets = [\"sonic_pfc\"]\nsample_interval = \"1s\"\n\
             [[sensor.targets]]\nname = \"leaf-rail0\"\n{sensor_target}",
            socket = toml_path(&dir.join("control.sock")),
        ),
    )
    .unwrap();
    config
}

/// `PFC_WD|PORT` as the target holds it (its own view, from its control
/// endpoint).
fn watchdog(target: &SonicTarget) -> serde_json::Value {
    target.state()["config_db"]["PFC_WD"][PORT].clone()
}

/// `PFC_WD|PORT`'s `action`, read back by pygnmi with a Get whose prefix
/// target is CONFIG_DB.
fn pygnmi_action(target: &SonicTarget) -> String {
    let python = std::env::var("ROCEMEND_PYTHON").expect("SonicTarget::start checked it");
    let (host, port) = target.address.rsplit_once(':').unwrap();
    let script = format!(
        "from pygnmi.client import gNMIclient\n\
         with gNMIclient(target=('{host}', {port}), insecure=True) as c:\n\
         \x20   r = c.get(path=['PFC_WD/{PORT}/action'], target='CONFIG_DB', encoding='json_ietf')\n\
         \x20   print(r['notification'][0]['update'][0]['val'])\n"
    );
    let out = Command::new(python).args(["-c", &script]).output().expect("python runs");
    assert!(out.status.success(), "pygnmi's Get failed:\n{}", common::text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Polls `probe` until it is true, at most [`LOOP`]; how long it took.
fn until(what: &str, daemon: &Daemon, target: &SonicTarget, mut probe: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !probe() {
        assert!(
            start.elapsed() < LOOP,
            "{what}: not within {LOOP:?}\n--- daemon log ---\n{}\n--- target log ---\n{}",
            daemon.log(),
            target.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}

fn storm_is_escalated_read_back_and_restored(style: &str, form: Form) {
    let target = match SonicTarget::start(&[]) {
        Ok(target) => target,
        Err(reason) => return test_peers::missing(reason),
    };
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &target, style, form);
    let before = watchdog(&target);
    assert_eq!(before["action"], "alert", "the target starts with the watchdog alerting: {before}");

    let mut daemon = Daemon::start(&config, &dir.path().join("control.sock"), &dir.path().join("daemon.log"));
    daemon.wait_ready();
    target.storm(PORT, PRIO, true);
    let to_set =
        until("the storm is escalated on the switch", &daemon, &target, || watchdog(&target)["action"] == "drop");
    assert_eq!(pygnmi_action(&target), "drop", "an independent client reads the escalation back");
    let decisions = daemon.decisions();
    let escalation = decisions
        .iter()
        .find(|d| d.proposal.action.kind == "pfcwd.escalate")
        .unwrap_or_else(|| panic!("a pfcwd.escalate decision is recorded: {decisions:#?}"));
    assert_eq!(escalation.proposal.action.target.get("port"), Some(PORT), "{escalation:#?}");

    target.storm(PORT, PRIO, false);
    let to_restore =
        until("the watchdog is restored after the storm", &daemon, &target, || watchdog(&target) == before);
    assert_eq!(pygnmi_action(&target), "alert", "an independent client reads the restore back");
    let refused = target.state()["refused"].clone();
    assert_eq!(refused, serde_json::json!([]), "the target refused none of rocemend's requests");
    eprintln!(
        "{style}: storm → Set {:.2} s; storm end → restored {:.2} s",
        to_set.as_secs_f64(),
        to_restore.as_secs_f64()
    );
    daemon.stop();
}

#[test]
fn a_storm_on_an_independent_target_is_escalated_and_undone_with_prefix_targets() {
    storm_is_escalated_read_back_and_restored("prefix-target", Form::Inventory);
}

#[test]
fn a_storm_on_an_independent_target_is_escalated_and_undone_with_sonic_db_origin() {
    storm_is_escalated_read_back_and_restored("sonic-db-origin", Form::Lab);
}

#[test]
fn the_switch_written_once_in_the_inventory_serves_sonic_db_origin_too() {
    storm_is_escalated_read_back_and_restored("sonic-db-origin", Form::Inventory);
}
