//! `ecn.lower` against a switch that follows SONiC's own source (`sonic::peer`'s databases,
//! sonic-utilities' `QUEUE|Ethernet4|3` bound to `WRED_PROFILE|AZURE_LOSSLESS`), over a
//! sonic-gnmi-like front with the image's defaults (every change through the config
//! updater, which checks `QUEUE`'s `wred_profile` against `WRED_PROFILE`) and on the
//! switch's own Redis.
//!
//! In both scopes the lowering must land on the SONiC name (the action names the alias
//! `etp2`), halve the thresholds and nothing else, read back as in effect, and its undo must
//! leave CONFIG_DB as it was, key for key.

use std::collections::BTreeMap;

use actuators::EcnConfig;
use engine::{Action, Actuator, Labels, Verification};
use sonic::gnmi_front::FrontConfig;
use sonic::layout::db as dbs;
use sonic::peer::SonicPeer;
use sonic::AsicFamily;

use super::sonic_switch::{front, peer, prerequisites};

/// The green (ECN-marking) thresholds of sonic-utilities' `AZURE_LOSSLESS`, halved.
const HALVED: [(&str, &str); 2] = [("green_min_threshold", "524288"), ("green_max_threshold", "1048576")];

fn lower(port: &str, queue: &str) -> Action {
    Action {
        kind: "ecn.lower".into(),
        target: Labels::from_pairs([("switch", "leaf-rail0"), ("port", port), ("queue", queue)]),
        params: [("factor".to_string(), "0.5".to_string())].into(),
    }
}

/// `table|key` of CONFIG_DB, as the switch holds it.
async fn entry(peer: &SonicPeer, table: &str, key: &str) -> Option<BTreeMap<String, String>> {
    peer.config_db().await.unwrap().entry(table, key).await.unwrap()
}

/// Lowers `target` with an actuator whose settings are `settings` then `gnmi`, checks
/// `lowered` (the profile the queue is bound to after, and that profile), then undoes it.
async fn round_trip(peer: &SonicPeer, settings: &str, gnmi: &str, target: Action, bound_after: &str) {
    let before = peer.dump(dbs::CONFIG_DB).await.unwrap();
    let original = entry(peer, "WRED_PROFILE", "AZURE_LOSSLESS").await.expect("the image's lossless profile");
    let ecn = toml::from_str::<EcnConfig>(&format!("{settings}{gnmi}")).unwrap().build("ecn").unwrap();

    let applied = ecn.execute(&target).await.unwrap_or_else(|e| panic!("{settings}: {e}"));
    let queue = entry(peer, "QUEUE", "Ethernet4|3").await.expect("the queue's entry");
    assert_eq!(queue.get("wred_profile").map(String::as_str), Some(bound_after), "{settings}: {}", applied.summary);
    assert_eq!(entry(peer, "QUEUE", "etp2|3").await, None, "{settings}: never the alias");
    let lowered = entry(peer, "WRED_PROFILE", bound_after).await.expect("the lowered profile");
    let mut expected = original.clone();
    expected.extend(HALVED.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    assert_eq!(lowered, expected, "{settings}: the green thresholds halved, every other field as it was");
    assert_eq!(ecn.verify(&target, Some(&applied)).await.unwrap(), Verification::InEffect, "{settings}");

    ecn.undo(&target, &applied).await.unwrap_or_else(|e| panic!("{settings}: undo: {e}"));
    assert_eq!(ecn.verify(&target, Some(&applied)).await.unwrap(), Verification::NotInEffect, "{settings}");
    assert_eq!(peer.dump(dbs::CONFIG_DB).await.unwrap(), before, "{settings}: CONFIG_DB as it was, key for key");
}

/// Both scopes, the actuator's switch reached by `gnmi` (its `[gnmi]` table).
async fn both_scopes(peer: &SonicPeer, gnmi: &str) {
    round_trip(peer, "lowers = \"queue\"\n", gnmi, lower("etp2", "3"), "ROCEMEND_Ethernet4_3").await;
    round_trip(peer, "lowers = \"profile\"\n", gnmi, lower("*", "*"), "AZURE_LOSSLESS").await;
}

#[tokio::test]
async fn over_sonic_gnmi_a_queue_and_a_profile_are_lowered_on_the_sonic_name_and_restored() {
    let Some(prereq) = prerequisites() else { return };
    let peer = peer(&prereq, AsicFamily::Mellanox).await;
    let address = front(&peer, FrontConfig::default()).await;
    let gnmi =
        format!("[gnmi]\nswitches = {{ leaf-rail0 = \"{address}\" }}\npath_style = \"auto\"\ntimeout = \"5s\"\n");
    both_scopes(&peer, &gnmi).await;
    assert!(peer.errors().is_empty(), "{:?}", peer.errors());
}

#[tokio::test]
async fn on_the_switchs_redis_a_queue_and_a_profile_are_lowered_on_the_sonic_name_and_restored() {
    let Some(prereq) = prerequisites() else { return };
    let peer = peer(&prereq, AsicFamily::Broadcom).await;
    let dir = tempfile::tempdir().unwrap();
    let layout = peer.write_database_config(&prereq, dir.path()).unwrap();
    let gnmi = format!(
        "[gnmi]\ntimeout = \"5s\"\n[gnmi.redis]\nswitch = \"leaf-rail0\"\ndatabase_config = {:?}\n",
        layout.display().to_string()
    );
    both_scopes(&peer, &gnmi).await;
    assert!(peer.errors().is_empty(), "{:?}", peer.errors());
}
