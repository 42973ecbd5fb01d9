//! The `ecmp` actuator against the simulated SONiC switch over gNMI: the UDP source port (then
//! the RoCE destination QP, where STATE_DB says the ASIC has it) added to the list CONFIG_DB
//! holds, switchorch applying it, undo writing the earlier list back whole; a list that has
//! every field the switch offers is held already; a switch with no list or no capability is
//! refused with the reason.

use std::net::SocketAddr;

use actuators::EcmpConfig;
use engine::{Action, Actuator, Labels, Verification};
use sim::switch::{spawn, Model, Options, Profile, RunningSwitch};
use sonic::hash::{self, HashField};

/// The list of a leaf that leaves the source port out.
const NARROW: &str = "SRC_IP,DST_IP,IP_PROTOCOL,L4_DST_PORT";

async fn leaf(profile: Profile) -> RunningSwitch {
    let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
    let sw = spawn("leaf-su0-rail0", addr, Model::with_profile(4, profile), Options::default()).await.unwrap();
    sw.model.set_config(hash::SWITCH_HASH, hash::GLOBAL, [(hash::ECMP_HASH_FIELD, NARROW)]).unwrap();
    sw
}

fn actuator(sw: &RunningSwitch) -> actuators::EcmpActuator {
    let config = format!("[gnmi]\nswitches = {{ leaf-su0-rail0 = \"{}\" }}\ntimeout = \"2s\"\n", sw.addr);
    toml::from_str::<EcmpConfig>(&config).unwrap().build("ecmp").unwrap()
}

fn widen() -> Action {
    Action {
        kind: "ecmp.widen_hash".into(),
        target: Labels::from_pairs([("switch", "leaf-su0-rail0")]),
        params: Default::default(),
    }
}

fn listed(sw: &RunningSwitch) -> String {
    sw.model.config_entry(hash::SWITCH_HASH, hash::GLOBAL).unwrap()[hash::ECMP_HASH_FIELD].clone()
}

#[tokio::test]
async fn the_source_port_is_added_applied_by_switchorch_and_the_earlier_list_written_back() {
    let sw = leaf(Profile::default()).await;
    let ecmp = actuator(&sw);
    let act = widen();
    assert_eq!(ecmp.verify(&act, None).await.unwrap(), Verification::NotInEffect);
    let plan = ecmp.dry_run(&act).await.unwrap();
    let applied = ecmp.execute(&act).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    assert!(
        // A list field goes as sonic-gnmi takes one: the name without `@`, a JSON array.
        applied.requests[0].contains("sonic-db:/CONFIG_DB/localhost/SWITCH_HASH/GLOBAL/ecmp_hash = [")
            && applied.requests[0].contains(r#""L4_DST_PORT","L4_SRC_PORT"]"#),
        "{:?}",
        applied.requests
    );
    assert!(applied.summary.contains("every flow of the leaf"), "{}", applied.summary);
    assert_eq!(listed(&sw), format!("{NARROW},L4_SRC_PORT"));
    assert!(sw.model.read().ecmp_hash.fields.contains(&HashField::L4SrcPort), "switchorch applied it");
    assert_eq!(ecmp.verify(&act, Some(&applied)).await.unwrap(), Verification::InEffect);

    // The default ASIC has no RoCE BTH fields: nothing more to add.
    let again = ecmp.prepare(&act).await.unwrap().unwrap();
    assert!(again.holds_already, "every field the switch offers is in the list");

    let undone = ecmp.undo(&act, &applied).await.unwrap();
    assert_eq!(listed(&sw), NARROW);
    let (fields, refused) = {
        let state = sw.model.read();
        (state.ecmp_hash.fields.clone(), state.ecmp_hash.refused)
    };
    assert!(!fields.contains(&HashField::L4SrcPort), "the shorter list applied");
    assert_eq!(refused, 0, "written back whole, never a removal switchorch refuses");
    assert!(undone.requests[0].ends_with(r#""IP_PROTOCOL","L4_DST_PORT"]"#), "{:?}", undone.requests);
    assert_eq!(ecmp.verify(&act, Some(&applied)).await.unwrap(), Verification::NotInEffect);

    // A human's own list is theirs.
    let applied = ecmp.execute(&act).await.unwrap();
    sw.model.set_config(hash::SWITCH_HASH, hash::GLOBAL, [(hash::ECMP_HASH_FIELD, "SRC_IP,DST_IP")]).unwrap();
    let seen = ecmp.verify(&act, Some(&applied)).await.unwrap();
    assert!(matches!(&seen, Verification::Changed(why) if why.contains("SRC_IP,DST_IP")), "{seen:?}");
}

#[tokio::test]
async fn the_destination_qp_is_added_where_the_asic_has_it() {
    let profile = Profile { hash_capable: HashField::ALL.to_vec(), ..Profile::default() };
    let sw = leaf(profile).await;
    sw.model
        .set_config(hash::SWITCH_HASH, hash::GLOBAL, [(hash::ECMP_HASH_FIELD, &*format!("{NARROW},L4_SRC_PORT"))])
        .unwrap();
    let ecmp = actuator(&sw);
    ecmp.execute(&widen()).await.unwrap();
    assert_eq!(listed(&sw), format!("{NARROW},L4_SRC_PORT,RDMA_BTH_DEST_QP"));
    assert!(sw.model.read().ecmp_hash.fields.contains(&HashField::RdmaBthDestQp));
}

#[tokio::test]
async fn a_switch_without_a_list_or_a_capability_is_refused_with_the_reason() {
    let sw = leaf(Profile::default()).await;
    sw.model.delete_config_fields(hash::SWITCH_HASH, hash::GLOBAL, &[hash::ECMP_HASH_FIELD]).unwrap();
    let err = actuator(&sw).execute(&widen()).await.unwrap_err().to_string();
    assert!(err.contains("hashes on its built-in defaults"), "{err}");
    let other = Action { target: Labels::from_pairs([("switch", "leaf-x")]), ..widen() };
    let err = actuator(&sw).execute(&other).await.unwrap_err().to_string();
    assert!(err.contains("leaf-x"), "{err}");
}
