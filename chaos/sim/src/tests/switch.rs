//! The simulated switch through a real gNMI client, for what it adds to the gNMI front
//! (`sonic::gnmi_front`, tested on its own): each ASIC family's counters, SONiC's poll
//! cadence, ports keyed by alias, the PFC watchdog as orchagent runs it (an in-place change
//! keeps the started action), and a reboot.

use std::time::Duration;

use gnmi_proto::gnmi::subscription_list::Mode as ListMode;
use gnmi_proto::gnmi::{Encoding, Path, Subscription, SubscriptionList, SubscriptionMode, TypedValue, Update};
use gnmi_proto::path::elems;
use gnmi_proto::{parse_path, ClientConfig, GnmiClient, SetOps};
use serde_json::{json, Value as Json};
use sim::switch::{spawn, Model, Options, Profile, RunningSwitch};
use sonic::watchdog::Action;
use sonic::AsicFamily;

async fn serve(model: Model) -> (RunningSwitch, GnmiClient) {
    let sw = spawn("sw", ([127, 0, 0, 1], 0).into(), model, Options::default()).await.unwrap();
    let client = GnmiClient::connect(&ClientConfig::plain(sw.addr.to_string())).await.unwrap();
    (sw, client)
}

/// The prefix naming COUNTERS_DB the classic SONiC way: by its target.
fn counters_db() -> Option<Path> {
    Some(Path { target: "COUNTERS_DB".into(), ..Default::default() })
}

/// What a Get of one path answers, as JSON.
async fn get_json(client: &mut GnmiClient, prefix: Option<Path>, path: Path) -> Json {
    let shown = gnmi_proto::path_to_string(&path);
    let response = client.get(prefix, vec![path], Encoding::JsonIetf).await.unwrap_or_else(|e| panic!("{shown}: {e}"));
    let val = response.notification[0].update[0].val.as_ref().unwrap();
    match &val.value {
        Some(gnmi_proto::gnmi::typed_value::Value::JsonIetfVal(bytes)) => serde_json::from_slice(bytes).unwrap(),
        other => panic!("not JSON_IETF: {other:?}"),
    }
}

fn ietf(value: Json) -> TypedValue {
    TypedValue { value: Some(gnmi_proto::gnmi::typed_value::Value::JsonIetfVal(serde_json::to_vec(&value).unwrap())) }
}

fn pfc_wd(port: &str) -> Path {
    parse_path(&format!("sonic-db:/CONFIG_DB/localhost/PFC_WD/{port}")).unwrap()
}

/// The action of the handler of the storm on the port at `index`, priority 3.
fn handler(model: &Model, index: usize) -> Option<Action> {
    model.read().watchdog.queues.get(&(index, 3)).and_then(|w| w.handler)
}

#[tokio::test]
async fn each_asic_family_reports_its_own_pfc_counters_keyed_by_alias() {
    for family in [AsicFamily::Mellanox, AsicFamily::Broadcom, AsicFamily::MarvellTeralynx] {
        let model = Model::with_profile(4, Profile::for_asic(family));
        let alias = model.alias("Ethernet4").unwrap();
        model.inject_pfc_storm("Ethernet4", 3).unwrap();
        model.advance(Duration::from_secs(1));
        let (sw, mut client) = serve(model.clone()).await;
        // sonic-gnmi keys its virtual paths by alias; on Broadcom the alias `Ethernet2/1`
        // (with a `/`) is not the port called Ethernet2.
        let ports = get_json(&mut client, counters_db(), elems(&["COUNTERS", "Ethernet*"])).await;
        let keys: Vec<&String> = ports.as_object().unwrap().keys().collect();
        assert!(keys.contains(&&alias) && !keys.iter().any(|k| *k == "Ethernet4"), "{family:?}: {keys:?}");
        let port = &ports[&alias];
        let rx: u64 = port["SAI_PORT_STAT_PFC_3_RX_PKTS"].as_str().unwrap().parse().unwrap();
        assert!(rx > 10_000, "{family:?}: the storm's pause frames: {port}");
        let has = |field: &str| port.get(field).is_some();
        let us = has("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US");
        let quanta = has("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION");
        let on2off = has("SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS");
        match family {
            AsicFamily::Mellanox => assert!(us && !quanta && !on2off, "{port}"),
            AsicFamily::MarvellTeralynx => assert!(quanta && !us, "{port}"),
            _ => assert!(on2off && !us && !quanta, "{port}"),
        }
        if family == AsicFamily::Broadcom {
            assert_eq!(alias, "Ethernet2/1");
        }
        // The watchdog (drop at boot) found the storm with the family's own detector.
        let queue = get_json(&mut client, counters_db(), elems(&["COUNTERS", "Ethernet*", "Pfcwd"])).await;
        assert_eq!(queue[format!("{alias}:3")]["PFC_WD_STATUS"], "stormed", "{family:?}: {queue}");
        assert_eq!(handler(&model, 1), Some(Action::Drop), "{family:?}");
        // A counter the family does not report cannot be set by hand either.
        if family == AsicFamily::Broadcom {
            let refused = model.set_port_counter("Ethernet4", "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US", 1);
            assert!(refused.is_err());
        }
        sw.stop().await.unwrap();
    }
}

#[tokio::test]
async fn counters_refresh_at_sonics_polls_and_sampling_under_a_second_is_refused() {
    let model = Model::new(2);
    let (sw, mut client) = serve(model.clone()).await;
    let packets = |model: &Model, queue: usize| -> u64 {
        model.queue_counters("Ethernet0", queue).unwrap()["SAI_QUEUE_STAT_PACKETS"].parse().unwrap()
    };
    let octets = |model: &Model| -> u64 {
        model.port_counters("Ethernet0").unwrap()["SAI_PORT_STAT_IF_OUT_OCTETS"].parse().unwrap()
    };
    model.advance(Duration::from_millis(500));
    let (lossy, lossless, o0) = (packets(&model, 1), packets(&model, 4), octets(&model));
    model.advance(Duration::from_secs(2));
    assert!(octets(&model) > o0, "port counters every second");
    assert_eq!(packets(&model, 1), lossy, "queue counters wait for the 10 s poll");
    assert!(packets(&model, 4) > lossless, "a watched queue's packets come with the watchdog's 200 ms group");
    model.advance(Duration::from_secs(8));
    assert!(packets(&model, 1) > lossy, "…and then move");

    let list = SubscriptionList {
        prefix: counters_db(),
        subscription: vec![Subscription {
            path: Some(elems(&["COUNTERS", "etp1"])),
            mode: SubscriptionMode::Sample as i32,
            sample_interval: 200_000_000,
            ..Default::default()
        }],
        mode: ListMode::Stream as i32,
        encoding: Encoding::JsonIetf as i32,
        ..Default::default()
    };
    let refused = match client.subscribe(list).await {
        Err(e) => e.to_string(),
        Ok(mut s) => s.message().await.unwrap_err().to_string(),
    };
    assert!(refused.contains("invalid interval: 200ms. It cannot be less than 1s"), "{refused}");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn an_in_place_watchdog_change_keeps_the_started_action_and_a_delete_then_a_write_restarts_it() {
    let profile = Profile { pfcwd_action: Action::Alert, ..Profile::default() };
    let model = Model::with_profile(4, profile);
    let (sw, mut client) = serve(model.clone()).await;
    let storm = |model: &Model| {
        model.inject_pfc_storm("Ethernet4", 3).unwrap();
        model.advance(Duration::from_secs(1));
        let found = handler(model, 1);
        model.clear_pfc_storm("Ethernet4", 3).unwrap();
        model.advance(Duration::from_secs(2));
        found
    };
    assert_eq!(storm(&model), Some(Action::Alert));
    let drop = json!({"action": "drop", "detection_time": "200", "restoration_time": "200"});
    // One Set that deletes and rewrites: the config updater applies the difference, an HSET.
    let in_place = SetOps {
        delete: vec![pfc_wd("Ethernet4")],
        update: vec![update(pfc_wd("Ethernet4"), drop.clone())],
        ..SetOps::default()
    };
    client.set(in_place).await.unwrap();
    assert_eq!(model.config_entry("PFC_WD", "Ethernet4").unwrap()["action"], "drop");
    let counters = model.queue_counters("Ethernet4", 3).unwrap();
    assert_eq!(counters["PFC_WD_ACTION"], "drop", "what COUNTERS_DB says…");
    assert_eq!(storm(&model), Some(Action::Alert), "…is not what the started watchdog does");
    // As `pfcwd start` does it: the entry deleted, then written.
    client.set(SetOps { delete: vec![pfc_wd("Ethernet4")], ..SetOps::default() }).await.unwrap();
    client.set(SetOps { update: vec![update(pfc_wd("Ethernet4"), drop)], ..SetOps::default() }).await.unwrap();
    assert_eq!(storm(&model), Some(Action::Drop));
    // A reboot without `config save` brings back the boot entry, and orchagent applies it.
    model.reboot().unwrap();
    assert_eq!(model.config_entry("PFC_WD", "Ethernet4").unwrap()["action"], "alert");
    assert_eq!(storm(&model), Some(Action::Alert));
    sw.stop().await.unwrap();
}

fn update(path: Path, value: Json) -> Update {
    Update { path: Some(path), val: Some(ietf(value)), ..Default::default() }
}

#[tokio::test]
async fn a_read_only_image_refuses_every_write_in_sonic_gnmis_words() {
    let mut profile = Profile::default();
    profile.front.native_write = false;
    let model = Model::with_profile(2, profile);
    let (sw, mut client) = serve(model.clone()).await;
    let before = model.config();
    let set = SetOps {
        update: vec![update(pfc_wd("Ethernet0"), json!({"action": "drop", "detection_time": "200"}))],
        ..SetOps::default()
    };
    let refused = client.set(set).await.unwrap_err().to_string();
    assert!(refused.contains("GNMI is in read-only mode"), "{refused}");
    assert_eq!(model.config(), before);
    sw.stop().await.unwrap();
}
