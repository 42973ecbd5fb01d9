//! The switch actuators against a switch they were not written with:
//! `tests/interop/sonic_target.py`, the repository's SONiC-like gNMI target
//! in Python, which validates every Set as a whole against SONiC's YANG
//! (ranges, max ≥ min, leafrefs such as `QUEUE` `wred_profile`).
//!
//! Needs `$ROCEMEND_PYTHON` with `tests/interop/requirements.txt` installed
//! (`.ci/run` sets it up); without it each test prints `skipped: <reason>`.

use crate::common;

use std::collections::BTreeMap;

use actuators::sonic::{Change, SonicConfig};
use actuators::EcnConfig;
use common::sonic_target::SonicTarget;
use engine::{Action, Actuator, ActuatorError, Labels, Verification};

fn target() -> Option<SonicTarget> {
    match SonicTarget::start(&[]) {
        Ok(target) => Some(target),
        Err(reason) => {
            test_peers::missing(reason);
            None
        }
    }
}

fn lower(port: &str) -> Action {
    Action {
        kind: "ecn.lower".into(),
        target: Labels::from_pairs([("switch", "leaf-rail0"), ("port", port), ("queue", "3")]),
        params: BTreeMap::from([("factor".to_string(), "0.5".to_string())]),
    }
}

#[tokio::test]
async fn a_queue_lowering_and_its_undo_are_accepted_by_an_independent_sonic_target_in_both_styles() {
    let Some(target) = target() else { return };
    let original = target.config_db();
    let azure = original["WRED_PROFILE"]["AZURE_LOSSLESS"].clone();
    for style in ["prefix-target", "sonic-db-origin"] {
        let config = format!(
            "[gnmi]\nswitches = {{ leaf-rail0 = \"{}\" }}\npath_style = \"{style}\"\ntimeout = \"5s\"\n",
            target.address
        );
        let ecn = toml::from_str::<EcnConfig>(&config).unwrap().build("ecn").unwrap();
        let action = lower("Ethernet4");
        let applied = ecn.execute(&action).await.unwrap_or_else(|e| panic!("{style}: {e}"));
        assert_eq!(ecn.verify(&action, Some(&applied)).await.unwrap(), Verification::InEffect, "{style}");

        let db = target.config_db();
        assert_eq!(db["QUEUE"]["Ethernet4|3"]["wred_profile"], "ROCEMEND_Ethernet4_3", "{style}");
        let copy = &db["WRED_PROFILE"]["ROCEMEND_Ethernet4_3"];
        assert_eq!(
            (copy["green_min_threshold"].as_str(), copy["green_max_threshold"].as_str()),
            (Some("524288"), Some("1048576"))
        );
        // Every other field of the shared profile is copied (its yellow and red thresholds too).
        let others: Vec<&String> = azure.as_object().unwrap().keys().filter(|k| !k.starts_with("green_m")).collect();
        assert!(others.iter().all(|k| copy[k.as_str()] == azure[k.as_str()]), "{style}: {copy} vs {azure}");
        // Only that queue moved; the shared profile did not.
        assert_eq!(db["WRED_PROFILE"]["AZURE_LOSSLESS"], azure, "{style}");
        for (key, entry) in db["QUEUE"].as_object().unwrap() {
            if key != "Ethernet4|3" {
                assert_eq!(entry["wred_profile"], "AZURE_LOSSLESS", "{style}: {key}");
            }
        }

        ecn.undo(&action, &applied).await.unwrap_or_else(|e| panic!("{style}: undo: {e}"));
        assert_eq!(ecn.verify(&action, Some(&applied)).await.unwrap(), Verification::NotInEffect, "{style}");
        let db = target.config_db();
        assert_eq!(db["QUEUE"], original["QUEUE"], "{style}: the binding is back");
        assert_eq!(db["WRED_PROFILE"], original["WRED_PROFILE"], "{style}: the copy is gone");
    }
    // The target checks the leafref itself: the copy cannot go while its queue
    // uses it, which is why undo re-binds and deletes in one Set.
    let gnmi = format!("switches = {{ leaf-rail0 = \"{}\" }}\n", target.address);
    let sonic = toml::from_str::<SonicConfig>(&gnmi).unwrap().build(None).unwrap();
    let ecn = toml::from_str::<EcnConfig>(&format!("[gnmi]\n{gnmi}")).unwrap().build("ecn").unwrap();
    let applied = ecn.execute(&lower("Ethernet8")).await.unwrap();
    let delete = Change::Delete { table: "WRED_PROFILE".into(), key: "ROCEMEND_Ethernet8_3".into() };
    let err = sonic.set_changes("leaf-rail0", &[delete]).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains("leafref to WRED_PROFILE")), "{err:?}");
    assert_eq!(target.config_db()["QUEUE"]["Ethernet8|3"]["wred_profile"], "ROCEMEND_Ethernet8_3");
    ecn.undo(&lower("Ethernet8"), &applied).await.unwrap();
    assert_eq!(target.config_db()["WRED_PROFILE"], original["WRED_PROFILE"]);
}
