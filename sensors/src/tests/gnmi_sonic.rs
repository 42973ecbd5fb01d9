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
