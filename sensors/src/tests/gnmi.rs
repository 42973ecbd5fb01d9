//! The gnmi sensor against the simulated SONiC switch: round trip in both
//! path styles and in `auto`, the heartbeat of ON_CHANGE values, a target
//! restarting mid-stream (the `reconnected` note and the gap in samples), a
//! target that never answers, garbage updates (counted and logged), and TLS
//! with certificates made by the test.

use std::collections::HashMap;
use std::time::Duration;

use super::gnmi_harness;

use engine::{Batch, Labels, Value};
use gnmi_harness::{start, Harness};
use sim::switch::{spawn, Model, Options, Profile, RunningSwitch, ServerTls};

async fn switch(model: Model) -> RunningSwitch {
    spawn("leaf01", ([127, 0, 0, 1], 0).into(), model, Options::default()).await.unwrap()
}

fn config(targets: &[(&str, String)], extra: &str) -> String {
    let mut text = format!("presets = [\"sonic_pfc\", \"sonic_pfcwd\", \"sonic_ports\"]\nsample_interval = \"1s\"\ntimeout = \"1s\"\nbackoff_initial = \"50ms\"\nbackoff_max = \"200ms\"\n{extra}\n");
    for (name, address) in targets {
        text.push_str(&format!("[[targets]]\nname = \"{name}\"\naddress = \"{address}\"\n"));
    }
    text
}

/// One target `leaf01` at `address` with `path_style`, the SONiC presets
/// and the default backoff.
fn styled(address: &str, path_style: &str) -> String {
    format!(
        "presets = [\"sonic_pfc\", \"sonic_queues\", \"sonic_pfcwd\"]\nsample_interval = \"1s\"\ntimeout = \"1s\"\n\
         [[targets]]\nname = \"leaf01\"\naddress = \"{address}\"\npath_style = \"{path_style}\"\n"
    )
}

async fn switch_with(model: Model, options: Options) -> RunningSwitch {
    spawn("leaf01", ([127, 0, 0, 1], 0).into(), model, options).await.unwrap()
}

#[tokio::test]
async fn pfc_counters_reach_the_engine_with_switch_port_and_prio() {
    let model = Model::new(4);
    model.set_port_counter("Ethernet8", "SAI_PORT_STAT_PFC_3_RX_PKTS", 42).unwrap();
    let sw = switch(model.clone()).await;
    let mut h = start(&config(&[("leaf01", sw.addr.to_string())], ""));
    let labels = [("switch", "leaf01"), ("port", "Ethernet8"), ("prio", "3")];
    h.until(|h, b| h.find(b, "switch_pfc_rx_pkts", &labels) == Some(Value::Count(42))).await;
    model.set_port_counter("Ethernet8", "SAI_PORT_STAT_PFC_3_RX_PKTS", 43).unwrap();
    h.until(|h, b| h.find(b, "switch_pfc_rx_pkts", &labels) == Some(Value::Count(43))).await;
    // ON_CHANGE: one update, so look for it in the batches that follow.
    model.set_oper_up("Ethernet4", false).unwrap();
    let down = [("switch", "leaf01"), ("port", "Ethernet4")];
    h.until(|h, b| h.find(b, "switch_oper_up", &down) == Some(Value::Real(0.0))).await;
    h.until(|h, b| h.find(b, "switch_carrier_transitions", &down) == Some(Value::Count(1))).await;
    model.inject_pfc_storm("Ethernet8", 3).unwrap();
    // A second of the switch's clock: its watchdog (200 ms polls, 200 ms detection) finds the storm.
    model.advance(Duration::from_secs(1));
    let q3 = [("switch", "leaf01"), ("port", "Ethernet8"), ("queue", "3"), ("prio", "3")];
    h.until(|h, b| h.find(b, "switch_pfcwd_stormed", &q3) == Some(Value::Real(1.0))).await;
    assert!(h.errors().is_empty(), "{:?}", h.errors());
    h.stop().await;
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn the_sensor_reconnects_after_the_target_restarts_without_duplicating_samples() {
    let model = Model::new(2);
    let sw = switch(model.clone()).await;
    let addr = sw.addr;
    let mut h = start(&config(&[("leaf01", addr.to_string())], ""));
    let mut batches = h.until(|h, b| h.find(b, "switch_pfc_rx_pkts", &[("port", "Ethernet4")]).is_some()).await;
    sw.stop().await.unwrap();
    // Down for a while: the sensor must retry, not give up.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let sw = spawn("leaf01", addr, model.clone(), Options::default()).await.unwrap();
    model.set_port_counter("Ethernet4", "SAI_PORT_STAT_PFC_0_TX_PKTS", 7).unwrap();
    let mut gap = false;
    batches.extend(
        h.until(|h, b| {
            gap |= b.notes.iter().any(|n| n.kind == "gap" && n.labels.get("switch") == Some("leaf01"));
            gap && h.find(b, "switch_pfc_tx_pkts", &[("port", "Ethernet4"), ("prio", "0")]) == Some(Value::Count(7))
        })
        .await,
    );
    let errors = h.errors();
    assert!(errors.keys().any(|k| k == "stream" || k == "connect"), "{errors:?}");
    let mut last: HashMap<u32, i64> = HashMap::new();
    for s in batches.iter().flat_map(|b| &b.samples) {
        if let Some(prev) = last.insert(s.series.0, s.ts) {
            assert!(s.ts > prev, "series {} got ts {} after {}", s.series.0, s.ts, prev);
        }
    }
    h.stop().await;
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn a_target_that_never_answers_times_out_without_stalling_the_others() {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    // Accepts and holds every connection, never speaking.
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let model = Model::new(2);
    model.set_port_counter("Ethernet0", "SAI_PORT_STAT_PFC_5_RX_PKTS", 5).unwrap();
    let sw = switch(model).await;
    let mut h = start(&config(&[("dead01", silent_addr.to_string()), ("leaf01", sw.addr.to_string())], ""));
    h.until(|h, b| {
        h.find(b, "switch_pfc_rx_pkts", &[("switch", "leaf01"), ("port", "Ethernet0"), ("prio", "5")])
            == Some(Value::Count(5))
    })
    .await;
    h.until(|h, _| h.errors().contains_key("timeout")).await;
    let health = h.health.snapshot();
    assert!(health[0].last_error.as_deref().unwrap_or("").contains("dead01"), "{health:?}");
    assert_eq!(health[0].state, engine::HealthState::Degraded);
    h.stop().await;
    sw.stop().await.unwrap();
    hold.abort();
}

mod garbage {
    //! A gNMI target that sends a malformed update, then good ones.
    use gnmi_proto::gnmi::g_nmi_server::{GNmi, GNmiServer};
    use gnmi_proto::gnmi::subscribe_response::Response as R;
    use gnmi_proto::gnmi::*;
    use gnmi_proto::{parse_path, value};
    use tonic::{Request, Response, Status, Streaming};

    pub struct Garbage;

    fn note(ts: i64, path: &str, val: TypedValue) -> Result<SubscribeResponse, Status> {
        // The target goes in the notification's prefix, as gNMI wants it.
        let (prefix, path) = gnmi_proto::path::split_target(parse_path(path).unwrap());
        Ok(SubscribeResponse {
            response: Some(R::Update(Notification {
                timestamp: ts,
                prefix,
                update: vec![Update { path: Some(path), val: Some(val), ..Default::default() }],
                ..Default::default()
            })),
            extension: vec![],
        })
    }

    #[tonic::async_trait]
    impl GNmi for Garbage {
        async fn capabilities(&self, _: Request<CapabilityRequest>) -> Result<Response<CapabilityResponse>, Status> {
            Err(Status::unimplemented("no"))
        }
        async fn get(&self, _: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
            Err(Status::unimplemented("no"))
        }
        async fn set(&self, _: Request<SetRequest>) -> Result<Response<SetResponse>, Status> {
            Err(Status::unimplemented("no"))
        }
        type SubscribeStream = tokio_stream::Iter<std::vec::IntoIter<Result<SubscribeResponse, Status>>>;
        async fn subscribe(
            &self,
            _: Request<Streaming<SubscribeRequest>>,
        ) -> Result<Response<Self::SubscribeStream>, Status> {
            let ts = engine::time::wall_clock_now();
            let port = "COUNTERS_DB@/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_1_RX_PKTS";
            let items = vec![
                Ok(SubscribeResponse { response: Some(R::SyncResponse(true)), extension: vec![] }),
                note(ts, port, value::string("twelve")),
                note(ts + 1, "/system/state/hostname", value::string("leaf")),
                // SONiC's word for a counter it has not got: no value, no error.
                note(ts + 2, port, value::string("None")),
                note(ts + 3, port, value::string("12")),
            ];
            Ok(Response::new(tokio_stream::iter(items)))
        }
    }

    pub async fn serve(listener: tokio::net::TcpListener) {
        let _ = tonic::transport::Server::builder()
            .add_service(GNmiServer::new(Garbage))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await;
    }
}

mod logs {
    //! A tracing subscriber that keeps info, warning and error lines, as text.
    use std::sync::{Arc, Mutex};
    use tracing::field::{Field, Visit};
    use tracing::{span, Event, Level, Metadata, Subscriber};

    #[derive(Clone, Default)]
    pub struct Warnings(pub Arc<Mutex<Vec<String>>>);

    struct Line(String);

    impl Visit for Line {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push_str(&format!(" {}={:?}", field.name(), value));
        }
    }

    impl Subscriber for Warnings {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            *metadata.level() <= Level::INFO
        }
        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }
        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut line = Line(String::new());
            event.record(&mut line);
            self.0.lock().unwrap().push(line.0);
        }
        fn enter(&self, _: &span::Id) {}
        fn exit(&self, _: &span::Id) {}
    }
}

#[tokio::test]
async fn a_malformed_update_is_counted_logged_once_and_the_stream_goes_on() {
    // A current-thread runtime: the sensor's tasks log to this thread's subscriber.
    let warnings = logs::Warnings::default();
    let _guard = tracing::subscriber::set_default(warnings.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(garbage::serve(listener));
    let mut h = start(&config(&[("odd01", addr.to_string())], ""));
    h.until(|h, b| h.find(b, "switch_pfc_rx_pkts", &[("switch", "odd01"), ("prio", "1")]) == Some(Value::Count(12)))
        .await;
    let errors = h.errors();
    assert!(errors.get("parse").copied().unwrap_or(0) >= 1, "{errors:?}");
    assert!(errors.get("unknown_path").copied().unwrap_or(0) >= 1, "{errors:?}");
    // The garbage server ends its stream after each burst; the sensor
    // reconnects and is told the same again, counted every time.
    h.until(|h, _| h.errors().get("parse").copied().unwrap_or(0) >= 2).await;
    let last = h.health.snapshot()[0].last_error.clone().unwrap_or_default();
    assert!(!last.contains("None"), "\"None\" is an absent value, not an error: {last}");
    let lines: Vec<String> = warnings.0.lock().unwrap().clone();
    let parse: Vec<&String> = lines.iter().filter(|l| l.contains("gNMI update not understood")).collect();
    assert_eq!(parse.len(), 1, "one warning per target per 10 s: {lines:#?}");
    assert!(parse[0].contains("target=odd01"), "{}", parse[0]);
    assert!(parse[0].contains("SAI_PORT_STAT_PFC_1_RX_PKTS"), "the path: {}", parse[0]);
    assert!(parse[0].contains("twelve"), "a sample of the value: {}", parse[0]);
    h.stop().await;
    server.abort();
}

#[tokio::test]
async fn tls_with_a_test_ca_and_client_certificates() {
    use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issue = |name: &str, purpose: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec![name.to_string()]).unwrap();
        params.extended_key_usages = vec![purpose];
        let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = issue("leaf01.test", ExtendedKeyUsagePurpose::ServerAuth);
    let (client_cert, client_key) = issue("rocemend", ExtendedKeyUsagePurpose::ClientAuth);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let (ca_path, cert_path, key_path) =
        (write("ca.pem", &ca.pem()), write("client.pem", &client_cert), write("client.key", &client_key));
    let credentials = write("credentials.toml", "username = \"admin\"\npassword = \"s3cret\"\n");
    std::fs::set_permissions(&credentials, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();

    let model = Model::new(2);
    model.set_port_counter("Ethernet4", "SAI_PORT_STAT_PFC_6_TX_PAUSE_DURATION_US", 600).unwrap();
    let options = Options {
        tls: Some(ServerTls {
            cert_pem: server_cert.into_bytes(),
            key_pem: server_key.into_bytes(),
            client_ca_pem: Some(ca.pem().into_bytes()),
        }),
        credentials: Some(("admin".into(), "s3cret".into())),
    };
    let sw = spawn("leaf01", ([127, 0, 0, 1], 0).into(), model, options).await.unwrap();
    let text = format!(
        "presets = [\"sonic_pfc\"]\nsample_interval = \"1s\"\ntimeout = \"2s\"\n[[targets]]\nname = \"leaf01\"\naddress = \"{}\"\ncredentials_file = \"{credentials}\"\ntls = {{ ca_file = \"{ca_path}\", cert_file = \"{cert_path}\", key_file = \"{key_path}\", domain = \"leaf01.test\" }}\n",
        sw.addr
    );
    let mut h = start(&text);
    let labels = [("port", "Ethernet4"), ("prio", "6")];
    h.until(|h, b| h.find(b, "switch_pfc_tx_pause_duration_us", &labels) == Some(Value::Count(600))).await;
    h.stop().await;

    // Without a client certificate the switch refuses the handshake.
    let client = gnmi_proto::ClientConfig {
        tls: Some(gnmi_proto::TlsConfig {
            ca_pem: Some(ca.pem().into_bytes()),
            identity: None,
            domain: Some("leaf01.test".into()),
        }),
        credentials: Some(("admin".into(), "s3cret".into())),
        ..gnmi_proto::ClientConfig::plain(sw.addr.to_string())
    };
    let refused = match gnmi_proto::GnmiClient::connect(&client).await {
        Err(_) => true,
        Ok(mut c) => c.capabilities().await.is_err(),
    };
    assert!(refused, "a client without a certificate got in");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn the_sonic_db_origin_style_streams_the_presets() {
    let model = Model::new(2);
    model.set_port_counter("Ethernet4", "SAI_PORT_STAT_PFC_2_RX_PKTS", 21).unwrap();
    model.set_queue_counter("Ethernet4", 3, "SAI_QUEUE_STAT_PACKETS", 33).unwrap();
    let sw = switch(model.clone()).await;
    let mut h = start(&format!("{}namespace = \"localhost\"\n", styled(&sw.addr.to_string(), "sonic-db-origin")));
    let pfc = [("switch", "leaf01"), ("port", "Ethernet4"), ("prio", "2")];
    let mut got = (false, false);
    h.until(|h, b| {
        got.0 |= h.find(b, "switch_pfc_rx_pkts", &pfc) == Some(Value::Count(21));
        got.1 |= h.find(b, "switch_queue_packets", &[("port", "Ethernet4"), ("queue", "3")]) == Some(Value::Count(33));
        got.0 && got.1
    })
    .await;
    // The watchdog's fields come from the queue's OID, named by COUNTERS_QUEUE_NAME_MAP.
    model.inject_pfc_storm("Ethernet4", 3).unwrap();
    // A second of the switch's clock: its watchdog (200 ms polls, 200 ms detection) finds the storm.
    model.advance(Duration::from_secs(1));
    let q3 = [("switch", "leaf01"), ("port", "Ethernet4"), ("queue", "3")];
    h.until(|h, b| h.find(b, "switch_pfcwd_stormed", &q3) == Some(Value::Real(1.0))).await;
    assert!(h.errors().is_empty(), "{:?}", h.errors());
    h.stop().await;
    sw.stop().await.unwrap();
}

/// A switch whose image predates origin `sonic-db` (sonic-gnmi without the mixed client).
fn older_image(ports: usize) -> Model {
    let mut profile = Profile::default();
    profile.front.mixed_db = false;
    Model::with_profile(ports, profile)
}

#[tokio::test]
async fn the_sonic_db_origin_style_against_an_image_without_it_fails_by_name() {
    let sw = switch(older_image(1)).await;
    let lines = logs::Warnings::default();
    let guard = tracing::subscriber::set_default(lines.clone());
    let h = start(&styled(&sw.addr.to_string(), "sonic-db-origin"));
    let health = h.health_until(|health| health.last_error.is_some()).await;
    assert_eq!(health.samples, 0);
    drop(guard);
    // The refusal is named where an operator looks first: the warning of the failed read.
    let lines = lines.0.lock().unwrap().clone();
    let refused = lines.iter().find(|l| l.contains("gNMI request refused")).cloned().unwrap_or_default();
    assert!(refused.contains("the OID name maps") && refused.contains("translib"), "{lines:#?}");
    h.stop().await;
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn auto_finds_the_style_each_switch_takes() {
    for older in [true, false] {
        let model = if older { older_image(2) } else { Model::new(2) };
        model.set_port_counter("Ethernet0", "SAI_PORT_STAT_PFC_6_TX_PKTS", 6).unwrap();
        let sw = switch(model).await;
        let lines = logs::Warnings::default();
        let guard = tracing::subscriber::set_default(lines.clone());
        let mut h = start(&styled(&sw.addr.to_string(), "auto"));
        let labels = [("switch", "leaf01"), ("port", "Ethernet0"), ("prio", "6")];
        h.until(|h, b| h.find(b, "switch_pfc_tx_pkts", &labels) == Some(Value::Count(6))).await;
        assert!(h.errors().is_empty(), "older image {older}: {:?}", h.errors());
        drop(guard);
        let found: Vec<String> =
            lines.0.lock().unwrap().iter().filter(|l| l.contains("gNMI path style found")).cloned().collect();
        // Both taken: origin sonic-db, as the shared probe (`sonic::probe`) decides for the
        // actuators too, so reads and writes name the switch's data alike.
        let winner = if older { "prefix-target" } else { "sonic-db-origin" };
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains(&format!("path_style=\"{winner}\"")), "older image {older}: {found:?}");
        h.stop().await;
        sw.stop().await.unwrap();
    }
}

/// The samples of `metric` on Ethernet0 in `batches`, as (ts, value).
fn series_of(h: &Harness, batches: &[Batch], metric: &str) -> Vec<(i64, Value)> {
    let reg = h.table.read();
    let want = Labels::from_pairs([("port", "Ethernet0")]);
    batches
        .iter()
        .flat_map(|b| &b.samples)
        .filter(|s| reg.metric_name(s.series) == metric && reg.labels(s.series).contains_all(&want))
        .map(|s| (s.ts, s.value))
        .collect()
}

#[tokio::test]
async fn on_change_values_are_sent_again_on_the_heartbeat_when_nothing_changes() {
    for heartbeat in ["200ms", "0"] {
        // sonic-gnmi ignores heartbeat_interval: only the sensor can beat.
        let sw = switch(Model::new(1)).await;
        let text = format!(
            "presets = [\"sonic_ports\", \"sonic_pfc\"]\nsample_interval = \"1s\"\nheartbeat = \"{heartbeat}\"\n\
             [[targets]]\nname = \"leaf01\"\naddress = \"{}\"\n",
            sw.addr
        );
        let mut h = start(&text);
        let started = tokio::time::Instant::now();
        // Take 1.1 s of batches (the counters, sampled, keep them coming).
        let batches = h.until(|_, _| started.elapsed() >= Duration::from_millis(1100)).await;
        let oper = series_of(&h, &batches, "switch_oper_up");
        assert!(oper.iter().all(|(_, v)| *v == Value::Real(1.0)), "{oper:?}");
        if heartbeat == "0" {
            assert_eq!(oper.len(), 1, "ON_CHANGE without a heartbeat: the initial value only: {oper:?}");
        } else {
            assert!((4..=7).contains(&oper.len()), "the initial value and one every 200 ms: {oper:?}");
            for pair in oper.windows(2) {
                let step = pair[1].0 - pair[0].0;
                assert!((150_000_000..400_000_000).contains(&step), "beats 200 ms apart: {oper:?}");
            }
            // Stamped with the time of the beat.
            let last = oper.last().unwrap().0;
            assert!(engine::time::wall_clock_now() - last < 500_000_000, "{oper:?}");
        }
        h.stop().await;
        sw.stop().await.unwrap();
    }
}

#[tokio::test]
async fn a_restarted_target_gets_a_reconnected_note_and_the_gap_is_the_outage_plus_little() {
    let model = Model::new(2);
    let sw = switch(model.clone()).await;
    let addr = sw.addr;
    // The default backoff (100 ms, up to 1 s, ±20 %).
    let mut h = start(&styled(&addr.to_string(), "prefix-target"));
    let labels = [("switch", "leaf01"), ("port", "Ethernet0"), ("prio", "0")];
    let before = h.until(|h, b| h.find(b, "switch_pfc_rx_pkts", &labels).is_some()).await;
    // Let a few samples flow, then take the switch's telemetry away.
    let mut batches = before;
    let settle = tokio::time::Instant::now();
    batches.extend(h.until(|_, _| settle.elapsed() >= Duration::from_millis(300)).await);
    sw.stop().await.unwrap();
    // A sample the switch sent while it was stopping is from before the outage, whichever batch
    // it arrived in.
    let stopped = engine::time::wall_clock_now();
    // ROCEMEND_TEST_OUTAGE_MS measures another outage (the issue's was 10 s).
    let outage = Duration::from_millis(
        std::env::var("ROCEMEND_TEST_OUTAGE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(3000),
    );
    tokio::time::sleep(outage).await;
    let sw = spawn("leaf01", addr, model.clone(), Options::default()).await.unwrap();
    let mut note = None;
    let after = h
        .until(|h, b| {
            if let Some(n) = b.notes.iter().find(|n| n.kind == engine::Note::RECONNECTED) {
                note = Some(n.clone());
            }
            note.is_some() && h.find(b, "switch_pfc_rx_pkts", &labels).is_some()
        })
        .await;
    let note = note.unwrap();
    assert_eq!(note.labels.get("switch"), Some("leaf01"));
    assert!(note.text.contains("reconnected to leaf01"), "{}", note.text);
    batches.extend(after);
    let stamps: Vec<i64> = series_of(&h, &batches, "switch_pfc_rx_pkts").into_iter().map(|(ts, _)| ts).collect();
    let last_before = stamps.iter().copied().filter(|ts| *ts <= stopped).max().unwrap();
    let first_after = stamps.iter().copied().filter(|ts| *ts > stopped).min().unwrap();
    let gap = Duration::from_nanos((first_after - last_before) as u64);
    println!("outage {outage:?}: gap in samples {gap:?} (outage + {:?})", gap.saturating_sub(outage));
    assert!(gap < outage + Duration::from_millis(1500), "gap {gap:?} after an outage of {outage:?}");
    assert!(gap >= outage, "gap {gap:?} shorter than the outage {outage:?}?");
    h.stop().await;
    sw.stop().await.unwrap();
}

/// A target that answers every Subscribe with its initial sync and then says nothing more,
/// keeping the stream open: a telemetry server whose collector hung.
struct SilentTarget;

#[tonic::async_trait]
impl gnmi_proto::gnmi::g_nmi_server::GNmi for SilentTarget {
    async fn capabilities(
        &self,
        _: tonic::Request<gnmi_proto::gnmi::CapabilityRequest>,
    ) -> Result<tonic::Response<gnmi_proto::gnmi::CapabilityResponse>, tonic::Status> {
        Err(tonic::Status::unimplemented("silent target"))
    }

    async fn get(
        &self,
        _: tonic::Request<gnmi_proto::gnmi::GetRequest>,
    ) -> Result<tonic::Response<gnmi_proto::gnmi::GetResponse>, tonic::Status> {
        Err(tonic::Status::unimplemented("silent target"))
    }

    async fn set(
        &self,
        _: tonic::Request<gnmi_proto::gnmi::SetRequest>,
    ) -> Result<tonic::Response<gnmi_proto::gnmi::SetResponse>, tonic::Status> {
        Err(tonic::Status::unimplemented("silent target"))
    }

    type SubscribeStream = std::pin::Pin<
        Box<dyn tokio_stream::Stream<Item = Result<gnmi_proto::gnmi::SubscribeResponse, tonic::Status>> + Send>,
    >;

    async fn subscribe(
        &self,
        _: tonic::Request<tonic::Streaming<gnmi_proto::gnmi::SubscribeRequest>>,
    ) -> Result<tonic::Response<Self::SubscribeStream>, tonic::Status> {
        use gnmi_proto::gnmi::subscribe_response::Response as R;
        use tokio_stream::StreamExt;
        let sync = gnmi_proto::gnmi::SubscribeResponse { response: Some(R::SyncResponse(true)), extension: vec![] };
        Ok(tonic::Response::new(Box::pin(tokio_stream::once(Ok(sync)).chain(tokio_stream::pending()))))
    }
}

/// A stream that goes silent is found dead a stall (three intervals) later; the gap it reports
/// runs from its last message, not from when the silence was noticed (which read "down for
/// 0.1 s" after ten silent seconds).
#[tokio::test]
async fn a_silent_streams_gap_is_measured_from_its_last_message() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = gnmi_proto::gnmi::g_nmi_server::GNmiServer::new(SilentTarget);
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let mut h = start(&format!(
        "presets = [\"sonic_pfc\"]\nsample_interval = \"1s\"\ntimeout = \"1s\"\nbackoff_initial = \"50ms\"\n\
         [[targets]]\nname = \"leaf01\"\naddress = \"{addr}\"\npath_style = \"prefix-target\"\n"
    ));
    let mut gap = None;
    h.until(|_, b| {
        gap = gap.clone().or_else(|| b.notes.iter().find(|n| n.kind == "gap").map(|n| n.text.clone()));
        gap.is_some()
    })
    .await;
    let text = gap.unwrap();
    let secs: f64 = text.split("down for ").nth(1).and_then(|t| t.split(' ').next()).unwrap().parse().unwrap();
    // Silent from the sync on: noticed 3 s (three 1 s intervals) later, back 50 ms after.
    assert!((2.9..10.0).contains(&secs), "{text}");
    h.stop().await;
    server.abort();
}

/// A plaintext client against a TLS target is told so, not "operation was canceled".
#[tokio::test]
async fn a_plaintext_client_against_a_tls_target_is_told_so() {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["leaf01.test".to_string()]).unwrap().self_signed(&key).unwrap();
    let tls =
        ServerTls { cert_pem: cert.pem().into_bytes(), key_pem: key.serialize_pem().into_bytes(), client_ca_pem: None };
    let sw = switch_with(Model::new(1), Options { tls: Some(tls), ..Options::default() }).await;
    let h = start(&styled(&sw.addr.to_string(), "prefix-target"));
    let health = h.health_until(|health| health.last_error.is_some()).await;
    let last = health.last_error.unwrap_or_default();
    assert!(last.contains("TLS"), "{last}");
    assert!(!last.contains("operation was canceled") || last.contains("plaintext"), "{last}");
    h.stop().await;
    sw.stop().await.unwrap();
}
