//! `[kubernetes_condition]` in a running daemon: the engine's transitions
//! reach the node condition `RoceFabricHealthy`, written to an API server
//! written here (it shares nothing with the client) that keeps each
//! request: healthy at start, unhealthy while a rule fires for this node
//! (and not for another node's incident), healthy again when it resolves.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{daemon_config, slow_step_playbook, Daemon, WAIT};
use serde_json::Value;

/// A request the API server here saw: its request line, headers and body.
#[derive(Debug)]
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The one condition the PATCH sets.
    fn condition(&self) -> &Value {
        let conditions = self.body["status"]["conditions"].as_array().expect("status.conditions");
        assert_eq!(conditions.len(), 1, "one condition: {}", self.body);
        &conditions[0]
    }
}

/// An API server that answers every request 200 and keeps it.
fn api_server() -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let Some(request) = read_request(&stream) else { continue };
            keep.lock().unwrap().push(request);
            let _ = write!(stream, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}");
        }
    });
    (url, seen)
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let Some((name, value)) = header.trim_end().split_once(':') else { break };
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let length: usize = headers.iter().find(|(n, _)| n == "content-length")?.1.parse().ok()?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen { line: line.trim_end().to_string(), headers, body: serde_json::from_slice(&body).ok()? })
}

/// Waits until the server has seen `n` requests; the `n`th.
fn nth(seen: &Mutex<Vec<Seen>>, n: usize, daemon: &Daemon) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(request) = seen.lock().unwrap().get(n - 1) {
            assert_eq!(request.line, "PATCH /api/v1/nodes/gpu-01.cluster.example/status HTTP/1.1");
            assert_eq!(request.header("content-type"), Some("application/strategic-merge-patch+json"));
            assert_eq!(request.header("authorization"), Some("Bearer s3cret"));
            return request.condition().clone();
        }
        assert!(Instant::now() < deadline, "no write {n} within {WAIT:?}\n--- daemon log ---\n{}", daemon.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_daemon_writes_its_nodes_condition_as_its_incidents_start_and_end() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (url, seen) = api_server();
    let playbook = slow_step_playbook(dir);
    let mut text = std::fs::read_to_string(&playbook).unwrap();
    // The Node's name differs from the daemon's node (an FQDN cloud): the
    // incidents still count by the `node` label, gpu-01.
    text.push_str(&format!(
        "[kubernetes_condition]\napi_server = \"{url}\"\ntoken = \"s3cret\"\nnode = \"gpu-01.cluster.example\"\n\
         severity = \"warning\"\nheartbeat = \"10m\"\n"
    ));
    std::fs::write(&playbook, text).unwrap();
    let config = daemon_config(dir, &playbook, None);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("node = \"gpu-01\"\n{text}")).unwrap();
    let mut daemon = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();

    let start = nth(&seen, 1, &daemon);
    assert_eq!(
        (&start["type"], &start["status"], &start["reason"]),
        (&"RoceFabricHealthy".into(), &"True".into(), &"RoceFabricHealthy".into())
    );
    assert_eq!(start["message"], "no RoCE fabric incident of severity warning or above on node gpu-01");

    daemon.cli_ok(&["job", "push", "--job", "j", "--node", "gpu-01,gpu-02", "--step-time", "5"]);
    let storm = nth(&seen, 2, &daemon);
    assert_eq!((&storm["status"], &storm["reason"]), (&"False".into(), &"SlowStep".into()), "{storm}");
    assert_eq!(
        storm["message"], "1 RoCE fabric incident firing on node gpu-01: slow-step (warning) on job=j,node=gpu-01",
        "gpu-02's incident is another node's"
    );
    assert_eq!(storm["lastTransitionTime"], storm["lastHeartbeatTime"], "the status changed with this write");

    daemon.cli_ok(&["job", "push", "--job", "j", "--node", "gpu-01,gpu-02", "--step-time", "1"]);
    let calm = nth(&seen, 3, &daemon);
    assert_eq!((&calm["status"], &calm["reason"]), (&"True".into(), &"RoceFabricHealthy".into()), "{calm}");
    assert!(daemon.stop().success(), "{}", daemon.log());
    assert_eq!(seen.lock().unwrap().len(), 3, "one write at start and one per change: {:#?}", seen.lock().unwrap());
}
