//! The `sonic_redis` sensor against a SONiC switch: a real redis-server seeded with
//! sonic-utilities' databases, with SONiC's own Lua detectors as the watchdog
//! (`sonic::peer`). Each test skips through `test_peers::missing` without redis-server or
//! `shared/peers/sonic`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use engine::{Batch, Sensor, SensorContext, SeriesTable, Value};
use sonic::peer::{ExtraPort, Prerequisites, SonicPeer};
use sonic::AsicFamily;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use sensors::SonicRedisConfig;

/// One sample as a test reads it: metric, labels, timestamp, value.
#[derive(Debug, Clone)]
struct Seen {
    metric: String,
    labels: BTreeMap<String, String>,
    ts: i64,
    value: f64,
}

impl Seen {
    fn is(&self, metric: &str, pairs: &[(&str, &str)]) -> bool {
        self.metric == metric && pairs.iter().all(|(k, v)| self.labels.get(*k).map(String::as_str) == Some(*v))
    }
}

/// The running sensor and what it sent.
struct Harness {
    table: SeriesTable,
    rx: mpsc::Receiver<Batch>,
    ctx: SensorContext,
    seen: Vec<Seen>,
    notes: Vec<engine::Note>,
    _stop: watch::Sender<bool>,
}

impl Harness {
    /// Starts a `sonic_redis` sensor on `peer`'s Redis, through a `database_config.json` that
    /// names the peer's socket (as the switch's own file names `/var/run/redis/redis.sock`).
    fn start(peer: &SonicPeer, prereq: &Prerequisites, dir: &Path, interval_ms: u64) -> Harness {
        let layout_path = dir.join("database_config.json");
        let socket = peer.switch().layout().database("CONFIG_DB").unwrap().instance.unix_socket_path.clone().unwrap();
        let text = std::fs::read_to_string(prereq.utilities_file("database_config.json")).unwrap();
        let mut layout: serde_json::Value = serde_json::from_str(&text).unwrap();
        for instance in layout["INSTANCES"].as_object_mut().unwrap().values_mut() {
            instance["unix_socket_path"] = serde_json::Value::String(socket.display().to_string());
        }
        std::fs::write(&layout_path, layout.to_string()).unwrap();
        let config = SonicRedisConfig {
            database_config: layout_path,
            password_file: dir.join("no-password"),
            interval_ms,
            ..SonicRedisConfig::new("leaf01")
        };
        let sensor = Box::new(config.build("switch").unwrap());
        assert_eq!(sensor.switches(), ["leaf01"]);
        let table = SeriesTable::default();
        let (tx, rx) = mpsc::channel(1024);
        let (stop, shutdown) = watch::channel(false);
        let ctx = SensorContext::new(table.clone(), "switch", 100_000, tx, shutdown);
        tokio::spawn(sensor.run(ctx.clone()));
        Harness { table, rx, ctx, seen: Vec::new(), notes: Vec::new(), _stop: stop }
    }

    /// Takes what the sensor sent until `done` holds, or panics after `timeout` naming `what`.
    async fn until(&mut self, what: &str, timeout: Duration, done: impl Fn(&[Seen]) -> bool) {
        let deadline = Instant::now() + timeout;
        while !done(&self.seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(Some(batch)) = tokio::time::timeout(left, self.rx.recv()).await else {
                let health = self.ctx.health().snapshot();
                panic!("no {what} within {timeout:?}; health {health:?}");
            };
            let registry = self.table.read();
            for s in &batch.samples {
                let labels = registry.labels(s.series).0;
                let value = match s.value {
                    Value::Count(n) => n as f64,
                    Value::Real(x) => x,
                };
                let metric = registry.metric_name(s.series).to_string();
                self.seen.push(Seen { metric, labels, ts: s.ts, value });
            }
            self.notes.extend(batch.notes);
        }
    }
}

/// The prerequisites of a peer, or `None` after `test_peers::missing` said why.
fn prereq() -> Option<Prerequisites> {
    match sonic::peer::prereq::find() {
        Ok(found) => Some(found),
        Err(why) => {
            test_peers::missing(why);
            None
        }
    }
}

/// A switch of `family` with Ethernet4 (alias `etp2`, lossless 3 and 4, watchdog `alert` so
/// the queue stays paused through the storm) and an added port whose name and alias have
/// slashes.
async fn switch(prereq: &Prerequisites, family: AsicFamily) -> SonicPeer {
    SonicPeer::builder(family)
        .only_ports(["Ethernet4"])
        .add_port(ExtraPort::new("Ethernet1/5").alias("etp1/5").lossless("3,4"))
        .config("PFC_WD|GLOBAL", &[("POLL_INTERVAL", "200")])
        .config("PFC_WD|Ethernet4", &[("action", "alert"), ("detection_time", "400"), ("restoration_time", "2000")])
        .start(prereq)
        .await
        .expect("the peer starts")
}

/// The series of `metric` on Ethernet4 priority 3, in order.
fn of<'a>(seen: &'a [Seen], metric: &str) -> Vec<&'a Seen> {
    seen.iter().filter(|s| s.is(metric, &[("port", "Ethernet4"), ("prio", "3")])).collect()
}

/// Whether two consecutive samples of `metric` moved by more than half of the time between
/// them in microseconds (paused more than half of the time: what switch-pfc-storm asks).
fn paused_most_of_the_time(seen: &[Seen], metric: &str) -> bool {
    of(seen, metric).windows(2).any(|w| (w[1].value - w[0].value) * 1e3 > 0.5 * (w[1].ts - w[0].ts) as f64)
}

/// Broadcom's storm: frames rising over two samples, no XON, the queue priority 3 pauses
/// paused.
fn broadcom_storm(seen: &[Seen]) -> bool {
    let rx = of(seen, "switch_pfc_rx_pkts");
    let xon = of(seen, "switch_pfc_on2off_rx_pkts");
    let rising = rx.windows(3).any(|w| w[2].value > w[1].value && w[1].value > w[0].value);
    let xon_still = xon.len() >= 3 && xon[xon.len() - 3..].iter().all(|s| s.value == xon[xon.len() - 1].value);
    let paused = of(seen, "switch_pfc_queue_paused").last().is_some_and(|s| s.value == 1.0);
    rising && xon_still && paused
}

/// Every port label is a SONiC name (the key of `PORT|<name>`), never an alias.
fn sonic_names_only(seen: &[Seen]) {
    for s in seen {
        let port = s.labels.get("port").map(String::as_str);
        assert!(matches!(port, Some("Ethernet4" | "Ethernet1/5")), "{s:?} is not labelled by a SONiC name");
        assert_eq!(s.labels.get("switch").map(String::as_str), Some("leaf01"));
    }
}

/// The storm on Ethernet4 priority 3, read at 1 s: seen within two polls of its start (plus
/// one for the storm to start between two polls), by the series switch-pfc-storm reads on
/// that family.
async fn storm_seen_within_two_polls(family: AsicFamily) {
    let Some(prereq) = prereq() else { return };
    let peer = switch(&prereq, family).await;
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::start(&peer, &prereq, dir.path(), 1_000);
    h.until("first poll", Duration::from_secs(10), |s| of(s, "switch_pfc_rx_pkts").len() >= 2).await;
    assert!(!broadcom_storm(&h.seen) && !paused_most_of_the_time(&h.seen, "switch_pfc_rx_pause_duration_us"));
    peer.start_storm("Ethernet4", 3).unwrap();
    let started = Instant::now();
    let storm = |s: &[Seen]| match family {
        AsicFamily::Broadcom => broadcom_storm(s),
        _ => paused_most_of_the_time(s, "switch_pfc_rx_pause_duration_us"),
    };
    h.until("storm", Duration::from_secs(10), storm).await;
    let took = started.elapsed();
    assert!(took < Duration::from_millis(3_500), "{family:?}: the storm took {took:?} to be seen at 1 s polls");
    sonic_names_only(&h.seen);
    let slashed = |s: &Seen| s.is("switch_pfc_rx_pkts", &[("port", "Ethernet1/5"), ("prio", "3")]);
    assert!(h.seen.iter().any(slashed), "a port whose name has a slash is read under that name");
    if family == AsicFamily::Broadcom {
        // Priority 3 pauses queue 3 (AZURE maps it so): the paused series is labelled by
        // both, and no series of a multicast queue carries a priority.
        let paused = of(&h.seen, "switch_pfc_queue_paused");
        assert!(paused.iter().all(|s| s.labels.get("queue").map(String::as_str) == Some("3")), "{paused:?}");
    } else {
        assert!(of(&h.seen, "switch_pfc_queue_paused").is_empty(), "{family:?} has no pause status");
    }
    // The watchdog's own storm state follows (detection 400 ms), by ON_CHANGE or the next poll.
    h.until("watchdog stormed", Duration::from_secs(10), |s| {
        s.iter().any(|s| s.is("switch_pfcwd_stormed", &[("port", "Ethernet4"), ("queue", "3")]) && s.value == 1.0)
    })
    .await;
    assert!(peer.errors().is_empty(), "{:?}", peer.errors());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcom_storm_is_seen_within_two_one_second_polls_under_sonic_names() {
    storm_seen_within_two_polls(AsicFamily::Broadcom).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mellanox_storm_is_seen_within_two_one_second_polls_under_sonic_names() {
    storm_seen_within_two_polls(AsicFamily::Mellanox).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marvell_storm_is_seen_within_two_one_second_polls_under_sonic_names() {
    storm_seen_within_two_polls(AsicFamily::MarvellTeralynx).await;
}

/// Polling once a minute, the watchdog's storm still arrives within seconds: it comes by the
/// keyspace notification of APPL_DB `PFC_WD_TABLE_INSTORM`, not by the poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdogs_storm_arrives_on_change_between_polls() {
    let Some(prereq) = prereq() else { return };
    let peer = switch(&prereq, AsicFamily::Mellanox).await;
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::start(&peer, &prereq, dir.path(), 60_000);
    h.until("first poll", Duration::from_secs(10), |s| !of(s, "switch_pfc_rx_pkts").is_empty()).await;
    let polled = h.seen.len();
    peer.start_storm("Ethernet4", 3).unwrap();
    h.until("watchdog stormed", Duration::from_secs(10), |s| {
        s.iter().any(|s| s.is("switch_pfcwd_stormed", &[("port", "Ethernet4"), ("queue", "3")]) && s.value == 1.0)
    })
    .await;
    let after: Vec<&Seen> = h.seen[polled..].iter().collect();
    assert!(
        after.iter().all(|s| s.metric.starts_with("switch_pfcwd_")),
        "only the watchdog's fields were read: {after:?}"
    );
}

/// Polling once a minute, a link that comes up and goes down is seen at each change, as
/// portsorch writes it (`oper_status`, then one more `flap_count`): by the keyspace
/// notification of APPL_DB `PORT_TABLE`, not by the poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_changes_arrive_on_change_between_polls() {
    let Some(prereq) = prereq() else { return };
    let peer = switch(&prereq, AsicFamily::Mellanox).await;
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::start(&peer, &prereq, dir.path(), 60_000);
    h.until("first poll", Duration::from_secs(10), |s| !of(s, "switch_pfc_rx_pkts").is_empty()).await;
    let port = [("port", "Ethernet1/5")];
    for (up, level, flaps) in [(false, 0.0, 1), (true, 1.0, 2)] {
        peer.set_link("Ethernet1/5", up).await.unwrap();
        h.until("the link's change", Duration::from_secs(5), |s| {
            s.iter().any(|s| s.is("switch_oper_up", &port) && s.value == level)
                && s.iter().any(|s| s.is("switch_carrier_transitions", &port) && s.value == flaps as f64)
        })
        .await;
    }
}

/// A field that does not read costs only itself: the rest of the port's counters (the storm
/// in the next field) still arrive, and the error is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_bad_field_is_one_error_and_the_rest_of_the_entry_counts() {
    let Some(prereq) = prereq() else { return };
    let peer = switch(&prereq, AsicFamily::Mellanox).await;
    let counters = peer.switch().database("COUNTERS_DB").await.unwrap();
    let oid = sonic::NameMaps::read(&counters).await.unwrap().ports["Ethernet4"].clone();
    let socket = counters.database().instance.unix_socket_path.clone().unwrap();
    let url = format!("redis+unix://{}?db={}", socket.display(), counters.database().id);
    let mut conn = redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap();
    // Priority 4's TX frames are garbage; the port group never writes that field again.
    let _: () = redis::cmd("HSET")
        .arg(format!("COUNTERS:{oid}"))
        .arg("SAI_PORT_STAT_PFC_4_TX_PKTS")
        .arg("lots")
        .query_async(&mut conn)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::start(&peer, &prereq, dir.path(), 1_000);
    peer.start_storm("Ethernet4", 3).unwrap();
    h.until("storm", Duration::from_secs(10), |s| paused_most_of_the_time(s, "switch_pfc_rx_pause_duration_us")).await;
    let health = h.ctx.health().snapshot();
    let errors = &health[0].errors;
    assert!(errors.get("field").copied().unwrap_or(0) >= 1, "{health:?}");
    assert!(health[0].last_error.as_deref().is_some_and(|e| e.contains("SAI_PORT_STAT_PFC_4_TX_PKTS")), "{health:?}");
    assert!(!of(&h.seen, "switch_pfc_rx_pkts").is_empty(), "the port's other fields count");
}
