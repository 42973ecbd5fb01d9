//! The gnmi sensor against an independent SONiC-like gNMI target:
//! `tests/interop/sonic_target.py`, Python on PyPI's `gnmi-pb` stubs that
//! shares no code with rocemend and is strict where gNMI and sonic-gnmi are
//! (a target only in the prefix; port-name COUNTERS paths only with a prefix
//! target, OIDs with origin `sonic-db`). Both path styles and `auto`, a
//! storm seen by the watchdog, and a restart of the target.
//!
//! Runs with the Python in `$ROCEMEND_PYTHON` that has
//! `tests/interop/requirements.txt` installed (`.ci/run` sets it up); skips,
//! saying why, without it.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::gnmi_harness;

use engine::{Labels, Value};
use gnmi_harness::Harness;

/// The target as a child process, killed when dropped.
struct Target {
    child: Child,
    gnmi: String,
    control: String,
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Target {
    /// Starts `sonic_target.py` with `args`; `Err` says why it cannot run here.
    fn start(args: &[&str]) -> Result<Target, String> {
        let python = std::env::var("ROCEMEND_PYTHON").map_err(|_| "ROCEMEND_PYTHON is not set".to_string())?;
        let check = Command::new(&python)
            .args(["-c", "import grpc, gnmi_pb.gnmi_pb2"])
            .output()
            .map_err(|e| format!("cannot run {python}: {e}"))?;
        if !check.status.success() {
            return Err(format!("{python} lacks tests/interop/requirements.txt (grpc, gnmi-pb)"));
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/interop/sonic_target.py");
        let mut child = Command::new(&python)
            .arg(script)
            .args(["--port", "0", "--control-port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {script}: {e}"))?;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut target = Target { child, gnmi: String::new(), control: String::new() };
        // It prints `gnmi HOST:PORT` and `control HOST:PORT`, then serves.
        for _ in 0..2 {
            let line = lines.next().expect("the target printed its ports").unwrap();
            match line.split_once(' ') {
                Some(("gnmi", address)) => target.gnmi = address.to_string(),
                Some(("control", address)) => target.control = address.to_string(),
                _ => panic!("unexpected line from the target: {line:?}"),
            }
        }
        std::thread::spawn(move || lines.for_each(drop));
        Ok(target)
    }

    /// POSTs `body` to the control endpoint's `path`; returns the reply.
    fn post(&self, path: &str, body: serde_json::Value) -> String {
        post(&self.control, path, body)
    }
}

/// One HTTP/1.0 POST to the target's control endpoint at `control`.
fn post(control: &str, path: &str, body: serde_json::Value) -> String {
    let body = body.to_string();
    let mut stream = std::net::TcpStream::connect(control).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.0 200") || reply.starts_with("HTTP/1.1 200"), "{reply}");
    reply
}

macro_rules! target_or_skip {
    ($args:expr) => {
        match Target::start($args) {
            Ok(target) => target,
            Err(reason) => return test_peers::missing(reason),
        }
    };
}

fn start(address: &str, target_lines: &str) -> Harness {
    gnmi_harness::start(&format!(
        "presets = [\"sonic_pfc\", \"sonic_queues\", \"sonic_pfcwd\"]\nsample_interval = \"1s\"\ntimeout = \"2s\"\n\
         [[targets]]\nname = \"leaf01\"\naddress = \"{address}\"\n{target_lines}\n"
    ))
}

/// Port counters, queue counters and the watchdog of Ethernet4, queue 3
/// (lossless, watched), all arrive; nothing fails.
async fn all_presets_stream(h: &mut Harness) {
    let mut got = [false; 3];
    h.until(|h, b| {
        got[0] |= h.find(b, "switch_pfc_rx_pkts", &[("port", "Ethernet4"), ("prio", "3")]).is_some();
        got[1] |= h.find(b, "switch_queue_packets", &[("port", "Ethernet4"), ("queue", "3")]).is_some();
        got[2] |= h.find(b, "switch_pfcwd_stormed", &[("port", "Ethernet4"), ("queue", "3")]) == Some(Value::Real(0.0));
        got.iter().all(|g| *g)
    })
    .await;
    assert!(h.errors().is_empty(), "{:?}", h.errors());
}

#[tokio::test]
async fn the_presets_stream_from_an_independent_target_in_each_path_style() {
    for (args, lines) in [
        (&["--styles", "prefix-target"][..], "path_style = \"prefix-target\""),
        (&["--styles", "sonic-db-origin"][..], "path_style = \"sonic-db-origin\""),
        (
            &["--styles", "sonic-db-origin", "--sonic-db-instance", "required"][..],
            "path_style = \"sonic-db-origin\"\nnamespace = \"localhost\"",
        ),
        (&["--styles", "sonic-db-origin"][..], "path_style = \"auto\""),
        (&["--styles", "prefix-target"][..], "path_style = \"auto\""),
    ] {
        let target = target_or_skip!(args);
        let mut h = start(&target.gnmi, lines);
        all_presets_stream(&mut h).await;
        h.stop().await;
        println!("ok: {args:?} with {lines}");
    }
}

#[tokio::test]
async fn a_storm_on_the_independent_target_is_seen_by_its_watchdog_in_the_sonic_db_style() {
    let target = target_or_skip!(&["--styles", "sonic-db-origin"]);
    let mut h = start(&target.gnmi, "path_style = \"auto\"");
    all_presets_stream(&mut h).await;
    target.post("/storm", serde_json::json!({"port": "Ethernet4", "prio": 3, "on": true}));
    let q3 = [("switch", "leaf01"), ("port", "Ethernet4"), ("queue", "3")];
    h.until(|h, b| h.find(b, "switch_pfcwd_stormed", &q3) == Some(Value::Real(1.0))).await;
    h.stop().await;
}

#[tokio::test]
async fn a_restart_of_the_independent_target_brings_a_reconnected_note_and_a_short_gap() {
    let target = target_or_skip!(&[]);
    let mut h = start(&target.gnmi, "");
    let labels = [("port", "Ethernet0"), ("prio", "3")];
    let mut last_before = 0;
    h.until(|h, b| {
        let reg = h.table.read();
        for s in &b.samples {
            if reg.metric_name(s.series) == "switch_pfc_rx_pkts"
                && reg.labels(s.series).contains_all(&Labels::from_pairs(labels))
            {
                last_before = s.ts;
            }
        }
        last_before > 0
    })
    .await;
    let down = Duration::from_secs(3);
    // Blocks while the target's gRPC server is down.
    let restart = {
        let control = target.control.clone();
        let body = serde_json::json!({"down_ms": down.as_millis() as u64});
        tokio::task::spawn_blocking(move || post(&control, "/restart", body))
    };
    let mut note = None;
    let mut first_after = None;
    h.until(|h, b| {
        if let Some(n) = b.notes.iter().find(|n| n.kind == engine::Note::RECONNECTED) {
            note = Some(n.clone());
        }
        let reg = h.table.read();
        for s in &b.samples {
            if reg.metric_name(s.series) == "switch_pfc_rx_pkts"
                && reg.labels(s.series).contains_all(&Labels::from_pairs(labels))
            {
                if s.ts > last_before + down.as_nanos() as i64 / 2 && first_after.is_none() {
                    first_after = Some(s.ts);
                }
                if first_after.is_none() {
                    last_before = s.ts;
                }
            }
        }
        note.is_some() && first_after.is_some()
    })
    .await;
    restart.await.unwrap();
    let note = note.unwrap();
    assert_eq!(note.labels.get("switch"), Some("leaf01"));
    let gap = Duration::from_nanos((first_after.unwrap() - last_before) as u64);
    println!("target down {down:?}: gap in samples {gap:?}");
    assert!(gap < down + Duration::from_millis(1500), "gap {gap:?} after {down:?} down");
    h.stop().await;
}
