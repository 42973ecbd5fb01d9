//! The switch actuators against a switch that follows SONiC's own source: a real
//! `redis-server` holding sonic-utilities' databases (ports with aliases, `Ethernet4` is
//! `etp2`), SONiC's Lua detectors as the watchdog (`sonic::peer`), and a gNMI front that
//! routes, serves and refuses as sonic-gnmi does with the image's defaults (native write on,
//! translib write off; `sonic::gnmi_front`) — or the switch's Redis directly, as rocemend
//! running on the switch reaches it.
//!
//! Each escalation must land on `PFC_WD|Ethernet4` (the SONiC name, the action naming the
//! alias), SONiC's own detector must then handle a storm with the new action and times, the
//! undo must restore the original, and nothing else in CONFIG_DB may change.
//!
//! Needs `redis-server` and `shared/peers/sonic`; without them each test skips through
//! `test_peers::missing` (and fails under `ROCEMEND_REQUIRE_PEERS=1`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actuators::PfcwdConfig;
use engine::{Action, Actuator, ActuatorError, Labels, Verification};
use gnmi_proto::gnmi::g_nmi_server::{GNmi, GNmiServer};
use gnmi_proto::gnmi::{
    CapabilityRequest, CapabilityResponse, GetRequest, GetResponse, SetRequest, SetResponse, SubscribeRequest,
};
use sonic::gnmi_front::{serve, FrontConfig, GnmiFront, RedisBackend, ResponseStream};
use sonic::layout::db as dbs;
use sonic::peer::{ExtraPort, Prerequisites, SonicPeer};
use sonic::watchdog::{Action as WdAction, InForce, PortState, Status};
use sonic::AsicFamily;
use tokio::time::{sleep, Instant};
use tonic::{Request, Response, Streaming};

/// Long enough for a storm to be detected and handled at a 100 ms poll on a loaded machine.
const DEADLINE: Duration = Duration::from_secs(20);

/// The watchdog Ethernet4 starts with, and the level the escalation takes.
const ORIGINAL: [(&str, &str); 3] = [("action", "alert"), ("detection_time", "600"), ("restoration_time", "600")];
const LEVELS: &str = "[levels.1]\naction = \"drop\"\ndetection_time = 200\nrestoration_time = 400\n";

pub(crate) fn entry(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

pub(crate) fn prerequisites() -> Option<Prerequisites> {
    match sonic::peer::prereq::find() {
        Ok(found) => Some(found),
        Err(why) => {
            test_peers::missing(&why);
            None
        }
    }
}

/// A peer of `family` with Ethernet0 and Ethernet4 (aliases `etp1`, `etp2`), the watchdog
/// polling every 100 ms, Ethernet4 watched with [`ORIGINAL`].
pub(crate) async fn peer(prereq: &Prerequisites, family: AsicFamily) -> SonicPeer {
    SonicPeer::builder(family)
        .only_ports(["Ethernet0", "Ethernet4"])
        .config("PFC_WD|GLOBAL", &[("POLL_INTERVAL", "100")])
        .config("PFC_WD|Ethernet4", &ORIGINAL)
        .start(prereq)
        .await
        .expect("the peer starts")
}

/// A sonic-gnmi-like front over `peer`'s Redis, with `config`; its address. It stops when the
/// test's runtime ends.
pub(crate) async fn front(peer: &SonicPeer, config: FrontConfig) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let front = GnmiFront::new(Arc::new(RedisBackend::new(peer.switch().clone())), config);
    tokio::spawn(serve(front, listener, None, std::future::pending()));
    address
}

/// The escalation of the port the NIC faces, named by its alias as a label might carry it.
fn escalate(port: &str) -> Action {
    Action {
        kind: "pfcwd.escalate".into(),
        target: Labels::from_pairs([("switch", "leaf-rail0"), ("port", port), ("queue", "3")]),
        params: [("level".to_string(), "1".to_string())].into(),
    }
}

/// Ethernet4's watchdog as orchagent recorded it (queues 3 and 4, priority → state).
async fn state(peer: &SonicPeer) -> PortState {
    peer.watchdog("Ethernet4").await.expect("the peer's watchdog record reads")
}

/// Polls `what` until it gives `Some`, or panics naming it.
async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {DEADLINE:?} waiting for {what}");
        sleep(Duration::from_millis(50)).await;
    }
}

/// The whole loop on `family`, the actuator built from `config` (its `[gnmi]` table).
async fn escalation_round_trip(family: AsicFamily, peer: &SonicPeer, config: &str) {
    let original = eventually("the watchdog to start with alert", || async {
        let s = state(peer).await;
        s.queues.get(&3).filter(|q| q.action == Some(WdAction::Alert) && q.status == Some(Status::Operational)).cloned()
    })
    .await;
    let before = peer.dump(dbs::CONFIG_DB).await.unwrap();
    let config_db = peer.config_db().await.unwrap();
    let found = config_db.entry("PFC_WD", "Ethernet4").await.unwrap().expect("Ethernet4 is watched");
    let pfcwd = toml::from_str::<PfcwdConfig>(&format!("{config}{LEVELS}")).unwrap().build("pfcwd").unwrap();
    let action = escalate("etp2");

    let applied = pfcwd.execute(&action).await.unwrap_or_else(|e| panic!("{family}: {e}"));
    assert!(applied.summary.contains("Ethernet4") && applied.summary.contains("in effect"), "{}", applied.summary);
    let mut escalated = found.clone();
    escalated.extend(entry(&[("action", "drop"), ("detection_time", "200"), ("restoration_time", "400")]));
    assert_eq!(
        config_db.entry("PFC_WD", "Ethernet4").await.unwrap(),
        Some(escalated),
        "{family}: the SONiC name, the level on top of what the entry held (pfc_stat_history kept)"
    );
    assert_eq!(config_db.entry("PFC_WD", "etp2").await.unwrap(), None, "{family}: never the alias");
    assert_eq!(pfcwd.verify(&action, Some(&applied)).await.unwrap(), Verification::InEffect, "{family}");
    let q3 = state(peer).await.queues[&3].clone();
    assert_eq!(
        (q3.action, q3.detection_time, q3.restoration_time),
        (Some(WdAction::Drop), Some(Duration::from_millis(200)), Some(Duration::from_millis(400))),
        "{family}: orchagent restarted the watchdog with the new entry"
    );

    // SONiC's own detector handles the next storm with the new action: PFC off, packets dropped.
    peer.start_storm("Ethernet4", 3).unwrap();
    let stormed = eventually("the storm handled with drop", || async {
        let s = state(peer).await;
        (s.queues[&3].status == Some(Status::Stormed)).then_some(s)
    })
    .await;
    assert_eq!(stormed.in_force(3), Some(InForce::Lossy), "{family}: a drop handler, not the original alert");
    assert_eq!(stormed.queues[&3].detected, original.detected + 1, "{family}");
    peer.stop_storm("Ethernet4", 3).unwrap();
    eventually("the restore", || async {
        (state(peer).await.queues[&3].status == Some(Status::Operational)).then_some(())
    })
    .await;

    let undone = pfcwd.undo(&action, &applied).await.unwrap_or_else(|e| panic!("{family}: {e}"));
    assert!(undone.summary.contains("in effect"), "{}", undone.summary);
    assert_eq!(config_db.entry("PFC_WD", "Ethernet4").await.unwrap(), Some(found), "{family}: the original");
    let q3 = state(peer).await.queues[&3].clone();
    assert_eq!((q3.action, q3.detection_time), (Some(WdAction::Alert), Some(Duration::from_millis(600))), "{family}");
    assert_eq!(pfcwd.verify(&action, Some(&applied)).await.unwrap(), Verification::NotInEffect, "{family}");
    assert_eq!(peer.dump(dbs::CONFIG_DB).await.unwrap(), before, "{family}: nothing else in CONFIG_DB changed");
    assert!(peer.errors().is_empty(), "{family}: {:?}", peer.errors());
}

/// Over a sonic-gnmi-like front with the image's defaults, `path_style = "auto"`.
async fn over_gnmi(family: AsicFamily) {
    let Some(prereq) = prerequisites() else { return };
    let peer = peer(&prereq, family).await;
    let address = front(&peer, FrontConfig::default()).await;
    let config =
        format!("[gnmi]\nswitches = {{ leaf-rail0 = \"{address}\" }}\npath_style = \"auto\"\ntimeout = \"5s\"\n");
    escalation_round_trip(family, &peer, &config).await;
}

/// Over the switch's own Redis, its layout from `database_config.json`.
async fn over_redis(family: AsicFamily) {
    let Some(prereq) = prerequisites() else { return };
    let peer = peer(&prereq, family).await;
    let dir = tempfile::tempdir().unwrap();
    let layout = peer.write_database_config(&prereq, dir.path()).unwrap();
    let config = format!(
        "[gnmi]\ntimeout = \"5s\"\n[gnmi.redis]\nswitch = \"leaf-rail0\"\ndatabase_config = {:?}\n",
        layout.display().to_string()
    );
    escalation_round_trip(family, &peer, &config).await;
}

#[tokio::test]
async fn over_sonic_gnmi_a_mellanox_escalation_lands_on_the_sonic_name_takes_effect_and_is_undone() {
    over_gnmi(AsicFamily::Mellanox).await;
}

#[tokio::test]
async fn over_sonic_gnmi_a_broadcom_escalation_lands_on_the_sonic_name_takes_effect_and_is_undone() {
    over_gnmi(AsicFamily::Broadcom).await;
}

#[tokio::test]
async fn over_sonic_gnmi_a_marvell_escalation_lands_on_the_sonic_name_takes_effect_and_is_undone() {
    over_gnmi(AsicFamily::MarvellTeralynx).await;
}

#[tokio::test]
async fn over_the_switchs_redis_a_mellanox_escalation_takes_effect_and_is_undone() {
    over_redis(AsicFamily::Mellanox).await;
}

#[tokio::test]
async fn over_the_switchs_redis_a_broadcom_escalation_takes_effect_and_is_undone() {
    over_redis(AsicFamily::Broadcom).await;
}

#[tokio::test]
async fn over_the_switchs_redis_a_marvell_escalation_takes_effect_and_is_undone() {
    over_redis(AsicFamily::MarvellPrestera).await;
}

#[tokio::test]
async fn a_switch_that_cannot_be_written_is_reported_at_start_and_nothing_is_sent() {
    let Some(prereq) = prerequisites() else { return };
    let peer = peer(&prereq, AsicFamily::Mellanox).await;
    for (native_write, translib_write, gate) in
        [(false, false, "GNMI is in read-only mode"), (false, true, "GNMI native write is disabled"), (true, false, "")]
    {
        let front_config = FrontConfig { native_write, translib_write, ..FrontConfig::default() };
        let address = front(&peer, front_config).await;
        let config = format!("[gnmi]\nswitches = {{ leaf-rail0 = \"{address}\" }}\ntimeout = \"5s\"\n{LEVELS}");
        let pfcwd = toml::from_str::<PfcwdConfig>(&config).unwrap().build("pfcwd").unwrap();
        let found = pfcwd.check_targets().await;
        let (switch, result) = &found[0];
        assert_eq!(switch, "leaf-rail0");
        if native_write {
            let summary = result.as_ref().unwrap();
            assert!(summary.contains("writes native") && summary.contains("with aliases"), "{summary}");
            continue;
        }
        let error = result.as_ref().unwrap_err();
        assert!(matches!(error, ActuatorError::NotSupported(m) if m.contains(gate)), "{error:?}");
        let before = peer.dump(dbs::CONFIG_DB).await.unwrap();
        let err = pfcwd.execute(&escalate("Ethernet4")).await.unwrap_err();
        assert!(matches!(&err, ActuatorError::NotSupported(m) if m.contains(gate)), "{err:?}");
        assert_eq!(peer.dump(dbs::CONFIG_DB).await.unwrap(), before, "nothing was written");
    }
}

#[tokio::test]
async fn a_port_named_with_a_slash_is_escalated_and_a_change_the_watchdog_does_not_take_is_an_error() {
    let Some(prereq) = prerequisites() else { return };
    let peer = SonicPeer::builder(AsicFamily::Mellanox)
        .only_ports(["Ethernet4"])
        .config("PFC_WD|GLOBAL", &[("POLL_INTERVAL", "100")])
        .add_port(ExtraPort::new("Ethernet1/1").alias("etp1/1").lossless("3,4").watchdog("alert", 600, 600))
        // PFC off: orchagent watches none of its queues, whatever its PFC_WD entry says.
        .add_port(ExtraPort::new("Ethernet1/2").alias("etp1/2"))
        .start(&prereq)
        .await
        .expect("the peer starts");
    let address = front(&peer, FrontConfig::default()).await;
    let config = format!("[gnmi]\nswitches = {{ leaf-rail0 = \"{address}\" }}\ntimeout = \"2s\"\n{LEVELS}");
    let pfcwd = toml::from_str::<PfcwdConfig>(&config).unwrap().build("pfcwd").unwrap();
    let config_db = peer.config_db().await.unwrap();

    let slash = escalate("etp1/1");
    let applied = eventually("the escalation of Ethernet1/1 once its watchdog runs", || async {
        pfcwd.execute(&slash).await.ok()
    })
    .await;
    assert!(applied.summary.contains("Ethernet1/1") && applied.summary.contains("in effect"), "{}", applied.summary);
    let now = config_db.entry("PFC_WD", "Ethernet1/1").await.unwrap().unwrap();
    assert_eq!((now["action"].as_str(), now["detection_time"].as_str()), ("drop", "200"));
    pfcwd.undo(&slash, &applied).await.unwrap();
    assert_eq!(config_db.entry("PFC_WD", "Ethernet1/1").await.unwrap().unwrap()["action"], "alert");

    // Written, but the watchdog never takes it: an error saying so, not "executed".
    let unwatched = escalate("Ethernet1/2");
    let err = pfcwd.execute(&unwatched).await.unwrap_err();
    assert!(
        matches!(&err, ActuatorError::Failed(m) if m.contains("PFC_WD|Ethernet1/2 was written but is not in effect")
            && m.contains("no queue of Ethernet1/2 watched")),
        "{err:?}"
    );
    assert!(peer.errors().is_empty(), "{:?}", peer.errors());
}

/// A front that answers every Get about `PFC_WD` with no notification while `silent` is set
/// (a misbehaving peer: sonic-gnmi answers an entry Get with its fields or NOT_FOUND).
#[derive(Clone)]
struct Silent {
    front: GnmiFront,
    silent: Arc<AtomicBool>,
}

#[tonic::async_trait]
impl GNmi for Silent {
    async fn capabilities(&self, r: Request<CapabilityRequest>) -> Result<Response<CapabilityResponse>, tonic::Status> {
        GNmi::capabilities(&self.front, r).await
    }

    async fn get(&self, r: Request<GetRequest>) -> Result<Response<GetResponse>, tonic::Status> {
        let about_pfc_wd = r.get_ref().path.iter().any(|p| p.elem.iter().any(|e| e.name == "PFC_WD"));
        if about_pfc_wd && self.silent.load(Ordering::SeqCst) {
            return Ok(Response::new(GetResponse::default()));
        }
        GNmi::get(&self.front, r).await
    }

    async fn set(&self, r: Request<SetRequest>) -> Result<Response<SetResponse>, tonic::Status> {
        GNmi::set(&self.front, r).await
    }

    type SubscribeStream = ResponseStream;

    async fn subscribe(
        &self,
        r: Request<Streaming<SubscribeRequest>>,
    ) -> Result<Response<Self::SubscribeStream>, tonic::Status> {
        GNmi::subscribe(&self.front, r).await
    }
}

#[tokio::test]
async fn an_empty_answer_is_never_absence_and_an_undo_does_not_skip_on_one() {
    let Some(prereq) = prerequisites() else { return };
    let peer = peer(&prereq, AsicFamily::Mellanox).await;
    let silent = Arc::new(AtomicBool::new(true));
    let front = GnmiFront::new(Arc::new(RedisBackend::new(peer.switch().clone())), FrontConfig::default());
    let server = GNmiServer::new(Silent { front, silent: silent.clone() });
    // A free port: bound, read, released, then served on.
    let address = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    tokio::spawn(tonic::transport::Server::builder().add_service(server).serve(address));
    sleep(Duration::from_millis(200)).await;
    let config = format!("[gnmi]\nswitches = {{ leaf-rail0 = \"{address}\" }}\ntimeout = \"5s\"\n{LEVELS}");
    let pfcwd = toml::from_str::<PfcwdConfig>(&config).unwrap().build("pfcwd").unwrap();
    let action = escalate("Ethernet4");
    let before = peer.dump(dbs::CONFIG_DB).await.unwrap();

    // No prior from an empty answer: nothing is sent, and the failure is retried.
    let err = pfcwd.execute(&action).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::Failed(m) if m.contains("no notification")), "{err:?}");
    assert_eq!(peer.dump(dbs::CONFIG_DB).await.unwrap(), before, "nothing was written");

    silent.store(false, Ordering::SeqCst);
    let applied = pfcwd.execute(&action).await.unwrap();
    silent.store(true, Ordering::SeqCst);
    // A read-back that says nothing is an error, never "not in effect" (which would drop it).
    let err = pfcwd.verify(&action, Some(&applied)).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::Failed(m) if m.contains("no notification")), "{err:?}");
    // The undo does not decide from a read: it writes the entry found before, and checks it.
    pfcwd.undo(&action, &applied).await.unwrap();
    assert_eq!(peer.dump(dbs::CONFIG_DB).await.unwrap(), before, "restored");
}
