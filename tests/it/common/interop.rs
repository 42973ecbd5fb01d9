//! An independent SONiC-like gNMI target for interop tests:
//! `tests/interop/sonic_target.py`, a Python process on the PyPI `gnmi-pb`
//! stubs that shares no code with rocemend. [`SonicTarget::start`] runs it on
//! free ports; its HTTP control endpoint starts and stops PFC storms, flaps
//! links, simulates a switch restart and shows CONFIG_DB with every Set the
//! target applied. Its flags (`--styles`, `--sonic-db-instance`,
//! `--error-codes`, …) are described in the script's module doc.
//!
//! ```ignore
//! let target = match SonicTarget::start(&["--styles", "sonic-db-origin"]) {
//!     Ok(target) => target,
//!     Err(reason) => return test_peers::missing(reason),
//! };
//! target.storm("Ethernet4", 3, true);
//! ```

// Each test binary uses a different part of `common`, so some of these
// helpers are unused in any one of them.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::repo;

/// How long the target may take to print its ports and accept connections.
/// Python with grpc starts in about a second; twenty leave room for a
/// loaded CI machine without letting a hung interpreter hang the suite.
const START: Duration = Duration::from_secs(20);

/// The longest one control request may take. A restart stops and reopens
/// the gRPC server, plus the `down` time the test asked for (at most 60 s,
/// which the target enforces).
const CONTROL: Duration = Duration::from_secs(90);

/// The modules the target imports; without them it cannot start.
const IMPORTS: &str = "import grpc, gnmi_pb.gnmi_pb2, gnmi_pb.gnmi_pb2_grpc";

/// `tests/interop/sonic_target.py` as a child process. Dropping it kills
/// the process, so a failed test leaves no target behind.
pub struct SonicTarget {
    child: Child,
    /// Where the target's stderr goes: every Set it applied or refused.
    log: tempfile::NamedTempFile,
    /// The gNMI server, `127.0.0.1:PORT`.
    pub address: String,
    /// The HTTP control endpoint, `127.0.0.1:PORT`.
    pub control: String,
}

impl SonicTarget {
    /// Starts the target with `--port 0 --control-port 0` and `args`, and
    /// waits until both servers accept connections.
    ///
    /// `Err(reason)` when this machine lacks the parts, so the calling test
    /// can print the reason and skip: `$ROCEMEND_PYTHON` is unset (`.ci/run`
    /// sets it to its virtualenv), or that Python cannot import the stubs
    /// (`pip install -r tests/interop/requirements.txt`). A target that has
    /// its parts and still fails to start fails the test, with its log.
    pub fn start(args: &[&str]) -> Result<SonicTarget, String> {
        let python = std::env::var("ROCEMEND_PYTHON").map_err(|_| {
            "ROCEMEND_PYTHON is not set; it names the Python with tests/interop/requirements.txt \
             installed (.ci/run sets it to its virtualenv)"
                .to_string()
        })?;
        let check = Command::new(&python)
            .args(["-c", IMPORTS])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run ROCEMEND_PYTHON={python}: {e}"))?;
        if !check.status.success() {
            let error = String::from_utf8_lossy(&check.stderr);
            return Err(format!(
                "{python} cannot import the gNMI stubs (pip install -r tests/interop/requirements.txt): {}",
                error.trim().lines().last().unwrap_or("no error text")
            ));
        }

        let log = tempfile::NamedTempFile::new().expect("a temp file for the target's log");
        let stderr = log.reopen().expect("the target's log reopens");
        let mut child = Command::new(&python)
            .arg(repo("tests/interop/sonic_target.py"))
            .args(["--port", "0", "--control-port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {python} tests/interop/sonic_target.py: {e}"));
        // The ports come on stdout as `gnmi HOST:PORT` and `control HOST:PORT`.
        // A thread reads them so a silent target cannot block the test past
        // START, and keeps draining the pipe afterwards.
        let stdout = child.stdout.take().expect("stdout is piped");
        let (lines, ports) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut target = SonicTarget { child, log, address: String::new(), control: String::new() };
        let deadline = Instant::now() + START;
        while target.address.is_empty() || target.control.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match ports.recv_timeout(left) {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("sonic_target.py printed no ports within {START:?}\n--- its log ---\n{}", target.log())
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // The pipe closes as the process exits; give it a moment to be reaped.
                    std::thread::sleep(Duration::from_millis(100));
                    let status = match target.child.try_wait() {
                        Ok(Some(status)) => status.to_string(),
                        _ => "its stdout closed".to_string(),
                    };
                    panic!(
                        "sonic_target.py ended ({status}) before printing its ports\n--- its log ---\n{}",
                        target.log()
                    )
                }
            };
            match line.split_once(' ') {
                Some(("gnmi", address)) => target.address = address.to_string(),
                Some(("control", address)) => target.control = address.to_string(),
                _ => panic!("unexpected line from sonic_target.py: {line:?}\n--- its log ---\n{}", target.log()),
            }
        }
        for address in [target.address.clone(), target.control.clone()] {
            target.wait_accepting(&address, deadline);
        }
        Ok(target)
    }

    fn wait_accepting(&mut self, address: &str, deadline: Instant) {
        while TcpStream::connect(address).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("sonic_target.py exited ({status})\n--- its log ---\n{}", self.log());
            }
            if Instant::now() >= deadline {
                panic!("sonic_target.py does not accept on {address}\n--- its log ---\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the target has logged: every Set applied or refused, restarts.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_else(|e| format!("<cannot read the log: {e}>"))
    }

    /// Starts (`on`) or stops a PFC storm on `port`'s priority `prio`.
    pub fn storm(&self, port: &str, prio: u8, on: bool) {
        self.post("/storm", serde_json::json!({ "port": port, "prio": prio, "on": on }));
    }

    /// Takes `port`'s link up or down (APPL_DB `PORT_TABLE|port.oper_status`).
    pub fn link(&self, port: &str, up: bool) {
        self.post("/link", serde_json::json!({ "port": port, "up": up }));
    }

    /// A switch reboot without `config save`: CONFIG_DB back to the startup
    /// config, counters from zero, every gRPC stream ended. Returns when the
    /// gNMI server accepts again.
    pub fn restart(&self) {
        self.restart_with(Duration::ZERO, false);
    }

    /// [`restart`](Self::restart) with the gNMI port closed for `down`, and
    /// the counters kept if `keep_counters`.
    pub fn restart_with(&self, down: Duration, keep_counters: bool) {
        let down_ms = u64::try_from(down.as_millis()).unwrap_or(u64::MAX);
        self.post("/restart", serde_json::json!({ "down_ms": down_ms, "keep_counters": keep_counters }));
    }

    /// `config save`: the running CONFIG_DB becomes the one a restart restores.
    pub fn save(&self) {
        self.post("/save", serde_json::json!({}));
    }

    /// `{"config_db", "appl_db", "sets", "refused", "storms", "restarts"}`:
    /// CONFIG_DB as `{table: {key: {field: value}}}`, and every Set applied
    /// as `{"time_ns", "style", "ops": [{"op", "path", "value"}]}`.
    pub fn state(&self) -> serde_json::Value {
        self.request("GET", "/state", None)
    }

    fn post(&self, path: &str, body: serde_json::Value) -> serde_json::Value {
        self.request("POST", path, Some(&body))
    }

    /// One HTTP/1.1 request with `Connection: close`, the reply read to its
    /// end; fails the test, with the target's log, unless it is 200 and JSON.
    fn request(&self, method: &str, path: &str, body: Option<&serde_json::Value>) -> serde_json::Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.control,
            body.len()
        );
        let mut stream =
            TcpStream::connect(&self.control).unwrap_or_else(|e| self.fail(method, path, &format!("connect: {e}")));
        stream
            .set_read_timeout(Some(CONTROL))
            .unwrap_or_else(|e| self.fail(method, path, &format!("read timeout: {e}")));
        stream
            .set_write_timeout(Some(CONTROL))
            .unwrap_or_else(|e| self.fail(method, path, &format!("write timeout: {e}")));
        stream.write_all(request.as_bytes()).unwrap_or_else(|e| self.fail(method, path, &format!("send: {e}")));
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).unwrap_or_else(|e| self.fail(method, path, &format!("read: {e}")));
        let reply = String::from_utf8_lossy(&reply);
        let Some((head, content)) = reply.split_once("\r\n\r\n") else {
            self.fail(method, path, &format!("no HTTP reply: {reply:?}"))
        };
        let status = head.lines().next().and_then(|l| l.split_whitespace().nth(1)).unwrap_or("");
        if status != "200" {
            self.fail(method, path, &format!("HTTP {status}: {content}"));
        }
        serde_json::from_str(content).unwrap_or_else(|e| self.fail(method, path, &format!("not JSON ({e}): {content}")))
    }

    fn fail(&self, method: &str, path: &str, what: &str) -> ! {
        panic!("{method} http://{}{path}: {what}\n--- target log ---\n{}", self.control, self.log())
    }
}

impl Drop for SonicTarget {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
