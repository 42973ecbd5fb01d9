//! The `webhook` actuator against a real Alertmanager (Debian's
//! `prometheus-alertmanager`, started by the test on a free loopback port
//! with a throwaway config and storage), and its JSON format against a
//! local server that records the request.
//!
//! Without the Alertmanager binary the first test prints `skipped: <reason>`
//! and passes.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actuators::http::{self, Request, Url};
use actuators::webhook::{Format, WebhookConfig};
use engine::{Action, Actuator, Labels, Verification};
use tokio::io::AsyncWriteExt;

const ALERTMANAGER: &str = "/usr/bin/prometheus-alertmanager";

/// The Alertmanager process, killed on drop.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn action() -> Action {
    Action {
        kind: "node.cordon".into(),
        target: Labels::from_pairs([("node", "gpu-07")]),
        params: BTreeMap::from([("rule".into(), "gpu_xid".into()), ("reason".into(), "xid".into())]),
    }
}

async fn get(url: &Url) -> http::Response {
    let request = Request { method: "GET", url, headers: Vec::new(), body: b"" };
    http::Client::plain(http::MAX_RESPONSE).send(&request, Duration::from_secs(5)).await.unwrap()
}

/// Our alert in Alertmanager's list, if it is there.
async fn our_alert(base: &Url) -> Option<serde_json::Value> {
    let response = get(&base.join("/api/v2/alerts")).await;
    assert_eq!(response.status, 200, "{}", response.snippet());
    let alerts: Vec<serde_json::Value> = serde_json::from_slice(&response.body).unwrap();
    alerts.into_iter().find(|a| a["labels"] == serde_json::json!({ "alertname": "gpu_xid", "node": "gpu-07" }))
}

#[tokio::test]
async fn a_real_alertmanager_shows_the_alert_and_undo_resolves_it() {
    if !Path::new(ALERTMANAGER).exists() {
        return test_peers::missing(format!("{ALERTMANAGER} is missing (apt-get install prometheus-alertmanager)"));
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("alertmanager.yml");
    std::fs::write(&config, "route:\n  receiver: default\nreceivers:\n  - name: default\n").unwrap();
    let port = free_port();
    let log = std::fs::File::create(dir.path().join("alertmanager.log")).unwrap();
    let _daemon = Daemon(
        Command::new(ALERTMANAGER)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let base = Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let start = Instant::now();
    loop {
        let ready = Request { method: "GET", url: &base.join("/-/ready"), headers: Vec::new(), body: b"" };
        if matches!(http::Client::plain(http::MAX_RESPONSE).send(&ready, Duration::from_secs(1)).await, Ok(r) if r.ok())
        {
            break;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let log = std::fs::read_to_string(dir.path().join("alertmanager.log")).unwrap_or_default();
            panic!("Alertmanager not ready after 20s:\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let mut config = WebhookConfig::new(Format::Alertmanager, &base.to_string());
    config.generator_url = Some("https://rocemend.example/decisions/42".into());
    let notify = config.build("notify").unwrap();
    let action = action();
    assert_eq!(notify.verify(&action, None).await.unwrap(), Verification::NotInEffect);
    assert_eq!(our_alert(&base).await, None);

    // The clock is fixed, so the plan and what is sent can be compared byte for byte.
    let now = engine::time::wall_clock_now();
    let fixed = config.build("notify").unwrap().with_clock(Arc::new(move || now));
    let plan = fixed.dry_run(&action).await.unwrap();
    let applied = fixed.execute(&action).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    assert!(plan.requests[0].starts_with(&format!("POST http://127.0.0.1:{port}/api/v2/alerts [")), "{plan:?}");

    let alert = our_alert(&base).await.expect("the alert is not in Alertmanager");
    assert_eq!(alert["status"]["state"], "active", "{alert}");
    assert_eq!(alert["annotations"]["reason"], "xid", "{alert}");
    assert_eq!(alert["generatorURL"], "https://rocemend.example/decisions/42", "{alert}");
    assert_eq!(notify.verify(&action, Some(&applied)).await.unwrap(), Verification::InEffect);

    let undo_plan = fixed.dry_run_undo(&action, &applied).await.unwrap();
    let undone = fixed.undo(&action, &applied).await.unwrap();
    assert_eq!(undone.requests, undo_plan.requests, "dry_run_undo and undo differ");
    // Resolved: gone from the list of alerts, or listed with an end in the past.
    let now_text = http::rfc3339(engine::time::wall_clock_now());
    if let Some(alert) = our_alert(&base).await {
        let ends = alert["endsAt"].as_str().unwrap_or_default().to_string();
        assert!(ends.as_str() <= now_text.as_str(), "still active after undo: {alert}");
    }
    assert_eq!(notify.verify(&action, Some(&applied)).await.unwrap(), Verification::NotInEffect);
}

#[tokio::test]
async fn the_json_format_posts_the_action_and_a_refusal_names_the_status() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // Answers the first request 204 and the second 500, handing each one back.
    let server = tokio::spawn(async move {
        let mut seen = Vec::new();
        for status in ["204 No Content", "500 Internal Server Error"] {
            let (mut socket, _) = listener.accept().await.unwrap();
            let (head, request_body) = common::read_request(&mut socket, status).await;
            let body = if status.starts_with("500") { "disk full" } else { "" };
            let answer = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            socket.write_all(answer.as_bytes()).await.unwrap();
            seen.push(format!("{head}\r\n\r\n{request_body}"));
        }
        seen
    });
    let hook = WebhookConfig::new(Format::Json, &format!("http://127.0.0.1:{port}/hook"))
        .build("hook")
        .unwrap()
        .with_clock(Arc::new(|| 0));
    let plan = hook.dry_run(&action()).await.unwrap();
    let applied = hook.execute(&action()).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    let err = hook.execute(&action()).await.unwrap_err();
    assert_eq!(err.to_string(), format!("failed: POST http://127.0.0.1:{port}/hook answered 500: disk full"));
    let seen = server.await.unwrap();
    let body = r#"{"action":{"kind":"node.cordon","params":{"reason":"xid","rule":"gpu_xid"},"target":{"node":"gpu-07"}},"actuator":"hook","at":"1970-01-01T00:00:00.000Z","event":"execute"}"#;
    assert_eq!(
        seen[0],
        format!(
            "POST /hook HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    );
    assert_eq!(plan.requests, [format!("POST http://127.0.0.1:{port}/hook {body}")]);
}
