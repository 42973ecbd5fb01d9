//! The front against the real redis-server peer (`sonic::peer`), through rocemend's own gNMI
//! client, and over the in-memory store. Tests that need the peer skip (saying why) through
//! [`prerequisites`] only.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use gnmi_proto::gnmi::subscribe_response::Response as Resp;
use gnmi_proto::gnmi::subscription_list::Mode as ListMode;
use gnmi_proto::gnmi::typed_value::Value as Typed;
use gnmi_proto::gnmi::{
    Encoding, GetResponse, Path, SubscribeResponse, Subscription, SubscriptionList, SubscriptionMode, TypedValue,
    Update,
};
use gnmi_proto::path::{elems, parse_path};
use gnmi_proto::{ClientConfig, ClientError, Code, GnmiClient, SetOps, Subscription as ClientSub};
use serde_json::{json, Value as Json};
use tokio::sync::oneshot;

use super::{serve, Backend, FrontConfig, GnmiFront, MemoryStore, RedisBackend};
use crate::asic::AsicFamily;
use crate::layout::{db as dbs, DatabaseLayout};
use crate::names::{NameMaps, Queues};
use crate::peer::{prerequisites, ExtraPort, SonicPeer};
use crate::qos::Qos;
use crate::watchdog::{Action, RestartWatch, WatchdogReader};

/// A front serving on a loopback port until dropped.
struct Running {
    addr: String,
    _stop: oneshot::Sender<()>,
}

async fn start(backend: Arc<dyn Backend>, config: FrontConfig) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(serve(GnmiFront::new(backend, config), listener, None, async {
        let _ = stopped.await;
    }));
    Running { addr, _stop: stop }
}

async fn client(front: &Running) -> GnmiClient {
    GnmiClient::connect(&ClientConfig::plain(front.addr.clone())).await.unwrap()
}

fn target(db: &str) -> Option<Path> {
    Some(Path { target: db.into(), ..Path::default() })
}

fn ietf(value: Json) -> TypedValue {
    TypedValue { value: Some(Typed::JsonIetfVal(serde_json::to_vec(&value).unwrap())) }
}

fn update(path: Path, value: Json) -> Update {
    Update { path: Some(path), val: Some(ietf(value)), ..Default::default() }
}

/// The value of the first notification's update, as JSON (a string value as a JSON string).
fn value(response: &GetResponse) -> Json {
    let val = response.notification[0].update[0].val.clone().unwrap().value.unwrap();
    match val {
        Typed::JsonIetfVal(bytes) | Typed::JsonVal(bytes) => serde_json::from_slice(&bytes).unwrap(),
        Typed::StringVal(s) => Json::String(s),
        other => panic!("unexpected value {other:?}"),
    }
}

fn update_value(response: &SubscribeResponse) -> Option<Json> {
    let Some(Resp::Update(n)) = &response.response else { return None };
    match n.update.first()?.val.clone()?.value? {
        Typed::JsonIetfVal(bytes) => Some(serde_json::from_slice(&bytes).unwrap()),
        Typed::StringVal(s) => Some(Json::String(s)),
        _ => None,
    }
}

/// The code and text of a refusal.
fn refusal<T: std::fmt::Debug>(result: Result<T, ClientError>) -> (Code, String) {
    match result {
        Err(ClientError::Status { status, .. }) => (status.code(), status.message().to_string()),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn sub(path: Path, mode: SubscriptionMode, interval: Duration) -> Subscription {
    Subscription {
        path: Some(path),
        mode: mode as i32,
        sample_interval: interval.as_nanos() as u64,
        ..Default::default()
    }
}

fn list(prefix: Option<Path>, subs: Vec<Subscription>, mode: ListMode) -> SubscriptionList {
    SubscriptionList {
        prefix,
        subscription: subs,
        mode: mode as i32,
        encoding: Encoding::JsonIetf as i32,
        ..Default::default()
    }
}

/// The status a subscription ends with, whether at its start or at its first message.
async fn ended_with(client: &mut GnmiClient, list: SubscriptionList) -> (Code, String) {
    match client.subscribe(list).await {
        Err(e) => refusal::<()>(Err(e)),
        Ok(mut s) => loop {
            match s.message().await {
                Ok(Some(_)) => continue,
                other => return refusal(other.map(|_| ())),
            }
        },
    }
}

async fn next(s: &mut ClientSub) -> SubscribeResponse {
    tokio::time::timeout(Duration::from_secs(10), s.message()).await.expect("a response in time").unwrap().unwrap()
}

fn sonic_db(path: &str) -> Path {
    parse_path(path).unwrap()
}

#[tokio::test]
async fn each_route_answers_and_refuses_as_sonic_gnmi_does() {
    let Some(prereq) = prerequisites("each_route_answers_and_refuses_as_sonic_gnmi_does") else { return };
    let peer =
        SonicPeer::builder(AsicFamily::Mellanox).only_ports(["Ethernet0", "Ethernet4"]).start(&prereq).await.unwrap();
    let backend: Arc<dyn Backend> = Arc::new(RedisBackend::new(peer.switch().clone()));
    let front = start(backend.clone(), FrontConfig::default()).await;
    let mut c = client(&front).await;

    // Capabilities: the sonic-db model, JSON, JSON_IETF, PROTO, 0.7.0.
    let caps = c.capabilities().await.unwrap();
    assert_eq!(caps.supported_models[0].name, "sonic-db");
    assert_eq!(caps.supported_encodings, vec![0, 4, 2]);
    assert_eq!(caps.g_nmi_version, "0.7.0");

    prefix_target_reads(&mut c).await;
    origin_sonic_db_reads(&mut c).await;
    writes_route_by_origin(&mut c, &peer).await;

    // The write flags.
    for (native_write, translib_write, expected) in
        [(false, false, "GNMI is in read-only mode"), (false, true, "GNMI native write is disabled")]
    {
        let flags = FrontConfig { native_write, translib_write, ..FrontConfig::default() };
        let other = start(backend.clone(), flags).await;
        let mut c = client(&other).await;
        assert_eq!(
            refusal(c.set(pfc_wd("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4")).await),
            (Code::Unimplemented, expected.into())
        );
        let caps = c.capabilities().await.unwrap();
        assert_eq!(caps.supported_models[0].name, "sonic-db", "listed whether native write is on or not");
    }
    assert!(peer.errors().is_empty(), "{:?}", peer.errors());
}

/// A Set writing PFC_WD at `p` whole.
fn pfc_wd(p: &str) -> SetOps {
    SetOps {
        update: vec![update(
            sonic_db(p),
            json!({"action": "drop", "detection_time": "200", "restoration_time": "200"}),
        )],
        ..SetOps::default()
    }
}

/// Prefix target: the DB client.
async fn prefix_target_reads(c: &mut GnmiClient) {
    let map = c.get(target("COUNTERS_DB"), vec![elems(&["COUNTERS_PORT_NAME_MAP"])], Encoding::JsonIetf).await.unwrap();
    assert!(value(&map)["Ethernet4"].as_str().unwrap().starts_with("oid:0x"), "{}", value(&map));
    let action =
        c.get(target("CONFIG_DB"), vec![elems(&["PFC_WD", "Ethernet4", "action"])], Encoding::Json).await.unwrap();
    assert_eq!(value(&action), json!("drop"), "a field is a string");
    let absent = c.get(target("CONFIG_DB"), vec![elems(&["PFC_WD", "Ethernet9"])], Encoding::Json).await;
    assert_eq!(refusal(absent), (Code::NotFound, "No valid entry found on CONFIG_DB with key PFC_WD|Ethernet9".into()));
    // A fourth element that is no field of the entry is a second key part.
    let field = c.get(target("CONFIG_DB"), vec![elems(&["PFC_WD", "Ethernet4", "nothing"])], Encoding::Json).await;
    assert_eq!(
        refusal(field),
        (Code::NotFound, "No valid entry found on CONFIG_DB with key PFC_WD|Ethernet4|nothing".into())
    );
}

/// Origin sonic-db (the mixed client, which drops two elements); anything else, translib.
async fn origin_sonic_db_reads(c: &mut GnmiClient) {
    let with_instance = sonic_db("sonic-db:/COUNTERS_DB/localhost/COUNTERS_PORT_NAME_MAP");
    let map = c.get(None, vec![with_instance.clone()], Encoding::JsonIetf).await.unwrap();
    assert!(value(&map)["Ethernet0"].is_string());
    let json_encoding = c.get(None, vec![with_instance], Encoding::Json).await;
    assert_eq!(refusal(json_encoding), (Code::NotFound, "Unknown encoding JSON".into()));
    let without = c.get(None, vec![sonic_db("sonic-db:/COUNTERS_DB/COUNTERS_PORT_NAME_MAP")], Encoding::JsonIetf).await;
    assert_eq!(refusal(without), (Code::NotFound, "Can not read all tables in COUNTERS_DB".into()));
    let without = c.get(None, vec![sonic_db("sonic-db:/CONFIG_DB/PFC_WD/Ethernet4")], Encoding::JsonIetf).await;
    assert_eq!(refusal(without), (Code::NotFound, "Failed to find CONFIG_DB Ethernet4 <nil> []".into()));
    let entry = c.get(None, vec![sonic_db("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4")], Encoding::JsonIetf).await;
    assert_eq!(value(&entry.unwrap())["action"], json!("drop"));
    let field =
        c.get(None, vec![sonic_db("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4/action")], Encoding::JsonIetf).await;
    assert_eq!(value(&field.unwrap()), json!("drop"));
    let absent =
        c.get(None, vec![sonic_db("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet9")], Encoding::JsonIetf).await;
    assert_eq!(
        refusal(absent),
        (
            Code::NotFound,
            r#"No valid entry found for path origin:"sonic-db" elem:{name:"CONFIG_DB"} elem:{name:"localhost"} elem:{name:"PFC_WD"} elem:{name:"Ethernet9"}"#.into()
        )
    );
    let short = c.get(None, vec![sonic_db("sonic-db:/CONFIG_DB")], Encoding::JsonIetf).await;
    assert_eq!(refusal(short), (Code::NotFound, "rpc error: code = Unimplemented desc = Invalid elem length".into()));

    // Anything else: translib.
    let oc = c
        .get(
            None,
            vec![parse_path("openconfig:/interfaces/interface[name=Ethernet0]/state").unwrap()],
            Encoding::JsonIetf,
        )
        .await;
    assert_eq!(refusal(oc).0, Code::Unimplemented);
}

/// Writes: the route is the origin; the prefix target is never read.
async fn writes_route_by_origin(c: &mut GnmiClient, peer: &SonicPeer) {
    let by_target = SetOps {
        prefix: target("CONFIG_DB"),
        update: vec![update(elems(&["PFC_WD", "Ethernet4"]), json!({"action": "drop"}))],
        ..SetOps::default()
    };
    assert_eq!(refusal(c.set(by_target.clone()).await), (Code::Unimplemented, "Translib write is disabled".into()));
    let counters = SetOps {
        update: vec![update(sonic_db("sonic-db:/COUNTERS_DB/localhost/COUNTERS/oid:0x1"), json!({"a": "b"}))],
        ..SetOps::default()
    };
    assert_eq!(refusal(c.set(counters).await), (Code::Unknown, "Set RPC does not support COUNTERS_DB".into()));
    // Without the instance the table is lost: the updater refuses a table it has no model of.
    let lost = c.set(pfc_wd("sonic-db:/CONFIG_DB/PFC_WD/Ethernet4")).await;
    assert_eq!(
        refusal(lost),
        (Code::Unknown, "Error: Given patch is not valid because it has changes to tables without YANG models".into())
    );
    let alias_key = c.set(pfc_wd("sonic-db:/CONFIG_DB/localhost/PFC_WD/etp2")).await;
    let (code, text) = refusal(alias_key);
    assert_eq!(code, Code::Unknown);
    assert!(
        text.starts_with("Failed to apply patch due to: Given patch will produce invalid config. Error:"),
        "{text}"
    );
    let replace_absent = SetOps {
        replace: vec![update(sonic_db("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet0/action"), json!("drop"))],
        ..SetOps::default()
    };
    c.set(replace_absent).await.expect("Ethernet0 has an action to replace");
    let config = peer.config_db().await.unwrap();
    assert!(!config.exists("PFC_WD", "etp2").await.unwrap(), "a refused Set writes nothing");
}

#[tokio::test]
async fn virtual_paths_are_keyed_by_alias_with_every_queue_and_the_azure_pfcwd_queues() {
    let Some(prereq) = prerequisites("virtual_paths_are_keyed_by_alias_with_every_queue_and_the_azure_pfcwd_queues")
    else {
        return;
    };
    let peer = SonicPeer::builder(AsicFamily::Broadcom)
        .only_ports(["Ethernet0", "Ethernet4"])
        .add_port(ExtraPort::new("Ethernet200").alias("Ethernet1/1").lossless("3,4").watchdog("alert", 400, 400))
        .start(&prereq)
        .await
        .unwrap();
    let backend: Arc<dyn Backend> = Arc::new(RedisBackend::new(peer.switch().clone()));
    let front = start(backend.clone(), FrontConfig::default()).await;
    let mut c = client(&front).await;
    let get = |path: Path| (target("COUNTERS_DB"), vec![path], Encoding::JsonIetf);

    let (p, paths, e) = get(elems(&["COUNTERS", "Ethernet*"]));
    let ports = value(&c.get(p, paths, e).await.unwrap());
    let keys: Vec<&String> = ports.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["Ethernet1/1", "etp1", "etp2"], "keyed by alias");
    assert!(ports["etp2"]["SAI_PORT_STAT_PFC_3_RX_PKTS"].is_string());

    // By SONiC name, or by an alias that starts with "Ethernet": a virtual path.
    let (p, paths, e) = get(elems(&["COUNTERS", "Ethernet1/1"]));
    assert!(value(&c.get(p, paths, e).await.unwrap())["SAI_PORT_STAT_PFC_3_RX_PKTS"].is_string());
    // By an alias that does not: a plain key, absent.
    let (p, paths, e) = get(elems(&["COUNTERS", "etp2"]));
    assert_eq!(
        refusal(c.get(p, paths, e).await),
        (Code::NotFound, "No valid entry found on COUNTERS_DB with key COUNTERS:etp2".into())
    );

    // Queues: every queue with counters, multicast ones included (sonic-utilities' Ethernet4:15
    // is multicast; its :20-:29 have no counters and are left out), keyed by the name as asked.
    let (p, paths, e) = get(elems(&["COUNTERS", "Ethernet4", "Queues"]));
    let queues = value(&c.get(p, paths, e).await.unwrap());
    let names: Vec<&String> = queues.as_object().unwrap().keys().filter(|k| !k.ends_with(":periodic")).collect();
    assert_eq!(names.len(), 20, "{names:?}");
    assert!(
        queues.get("Ethernet4:15").is_some() && queues.get("Ethernet4:25").is_none() && queues.get("etp2:3").is_none()
    );
    let (p, paths, e) = get(elems(&["COUNTERS", "Ethernet*", "Queues"]));
    let all = value(&c.get(p, paths, e).await.unwrap());
    assert!(all.get("etp2:3").is_some() && all.get("Ethernet1/1:15").is_some(), "wildcards by alias, multicast too");

    // Pfcwd: PFC_WD's ports, the first PORT_QOS_MAP's pfc_enable through AZURE.
    let (p, paths, e) = get(elems(&["COUNTERS", "Ethernet*", "Pfcwd"]));
    let pfcwd = value(&c.get(p, paths, e).await.unwrap());
    let keys: Vec<&String> = pfcwd.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["Ethernet1/1:3", "Ethernet1/1:4", "etp1:3", "etp1:4", "etp2:3", "etp2:4"]);
    assert!(pfcwd["etp2:3"]["PFC_WD_STATUS"].is_string(), "{pfcwd}");

    // A namespaced target: ignored on a single-ASIC switch, refused for virtual paths on a
    // multi-ASIC one.
    let (_, paths, e) = get(elems(&["COUNTERS", "Ethernet*"]));
    c.get(target("COUNTERS_DB/asic0"), paths.clone(), e).await.expect("single ASIC: the namespace is ignored");
    let multi = start(backend, FrontConfig { namespaces: vec!["asic0".into()], ..FrontConfig::default() }).await;
    let refused = client(&multi).await.get(target("COUNTERS_DB/asic0"), paths, e).await;
    assert_eq!(
        refusal(refused),
        (Code::NotFound, "Target having asic0 namespace is not supported for V2R Dataset".into())
    );
}

#[tokio::test]
async fn sampling_under_a_second_is_refused_and_a_second_streams_counters() {
    let Some(prereq) = prerequisites("sampling_under_a_second_is_refused_and_a_second_streams_counters") else {
        return;
    };
    let peer = SonicPeer::builder(AsicFamily::Mellanox)
        .only_ports(["Ethernet4"])
        .config("PFC_WD|GLOBAL", &[("POLL_INTERVAL", "100")])
        .start(&prereq)
        .await
        .unwrap();
    let front = start(Arc::new(RedisBackend::new(peer.switch().clone())), FrontConfig::default()).await;
    let mut c = client(&front).await;
    let ports = || elems(&["COUNTERS", "Ethernet*"]);

    let fast = list(
        target("COUNTERS_DB"),
        vec![sub(ports(), SubscriptionMode::Sample, Duration::from_millis(200))],
        ListMode::Stream,
    );
    assert_eq!(
        ended_with(&mut c, fast).await,
        (Code::InvalidArgument, "invalid interval: 200ms. It cannot be less than 1s".into())
    );
    let defined = list(
        target("COUNTERS_DB"),
        vec![sub(ports(), SubscriptionMode::TargetDefined, Duration::ZERO)],
        ListMode::Stream,
    );
    assert_eq!(
        ended_with(&mut c, defined).await,
        (Code::InvalidArgument, "unsupported subscription mode, TARGET_DEFINED".into())
    );

    // One second: the counters now, sync, then the counters again as they move.
    peer.start_storm("Ethernet4", 3).unwrap();
    let mut c = client(&front).await;
    let second = list(
        target("COUNTERS_DB"),
        vec![sub(ports(), SubscriptionMode::Sample, Duration::from_secs(1))],
        ListMode::Stream,
    );
    let mut s = c.subscribe(second).await.unwrap();
    let first = update_value(&next(&mut s).await).expect("an update first");
    assert!(matches!(next(&mut s).await.response, Some(Resp::SyncResponse(true))));
    let counter = |v: &Json| v["etp2"]["SAI_PORT_STAT_PFC_3_RX_PKTS"].as_str().unwrap().parse::<u64>().unwrap();
    let before = counter(&first);
    let mut moved = false;
    for _ in 0..5 {
        let v = update_value(&next(&mut s).await).unwrap();
        if counter(&v) > before {
            moved = true;
            break;
        }
    }
    assert!(moved, "PFC frames of the storm show in the samples");

    // A second Subscribe on the same connection ends the first (stream multiplexing off).
    let on_change =
        list(target("COUNTERS_DB"), vec![sub(ports(), SubscriptionMode::OnChange, Duration::ZERO)], ListMode::Stream);
    let mut other = c.subscribe(on_change).await.unwrap();
    assert!(update_value(&next(&mut other).await).is_some());
    let ended = loop {
        match s.message().await {
            Ok(Some(_)) => continue,
            other => break refusal(other.map(|_| ())),
        }
    };
    assert_eq!(ended, (Code::InvalidArgument, "queue: disposed".into()));

    once_sends_the_values_and_a_sync(&front).await;
    assert!(peer.errors().is_empty(), "{:?}", peer.errors());
}

/// ONCE: the values and a sync; a path with no data sends nothing.
async fn once_sends_the_values_and_a_sync(front: &Running) {
    let mut c = client(front).await;
    let once = list(
        target("CONFIG_DB"),
        vec![
            sub(elems(&["PFC_WD", "Ethernet4"]), SubscriptionMode::TargetDefined, Duration::ZERO),
            sub(elems(&["PFC_WD", "Ethernet9"]), SubscriptionMode::TargetDefined, Duration::ZERO),
        ],
        ListMode::Once,
    );
    let mut s = c.subscribe(once).await.unwrap();
    assert!(update_value(&next(&mut s).await).unwrap()["action"].is_string());
    assert!(matches!(next(&mut s).await.response, Some(Resp::SyncResponse(true))));
}

/// Ethernet4's watched queues and object id, as the library reads them.
async fn watched_queues(peer: &SonicPeer) -> (Vec<String>, Vec<(u8, crate::names::Queue)>, String) {
    let counters = peer.switch().database(dbs::COUNTERS_DB).await.unwrap();
    let maps = NameMaps::read(&counters).await.unwrap();
    let queues = Queues::from_maps(&maps).unwrap();
    let qos = Qos::read(&peer.config_db().await.unwrap()).await.unwrap();
    let watched: Vec<(u8, crate::names::Queue)> =
        qos.watchdog_queues(&queues, "Ethernet4").into_iter().map(|(p, q)| (p, q.clone())).collect();
    (watched.iter().map(|(_, q)| q.oid.clone()).collect(), watched, maps.ports["Ethernet4"].clone())
}

#[tokio::test]
async fn one_set_rewriting_pfc_wd_changes_it_in_place_and_a_delete_then_a_write_restart_the_watchdog() {
    let Some(prereq) =
        prerequisites("one_set_rewriting_pfc_wd_changes_it_in_place_and_a_delete_then_a_write_restart_the_watchdog")
    else {
        return;
    };
    let peer = SonicPeer::builder(AsicFamily::Mellanox)
        .only_ports(["Ethernet4"])
        .config("PFC_WD|GLOBAL", &[("POLL_INTERVAL", "100")])
        .config("PFC_WD|Ethernet4", &[("action", "alert"), ("detection_time", "400"), ("restoration_time", "400")])
        .start(&prereq)
        .await
        .unwrap();
    let front = start(Arc::new(RedisBackend::new(peer.switch().clone())), FrontConfig::default()).await;
    let mut c = client(&front).await;
    let counters = peer.switch().database(dbs::COUNTERS_DB).await.unwrap();
    let (oids, queues, port_oid) = watched_queues(&peer).await;
    assert!(!oids.is_empty());
    let entry = || sonic_db("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4");
    let escalated = json!({"action": "drop", "detection_time": "200", "restoration_time": "200"});

    // Delete and write again in one Set: the updater writes the difference, in place.
    let mut restart = RestartWatch::start(&counters, &oids).await.unwrap();
    let one = SetOps { delete: vec![entry()], update: vec![update(entry(), escalated.clone())], ..SetOps::default() };
    let response = c.set(one).await.unwrap();
    assert_eq!(response.response.len(), 2);
    let config = peer.config_db().await.unwrap();
    assert_eq!(config.entry("PFC_WD", "Ethernet4").await.unwrap().unwrap()["action"], "drop");
    assert_eq!(restart.wait(Duration::from_secs(2)).await.unwrap().len(), oids.len(), "no queue restarted");

    // A delete, then a write: orchagent stops the watchdog and starts it with the new action.
    let mut restart = RestartWatch::start(&counters, &oids).await.unwrap();
    c.set(SetOps { delete: vec![entry()], ..SetOps::default() }).await.unwrap();
    assert!(!config.exists("PFC_WD", "Ethernet4").await.unwrap());
    c.set(SetOps { update: vec![update(entry(), escalated)], ..SetOps::default() }).await.unwrap();
    assert!(restart.wait(Duration::from_secs(15)).await.unwrap().is_empty(), "every watched queue restarted");
    let reader = WatchdogReader::open(peer.switch()).await.unwrap();
    let refs: Vec<(u8, &crate::names::Queue)> = queues.iter().map(|(p, q)| (*p, q)).collect();
    let state = reader.port("Ethernet4", &refs, Some(&port_oid)).await.unwrap();
    for q in state.queues.values() {
        assert_eq!((q.action, q.detection_time), (Some(Action::Drop), Some(Duration::from_millis(200))));
    }
    assert!(peer.errors().is_empty(), "{:?}", peer.errors());
}

/// A switch in memory: two ports with aliases, their queues, a watchdog on Ethernet4.
fn memory_switch() -> MemoryStore {
    let store = MemoryStore::new(DatabaseLayout::standard());
    let e = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let mut config = vec![
        ("PORT|Ethernet0".to_string(), e(&[("alias", "etp1")])),
        ("PORT|Ethernet4".to_string(), e(&[("alias", "etp2")])),
        ("PORT_QOS_MAP|Ethernet4".to_string(), e(&[("pfc_enable", "3,4")])),
        ("MAP_PFC_PRIORITY_TO_QUEUE|AZURE".to_string(), e(&[("3", "3"), ("4", "4")])),
        (
            "PFC_WD|Ethernet4".to_string(),
            e(&[("action", "alert"), ("detection_time", "400"), ("restoration_time", "400")]),
        ),
        ("PFC_WD|GLOBAL".to_string(), e(&[("POLL_INTERVAL", "200")])),
    ];
    let mut counters = vec![
        ("COUNTERS_PORT_NAME_MAP".to_string(), e(&[("Ethernet0", "oid:0x10"), ("Ethernet4", "oid:0x14")])),
        ("COUNTERS:oid:0x10".to_string(), e(&[("SAI_PORT_STAT_PFC_3_RX_PKTS", "1")])),
        ("COUNTERS:oid:0x14".to_string(), e(&[("SAI_PORT_STAT_PFC_3_RX_PKTS", "2")])),
    ];
    let mut queue_map = BTreeMap::new();
    for (port, base) in [("Ethernet0", 0x100), ("Ethernet4", 0x140)] {
        for q in 0..8 {
            let oid = format!("oid:0x{:x}", base + q);
            queue_map.insert(format!("{port}:{q}"), oid.clone());
            counters.push((
                format!("COUNTERS:{oid}"),
                e(&[("SAI_QUEUE_STAT_PACKETS", "0"), ("PFC_WD_STATUS", "operational")]),
            ));
        }
    }
    counters.push(("COUNTERS_QUEUE_NAME_MAP".to_string(), queue_map));
    config.sort();
    store.load("CONFIG_DB", config).unwrap();
    store.load("COUNTERS_DB", counters).unwrap();
    store
}

#[tokio::test]
async fn the_memory_store_is_served_as_redis_is_and_written_in_place() {
    let store = memory_switch();
    let front =
        start(Arc::new(store.clone()), FrontConfig { gcu_step: Duration::from_millis(10), ..FrontConfig::default() })
            .await;
    let mut c = client(&front).await;
    let ports = value(
        &c.get(target("COUNTERS_DB"), vec![elems(&["COUNTERS", "Ethernet*"])], Encoding::JsonIetf).await.unwrap(),
    );
    assert_eq!(
        ports,
        json!({"etp1": {"SAI_PORT_STAT_PFC_3_RX_PKTS": "1"}, "etp2": {"SAI_PORT_STAT_PFC_3_RX_PKTS": "2"}})
    );
    let pfcwd = value(
        &c.get(target("COUNTERS_DB"), vec![elems(&["COUNTERS", "Ethernet*", "Pfcwd"])], Encoding::JsonIetf)
            .await
            .unwrap(),
    );
    assert_eq!(pfcwd.as_object().unwrap().keys().collect::<Vec<_>>(), ["etp2:3", "etp2:4"]);

    // ON_CHANGE on the entry, and the keyspace events the writes make.
    let mut events = store.watch("CONFIG_DB", "PFC_WD|Ethernet4").await.unwrap();
    let follow = list(
        target("CONFIG_DB"),
        vec![sub(elems(&["PFC_WD", "Ethernet4"]), SubscriptionMode::OnChange, Duration::ZERO)],
        ListMode::Stream,
    );
    let mut s = client(&front).await.subscribe(follow).await.unwrap();
    assert_eq!(update_value(&next(&mut s).await).unwrap()["action"], "alert");
    assert!(matches!(next(&mut s).await.response, Some(Resp::SyncResponse(true))));

    let entry = || sonic_db("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4");
    let escalated = json!({"action": "drop", "detection_time": "200", "restoration_time": "200"});
    let one = SetOps { delete: vec![entry()], update: vec![update(entry(), escalated.clone())], ..SetOps::default() };
    c.set(one).await.unwrap();
    use futures_util::StreamExt;
    let event = tokio::time::timeout(Duration::from_secs(5), events.next()).await.unwrap().unwrap();
    assert_eq!(event.event, "hset", "one Set that deletes and rewrites changes the entry in place");
    assert_eq!(update_value(&next(&mut s).await).unwrap()["action"], "drop");

    c.set(SetOps { delete: vec![entry()], ..SetOps::default() }).await.unwrap();
    c.set(SetOps {
        update: vec![update(entry(), json!({"action": "forward", "detection_time": "200"}))],
        ..SetOps::default()
    })
    .await
    .unwrap();
    let kinds = [events.next().await.unwrap().event, events.next().await.unwrap().event];
    assert_eq!(kinds, ["del".to_string(), "hset".to_string()]);
    assert_eq!(
        store.get("CONFIG_DB", "PFC_WD|Ethernet4").unwrap().get("restoration_time"),
        None,
        "an update of an entry replaces it whole"
    );

    // A field update, and a value that is not JSON_IETF.
    let field = sonic_db("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4/action");
    c.set(SetOps { update: vec![update(field.clone(), json!("alert"))], ..SetOps::default() }).await.unwrap();
    assert_eq!(store.get("CONFIG_DB", "PFC_WD|Ethernet4").unwrap()["action"], "alert");
    let text = Update { path: Some(field), val: Some(gnmi_proto::value::string("drop")), ..Default::default() };
    assert_eq!(
        refusal(c.set(SetOps { update: vec![text], ..SetOps::default() }).await),
        (Code::Unknown, "Fail to parse ".into())
    );
}

#[tokio::test]
async fn an_image_without_the_mixed_client_reads_only_by_prefix_target() {
    let config = FrontConfig { mixed_db: false, gcu_step: Duration::from_millis(10), ..FrontConfig::default() };
    let front = start(Arc::new(memory_switch()), config).await;
    let mut c = client(&front).await;
    let caps = c.capabilities().await.unwrap();
    assert!(caps.supported_models.iter().all(|m| m.name != "sonic-db"), "{caps:?}");
    let ports = value(
        &c.get(target("COUNTERS_DB"), vec![elems(&["COUNTERS_PORT_NAME_MAP"])], Encoding::JsonIetf).await.unwrap(),
    );
    assert_eq!(ports["Ethernet4"], "oid:0x14");
    let map = sonic_db("sonic-db:/COUNTERS_DB/localhost/COUNTERS_PORT_NAME_MAP");
    let (code, text) = refusal(c.get(None, vec![map.clone()], Encoding::JsonIetf).await);
    assert_eq!(code, Code::Unimplemented, "{text}");
    assert!(text.contains("translib"), "{text}");
    let on_change = list(None, vec![sub(map, SubscriptionMode::OnChange, Duration::ZERO)], ListMode::Stream);
    let (code, text) = ended_with(&mut c, on_change).await;
    assert_eq!(code, Code::Unimplemented, "{text}");
    // A write as origin sonic-db goes to translib too, which the image does not write.
    let entry = sonic_db("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4/action");
    let set = SetOps { update: vec![update(entry, json!("drop"))], ..SetOps::default() };
    assert_eq!(refusal(c.set(set).await), (Code::Unimplemented, "Translib write is disabled".into()));
}

#[tokio::test]
async fn a_port_without_an_alias_fails_the_first_counters_request_only() {
    let store = memory_switch();
    store
        .load("CONFIG_DB", [("PORT|Ethernet8".to_string(), BTreeMap::from([("mtu".to_string(), "9100".to_string())]))])
        .unwrap();
    let front = start(Arc::new(store), FrontConfig::default()).await;
    let mut c = client(&front).await;
    let ask = || (target("COUNTERS_DB"), vec![elems(&["COUNTERS", "Ethernet*"])], Encoding::JsonIetf);
    let (p, paths, e) = ask();
    assert_eq!(refusal(c.get(p, paths, e).await), (Code::NotFound, "redis: nil".into()));
    // The alias map is now loaded, empty: the ports have no namespace.
    let (p, paths, e) = ask();
    assert_eq!(
        refusal(c.get(p, paths, e).await),
        (Code::NotFound, "Ethernet0 does not have namespace associated".into())
    );
}

#[tokio::test]
async fn an_independent_client_reads_a_virtual_path() {
    let Some(prereq) = prerequisites("an_independent_client_reads_a_virtual_path") else { return };
    let python = match std::env::var("ROCEMEND_PYTHON") {
        Ok(python) => python,
        Err(_) => {
            eprintln!("skipped: an_independent_client_reads_a_virtual_path: ROCEMEND_PYTHON is not set (.ci/run sets it to the venv with pygnmi)");
            return;
        }
    };
    let peer =
        SonicPeer::builder(AsicFamily::Mellanox).only_ports(["Ethernet0", "Ethernet4"]).start(&prereq).await.unwrap();
    let front = start(Arc::new(RedisBackend::new(peer.switch().clone())), FrontConfig::default()).await;
    let (host, port) = front.addr.rsplit_once(':').unwrap();
    let script = format!(
        r#"
import json, sys
from pygnmi.client import gNMIclient
with gNMIclient(target=("{host}", {port}), insecure=True, gnmi_timeout=10) as gc:
    r = gc.get(prefix="/", target="COUNTERS_DB", path=["COUNTERS/Ethernet*"], encoding="json_ietf")
    print(json.dumps(r["notification"][0]["update"][0]["val"]))
"#
    );
    let out = tokio::process::Command::new(&python).arg("-c").arg(script).output().await.unwrap();
    assert!(out.status.success(), "pygnmi failed: {}", String::from_utf8_lossy(&out.stderr));
    let val: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert!(val["etp2"]["SAI_PORT_STAT_PFC_3_RX_PKTS"].is_string(), "{val}");
}

#[tokio::test]
async fn each_namespace_of_a_multi_asic_switch_reads_and_writes_its_own_databases() {
    let (asic0, asic1) = (memory_switch(), memory_switch());
    let host = MemoryStore::new(DatabaseLayout::standard());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let asics: Vec<(String, Arc<dyn Backend>)> =
        vec![("asic0".into(), Arc::new(asic0.clone())), ("asic1".into(), Arc::new(asic1.clone()))];
    let config = FrontConfig { gcu_step: Duration::from_millis(10), ..FrontConfig::default() };
    let front = GnmiFront::multi_asic(Arc::new(host), asics, config);
    assert_eq!(front.config().namespaces, ["asic0", "asic1"]);
    tokio::spawn(serve(front, listener, None, std::future::pending()));
    let mut c = GnmiClient::connect(&ClientConfig::plain(addr)).await.unwrap();

    // A write with the instance element `asic1` lands in asic1's CONFIG_DB only.
    let entry = sonic_db("sonic-db:/CONFIG_DB/asic1/PFC_WD/Ethernet4/action");
    c.set(SetOps { update: vec![update(entry, json!("drop"))], ..SetOps::default() }).await.unwrap();
    let action =
        |store: &MemoryStore| store.get("CONFIG_DB", "PFC_WD|Ethernet4").and_then(|e| e.get("action").cloned());
    assert_eq!((action(&asic0).as_deref(), action(&asic1).as_deref()), (Some("alert"), Some("drop")));

    // Reads name their namespace the same two ways: the instance element, the prefix target.
    let read = sonic_db("sonic-db:/CONFIG_DB/asic1/PFC_WD/Ethernet4");
    assert_eq!(value(&c.get(None, vec![read], Encoding::JsonIetf).await.unwrap())["action"], "drop");
    let asic0_entry = c.get(target("CONFIG_DB/asic0"), vec![elems(&["PFC_WD", "Ethernet4"])], Encoding::JsonIetf);
    assert_eq!(value(&asic0_entry.await.unwrap())["action"], "alert");
    // `localhost` is the host's, which holds no ports.
    let host_entry = sonic_db("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4");
    let (code, _) = refusal(c.get(None, vec![host_entry], Encoding::JsonIetf).await);
    assert_eq!(code, Code::NotFound);
    // The virtual paths, built by sonic-gnmi across every namespace's name maps, are not
    // reproduced with a backend per namespace: refused (as the DB client's creation fails:
    // NOT_FOUND), never answered from one ASIC.
    let virtual_path = c.get(target("COUNTERS_DB"), vec![elems(&["COUNTERS", "Ethernet*"])], Encoding::JsonIetf);
    let (code, text) = refusal(virtual_path.await);
    assert_eq!(code, Code::NotFound, "{text}");
    assert!(text.contains("use origin sonic-db with the namespace"), "{text}");
}
