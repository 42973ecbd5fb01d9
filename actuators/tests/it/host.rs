//! The host sides of `ecn` and `pfcwd`: DCQCN sysfs knobs under a temporary
//! root (with a rollback when a write fails part way), and the ethtool
//! tunable `pfc-prevention-tout` on a veth in a network namespace, which
//! has none: a clear "not supported".
//!
//! The veth test needs root and `ip` (iproute2); without them it prints
//! `skipped: <reason>` and passes.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use actuators::{EcnConfig, PfcwdConfig};
use common::netns::{missing, Namespace};
use engine::{Action, Actuator, ActuatorError, Labels, Verification};

fn action(kind: &str, netdev: &str, params: &[(&str, &str)]) -> Action {
    Action {
        kind: kind.into(),
        target: Labels::from_pairs([("node", "gpu-07"), ("netdev", netdev)]),
        params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
    }
}

/// A fake `/sys/class/net` with the mlx5 DCQCN files of `netdev`, all `0`.
fn sysfs(root: &Path, netdev: &str) {
    for side in ["roce_np", "roce_rp"] {
        let dir = root.join(netdev).join("ecn").join(side);
        std::fs::create_dir_all(dir.join("enable")).unwrap();
        for prio in 0..8 {
            std::fs::write(dir.join("enable").join(prio.to_string()), "0\n").unwrap();
        }
    }
    std::fs::write(root.join(netdev).join("ecn/roce_np/cnp_dscp"), "26\n").unwrap();
    std::fs::write(root.join(netdev).join("ecn/roce_rp/rpg_gd"), "11\n").unwrap();
}

fn read(root: &Path, file: &str) -> String {
    std::fs::read_to_string(root.join(file)).unwrap().trim().to_string()
}

#[tokio::test]
async fn dcqcn_knobs_are_set_verified_and_restored_under_a_temporary_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    sysfs(root, "eth3");
    let config = format!("[host]\nnode = \"gpu-07\"\nsysfs_root = {:?}\n", root.display().to_string());
    let ecn = toml::from_str::<EcnConfig>(&config).unwrap().build("ecn").unwrap();
    let enable = action("ecn.dcqcn", "eth3", &[("prio", "3"), ("np.cnp_dscp", "48"), ("rp.rpg_gd", "9")]);

    let plan = ecn.dry_run(&enable).await.unwrap();
    let r = root.display();
    assert_eq!(
        plan.requests,
        [
            format!("write {r}/eth3/ecn/roce_np/enable/3 = 1"),
            format!("write {r}/eth3/ecn/roce_rp/enable/3 = 1"),
            format!("write {r}/eth3/ecn/roce_np/cnp_dscp = 48"),
            format!("write {r}/eth3/ecn/roce_rp/rpg_gd = 9"),
        ]
    );
    assert_eq!(read(root, "eth3/ecn/roce_np/enable/3"), "0", "a dry run changes nothing");
    assert_eq!(ecn.verify(&enable, None).await.unwrap(), Verification::NotInEffect);

    let applied = ecn.execute(&enable).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    assert_eq!(read(root, "eth3/ecn/roce_np/enable/3"), "1");
    assert_eq!(read(root, "eth3/ecn/roce_rp/enable/3"), "1");
    assert_eq!(read(root, "eth3/ecn/roce_np/cnp_dscp"), "48");
    assert_eq!(read(root, "eth3/ecn/roce_np/enable/2"), "0", "other priorities untouched");
    assert_eq!(ecn.verify(&enable, Some(&applied)).await.unwrap(), Verification::InEffect);

    let undo_plan = ecn.dry_run_undo(&enable, &applied).await.unwrap();
    let undone = ecn.undo(&enable, &applied).await.unwrap();
    assert_eq!(undone.requests, undo_plan.requests, "dry_run_undo and undo differ");
    assert_eq!(undone.requests[0], format!("write {r}/eth3/ecn/roce_rp/rpg_gd = 11"), "newest first");
    for (file, value) in [
        ("eth3/ecn/roce_np/enable/3", "0"),
        ("eth3/ecn/roce_rp/enable/3", "0"),
        ("eth3/ecn/roce_np/cnp_dscp", "26"),
        ("eth3/ecn/roce_rp/rpg_gd", "11"),
    ] {
        assert_eq!(read(root, file), value, "{file}");
    }
    assert_eq!(ecn.verify(&enable, Some(&applied)).await.unwrap(), Verification::NotInEffect);

    // A NIC without the DCQCN files (not mlx5 with OFED/DOCA): not supported.
    std::fs::create_dir_all(root.join("eth9")).unwrap();
    let err = ecn.execute(&action("ecn.dcqcn", "eth9", &[("prio", "3")])).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::NotSupported(m) if m.contains("OFED/DOCA")), "{err:?}");
    // Another node's NIC is not this daemon's to change.
    let other = Action { target: Labels::from_pairs([("node", "gpu-08"), ("netdev", "eth3")]), ..enable };
    assert!(matches!(ecn.execute(&other).await.unwrap_err(), ActuatorError::NotSupported(_)));
}

#[tokio::test]
async fn a_write_that_fails_part_way_rolls_the_earlier_knobs_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    sysfs(root, "eth3");
    // A knob that reads fine and cannot be written, even by root.
    let knob = root.join("eth3/ecn/roce_rp/rpg_gd");
    std::fs::remove_file(&knob).unwrap();
    std::os::unix::fs::symlink("/proc/version", &knob).unwrap();
    let config = format!("[host]\nnode = \"gpu-07\"\nsysfs_root = {:?}\n", root.display().to_string());
    let ecn = toml::from_str::<EcnConfig>(&config).unwrap().build("ecn").unwrap();
    let enable = action("ecn.dcqcn", "eth3", &[("prio", "3"), ("np.cnp_dscp", "48"), ("rp.rpg_gd", "9")]);
    let err = ecn.execute(&enable).await.unwrap_err();
    assert!(
        matches!(&err, ActuatorError::Failed(m) if m.contains("rpg_gd") && m.contains("the 3 knob(s) written before it were restored")),
        "{err:?}"
    );
    assert_eq!(read(root, "eth3/ecn/roce_np/enable/3"), "0");
    assert_eq!(read(root, "eth3/ecn/roce_rp/enable/3"), "0");
    assert_eq!(read(root, "eth3/ecn/roce_np/cnp_dscp"), "26");
}

#[test]
fn pfc_storm_prevention_on_a_veth_is_not_supported() {
    if let Some(reason) = missing() {
        return test_peers::missing(reason);
    }
    let ns = Namespace::create();
    let veth = ns.veth.clone();
    let (dry, executed, verified) = ns.run(move || async move {
        let config = format!("[host]\nnode = \"gpu-07\"\nnetdevs = [{veth:?}]\n");
        let pfcwd = toml::from_str::<PfcwdConfig>(&config).unwrap().build("pfcwd").unwrap();
        let prevent = action("pfcwd.prevent", &veth, &[("timeout", "auto")]);
        (pfcwd.dry_run(&prevent).await, pfcwd.execute(&prevent).await, pfcwd.verify(&prevent, None).await)
    });
    assert_eq!(
        dry.unwrap().requests,
        [format!("ethtool ETHTOOL_STUNABLE {} pfc-prevention-tout auto", ns.veth)],
        "the plan is what execute would send"
    );
    for result in [executed.map(|_| ()), verified.map(|_| ())] {
        match result {
            Err(ActuatorError::NotSupported(m)) => {
                assert!(
                    m.contains(&format!("{} does not support the ethtool tunable pfc-prevention-tout", ns.veth)),
                    "{m}"
                )
            }
            other => panic!("expected not supported, got {other:?}"),
        }
    }
}
