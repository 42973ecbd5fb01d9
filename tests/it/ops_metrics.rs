//! `/metrics`, `/healthz`, `/readyz` of a running daemon, and a real
//! Prometheus (Debian's `prometheus`, started here on loopback with a temp
//! config and storage, scraping every second) that scrapes it: its query
//! API must return our series.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::http::get;
use common::{daemon_config, repo, toml_path, Daemon};

/// Prometheus needs longer than the daemon: it replays its WAL, then waits
/// for a scrape interval.
const PROMETHEUS_WAIT: Duration = Duration::from_secs(60);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The daemon replaying the demo recording, with its metrics on loopback.
fn daemon(dir: &Path) -> (Daemon, String) {
    let playbook = dir.join("playbook.toml");
    std::fs::write(
        &playbook,
        format!(
            "name = \"metrics\"\nmode = \"enforce\"\nrules = {}\n[[actuator]]\nname = \"journal\"\ntype = \"log\"\nhandles = [\"*\"]\nlike = [\"pfcwd\", \"ecn\", \"rail\", \"link\", \"cordon\"]\n",
            toml_path(&repo("rules"))
        ),
    )
    .unwrap();
    let config = daemon_config(dir, &playbook, Some(&repo("chaos/sim/data/demo.jsonl")));
    let addr = format!("127.0.0.1:{}", free_port());
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("[metrics]\nlisten = \"{addr}\"\n"));
    std::fs::write(&config, text).unwrap();
    let mut d = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    d.wait_ready();
    (d, addr)
}

#[test]
fn metrics_health_and_readiness_answer_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut d, addr) = daemon(tmp.path());
    let body = d.wait_for("decisions in /metrics", |_| {
        let (code, body) = get(&addr, "/metrics").ok()?;
        (code == 200 && body.contains("rocemend_decisions_total{")).then_some(body)
    });
    for series in [
        "rocemend_samples_ingested_total ",
        "rocemend_series ",
        "rocemend_rule_evaluations_total ",
        "rocemend_rule_evaluation_seconds_total ",
        "rocemend_rules{health=\"ok\"} 12",
        "rocemend_instances{state=\"firing\"}",
        "rocemend_ledger_records ",
        "rocemend_sensor_state{sensor=\"replay\",state=",
        "rocemend_fault_to_decision_seconds_bucket{le=",
        "rocemend_decision_to_action_seconds_count ",
        "rocemend_action_to_recovery_seconds_count ",
        "rocemend_actuator_outcomes_total{actuator=\"journal\",outcome=\"success\"}",
    ] {
        assert!(body.contains(series), "{series} missing from /metrics:\n{body}");
    }
    assert_eq!(get(&addr, "/healthz").unwrap(), (200, "ok\n".into()));
    // Ready once every sensor has been read (the replay counts as read when it ends).
    d.wait_for("/readyz to answer 200", |_| (get(&addr, "/readyz").ok()?.0 == 200).then_some(()));
    assert_eq!(get(&addr, "/nope").unwrap().0, 404);
    assert!(d.stop().success(), "{}", d.log());
}

struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_real_prometheus_scrapes_the_daemon() {
    if Command::new("prometheus").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        return test_peers::missing("prometheus is not installed (Debian package prometheus)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (mut d, addr) = daemon(dir);
    let prom_addr = format!("127.0.0.1:{}", free_port());
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: rocemend\n    static_configs:\n      - targets: [\"{addr}\"]\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let _prom = Prometheus(
        Command::new("prometheus")
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("prometheus starts"),
    );
    let deadline = Instant::now() + PROMETHEUS_WAIT;
    let query = |q: &str| -> Option<serde_json::Value> {
        let (code, body) = get(&prom_addr, &format!("/api/v1/query?query={q}")).ok()?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        (code == 200 && v["status"] == "success").then_some(v)
    };
    let result = loop {
        if let Some(v) = query("rocemend_decisions_total") {
            if v["data"]["result"].as_array().is_some_and(|r| !r.is_empty()) {
                break v;
            }
        }
        if Instant::now() >= deadline {
            panic!(
                "Prometheus never returned rocemend_decisions_total\n--- prometheus log ---\n{}\n--- daemon log ---\n{}",
                std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default(),
                d.log()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let series = &result["data"]["result"][0];
    assert_eq!(series["metric"]["job"], "rocemend", "{result}");
    assert!(series["metric"]["verdict"].is_string(), "{result}");
    let up = query("up").expect("up is queryable");
    assert_eq!(up["data"]["result"][0]["value"][1], "1", "the target is up: {up}");
    let samples = query("rocemend_samples_ingested_total").unwrap();
    let n: f64 = samples["data"]["result"][0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!(n > 0.0, "samples counted: {samples}");
    assert!(d.stop().success(), "{}", d.log());
}
