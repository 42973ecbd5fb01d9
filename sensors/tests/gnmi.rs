//! The gnmi sensor against the simulated SONiC switch: round trip, a
//! target restarting mid-stream, a target that never answers, garbage
//! updates, and TLS with certificates made by the test.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use engine::{Batch, HealthBoard, Labels, SensorContext, SeriesTable, Value};
use sensors::GnmiConfig;
use sim::switch::{spawn, Model, Options, RunningSwitch, ServerTls};
use tokio::sync::{mpsc, watch};

struct Harness {
    table: SeriesTable,
    rx: mpsc::Receiver<Batch>,
    stop: watch::Sender<bool>,
    health: HealthBoard,
    task: tokio::task::JoinHandle<Result<(), engine::SensorError>>,
}

fn start(config: &str) -> Harness {
    let config: GnmiConfig = toml::from_str(config).unwrap();
    let sensor = config.build("gnmi").unwrap();
    let table = SeriesTable::default();
    let (tx, rx) = mpsc::channel(256);
    let (stop, shutdown) = watch::channel(false);
    let health = HealthBoard::default();
    let ctx = SensorContext::new(table.clone(), "gnmi", 100_000, tx, shutdown).with_health(health.clone());
    let task = tokio::spawn(engine::Sensor::run(Box::new(sensor), ctx));
    Harness { table, rx, stop, health, task }
}

impl Harness {
    /// Receives batches until `done` says so (or 10 s pass).
    async fn until(&mut self, mut done: impl FnMut(&Self, &Batch) -> bool) -> Vec<Batch> {
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let batch = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!("timed out after {} batches; health: {:?}", seen.len(), self.health.snapshot())
                })
                .expect("the sensor stopped");
            let stop = done(self, &batch);
            seen.push(batch);
            if stop {
                return seen;
            }
        }
    }

    fn find(&self, batch: &Batch, metric: &str, labels: &[(&str, &str)]) -> Option<Value> {
        let reg = self.table.read();
        let want = Labels::from_pairs(labels.iter().copied());
        batch
            .samples
            .iter()
            .rev()
            .find(|s| reg.metric_name(s.series) == metric && reg.labels(s.series).contains_all(&want))
            .map(|s| s.value)
    }

    fn errors(&self) -> BTreeMap<String, u64> {
        self.health.snapshot().into_iter().next().map(|h| h.errors).unwrap_or_default()
    }

    async fn stop(self) {
        self.stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), self.task).await.unwrap().unwrap().unwrap();
    }
}

async fn switch(model: Model) -> RunningSwitch {
    spawn("leaf01", ([127, 0, 0, 1], 0).into(), model, Options::default()).await.unwrap()
}

fn config(targets: &[(&str, String)], extra: &str) -> String {
    let mut text = format!("presets = [\"sonic_pfc\", \"sonic_pfcwd\", \"openconfig_interfaces\"]\nsample_interval = \"100ms\"\ntimeout = \"1s\"\nbackoff_initial = \"50ms\"\nbackoff_max = \"200ms\"\n{extra}\n");
    for (name, address) in targets {
        text.push_str(&format!("[[targets]]\nname = \"{name}\"\naddress = \"{address}\"\n"));
    }
    text
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
    model.advance(Duration::from_millis(300));
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
        Ok(SubscribeResponse {
            response: Some(R::Update(Notification {
                timestamp: ts,
                update: vec![Update { path: Some(parse_path(path).unwrap()), val: Some(val), ..Default::default() }],
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
                note(ts + 2, port, value::string("12")),
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

#[tokio::test]
async fn a_malformed_update_is_reported_and_the_stream_goes_on() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(garbage::serve(listener));
    let mut h = start(&config(&[("odd01", addr.to_string())], ""));
    h.until(|h, b| h.find(b, "switch_pfc_rx_pkts", &[("switch", "odd01"), ("prio", "1")]) == Some(Value::Count(12)))
        .await;
    let errors = h.errors();
    assert!(errors.get("parse").copied().unwrap_or(0) >= 1, "{errors:?}");
    assert!(errors.get("unknown_path").copied().unwrap_or(0) >= 1, "{errors:?}");
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
        "presets = [\"sonic_pfc\"]\nsample_interval = \"100ms\"\ntimeout = \"2s\"\n[[targets]]\nname = \"leaf01\"\naddress = \"{}\"\nca = \"{ca_path}\"\ncert = \"{cert_path}\"\nkey = \"{key_path}\"\ntls_domain = \"leaf01.test\"\nusername = \"admin\"\npassword = \"s3cret\"\n",
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
