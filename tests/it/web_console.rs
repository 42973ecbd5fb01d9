//! The web console (`[web]`) of a real `rocemend run`:
//!
//! - in headless Chromium, driven over CDP by `tests/web/console.mjs`
//!   (playwright-core from npm): a live incident appears without a reload,
//!   a visitor without the token is refused approve, the evidence and the
//!   incident's timeline are one click away, and the operator's approve
//!   with the token is recorded in the ledger with who did it;
//! - over plain HTTP, by hand: the page is read-only and a write is refused.
//!
//! The browser test needs `node`, Debian's `chromium` and playwright-core
//! (`.ci/run` installs it: `npm install --prefix target/web-test
//! playwright-core`); without them it says why it is skipped.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{chromium, daemon_config, repo, slow_step_playbook, text, toml_path, Daemon};

fn write_secret(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A daemon config: the slow-step rule, cordons waiting for approval, a
/// recording (for timelines), and `[web]` as given.
fn setup(dir: &Path, web: &str) -> PathBuf {
    let playbook = slow_step_playbook(dir);
    let mut book = std::fs::read_to_string(&playbook).unwrap();
    book.push_str("[[approval]]\nactions = [\"node.cordon\"]\ntimeout = \"15m\"\n");
    std::fs::write(&playbook, book).unwrap();
    let config = daemon_config(dir, &playbook, None);
    let mut text = std::fs::read_to_string(&config).unwrap();
    // Top-level keys go before the first table.
    text = format!("record = {}\n{text}[web]\n{web}", toml_path(&dir.join("recording.jsonl")));
    std::fs::write(&config, text).unwrap();
    config
}

/// The console's address, from the daemon's log.
fn console_addr(daemon: &mut Daemon) -> String {
    daemon.wait_for("the web console's address in the log", |d| {
        let log = d.log();
        let line = log.lines().find(|l| l.contains("Web console listening."))?;
        let rest = &line[line.find("addr=")? + 5..];
        Some(rest.split_whitespace().next()?.trim_matches('"').to_string())
    })
}

/// One HTTP/1.1 request over plain TCP; the status code and the body.
fn http(addr: &str, method: &str, path: &str, headers: &str) -> (u16, String) {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(tcp, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: 0\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).unwrap();
    let code = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}

fn push_slow_step(daemon: &Daemon) {
    daemon.cli_ok(&["job", "push", "--job", "train-7", "--node", "gpu-01", "--step-time", "5"]);
}

#[test]
fn over_plain_http_the_console_shows_everything_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = setup(dir, "listen = \"127.0.0.1:0\"\n");
    let mut daemon = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();
    let addr = console_addr(&mut daemon);
    push_slow_step(&daemon);
    let id = daemon.wait_for("a request awaiting approval", |d| d.pending().first().map(|p| p.id.clone()));

    let (code, page) = http(&addr, "GET", "/", "");
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("id=\"auth\" class=\"readonly\""), "{page}");
    assert!(!page.contains("button class=\"approve\""), "a read-only page offers no approve: {page}");
    let (_, sections) = http(&addr, "GET", "/sections", "");
    assert!(sections.contains(&format!("<tr data-id=\"{id}\">")), "the request is listed: {sections}");
    assert!(sections.contains("slow-step"), "{sections}");
    let (code, explain) = http(&addr, "GET", &format!("/decisions/{id}"), "");
    assert_eq!(code, 200);
    assert!(explain.contains("evidence  step=5") && explain.contains("waiting for approval"), "{explain}");

    // "Why is this job slow?" is asked of the daemon's own recording.
    // (The recording reaches its file a block at a time: within 10 s.)
    let (code, why) = daemon.wait_for("the job in the recording", |_| {
        let (code, why) = http(&addr, "GET", "/why?job=train-7", "");
        (!why.contains("unknown job")).then_some((code, why))
    });
    // One step time is too little to find a regression in, and it says so.
    assert_eq!(code, 404, "{why}");
    assert!(why.contains("the job signal has 1 points; at least 13 are needed"), "{why}");
    let (code, none) = http(&addr, "GET", "/why", "");
    assert_eq!(code, 400, "{none}");

    // A write over plain HTTP is refused, token or not, and nothing changes.
    let (code, why) = http(&addr, "POST", &format!("/decisions/{id}/approve"), "Authorization: Bearer x\r\n");
    assert_eq!(code, 403, "{why}");
    assert!(why.contains("plain HTTP"), "{why}");
    assert_eq!(daemon.pending().len(), 1, "still waiting");

    // The event stream opens and says so.
    let mut tcp = TcpStream::connect(&addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(tcp, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut reader = BufReader::new(tcp);
    let mut head = String::new();
    while !head.contains(": rocemend events") {
        assert!(reader.read_line(&mut head).unwrap() > 0, "the stream ended: {head}");
    }
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(daemon.stop().success(), "an open event stream does not hold the stop up: {}", daemon.log());
}

#[test]
fn a_token_without_tls_is_refused_by_check_and_run_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_secret(&dir.join("web.token"), &"w0".repeat(16));
    let config = setup(dir, "listen = \"127.0.0.1:0\"\ntoken_file = \"web.token\"\n");
    for verb in ["check", "run"] {
        let out = Command::new(common::bin()).args([verb, "--config"]).arg(&config).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{verb}: {}", text(&out));
        assert!(text(&out).contains("the token that approves actions is sent only over TLS"), "{verb}: {}", text(&out));
    }
}

/// Where playwright-core is: `ROCEMEND_PLAYWRIGHT` (its node_modules
/// folder), else `target/web-test/node_modules`, as `.ci/run` installs it.
fn playwright() -> Option<PathBuf> {
    let dir = std::env::var_os("ROCEMEND_PLAYWRIGHT")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo("target/web-test/node_modules"));
    dir.join("playwright-core").is_dir().then_some(dir)
}

fn skip_reason() -> Option<String> {
    if !Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Some("no `node` here (Debian nodejs)".into());
    }
    if chromium().is_none() {
        return Some("no chromium here (Debian chromium)".into());
    }
    if playwright().is_none() {
        return Some(
            "no playwright-core: `npm install --prefix target/web-test playwright-core` (or set ROCEMEND_PLAYWRIGHT)"
                .into(),
        );
    }
    None
}

fn not_blank(png: &Path) {
    let bytes = std::fs::read(png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{} is a PNG", png.display());
    assert!(bytes.len() > 20_000, "{} is {} bytes: a blank page, not the console", png.display(), bytes.len());
}

#[test]
fn in_a_browser_the_console_follows_the_daemon_live_and_approves_only_with_the_token() {
    if let Some(reason) = skip_reason() {
        return test_peers::missing(reason);
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (config, token) = console_config(dir);
    let mut daemon = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();
    let port = console_addr(&mut daemon).rsplit(':').next().unwrap().to_string();
    let shots = dir.join("shots");
    std::fs::create_dir(&shots).unwrap();

    let mut driver = Command::new("node")
        .arg(repo("tests/web/console.mjs"))
        .arg(format!("https://localhost:{port}"))
        .arg(&token)
        .arg(&shots)
        .arg(which(&chromium().unwrap()))
        .arg(playwright().unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting node");
    let mut out = BufReader::new(driver.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    if line.trim() != "READY" {
        let mut err = String::new();
        driver.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        panic!("the driver did not get ready: {line}{err}\n{}", daemon.log());
    }
    // The page is open; now the fault.
    push_slow_step(&daemon);
    writeln!(driver.stdin.as_mut().unwrap(), "go").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    let status = driver.wait().unwrap();
    let mut err = String::new();
    driver.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "the browser test failed: {err}\n{}", daemon.log());
    let found: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));

    assert_eq!(found["incidents_before"], 0, "{found}");
    assert!(found["events_logged"].as_u64() > Some(0), "events arrived over SSE: {found}");
    assert!(found["refusal"].as_str().unwrap().contains("refused"), "{found}");
    assert!(found["explain"].as_str().unwrap().contains("evidence  step=5"), "{found}");
    assert!(found["timeline_svgs"].as_u64() > Some(0), "the timeline page draws: {found}");
    assert_eq!(found["external_requests"], 0, "nothing fetched from the network: {found}");
    if let Some(keep) = std::env::var_os("ROCEMEND_KEEP_SHOTS") {
        for shot in ["console.png", "timeline.png", "approved.png"] {
            std::fs::copy(shots.join(shot), Path::new(&keep).join(shot)).unwrap();
        }
    }
    for shot in ["console.png", "timeline.png", "approved.png"] {
        not_blank(&shots.join(shot));
    }

    // The ledger recorded the approval, by whom, and the action.
    let id = found["decision"].as_str().unwrap();
    let decision = daemon.decisions().into_iter().find(|d| d.id == id).expect("the decision in the ledger");
    assert_eq!(decision.verdict.name(), "executed", "{decision:#?}");
    assert!(decision.steps.iter().any(|s| s.what == "approved by oncall (web console)"), "{:#?}", decision.steps);
    assert!(daemon.pending().is_empty());

    // The operator's undo went through the dispatcher, recorded as theirs.
    let undo = daemon.decisions().into_iter().find(|d| d.undo_of.as_deref() == Some(id)).expect("the undo");
    assert_eq!(undo.verdict.name(), "executed", "{undo:#?}");
    assert!(undo.steps.iter().any(|s| s.what.contains("asked by oncall (web console)")), "{:#?}", undo.steps);
    assert_eq!(daemon.status()["in_effect"], serde_json::json!([]), "nothing left in effect");
    assert!(daemon.stop().success(), "{}", daemon.log());
}

/// A daemon config in `dir` whose console listens on loopback over TLS (a
/// self-signed certificate for localhost) with a bearer token; the config
/// and the token.
fn console_config(dir: &Path) -> (PathBuf, String) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.join("web.crt"), cert.cert.pem()).unwrap();
    write_secret(&dir.join("web.key"), &cert.key_pair.serialize_pem());
    let token = "c0".repeat(16);
    write_secret(&dir.join("web.token"), &token);
    let config = setup(
        dir,
        "listen = \"127.0.0.1:0\"\ntls_cert = \"web.crt\"\ntls_key = \"web.key\"\ntoken_file = \"web.token\"\n",
    );
    (config, token)
}

/// The browser's full path (playwright wants an executable, not a name).
fn which(name: &str) -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// A one-member etcd on free loopback ports, killed when dropped.
#[cfg(feature = "etcd")]
struct Etcd {
    child: std::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

#[cfg(feature = "etcd")]
impl Etcd {
    fn start() -> Option<Etcd> {
        if !Command::new("etcd").arg("--version").output().is_ok_and(|o| o.status.success()) {
            test_peers::missing("no `etcd` here (Debian etcd-server)");
            return None;
        }
        let [client, peer] = test_peers::free_ports();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let child = Command::new("etcd")
            .args(["--name", "m0", "--data-dir"])
            .arg(dir.path().join("m0"))
            .args(["--listen-client-urls", &url, "--advertise-client-urls", &url])
            .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("m0={peer_url}"), "--log-level", "error"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Some(Etcd { child, url, _dir: dir })
    }
}

#[cfg(feature = "etcd")]
impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(feature = "etcd")]
#[test]
fn with_fleet_set_the_console_shows_the_fleet_breaker_and_the_budgets_tokens() {
    let Some(etcd) = Etcd::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = setup(dir, "listen = \"127.0.0.1:0\"\n");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[fleet]\netcd = [\"{}\"]\nidentity = \"gpu-01\"\nlease_ttl = \"4s\"\n\
         [[fleet.budget]]\nname = \"cordon\"\nkinds = [\"node.cordon\"]\nmax = 2\n",
        etcd.url
    ));
    std::fs::write(&config, text).unwrap();
    // The cordon is fleet-scoped and needs no approval here: a token is taken.
    let book = dir.join("playbook.toml");
    let without_approval = std::fs::read_to_string(&book)
        .unwrap()
        .replace("[[approval]]\nactions = [\"node.cordon\"]\ntimeout = \"15m\"\n", "");
    std::fs::write(&book, without_approval).unwrap();
    let mut daemon = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();
    let addr = console_addr(&mut daemon);
    daemon.wait_logged("etcd session established");
    push_slow_step(&daemon);
    daemon.wait_for("the cordon executed", |d| d.decisions().into_iter().find(|x| x.verdict.name() == "executed"));
    let sections = daemon.wait_for("the token on the page", |_| {
        let (_, s) = http(&addr, "GET", "/sections", "");
        s.contains("<td>1 of 2</td>").then_some(s)
    });
    assert!(sections.contains("<section id=\"fleet\">"), "{sections}");
    assert!(sections.contains("<b id=\"fleet-breaker\" class=\"good\">clear</b>"), "{sections}");
    assert!(sections.contains("gpu-01 (node.cordon "), "the token's holder: {sections}");
    assert!(daemon.stop().success(), "{}", daemon.log());
}
