//! The repository's independent SONiC-like gNMI target,
//! `tests/interop/sonic_target.py` (Python on PyPI's `gnmi-pb` stubs,
//! sharing no code with rocemend), as a child process: the switch
//! actuators are checked against a CONFIG_DB validator that was not written
//! with them. It validates a Set as a whole, with SONiC's YANG leafrefs
//! (`QUEUE` `wred_profile` → `WRED_PROFILE`).
//!
//! Needs `$ROCEMEND_PYTHON`, a Python with `tests/interop/requirements.txt`
//! (`.ci/run` sets it up); [`SonicTarget::start`] says why not otherwise, so
//! the test can skip with the reason.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the target may take to print its ports: Python with grpc starts
/// in about a second; twenty leave room for a loaded CI machine.
const START: Duration = Duration::from_secs(20);

/// The target; killed on drop.
pub struct SonicTarget {
    child: Child,
    /// The gNMI server, `127.0.0.1:PORT`.
    pub address: String,
    /// The HTTP control endpoint, `127.0.0.1:PORT`.
    pub control: String,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/sonic_target.py")
}

impl SonicTarget {
    /// Starts it on ports the OS picks, with `args`; `Err(reason)` when this
    /// machine lacks the Python parts.
    pub fn start(args: &[&str]) -> Result<SonicTarget, String> {
        let python = std::env::var("ROCEMEND_PYTHON")
            .map_err(|_| "ROCEMEND_PYTHON is not set (.ci/run sets it to its virtualenv)".to_string())?;
        let check = Command::new(&python)
            .args(["-c", "import grpc, gnmi_pb.gnmi_pb2, gnmi_pb.gnmi_pb2_grpc"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run ROCEMEND_PYTHON={python}: {e}"))?;
        if !check.status.success() {
            return Err(format!(
                "{python} cannot import the gNMI stubs (pip install -r tests/interop/requirements.txt)"
            ));
        }
        let mut child = Command::new(&python)
            .arg(script())
            .args(["--port", "0", "--control-port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {python} sonic_target.py: {e}"));
        // `gnmi HOST:PORT` and `control HOST:PORT` on stdout, read by a thread
        // so a silent target cannot block past START.
        let stdout = child.stdout.take().expect("stdout is piped");
        let (lines, ports) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let mut target = SonicTarget { child, address: String::new(), control: String::new() };
        let deadline = Instant::now() + START;
        while target.address.is_empty() || target.control.is_empty() {
            let line = ports
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|e| panic!("sonic_target.py printed no ports within {START:?}: {e}"));
            match line.split_once(' ') {
                Some(("gnmi", address)) => target.address = address.to_string(),
                Some(("control", address)) => target.control = address.to_string(),
                _ => panic!("unexpected line from sonic_target.py: {line:?}"),
            }
        }
        for address in [&target.address, &target.control] {
            while TcpStream::connect(address).is_err() {
                assert!(Instant::now() < deadline, "sonic_target.py does not accept on {address}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(target)
    }

    /// Its CONFIG_DB, `{table: {key: {field: value}}}`, from the control endpoint.
    pub fn config_db(&self) -> serde_json::Value {
        let mut stream = TcpStream::connect(&self.control).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(stream, "GET /state HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        let (head, body) = reply.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP reply: {reply:?}"));
        assert!(head.contains(" 200 "), "{head}");
        let state: serde_json::Value = serde_json::from_str(body).unwrap();
        state["config_db"].clone()
    }
}

impl Drop for SonicTarget {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
