//! `rocemend timeline` on what a real daemon recorded: the daemon replays a
//! job slowing down on node-02 (its GPU busy less, NCCL bandwidth halved,
//! its NIC pausing its switch port, its step time up), records everything
//! it saw, and its slow-step rule cordons node-02 through the ledger. The
//! page must show each kind of track, the rule's firing span and its
//! decision, narrow to a node, a job or an incident, refuse bad input with
//! exit 2, and render in headless Chromium.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use common::{bin, daemon_config, slow_step_playbook, text, Browser, WAIT};

/// 2023-11-14T22:13:20Z, in ns.
const START: i64 = 1_700_000_000_000_000_000;
const SECOND: i64 = 1_000_000_000;
const FROM: &str = "2023-11-14T22:13:20Z";
const TO: &str = "2023-11-14T22:13:50Z";

/// The daemon's input: 30 s, one sample a second; node-02 slows down at 10 s.
fn input() -> String {
    let series: &[(&str, &str, &str)] = &[
        ("gpu_utilization_percent", r#"{"node":"node-01","gpu":"0"}"#, "gauge"),
        ("gpu_utilization_percent", r#"{"node":"node-02","gpu":"0"}"#, "gauge"),
        ("nccl_busbw_gbps", r#"{"job":"llm-7","node":"node-01"}"#, "gauge"),
        ("nccl_busbw_gbps", r#"{"job":"llm-7","node":"node-02"}"#, "gauge"),
        ("ethtool_tx_prio_pause_duration_us", r#"{"node":"node-01","netdev":"eth0","prio":"3"}"#, "counter"),
        ("ethtool_tx_prio_pause_duration_us", r#"{"node":"node-02","netdev":"eth0","prio":"3"}"#, "counter"),
        // leaf-rail0 Ethernet0 faces node-01 eth0, Ethernet4 node-02 eth0 (docs/examples/inventory.toml).
        ("switch_in_fcs_errors", r#"{"switch":"leaf-rail0","port":"Ethernet0"}"#, "counter"),
        ("switch_in_fcs_errors", r#"{"switch":"leaf-rail0","port":"Ethernet4"}"#, "counter"),
        ("job_step_time_seconds", r#"{"job":"llm-7","node":"node-01"}"#, "gauge"),
        ("job_step_time_seconds", r#"{"job":"llm-7","node":"node-02"}"#, "gauge"),
        ("job_node_info", r#"{"job":"llm-7","node":"node-01"}"#, "gauge"),
        ("job_node_info", r#"{"job":"llm-7","node":"node-02"}"#, "gauge"),
    ];
    let mut out = String::new();
    for (i, (metric, labels, kind)) in series.iter().enumerate() {
        let kind =
            if *kind == "counter" { r#""kind":"counter","bits":64,"overflow":"wrap""# } else { r#""kind":"gauge""# };
        out.push_str(&format!("{{\"series\":{i},\"metric\":\"{metric}\",\"labels\":{labels},{kind}}}\n"));
    }
    let mut pause = [0u64; 2];
    for s in 0..=30i64 {
        let t = START + s * SECOND;
        let slow = s >= 10;
        pause[0] += 100;
        pause[1] += if slow { 900_000 } else { 100 };
        let values: [String; 12] = [
            "95".into(),
            (if slow { "40" } else { "95" }).into(),
            "180".into(),
            (if slow { "90" } else { "180" }).into(),
            pause[0].to_string(),
            pause[1].to_string(),
            s.to_string(),
            (s * if slow { 7 } else { 1 }).to_string(),
            "1.0".into(),
            (if slow { "5.0" } else { "1.0" }).into(),
            "1".into(),
            "1".into(),
        ];
        for (i, v) in values.iter().enumerate() {
            out.push_str(&format!("{{\"s\":{i},\"t\":{t},\"v\":{v}}}\n"));
        }
        if s == 10 {
            out.push_str(&format!(
                "{{\"note\":\"fault\",\"t\":{t},\"text\":\"node-02 slows down\",\"labels\":{{\"node\":\"node-02\"}}}}\n"
            ));
        }
    }
    out
}

/// [`input`], with node-02's other NICs quiet (their pause counters
/// steady at 100 µs/s) and its eth0 waiting to send more once it slows
/// down: a node page where a few series moved among many that did not.
fn input_with_quiet_nics() -> String {
    let mut out = String::new();
    let quiet = 1..=6;
    for line in input().lines() {
        out.push_str(line);
        out.push('\n');
        if line.starts_with(r#"{"series":11,"#) {
            for k in quiet.clone() {
                out.push_str(&format!(
                    "{{\"series\":{},\"metric\":\"ethtool_tx_prio_pause_duration_us\",\"labels\":{{\"node\":\"node-02\",\"netdev\":\"eth{k}\",\"prio\":\"3\"}},\"kind\":\"counter\",\"bits\":64,\"overflow\":\"wrap\"}}\n",
                    11 + k
                ));
            }
            out.push_str("{\"series\":20,\"metric\":\"rdma_port_xmit_wait\",\"labels\":{\"node\":\"node-02\",\"rdma_dev\":\"mlx5_0\",\"rdma_port\":\"1\"},\"kind\":\"counter\",\"bits\":32,\"overflow\":\"saturate\"}\n");
        }
        if let Some(rest) = line.strip_prefix(r#"{"s":11,"t":"#) {
            let t: i64 = rest.split(',').next().unwrap().parse().unwrap();
            let s = (t - START) / SECOND;
            for k in quiet.clone() {
                out.push_str(&format!("{{\"s\":{},\"t\":{t},\"v\":{}}}\n", 11 + k, 100 * s));
            }
            let wait: i64 = (0..=s).map(|x| if x >= 10 { 50_000_000 } else { 1_000 }).sum();
            out.push_str(&format!("{{\"s\":20,\"t\":{t},\"v\":{wait}}}\n"));
        }
    }
    out
}

/// Runs the daemon over the input until its sensor ends; returns its config.
fn record(dir: &Path) -> PathBuf {
    record_input(dir, &input())
}

/// [`record`] of `input`.
fn record_input(dir: &Path, input: &str) -> PathBuf {
    let playbook = slow_step_playbook(dir);
    let input_path = dir.join("input.jsonl");
    std::fs::write(&input_path, input).unwrap();
    let config = daemon_config(dir, &playbook, Some(&input_path));
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("state_dir = \"state\"\n", "state_dir = \"state\"\nrecord = \"daemon.jsonl\"\n")
        .replace("[engine]\n", "[engine]\nexit_when_sensors_end = true\n");
    std::fs::write(&config, text).unwrap();
    let log = std::fs::File::create(dir.join("daemon.log")).unwrap();
    let mut child = Command::new(bin())
        .args(["run", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the replay did not end within {WAIT:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let log = std::fs::read_to_string(dir.join("daemon.log")).unwrap();
    assert!(status.success(), "{log}");
    assert!(log.contains("Decision."), "the slow step is decided on: {log}");
    config
}

fn timeline(args: &[&str]) -> Output {
    Command::new(bin()).arg("timeline").args(args).stdin(Stdio::null()).output().unwrap()
}

/// Runs `timeline` with a window, writes `out`, and returns the page.
fn page(config: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["--config", config.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let result = timeline(&args);
    assert_eq!(result.status.code(), Some(0), "timeline {args:?}: {}", text(&result));
    std::fs::read_to_string(out).unwrap()
}

/// The `data-label`s of the drawn series.
fn series_labels(page: &str) -> Vec<String> {
    page.split(r#"<g class="series" data-label=""#).skip(1).map(|s| s.split('"').next().unwrap().to_string()).collect()
}

/// The `data-label`s of the series collapsed as unchanged.
fn unchanged_labels(page: &str) -> Vec<String> {
    page.split(r#"<li data-label=""#).skip(1).map(|s| s.split('"').next().unwrap().to_string()).collect()
}

fn position(page: &str, kind: &str) -> usize {
    page.find(&format!("data-kind=\"{kind}\"")).unwrap_or_else(|| panic!("no {kind} section"))
}

#[test]
fn the_page_shows_every_kind_of_track_the_decision_and_narrows_by_node_job_and_incident() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = record(dir);
    let window = ["--from", FROM, "--to", TO];

    let all = page(&config, &dir.join("all.html"), &window);
    the_whole_page_shows_every_track_in_order(&all);
    node_01_alone_from_copies_of_the_files(dir);

    let job = page(&config, &dir.join("job.html"), &["--job", "llm-7", "--from", FROM, "--to", TO]);
    let (moved, flat) = (series_labels(&job), unchanged_labels(&job));
    assert_eq!(moved.len() + flat.len(), 10, "llm-7 runs on both nodes: {moved:#?} {flat:#?}");
    assert!(moved.iter().all(|l| l.contains("node-02") || l.contains("Ethernet4")), "{moved:#?}");

    // The incident of the cordon, from the page's decision table.
    let id = all.split("<td class=\"incident\">").nth(1).and_then(|r| r.split('<').next()).expect("an incident id");
    assert!(id.starts_with("inc-"), "{id}");
    let inc = page(&config, &dir.join("incident.html"), &["--incident", id]);
    assert!(inc.contains("node node-02 and the switch ports facing its NICs"), "scoped to its subject");
    assert!(inc.contains(r#"<g class="mark executed" data-label="slow-step: node.cordon"#));
    assert!(series_labels(&inc).iter().all(|l| !l.contains("node-01")), "{:#?}", series_labels(&inc));
}

/// The page of the whole window: every kind of section in order, the
/// series that moved (values, counters as rates), node-01's collapsed as
/// unchanged, the rule's span, the decision, the cordon in effect, the
/// note and the clock.
fn the_whole_page_shows_every_track_in_order(all: &str) {
    let kinds = ["gpu", "nccl", "nic", "switch", "job", "rules", "decisions", "actions"];
    let at: Vec<usize> = kinds.iter().map(|k| position(all, k)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "sections in the order {kinds:?}: {at:?}");
    let labels = series_labels(all);
    for want in [
        "gpu_utilization_percent node-02 gpu=0",
        "nccl_busbw_gbps llm-7 node-02",
        "ethtool_tx_prio_pause_duration_us/s node-02 eth0 prio=3",
        "switch_in_fcs_errors/s leaf-rail0 Ethernet4",
        "job_step_time_seconds llm-7 node-02",
    ] {
        // Each row ends with the range it is scaled to.
        assert!(labels.iter().any(|l| l.starts_with(&format!("{want} ("))), "{want:?} among {labels:#?}");
    }
    // Values, and counters as rates: 100 µs/s of pause, then 900,000 µs/s.
    assert!(labels.contains(&"nccl_busbw_gbps llm-7 node-02 (90 – 180)".to_string()), "{labels:#?}");
    assert!(labels.contains(&"ethtool_tx_prio_pause_duration_us/s node-02 eth0 prio=3 (100 – 9.00e5)".to_string()));
    assert!(!labels.iter().any(|l| l.starts_with("job_node_info")), "the job mapping is not a signal: {labels:#?}");
    // node-01 never moved: its five series are one line per group.
    assert_eq!(labels.len(), 5, "{labels:#?}");
    let flat = unchanged_labels(all);
    assert_eq!(flat.len(), 5, "{flat:#?}");
    assert!(flat.iter().all(|l| l.contains("node-01") || l.contains("Ethernet0")), "{flat:#?}");
    assert!(all.contains("1 series unchanged"), "each group says how many it collapsed");
    let rules = &all[position(all, "rules")..position(all, "decisions")];
    assert!(rules.contains(r#"<g class="span firing" data-label="slow-step firing llm-7 node-02""#), "{rules}");
    assert!(all.contains(r#"<g class="mark executed" data-label="slow-step: node.cordon"#), "the decision mark");
    assert!(all.contains(r#"<g class="span in-effect""#), "the cordon in effect");
    assert!(all.contains(r#"data-label="fault: node-02 slows down""#), "the recorded note");
    assert!(all.contains(">22:13:25</text>"), "a UTC clock axis");
    assert!(
        all.contains("replayed from the recording through the rules in"),
        "the page says where rule states come from"
    );
}

/// `--node node-01` on copies of the recording and the state, without the
/// daemon config: nothing of node-01 moved, and node-02's cordon is not
/// shown.
fn node_01_alone_from_copies_of_the_files(dir: &Path) {
    let copy = dir.join("copy");
    std::fs::create_dir_all(copy.join("state")).unwrap();
    std::fs::copy(dir.join("daemon.jsonl"), copy.join("rec.jsonl")).unwrap();
    for entry in walk(&dir.join("state/state.sled")) {
        let to = copy.join("state/state.sled").join(entry.strip_prefix(dir.join("state/state.sled")).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
    let out = copy.join("node.html");
    let result = timeline(&[
        "--recording",
        copy.join("rec.jsonl").to_str().unwrap(),
        "--state",
        copy.join("state").to_str().unwrap(),
        "--rules",
        dir.join("rules").to_str().unwrap(),
        "--node",
        "node-01",
        "--from",
        FROM,
        "--to",
        TO,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(result.status.code(), Some(0), "{}", text(&result));
    let node = std::fs::read_to_string(&out).unwrap();
    assert!(series_labels(&node).is_empty(), "nothing of node-01 moved: {:#?}", series_labels(&node));
    let labels = unchanged_labels(&node);
    assert!(labels.iter().all(|l| l.contains("node-01") || l.contains("leaf-rail0 Ethernet0")), "{labels:#?}");
    assert!(labels.iter().any(|l| l == "switch_in_fcs_errors/s leaf-rail0 Ethernet0 (= 1)"), "the port facing node-01");
    assert_eq!(labels.len(), 5, "{labels:#?}");
    assert!(!node.contains("class=\"mark executed\""), "node-02's cordon is not node-01's");
    assert!(node.contains("rule states: not shown") || node.contains("through the rules in"));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn bad_input_is_refused_with_exit_2_and_says_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = record(dir);
    let c = config.to_str().unwrap();
    let out = dir.join("x.html");
    let o = out.to_str().unwrap();
    for (args, want) in [
        (vec!["--config", c, "--from", TO, "--to", FROM, "--out", o], "is not before --to"),
        (vec!["--config", c, "--from", FROM, "--to", FROM, "--out", o], "is not before --to"),
        (vec!["--config", c, "--from", "yesterday", "--out", o], "--from: \"yesterday\" is not a time"),
        (
            vec!["--config", c, "--from", "2030-01-01T00:00:00Z", "--to", "2030-01-01T01:00:00Z", "--out", o],
            "no data in the window",
        ),
        (vec!["--config", c, "--job", "nope", "--from", FROM, "--to", TO, "--out", o], "unknown job nope"),
        (vec!["--config", c, "--incident", "inc-000000000000", "--out", o], "unknown incident inc-000000000000"),
        (
            vec!["--config", c, "--recording", "/nonexistent.jsonl", "--from", FROM, "--to", TO, "--out", o],
            "cannot read the recording /nonexistent.jsonl",
        ),
        (vec!["--config", c, "--to", TO, "--out", o], "--from is required"),
    ] {
        let result = timeline(&args);
        assert_eq!(result.status.code(), Some(2), "{args:?}: {}", text(&result));
        assert!(text(&result).contains(want), "{args:?}: {}", text(&result));
    }
    assert!(!out.exists(), "no page is written on an error");
}

#[test]
fn the_timeline_is_drawn_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let Some(browser) = Browser::find(dir) else { return };
    let config = record(dir);
    let html = dir.join("timeline.html");
    page(&config, &html, &["--from", FROM, "--to", TO]);
    let url = format!("file://{}", html.display());
    let dom = browser.dom(&url);
    let attr = |name: &str| -> usize {
        dom.split(&format!("{name}=\""))
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {name} on the body: {}", &dom[..dom.len().min(400)]))
    };
    // Set by the page's script after layout: GPU, NCCL, NIC, switch, job,
    // rule states, decisions, actions and notes, each a timeline with a box.
    assert_eq!(attr("data-timelines"), 9, "every section laid out");
    assert_eq!(attr("data-series"), 5, "every series that moved drawn (node-01's are collapsed)");
    assert!(attr("data-marks") >= 3, "the decision, its steps and the note");
    browser.screenshot(&url, "1200,2000", &dir.join("shot.png"));
}

/// A node's page lists what moved first (node-02's eth0 pausing its port,
/// then its waiting to send) and folds the six quiet NICs into one line;
/// drawn in Chromium, with a screenshot.
#[test]
fn a_node_page_puts_what_moved_first_and_collapses_flat_series_in_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let Some(browser) = Browser::find(dir) else { return };
    let config = record_input(dir, &input_with_quiet_nics());
    let html = dir.join("node-02.html");
    let page = page(&config, &html, &["--node", "node-02", "--from", FROM, "--to", TO]);
    let nic = &page[position(&page, "nic")..position(&page, "switch")];
    let moved = series_labels(nic);
    assert_eq!(moved.len(), 2, "{moved:#?}");
    assert!(moved[0].starts_with("ethtool_tx_prio_pause_duration_us/s node-02 eth0"), "{moved:#?}");
    assert!(moved[1].starts_with("rdma_port_xmit_wait/s node-02"), "{moved:#?}");
    assert!(nic.contains(r#"data-unchanged="6""#) && nic.contains("6 series unchanged"), "{nic}");
    let url = format!("file://{}", html.display());
    let dom = browser.dom(&url);
    assert!(dom.contains("data-series=\"6\""), "the five groups' six moved series drawn");
    let shot = dir.join("node-02.png");
    browser.screenshot(&url, "1200,1400", &shot);
    assert!(std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0) > 10_000, "a screenshot of the page");
    if let Some(keep) = std::env::var_os("ROCEMEND_SCREENSHOTS") {
        std::fs::copy(&shot, std::path::Path::new(&keep).join("timeline-node-moved-first.png")).unwrap();
    }
}

/// The commands of docs/operations.md on a node whose daemon runs: the
/// ledger comes from the daemon over its socket (sled lets one process open
/// it), the recording is read as the daemon writes it, and a restart
/// appends to it instead of starting over.
#[test]
fn a_running_daemon_is_timelined_without_copying_its_state_and_a_restart_keeps_its_recording() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // A first run, to its end: the recording holds its segment.
    let config = record(dir);
    // A second run of the same input that keeps running.
    let settings = std::fs::read_to_string(&config).unwrap().replace("exit_when_sensors_end = true\n", "");
    std::fs::write(&config, settings).unwrap();
    let mut daemon = common::Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon2.log"));
    daemon.wait_ready();
    let decisions = daemon.wait_for("the second run's decision", |d| {
        let all = d.decisions();
        (all.len() >= 2).then_some(all)
    });
    let recording = std::fs::read(dir.join("daemon.jsonl")).unwrap();
    let mut reader = engine::recording::Reader::new(&recording[..], "daemon.jsonl");
    let mut starts = 0;
    while let Some(event) = reader.next_event().unwrap() {
        starts +=
            matches!(event, engine::recording::Event::Note(n) if n.kind == engine::recording::SEGMENT_START) as usize;
    }
    assert_eq!(starts, 2, "each start begins a segment of the same file");

    // The page is written while the daemon holds its ledger.
    let out = dir.join("live.html");
    let page = page(&config, &out, &["--from", FROM, "--to", TO]);
    assert!(page.contains("node-02 slows down"), "the recording's note");
    for d in &decisions {
        assert!(page.contains(&d.id), "decision {} of the running daemon is on the page", d.id);
    }
    daemon.stop();
}
