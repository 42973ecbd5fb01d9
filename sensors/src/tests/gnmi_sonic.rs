//! The gnmi sensor against `sonic::gnmi_front`, a gNMI server that routes, serves and refuses
//! as sonic-gnmi does, over `sonic::peer` (a real redis-server seeded with sonic-utilities'
//! databases and SONiC's Lua watchdog). Skips through `test_peers::missing` without
//! redis-server or `shared/peers/sonic`.

use std::sync::Arc;
use std::time::Duration;

use sonic::gnmi_front::{serve, Backend, FrontConfig, GnmiFront, RedisBackend};
use sonic::peer::SonicPeer;
use sonic::AsicFamily;
use tokio::sync::oneshot;

use super::gnmi_harness::start;

/// sonic-gnmi, with the image's settings (no stream multiplexing: a client address's new
/// Subscribe ends its running one), over `peer`'s Redis; its address and its stop.
async fn front(peer: &SonicPeer) -> (String, oneshot::Sender<()>) {
    let backend: Arc<dyn Backend> = Arc::new(RedisBackend::new(peer.switch().clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(serve(GnmiFront::new(backend, FrontConfig::default()), listener, None, async {
        let _ = stopped.await;
    }));
    (addr, stop)
}

/// Three streams (the SONiC presets, an APPL_DB table, a database sonic-gnmi does not have):
/// each on its own connection, so none ends another, and the one sonic-gnmi refuses is
/// counted while the others go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_stream_has_its_own_connection_and_a_refused_one_silences_no_other() {
    let prereq = match sonic::peer::prereq::find() {
        Ok(found) => found,
        Err(why) => return test_peers::missing(why),
    };
    let peer = SonicPeer::builder(AsicFamily::Mellanox).only_ports(["Ethernet4"]).start(&prereq).await.unwrap();
    let (addr, _stop) = front(&peer).await;
    let mut h = start(&format!(
        "presets = [\"sonic_pfc\"]\nsample_interval = \"1s\"\ntimeout = \"2s\"\n\
         [[subscriptions]]\npath = \"APPL_DB@/PORT_TABLE/Ethernet4\"\nmode = \"on_change\"\n\
         [[subscriptions]]\npath = \"NO_SUCH_DB@/TABLE/key\"\nmode = \"on_change\"\n\
         [[targets]]\nname = \"leaf01\"\naddress = \"{addr}\"\npath_style = \"prefix-target\"\n"
    ));
    let started = tokio::time::Instant::now();
    let mut stamps = Vec::new();
    h.until(|h, b| {
        for s in &b.samples {
            if h.table.read().metric_name(s.series) == "switch_pfc_rx_pkts" {
                stamps.push(s.ts);
            }
        }
        started.elapsed() > Duration::from_millis(3_500)
    })
    .await;
    let errors = h.errors();
    assert!(errors.get("subscribe").copied().unwrap_or(0) >= 1, "the refusal is counted: {errors:?}");
    assert_eq!(errors.get("stream"), None, "no stream was ended by another: {errors:?}");
    // Sampled each second for 3.5 s: the presets' stream was never cut.
    let distinct: std::collections::BTreeSet<i64> = stamps.iter().copied().collect();
    assert!(distinct.len() >= 3, "{} sample times of switch_pfc_rx_pkts: {errors:?}", distinct.len());
    h.stop().await;
}

/// A storm on Ethernet4 (alias `etp2`, which sonic-gnmi keys its virtual paths by) priority 3,
/// sampled at 1 s in the prefix-target style: seen within two samples of its start (plus one
/// for starting between two), on the series switch-pfc-storm reads on that family, labelled
/// with the SONiC name.
async fn storm_over_gnmi(family: AsicFamily) {
    let prereq = match sonic::peer::prereq::find() {
        Ok(found) => found,
        Err(why) => return test_peers::missing(why),
    };
    let peer = SonicPeer::builder(family)
        .only_ports(["Ethernet4"])
        .config("PFC_WD|Ethernet4", &[("action", "alert"), ("detection_time", "400"), ("restoration_time", "2000")])
        .start(&prereq)
        .await
        .unwrap();
    let (addr, _stop) = front(&peer).await;
    let mut h = start(&format!(
        "presets = [\"sonic_pfc\", \"sonic_queues\"]\nsample_interval = \"1s\"\ntimeout = \"2s\"\n\
         [[targets]]\nname = \"leaf01\"\naddress = \"{addr}\"\npath_style = \"prefix-target\"\n"
    ));
    let labels = [("port", "Ethernet4"), ("prio", "3")];
    // Priority 3's queue (3 by the image's AZURE map), read through the QoS maps.
    let queue3 = [("port", "Ethernet4"), ("queue", "3"), ("prio", "3")];
    let mut paused = false;
    let mut rx: Vec<(i64, u64)> = Vec::new();
    h.until(|h, b| {
        rx.extend(samples(h, b, "switch_pfc_rx_pkts", &labels));
        rx.len() >= 2
    })
    .await;
    peer.start_storm("Ethernet4", 3).unwrap();
    let started = tokio::time::Instant::now();
    let mut duration: Vec<(i64, u64)> = Vec::new();
    let mut xon: Vec<(i64, u64)> = Vec::new();
    let rx_before = rx.len();
    h.until(|h, b| {
        rx.extend(samples(h, b, "switch_pfc_rx_pkts", &labels));
        duration.extend(samples(h, b, "switch_pfc_rx_pause_duration_us", &labels));
        xon.extend(samples(h, b, "switch_pfc_on2off_rx_pkts", &labels));
        if let Some(level) = h.find(b, "switch_pfc_queue_paused", &queue3) {
            paused = level == engine::Value::Real(1.0);
        }
        match family {
            // Frames rising over two samples, XON still, the queue paused.
            AsicFamily::Broadcom => {
                let storm = &rx[rx_before.saturating_sub(1)..];
                paused
                    && storm.windows(3).any(|w| w[2].1 > w[1].1 && w[1].1 > w[0].1)
                    && xon.len() >= 2
                    && xon[xon.len() - 2].1 == xon[xon.len() - 1].1
            }
            // Paused more than half of the time between two samples.
            _ => duration.windows(2).any(|w| (w[1].1 - w[0].1) as f64 * 1e3 > 0.5 * (w[1].0 - w[0].0) as f64),
        }
    })
    .await;
    let took = started.elapsed();
    assert!(took < Duration::from_millis(3_500), "{family:?}: the storm took {took:?} at 1 s samples");
    let by_alias = {
        let table = h.table.read();
        (0..table.len()).any(|i| table.labels(engine::SeriesId(i as u32)).get("port") == Some("etp2"))
    };
    assert!(!by_alias, "no series is labelled by the alias");
    h.stop().await;
}

/// `(ts, count)` of `metric` with `labels` in batch `b`.
fn samples(
    h: &super::gnmi_harness::Harness,
    b: &engine::Batch,
    metric: &str,
    labels: &[(&str, &str)],
) -> Vec<(i64, u64)> {
    let table = h.table.read();
    b.samples
        .iter()
        .filter(|s| table.metric_name(s.series) == metric)
        .filter(|s| labels.iter().all(|(k, v)| table.labels(s.series).get(k) == Some(v)))
        .filter_map(|s| match s.value {
            engine::Value::Count(n) => Some((s.ts, n)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcom_storm_over_sonic_gnmi_at_one_second_under_the_sonic_name() {
    storm_over_gnmi(AsicFamily::Broadcom).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mellanox_storm_over_sonic_gnmi_at_one_second_under_the_sonic_name() {
    storm_over_gnmi(AsicFamily::Mellanox).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marvell_storm_over_sonic_gnmi_at_one_second_under_the_sonic_name() {
    storm_over_gnmi(AsicFamily::MarvellTeralynx).await;
}

/// `sonic_ports` in `style`: the link of Ethernet0 (down, 3 flaps so far in sonic-utilities'
/// APPL_DB) comes up, then goes down, as portsorch writes it; each change arrives ON_CHANGE,
/// long before a 1 s sample would, as `switch_oper_up` and one more
/// `switch_carrier_transitions` (portsorch's `flap_count`), under the SONiC name.
async fn link_changes_arrive_on_change(style: &str) {
    let prereq = match sonic::peer::prereq::find() {
        Ok(found) => found,
        Err(why) => return test_peers::missing(why),
    };
    let peer =
        SonicPeer::builder(AsicFamily::Mellanox).only_ports(["Ethernet0", "Ethernet4"]).start(&prereq).await.unwrap();
    let (addr, _stop) = front(&peer).await;
    let namespace = if style == "prefix-target" { "" } else { "namespace = \"localhost\"\n" };
    let mut h = start(&format!(
        "presets = [\"sonic_ports\"]\ntimeout = \"2s\"\n\
         [[targets]]\nname = \"leaf01\"\naddress = \"{addr}\"\npath_style = \"{style}\"\n{namespace}"
    ));
    let port = [("port", "Ethernet0")];
    h.until(|h, b| h.find(b, "switch_carrier_transitions", &port) == Some(engine::Value::Count(3))).await;
    for (up, level, transitions) in [(true, 1.0, 4), (false, 0.0, 5)] {
        let changed = tokio::time::Instant::now();
        peer.set_link("Ethernet0", up).await.unwrap();
        let (mut seen_level, mut seen_count) = (false, false);
        h.until(|h, b| {
            seen_level |= h.find(b, "switch_oper_up", &port) == Some(engine::Value::Real(level));
            seen_count |= h.find(b, "switch_carrier_transitions", &port) == Some(engine::Value::Count(transitions));
            seen_level && seen_count
        })
        .await;
        let took = changed.elapsed();
        assert!(took < Duration::from_millis(900), "{style}: the change took {took:?}, a sample's time");
    }
    assert!(h.errors().is_empty(), "{style}: {:?}", h.errors());
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_changes_arrive_on_change_in_the_prefix_target_style() {
    link_changes_arrive_on_change("prefix-target").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_changes_arrive_on_change_in_the_sonic_db_origin_style() {
    link_changes_arrive_on_change("sonic-db-origin").await;
}
