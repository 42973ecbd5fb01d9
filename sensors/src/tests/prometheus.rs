//! The `prometheus` sensor against a tiny local HTTP server (garbage, then
//! valid text; a target that never answers; a closed port) and against a
//! real `prometheus-node-exporter` when it is installed.

use engine::testing::SensorHarness as Harness;
use std::time::Duration;

use engine::{CounterSpec, HealthState, SampleKind, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn harness() -> Harness {
    Harness::new("prom", 100_000)
}

const VALID: &str = "# HELP gpu_temp GPU temperature.\n# TYPE gpu_temp gauge\ngpu_temp{gpu=\"0\",Hostname=\"node01\",UUID=\"GPU-1\"} 61\n# TYPE xid_total counter\nxid_total{gpu=\"0\",Hostname=\"node01\"} 2.6\nother 1\n";

/// Serves `responses` in turn (the last one forever), one per connection.
async fn serve(responses: Vec<String>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        for i in 0.. {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let body = responses[i.min(responses.len() - 1)].clone();
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n", body.len());
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
        }
    });
    port
}

/// Accepts connections and never answers.
async fn silent() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
            if held.len() > 100 {
                held.remove(0);
            }
        }
    });
    (port, task)
}

async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

fn build(toml_text: &str) -> Box<dyn engine::Sensor> {
    sensors::build("prometheus", "prom", toml::from_str(toml_text).unwrap()).unwrap()
}

#[tokio::test]
async fn garbage_then_valid_text_and_failing_targets_beside_it() {
    let good = serve(vec!["<html>this is not { metrics\n".into(), VALID.into()]).await;
    let (slow, _slow_task) = silent().await;
    let closed = closed_port().await;
    let sensor = build(&format!(
        r#"
        [[targets]]
        url = "http://127.0.0.1:{good}/metrics"
        interval_ms = 100
        timeout_ms = 100
        allow = ["gpu_.*", "xid_total"]
        labels = {{ Hostname = "node", gpu = "gpu" }}
        prefix = "dcgm_"

        [[targets]]
        url = "http://127.0.0.1:{slow}/metrics"
        interval_ms = 100
        timeout_ms = 50

        [[targets]]
        url = "http://127.0.0.1:{closed}/metrics"
        interval_ms = 100
        timeout_ms = 100
        "#
    ));
    let mut h = harness();
    let run = tokio::spawn(sensor.run(h.ctx.clone()));
    // The first scrape of the good target is garbage; the second is valid,
    // while the other two targets fail on their own schedules.
    let batch = tokio::time::timeout(Duration::from_secs(10), h.rx.recv()).await.unwrap().unwrap();
    let mut got: Vec<(String, String, SampleKind, Value)> = {
        let reg = h.table.read();
        batch
            .samples
            .iter()
            .map(|s| {
                (
                    reg.metric_name(s.series).to_string(),
                    reg.labels(s.series).to_string(),
                    reg.info(s.series).kind,
                    s.value,
                )
            })
            .collect()
    };
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got,
        vec![
            ("dcgm_gpu_temp".into(), "{gpu=\"0\",node=\"node01\"}".into(), SampleKind::Gauge, Value::Real(61.0)),
            (
                "dcgm_xid_total".into(),
                "{gpu=\"0\",node=\"node01\"}".into(),
                SampleKind::Counter(CounterSpec::U64),
                Value::Count(3)
            ),
        ],
        "allow-listed, labels mapped and UUID dropped, counter rounded"
    );
    // Let the failing targets fail a few times more.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let health = h.ctx.health().snapshot().pop().unwrap();
    assert_eq!(health.errors.get("parse"), Some(&1), "{health:?}");
    assert!(health.errors.get("timeout").copied().unwrap_or(0) >= 2, "{health:?}");
    assert!(health.errors.get("connect").copied().unwrap_or(0) >= 2, "{health:?}");
    assert_eq!(health.state, HealthState::Degraded);
    assert!(health.detail.contains(&format!("127.0.0.1:{slow}")), "{}", health.detail);
    assert!(health.detail.contains(&format!("127.0.0.1:{closed}")), "{}", health.detail);
    assert!(!health.detail.contains(&format!("127.0.0.1:{good}")), "the good target recovered: {}", health.detail);
    // And the good target kept delivering meanwhile.
    let mut more = 0;
    while h.rx.try_recv().is_ok() {
        more += 1;
    }
    assert!(more >= 2, "only {more} more batches from the good target");
    h.stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), run).await.unwrap().unwrap().unwrap();
}

/// The node exporter binary, from the Debian package `prometheus-node-exporter`.
const NODE_EXPORTER: &str = "/usr/bin/prometheus-node-exporter";

#[tokio::test]
async fn a_real_node_exporter_is_scraped() {
    if !std::path::Path::new(NODE_EXPORTER).exists() {
        return test_peers::missing(format!("{NODE_EXPORTER} is missing (Debian package prometheus-node-exporter)"));
    }
    let port = closed_port().await;
    let mut child = tokio::process::Command::new(NODE_EXPORTER)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        // Only what the test needs: quick to start, nothing host-specific
        // that could fail in a container.
        .arg("--collector.disable-defaults")
        .arg("--collector.cpu")
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sensor = build(&format!(
        "[[targets]]\nurl = \"http://127.0.0.1:{port}/metrics\"\ninterval_ms = 200\ntimeout_ms = 200\nallow = [\"node_cpu_seconds_total\"]"
    ));
    let mut h = harness();
    let run = tokio::spawn(sensor.run(h.ctx.clone()));
    // The exporter takes a moment to listen: the first scrapes may be refused.
    let batch =
        tokio::time::timeout(Duration::from_secs(20), h.rx.recv()).await.expect("a scrape within 20 s").unwrap();
    h.stop.send(true).unwrap();
    run.await.unwrap().unwrap();
    child.kill().await.unwrap();
    let reg = h.table.read();
    assert!(!batch.samples.is_empty());
    for s in &batch.samples {
        assert_eq!(reg.metric_name(s.series), "node_cpu_seconds_total");
        assert_eq!(reg.info(s.series).kind, SampleKind::Counter(CounterSpec::U64));
        let labels = reg.labels(s.series);
        assert!(labels.get("cpu").is_some_and(|c| c.parse::<u32>().is_ok()), "{labels}");
        assert!(labels.get("mode").is_some(), "{labels}");
        assert!(matches!(s.value, Value::Count(_)));
    }
    let modes: std::collections::BTreeSet<String> =
        batch.samples.iter().filter_map(|s| reg.labels(s.series).get("mode").map(str::to_string)).collect();
    assert!(modes.contains("idle") && modes.contains("user"), "{modes:?}");
}
