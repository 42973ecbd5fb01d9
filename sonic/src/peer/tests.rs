//! The crate against a real redis-server holding sonic-utilities' databases, with SONiC's own
//! Lua detectors as the watchdog. Each test skips (saying why) without redis-server or
//! `shared/peers/sonic`.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::{sleep, Instant};

use super::{prerequisites, ExtraPort, Prerequisites, RedisServer, SonicPeer};
use crate::asic::{AsicFamily, StormSample};
use crate::client::{Change, DbError, FieldRead, Switch};
use crate::layout::{db as dbs, DatabaseLayout};
use crate::names::{NameError, NameMaps, PortNames, Queues};
use crate::qos::Qos;
use crate::watchdog::{Action, EventKind, Events, InForce, PortState, RestartWatch, Status, WatchdogReader};

/// Long enough for a storm to be detected and handled at a 100 ms poll on a loaded machine;
/// a test that needs it all has found a real fault.
const DEADLINE: Duration = Duration::from_secs(15);

/// Polls `$probe` (an expression giving `Option<T>`) until it is `Some`, or panics naming `$what`.
macro_rules! eventually {
    ($what:expr, $probe:expr) => {{
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(value) = $probe {
                break value;
            }
            assert!(Instant::now() < deadline, "timed out after {DEADLINE:?} waiting for {}", $what);
            sleep(Duration::from_millis(20)).await;
        }
    }};
}

fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A peer of `family` with only Ethernet4 (alias `etp2`, PFC on 3 and 4) kept, the watchdog
/// polling every 100 ms, Ethernet4's watchdog as `pfc_wd` says.
async fn ethernet4(prereq: &Prerequisites, family: AsicFamily, pfc_wd: &[(&str, &str)]) -> SonicPeer {
    SonicPeer::builder(family)
        .only_ports(["Ethernet4"])
        .config("PFC_WD|GLOBAL", &[("POLL_INTERVAL", "100")])
        .config("PFC_WD|Ethernet4", pfc_wd)
        .start(prereq)
        .await
        .expect("the peer starts")
}

/// Ethernet4's object id and its watched queues (priority → queue oid), as the library reads them.
struct Watched {
    port_oid: String,
    queues: Queues,
    qos: Qos,
}

async fn watched(switch: &Switch, port: &str) -> Watched {
    let counters = switch.database(dbs::COUNTERS_DB).await.unwrap();
    let maps = NameMaps::read(&counters).await.unwrap();
    let config = switch.config_db().await.unwrap();
    Watched {
        port_oid: maps.ports[port].clone(),
        queues: Queues::from_maps(&maps).unwrap(),
        qos: Qos::read(&config).await.unwrap(),
    }
}

impl Watched {
    async fn state(&self, reader: &WatchdogReader, port: &str) -> PortState {
        let queues = self.qos.watchdog_queues(&self.queues, port);
        reader.port(port, &queues, Some(&self.port_oid)).await.unwrap()
    }
}

#[tokio::test]
async fn the_shared_database_layout_parses() {
    let Some(prereq) = prerequisites("the_shared_database_layout_parses") else { return };
    let layout = DatabaseLayout::load(&prereq.utilities_file("database_config.json")).unwrap();
    let standard = DatabaseLayout::standard();
    for name in ["APPL_DB", "ASIC_DB", "COUNTERS_DB", "CONFIG_DB", "FLEX_COUNTER_DB", "STATE_DB"] {
        let (shared, ours) = (layout.database(name).unwrap(), standard.database(name).unwrap());
        assert_eq!(
            (shared.id, shared.separator),
            (ours.id, ours.separator),
            "{name}: the built-in layout is the shared one"
        );
    }
    assert_eq!(layout.database("CONFIG_DB").unwrap().separator, '|');
    assert_eq!(layout.database("COUNTERS_DB").unwrap().separator, ':');
    let bmp = layout.database("BMP_STATE_DB").unwrap();
    assert_eq!((bmp.id, bmp.instance.name.as_str()), (20, "redis_bmp"));
    assert_eq!(
        bmp.instance.endpoint(),
        crate::layout::Endpoint::Unix("/var/run/redis/redis_bmp.sock".into()),
        "an instance with a socket is reached by it"
    );
}

#[tokio::test]
async fn aliases_with_slashes_resolve_to_sonic_names_and_their_queues() {
    let Some(prereq) = prerequisites("aliases_with_slashes_resolve_to_sonic_names_and_their_queues") else { return };
    let peer = SonicPeer::builder(AsicFamily::Mellanox)
        .only_ports(["Ethernet0", "Ethernet4"])
        .add_port(ExtraPort::new("Ethernet200").alias("Ethernet1/1").lossless("3,4"))
        .add_port(ExtraPort::new("Ethernet2/1").alias("etp2/1").lossless("3"))
        .start(&prereq)
        .await
        .unwrap();
    let config = peer.config_db().await.unwrap();
    let ports = PortNames::read(&config).await.unwrap();
    assert_eq!(ports.names().collect::<Vec<_>>(), vec!["Ethernet0", "Ethernet2/1", "Ethernet200", "Ethernet4"]);
    assert_eq!(ports.resolve("Ethernet1/1").unwrap(), "Ethernet200");
    assert_eq!(ports.resolve("etp2/1").unwrap(), "Ethernet2/1");
    assert_eq!(ports.resolve("Ethernet2/1").unwrap(), "Ethernet2/1");
    assert_eq!(ports.resolve("etp2").unwrap(), "Ethernet4", "sonic-utilities' own alias");
    assert_eq!(ports.alias("Ethernet0"), Some("etp1"));
    assert!(matches!(ports.resolve("Ethernet8"), Err(NameError::UnknownPort(_))), "Ethernet8 was cut");
    // The queues of a port named with a slash, through the name maps.
    let w = watched(peer.switch(), "Ethernet2/1").await;
    let q = w.qos.queue(&w.queues, "Ethernet2/1", 3).unwrap();
    assert_eq!((q.queue.port.as_str(), q.queue.position), ("Ethernet2/1", 3));
    assert_eq!(q.source, crate::qos::QueueSource::Map("AZURE".into()));
    assert!(peer.errors().is_empty(), "{:?}", peer.errors());
}

#[tokio::test]
async fn a_priority_maps_to_its_unicast_queue_and_never_to_a_multicast_one() {
    let Some(prereq) = prerequisites("a_priority_maps_to_its_unicast_queue_and_never_to_a_multicast_one") else {
        return;
    };
    let peer = SonicPeer::builder(AsicFamily::Broadcom)
        .only_ports(["Ethernet0", "Ethernet4"])
        // Ethernet0 sends priority 4 to queue 13, which sonic-utilities' capture has as multicast.
        .config("MAP_PFC_PRIORITY_TO_QUEUE|ODD", &[("3", "3"), ("4", "13")])
        .config("PORT_QOS_MAP|Ethernet0", &[("pfc_to_queue_map", "ODD")])
        .start(&prereq)
        .await
        .unwrap();
    let w = watched(peer.switch(), "Ethernet4").await;
    let lossless: Vec<(u8, String)> = w
        .qos
        .lossless_queues(&w.queues, "Ethernet4")
        .unwrap()
        .into_iter()
        .map(|q| (q.priority, q.queue.name()))
        .collect();
    assert_eq!(lossless, vec![(3, "Ethernet4:3".to_string()), (4, "Ethernet4:4".to_string())]);
    assert_eq!(w.qos.queue(&w.queues, "Ethernet0", 3).unwrap().queue.name(), "Ethernet0:3");
    let e = w.qos.queue(&w.queues, "Ethernet0", 4).unwrap_err();
    assert!(
        matches!(&e, NameError::NotUnicast { port, index: 13, kind, .. } if port == "Ethernet0" && kind == "multicast"),
        "{e}"
    );
}

#[tokio::test]
async fn each_asic_family_is_recognised_from_what_the_switch_holds() {
    let Some(prereq) = prerequisites("each_asic_family_is_recognised_from_what_the_switch_holds") else { return };
    // sonic-utilities' DEVICE_METADATA says Mellanox whatever the counters; Prestera is told
    // from Teralynx only by its (ARM) platform.
    let cases = [
        (AsicFamily::Mellanox, None),
        (AsicFamily::Broadcom, None),
        (AsicFamily::MarvellTeralynx, None),
        (AsicFamily::MarvellPrestera, Some("arm64-marvell_db98cx8580_32cd-r0")),
    ];
    for (family, platform) in cases {
        let mut builder = SonicPeer::builder(family).only_ports(["Ethernet4"]);
        if let Some(platform) = platform {
            builder = builder.config("DEVICE_METADATA|localhost", &[("platform", platform)]);
        }
        let peer = builder.start(&prereq).await.unwrap();
        let w = watched(peer.switch(), "Ethernet4").await;
        let counters = peer.switch().database(dbs::COUNTERS_DB).await.unwrap();
        let port = counters.entry("COUNTERS", &w.port_oid).await.unwrap().unwrap();
        let config = peer.config_db().await.unwrap();
        let metadata = config.entry("DEVICE_METADATA", "localhost").await.unwrap();
        let recognised = AsicFamily::recognise(&port, metadata.as_ref()).unwrap();
        assert_eq!(recognised.family, family, "{recognised:?}");
        // The mock's Mellanox platform disagrees with every other family's counters: said, not hidden.
        assert_eq!(
            recognised.conflict.is_some(),
            family == AsicFamily::Broadcom || family == AsicFamily::MarvellTeralynx
        );
    }
}

/// A storm the peer injects on Ethernet4 priority 3 is declared by SONiC's own detector for
/// `family`, and handled as the entry's action.
async fn storm_is_declared(prereq: &Prerequisites, family: AsicFamily) {
    let peer =
        ethernet4(prereq, family, &[("action", "drop"), ("detection_time", "200"), ("restoration_time", "400")]).await;
    let counters = peer.switch().database(dbs::COUNTERS_DB).await.unwrap();
    let mut events = Events::subscribe(&counters).await.unwrap();
    let w = watched(peer.switch(), "Ethernet4").await;
    let queue3 = w.queues.at("Ethernet4", 3).unwrap().oid.clone();
    let reader = WatchdogReader::open(peer.switch()).await.unwrap();
    let before = eventually!("the watchdog to watch Ethernet4", {
        let state = w.state(&reader, "Ethernet4").await;
        state.queues.get(&3).filter(|q| q.detection_time == Some(Duration::from_millis(200))).cloned()
    });
    assert_eq!((before.status, before.action), (Some(Status::Operational), Some(Action::Drop)));
    // Quiet polls: no storm.
    assert!(peer.wait_polls(5, DEADLINE).await);
    assert_eq!(
        w.state(&reader, "Ethernet4").await.queues[&3].status,
        Some(Status::Operational),
        "{family}: no storm without one"
    );

    peer.start_storm("Ethernet4", 3).unwrap();
    let event = tokio::time::timeout(DEADLINE, events.next()).await.expect("a detector event").unwrap().unwrap();
    assert_eq!((event.queue.as_str(), event.kind.clone()), (queue3.as_str(), EventKind::Storm), "{family}");
    let state = eventually!("the storm to be handled", {
        let state = w.state(&reader, "Ethernet4").await;
        (state.queues[&3].status == Some(Status::Stormed)).then_some(state)
    });
    assert_eq!(state.in_storm, [3].into(), "{family}: APPL_DB PFC_WD_TABLE_INSTORM");
    assert_eq!(state.in_force(3), Some(InForce::Lossy), "{family}: a drop turns PFC off for the priority");
    assert_eq!(state.queues[&3].detected, before.detected + 1);
    assert_eq!(state.queues[&4].status, Some(Status::Operational), "{family}: priority 4 is quiet");

    peer.stop_storm("Ethernet4", 3).unwrap();
    let event = tokio::time::timeout(DEADLINE, events.next()).await.expect("a restore event").unwrap().unwrap();
    assert_eq!(event.kind, EventKind::Restore, "{family}");
    let state = eventually!("the restore", {
        let state = w.state(&reader, "Ethernet4").await;
        (state.queues[&3].status == Some(Status::Operational) && state.in_storm.is_empty()).then_some(state)
    });
    assert_eq!(state.pfc_mask, Some(0b0001_1000), "{family}: PFC back on for 3 and 4");
    assert_eq!(state.queues[&3].restored, before.restored + 1);
    assert!(peer.errors().is_empty(), "{family}: {:?}", peer.errors());
}

#[tokio::test]
async fn sonics_mellanox_detector_declares_an_injected_storm() {
    let Some(prereq) = prerequisites("sonics_mellanox_detector_declares_an_injected_storm") else { return };
    storm_is_declared(&prereq, AsicFamily::Mellanox).await;
}

#[tokio::test]
async fn sonics_broadcom_detector_declares_an_injected_storm() {
    let Some(prereq) = prerequisites("sonics_broadcom_detector_declares_an_injected_storm") else { return };
    storm_is_declared(&prereq, AsicFamily::Broadcom).await;
}

#[tokio::test]
async fn sonics_marvell_detectors_declare_an_injected_storm() {
    let Some(prereq) = prerequisites("sonics_marvell_detectors_declare_an_injected_storm") else { return };
    storm_is_declared(&prereq, AsicFamily::MarvellTeralynx).await;
    storm_is_declared(&prereq, AsicFamily::MarvellPrestera).await;
}

#[tokio::test]
async fn an_in_place_change_keeps_the_running_action_and_a_replace_takes_the_new_one() {
    let Some(prereq) = prerequisites("an_in_place_change_keeps_the_running_action_and_a_replace_takes_the_new_one")
    else {
        return;
    };
    // The watchdog starts on Ethernet4 with alert; the escalation is to drop/200/400.
    let peer = ethernet4(
        &prereq,
        AsicFamily::Mellanox,
        &[("action", "alert"), ("detection_time", "600"), ("restoration_time", "600")],
    )
    .await;
    let config = peer.config_db().await.unwrap();
    let counters = peer.switch().database(dbs::COUNTERS_DB).await.unwrap();
    let reader = WatchdogReader::open(peer.switch()).await.unwrap();
    let w = watched(peer.switch(), "Ethernet4").await;
    let queues: Vec<String> =
        w.qos.watchdog_queues(&w.queues, "Ethernet4").iter().map(|(_, q)| q.oid.clone()).collect();
    eventually!("the watchdog to start with alert", {
        let state = w.state(&reader, "Ethernet4").await;
        state
            .queues
            .get(&3)
            .filter(|q| q.action == Some(Action::Alert) && q.status == Some(Status::Operational))
            .cloned()
    });
    let escalation = fields(&[("action", "drop"), ("detection_time", "200"), ("restoration_time", "400")]);

    // In place: COUNTERS_DB follows CONFIG_DB (the detectors read the new times) ...
    let mut restart = RestartWatch::start(&counters, &queues).await.unwrap();
    config
        .apply(&[Change::Set { table: "PFC_WD".into(), key: "Ethernet4".into(), fields: escalation.clone() }])
        .await
        .unwrap();
    let q3 = eventually!("COUNTERS_DB to show the in-place change", {
        let state = w.state(&reader, "Ethernet4").await;
        state.queues.get(&3).filter(|q| q.detection_time == Some(Duration::from_millis(200))).cloned()
    });
    assert_eq!(q3.action, Some(Action::Drop), "COUNTERS_DB says drop ...");
    assert_eq!(
        restart.wait(Duration::from_secs(1)).await.unwrap(),
        vec![format!("COUNTERS:{}", queues[0]), format!("COUNTERS:{}", queues[1])]
    );
    // ... but a storm still gets alert: PFC stays on, nothing is dropped.
    peer.start_storm("Ethernet4", 3).unwrap();
    let state = eventually!("the storm under the in-place change", {
        let state = w.state(&reader, "Ethernet4").await;
        (state.queues[&3].status == Some(Status::Stormed)).then_some(state)
    });
    assert_eq!(state.in_force(3), Some(InForce::Alert), "orchagent kept the old action (pfcwdsworch.cpp:268)");
    // A second later (past a periodic commit of the handler's counters): still alert, nothing dropped.
    assert!(peer.wait_polls(12, DEADLINE).await);
    let state = w.state(&reader, "Ethernet4").await;
    assert_eq!((state.in_force(3), state.queues[&3].tx_dropped), (Some(InForce::Alert), q3.tx_dropped), "still alert");
    peer.stop_storm("Ethernet4", 3).unwrap();
    eventually!("the restore", {
        let state = w.state(&reader, "Ethernet4").await;
        (state.queues[&3].status == Some(Status::Operational)).then_some(())
    });

    replace_takes_the_new_action(&peer, &w, &reader, &queues, escalation).await;
    assert!(peer.errors().is_empty(), "{:?}", peer.errors());
}

/// Replaced (DEL then HSET in one MULTI, as `pfcwd start`): the watchdog restarts, and the next
/// storm gets the new action.
async fn replace_takes_the_new_action(
    peer: &SonicPeer,
    w: &Watched,
    reader: &WatchdogReader,
    queues: &[String],
    escalation: BTreeMap<String, String>,
) {
    let config = peer.config_db().await.unwrap();
    let counters = peer.switch().database(dbs::COUNTERS_DB).await.unwrap();
    // Replaced (DEL then HSET in one MULTI, as `pfcwd start`): the watchdog restarts ...
    let mut restart = RestartWatch::start(&counters, queues).await.unwrap();
    config
        .apply(&[Change::Replace { table: "PFC_WD".into(), key: "Ethernet4".into(), fields: escalation }])
        .await
        .unwrap();
    assert_eq!(restart.wait(DEADLINE).await.unwrap(), Vec::<String>::new(), "orchagent restarted both queues");
    let before = w.state(reader, "Ethernet4").await.queues[&3].clone();
    assert_eq!(
        (before.action, before.detection_time, before.restoration_time),
        (Some(Action::Drop), Some(Duration::from_millis(200)), Some(Duration::from_millis(400)))
    );
    // ... and the next storm gets drop: PFC off for the priority, the queue's packets dropped.
    peer.start_storm("Ethernet4", 3).unwrap();
    let state = eventually!("the storm dropped after the replace", {
        let state = w.state(reader, "Ethernet4").await;
        (state.queues[&3].status == Some(Status::Stormed) && state.queues[&3].tx_dropped > before.tx_dropped)
            .then_some(state)
    });
    assert_eq!(state.in_force(3), Some(InForce::Lossy));
    assert_eq!(state.queues[&3].detected, before.detected + 1);
    // The entry is exactly what was written.
    assert_eq!(
        config.entry("PFC_WD", "Ethernet4").await.unwrap().unwrap(),
        fields(&[("action", "drop"), ("detection_time", "200"), ("restoration_time", "400")])
    );
}

async fn next(keyspace: &mut crate::client::subscribe::Keyspace) -> crate::client::subscribe::KeyspaceEvent {
    tokio::time::timeout(DEADLINE, keyspace.next()).await.expect("a notification").unwrap().unwrap()
}

#[tokio::test]
async fn keyspace_notifications_arrive_for_config_db_changes() {
    let Some(prereq) = prerequisites("keyspace_notifications_arrive_for_config_db_changes") else { return };
    let peer = SonicPeer::builder(AsicFamily::Mellanox).only_ports(["Ethernet4"]).start(&prereq).await.unwrap();
    let config = peer.config_db().await.unwrap();
    assert!(config.keyspace_events_enabled().await.unwrap(), "the peer's Redis is configured as SONiC's");
    let mut entry = config.watch_entry("PFC_WD", "Ethernet4").await.unwrap();
    let mut table = config.watch_table("PORT").await.unwrap();
    config
        .apply(&[Change::Set {
            table: "PORT".into(),
            key: "Ethernet4".into(),
            fields: fields(&[("admin_status", "down")]),
        }])
        .await
        .unwrap();
    let e = next(&mut table).await;
    assert_eq!((e.table.as_str(), e.entry.as_str(), e.event.as_str()), ("PORT", "Ethernet4", "hset"));
    config
        .apply(&[Change::Replace {
            table: "PFC_WD".into(),
            key: "Ethernet4".into(),
            fields: fields(&[("action", "alert"), ("detection_time", "400")]),
        }])
        .await
        .unwrap();
    let (first, second) = (next(&mut entry).await, next(&mut entry).await);
    assert_eq!(
        (first.event.as_str(), second.event.as_str()),
        ("del", "hset"),
        "a replace is seen as a delete, then a create"
    );
    assert!(first.is_removal());
    config
        .apply(&[Change::DeleteFields {
            table: "PFC_WD".into(),
            key: "Ethernet4".into(),
            fields: vec!["detection_time".into()],
        }])
        .await
        .unwrap();
    assert_eq!(next(&mut entry).await.event, "hdel");
}

#[tokio::test]
async fn absent_is_redis_saying_so_and_never_an_error() {
    let Some(prereq) = prerequisites("absent_is_redis_saying_so_and_never_an_error") else { return };
    let peer = SonicPeer::builder(AsicFamily::Mellanox).only_ports(["Ethernet4"]).start(&prereq).await.unwrap();
    let config = peer.config_db().await.unwrap();
    assert_eq!(config.entry("PFC_WD", "Ethernet9").await.unwrap(), None);
    assert_eq!(config.field("PFC_WD", "Ethernet9", "action").await.unwrap(), FieldRead::NoEntry);
    assert_eq!(config.field("PFC_WD", "Ethernet4", "shout").await.unwrap(), FieldRead::NoField);
    assert_eq!(config.field("PFC_WD", "Ethernet4", "action").await.unwrap(), FieldRead::Value("drop".into()));
    // A key that is there but not a hash is an error, not "absent".
    let mut conn = config.connection();
    redis::cmd("SET").arg("PFC_WD|Ethernet7").arg("x").query_async::<()>(&mut conn).await.unwrap();
    assert!(matches!(config.entry("PFC_WD", "Ethernet7").await, Err(DbError::Command { .. })));
    // Many at once: each answer in its place, absent only where Redis said so.
    let keys = ["PFC_WD|Ethernet4".to_string(), "PFC_WD|Ethernet9".to_string()];
    let both = config.hashes(&keys).await.unwrap();
    assert_eq!((both[0].as_ref().map(|e| e["action"].as_str()), both[1].is_none()), (Some("drop"), true));
    let with_bad = ["PFC_WD|Ethernet4".to_string(), "PFC_WD|Ethernet7".to_string()];
    assert!(config.hashes(&with_bad).await.is_err(), "one key that is not a hash fails the read, not silently");
    // Changes that would not do what they say are refused before sending.
    let empty = Change::Set { table: "PFC_WD".into(), key: "Ethernet4".into(), fields: BTreeMap::new() };
    assert!(matches!(config.apply(&[empty]).await, Err(DbError::InvalidChange(_))));
    let sneaky = Change::Delete { table: "PFC_WD|Ethernet4".into(), key: "x".into() };
    assert!(matches!(config.apply(&[sneaky]).await, Err(DbError::InvalidChange(_))));
    assert!(config.exists("PFC_WD", "Ethernet4").await.unwrap(), "nothing was sent");
    // No name maps: the switch is not ready, which is not "no ports".
    let asic = peer.switch().database(dbs::ASIC_DB).await.unwrap();
    assert!(matches!(NameMaps::read(&asic).await, Err(DbError::NotReady { .. })));

    // The server gone: every read is an error, none is "absent".
    let switch = peer.switch().clone().with_timeout(Duration::from_millis(500));
    let counters = switch.database(dbs::COUNTERS_DB).await.unwrap();
    drop(config);
    drop(peer);
    let e = counters.entry("COUNTERS", "oid:0x1").await.unwrap_err();
    assert!(e.is_transient(), "a lost connection can come back: {e}");
    assert!(switch.database(dbs::CONFIG_DB).await.is_err());
}

#[tokio::test]
async fn the_watchdog_waits_for_pfcwd_sw_enable_and_starts_when_it_appears() {
    let Some(prereq) = prerequisites("the_watchdog_waits_for_pfcwd_sw_enable_and_starts_when_it_appears") else {
        return;
    };
    // sonic-utilities' PORT_QOS_MAP as captured: pfc_enable only.
    let peer = SonicPeer::builder(AsicFamily::Mellanox)
        .only_ports(["Ethernet4"])
        .image_defaults(false)
        .config("PFC_WD|Ethernet4", &[("detection_time", "200")])
        .start(&prereq)
        .await
        .unwrap();
    let counters = peer.switch().database(dbs::COUNTERS_DB).await.unwrap();
    let w = watched(peer.switch(), "Ethernet4").await;
    let queue3 = w.queues.at("Ethernet4", 3).unwrap().oid.clone();
    let detection = |entry: Option<crate::client::Entry>| entry.and_then(|e| e.get("PFC_WD_DETECTION_TIME").cloned());
    // The capture's own record stays: orchagent has not started the watchdog (no watched priority).
    sleep(Duration::from_millis(1500)).await;
    assert_eq!(detection(counters.counters(&queue3).await.unwrap()).as_deref(), Some("600000"));
    assert!(w.qos.watchdog_queues(&w.queues, "Ethernet4").is_empty());
    // db_migrator's field appears: the pending task is retried and the watchdog starts.
    let config = peer.config_db().await.unwrap();
    let sw_enable = fields(&[("pfcwd_sw_enable", "3,4")]);
    config
        .apply(&[Change::Set { table: "PORT_QOS_MAP".into(), key: "Ethernet4".into(), fields: sw_enable }])
        .await
        .unwrap();
    eventually!(
        "the watchdog to start",
        detection(counters.counters(&queue3).await.unwrap()).filter(|d| d == "200000")
    );
    assert!(peer.errors().is_empty(), "{:?}", peer.errors());
}

/// SONiC's detectors, run on one pair of samples each, agree with [`AsicFamily::storming`].
#[tokio::test]
async fn the_storm_test_of_each_family_is_what_sonics_detector_decides() {
    let Some(prereq) = prerequisites("the_storm_test_of_each_family_is_what_sonics_detector_decides") else { return };
    let server = RedisServer::start(&prereq.redis_server).await.unwrap();
    let switch = Switch::new(DatabaseLayout::standard().with_instance("redis", instance(&server)), None);
    let counters = switch.database(dbs::COUNTERS_DB).await.unwrap();
    let mut conn = counters.connection();
    let poll = Duration::from_millis(200);
    let s = |rx: u64, dur: u64, on2off: u64, paused: bool, tx: u64, occ: u64| StormSample {
        pfc_rx_pkts: Some(rx),
        on2off_rx_pkts: Some(on2off),
        pause_duration: Some(dur),
        queue_paused: Some(paused),
        queue_tx_pkts: Some(tx),
        queue_occupancy_bytes: Some(occ),
    };
    let base = s(100, 1_000, 7, true, 50, 4096);
    let cases = [
        ("paused all poll, stuck", s(300, 201_000, 7, true, 50, 4096)),
        ("paused 90 % of the poll", s(300, 181_000, 7, true, 50, 4096)),
        ("paused 70 % of the poll", s(300, 141_000, 7, true, 50, 4096)),
        ("still sending", s(300, 201_000, 7, true, 60, 4096)),
        ("an XON arrived", s(300, 201_000, 8, true, 50, 4096)),
        ("not paused now", s(300, 201_000, 7, false, 50, 4096)),
        ("no frames, idle queue", s(100, 201_000, 7, true, 50, 0)),
        ("frames, idle queue", s(300, 201_000, 7, true, 50, 0)),
        ("quiet", s(100, 1_000, 7, false, 90, 0)),
    ];
    for family in [AsicFamily::Mellanox, AsicFamily::Broadcom, AsicFamily::MarvellTeralynx, AsicFamily::MarvellPrestera]
    {
        let script = std::fs::read_to_string(prereq.swss_file(&family.detector_script())).unwrap();
        let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(script).query_async(&mut conn).await.unwrap();
        for (what, after) in &cases {
            redis::cmd("FLUSHDB").query_async::<()>(&mut conn).await.unwrap();
            let (queue, port) = ("oid:0x15000000000382", "oid:0x1000000000013");
            let setup = [
                ("COUNTERS_QUEUE_INDEX_MAP", queue, "3"),
                ("COUNTERS_QUEUE_PORT_MAP", queue, port),
                ("COUNTERS:oid:0x15000000000382", "PFC_WD_STATUS", "operational"),
                ("COUNTERS:oid:0x15000000000382", "PFC_WD_ACTION", "drop"),
                // Detection time one poll: a single storm poll declares the storm.
                ("COUNTERS:oid:0x15000000000382", "PFC_WD_DETECTION_TIME", "200000"),
            ];
            for (key, field, value) in setup {
                redis::cmd("HSET").arg(key).arg(field).arg(value).query_async::<()>(&mut conn).await.unwrap();
            }
            let mut events = Events::subscribe(&counters).await.unwrap();
            for (n, sample) in [&base, after].into_iter().enumerate() {
                write_sample(&mut conn, family, port, queue, sample, n as u64 * poll.as_nanos() as u64).await;
                redis::cmd("EVALSHA")
                    .arg(&sha)
                    .arg(1)
                    .arg(queue)
                    .arg(counters.database().id)
                    .arg("COUNTERS")
                    .arg(poll.as_millis().to_string())
                    .query_async::<redis::Value>(&mut conn)
                    .await
                    .unwrap();
            }
            // The detector publishes inside EVALSHA; the message is on its way when it returns.
            let lua = match tokio::time::timeout(Duration::from_millis(300), events.next()).await {
                Ok(Some(Ok(event))) => event.kind == EventKind::Storm,
                Ok(other) => panic!("{family} {what}: {other:?}"),
                Err(_) => false,
            };
            assert_eq!(
                family.storming(&base, after, poll),
                Some(lua),
                "{family}, {what}: SONiC's detector says storm={lua}"
            );
        }
    }
}

fn instance(server: &RedisServer) -> crate::layout::Instance {
    crate::layout::Instance {
        name: "redis".into(),
        hostname: "127.0.0.1".into(),
        port: 0,
        unix_socket_path: Some(server.socket().to_path_buf()),
    }
}

/// Writes one sample's counters as syncd would, with the PFC_WD group's timestamp at `at_ns`.
async fn write_sample(
    conn: &mut redis::aio::MultiplexedConnection,
    family: AsicFamily,
    port: &str,
    queue: &str,
    s: &StormSample,
    at_ns: u64,
) {
    let mut port_fields = vec![(AsicFamily::pfc_rx_counter(3), s.pfc_rx_pkts.unwrap())];
    port_fields.extend(family.pause_duration_counter(3).map(|f| (f, s.pause_duration.unwrap())));
    port_fields.extend(family.on2off_counter(3).map(|f| (f, s.on2off_rx_pkts.unwrap())));
    let mut queue_fields = vec![
        ("SAI_QUEUE_STAT_PACKETS".to_string(), s.queue_tx_pkts.unwrap().to_string()),
        ("SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES".to_string(), s.queue_occupancy_bytes.unwrap().to_string()),
    ];
    if family == AsicFamily::Broadcom {
        queue_fields.push(("SAI_QUEUE_ATTR_PAUSE_STATUS".to_string(), s.queue_paused.unwrap().to_string()));
    }
    let mut pipe = redis::pipe();
    pipe.hset_multiple(format!("COUNTERS:{port}"), &port_fields)
        .hset_multiple(format!("COUNTERS:{queue}"), &queue_fields)
        .hset("COUNTERS:TIME_STAMP", "PFC_WD_Port_Counter_time_stamp", 1_000_000_000 + at_ns);
    pipe.query_async::<()>(conn).await.unwrap();
}
