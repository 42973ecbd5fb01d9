//! A real etcd cluster for the game: `etcd` members on loopback ports,
//! each with its data directory under the game's, started as one new
//! cluster; who leads, read with `etcdctl endpoint status` (etcd's own
//! client: the game measures the daemons' coordinator with code that shares
//! nothing with it); and a member SIGKILLed on purpose.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Deserialize;

use super::procs::Proc;
use super::FleetDayError;

/// How long one `etcdctl` call may take: a member that does not answer
/// within it counts as not answering.
const ETCDCTL_TIMEOUT: Duration = Duration::from_secs(3);

/// Why the game cannot run here, if it cannot: `etcd` or `etcdctl` missing.
pub fn missing_part() -> Option<String> {
    // `etcd --version`, `etcdctl version`: each tool's own way to answer.
    for (tool, arg, package) in [("etcd", "--version", "etcd-server"), ("etcdctl", "version", "etcd-client")] {
        let found = Command::new(tool)
            .arg(arg)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Some(format!("no `{tool}` on this machine (Debian package {package}); .ci/run installs it"));
        }
    }
    None
}

/// `n` loopback ports free now, all different: every listener is held until the last one is
/// bound (a port picked and released at once can be handed out again by the next pick, and two
/// members on one port fail etcd's start: "initial cluster … has duplicate url"). Another
/// process may still take one before etcd binds it; etcd then fails at once and the game says
/// so.
fn free_ports(n: usize) -> Result<Vec<u16>, FleetDayError> {
    let held = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| FleetDayError::io("finding free loopback ports", e))?;
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| FleetDayError::io("finding free loopback ports", e))
}

/// One member.
#[derive(Debug)]
pub struct Member {
    /// Its name (`m0`, …).
    pub name: String,
    /// Its client URL.
    pub client_url: String,
    /// Running, until killed.
    proc: Option<Proc>,
}

/// Who leads, as the members say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership {
    /// The leading member's index.
    pub leader: usize,
    /// The raft term.
    pub term: u64,
}

/// An etcd cluster; every member is killed when it is dropped.
#[derive(Debug)]
pub struct Cluster {
    /// The members, in order.
    pub members: Vec<Member>,
    /// Member ids (raft's) by index, once read.
    ids: Vec<Option<u64>>,
}

/// What `etcdctl endpoint status -w json` prints per endpoint.
#[derive(Debug, Deserialize)]
struct EndpointStatus {
    #[serde(rename = "Endpoint")]
    endpoint: String,
    #[serde(rename = "Status")]
    status: Status,
}

#[derive(Debug, Deserialize)]
struct Status {
    header: Header,
    leader: u64,
    #[serde(rename = "raftTerm")]
    raft_term: u64,
}

#[derive(Debug, Deserialize)]
struct Header {
    member_id: u64,
}

impl Cluster {
    /// Starts `n` members under `dir` with the given raft timing (ms). Call
    /// [`Cluster::wait_ready`] next.
    pub fn start(dir: &Path, n: usize, heartbeat_ms: u64, election_ms: u64) -> Result<Cluster, FleetDayError> {
        let free = free_ports(2 * n)?;
        let ports: Vec<(u16, u16)> = free.chunks(2).map(|pair| (pair[0], pair[1])).collect();
        let initial = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut members = Vec::new();
        for (i, (client, peer)) in ports.iter().enumerate() {
            let name = format!("m{i}");
            let client_url = format!("http://127.0.0.1:{client}");
            let peer_url = format!("http://127.0.0.1:{peer}");
            let data: PathBuf = dir.join(&name);
            let mut cmd = Command::new("etcd");
            cmd.args(["--name", &name])
                .arg("--data-dir")
                .arg(&data)
                .args(["--listen-client-urls", &client_url, "--advertise-client-urls", &client_url])
                .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
                .args(["--initial-cluster", &initial, "--initial-cluster-state", "new"])
                .args(["--initial-cluster-token", "rocemend-fleet-day"])
                .args(["--heartbeat-interval", &heartbeat_ms.to_string()])
                .args(["--election-timeout", &election_ms.to_string()])
                .args(["--logger", "zap", "--log-level", "warn"]);
            let proc = Proc::spawn(&format!("etcd {name}"), cmd, &dir.join(format!("{name}.log")))?;
            members.push(Member { name, client_url, proc: Some(proc) });
        }
        Ok(Cluster { ids: vec![None; members.len()], members })
    }

    /// Every member's client URL: what the daemons are given.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// The client URLs of the members not killed.
    pub fn live_endpoints(&self) -> Vec<String> {
        self.members.iter().filter(|m| m.proc.is_some()).map(|m| m.client_url.clone()).collect()
    }

    /// Waits until every member agrees on a leader, at most `within`.
    pub async fn wait_ready(&mut self, within: Duration) -> Result<Leadership, FleetDayError> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            for m in &mut self.members {
                if let Some(status) = m.proc.as_mut().and_then(|p| p.exited()) {
                    let tail = m.proc.as_ref().map(|p| p.log_tail(20)).unwrap_or_default();
                    return Err(FleetDayError::Etcd(format!("member {} exited ({status}) at start:\n{tail}", m.name)));
                }
            }
            match self.leadership().await {
                Ok(Some(l)) if self.ids.iter().all(Option::is_some) => return Ok(l),
                Ok(_) | Err(_) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Ok(_) => return Err(FleetDayError::Etcd(format!("no leader elected within {within:?}"))),
                Err(e) => return Err(e),
            }
        }
    }

    /// Who leads, as the live members say: `None` while they do not agree
    /// on a live leader (an election in progress).
    pub async fn leadership(&mut self) -> Result<Option<Leadership>, FleetDayError> {
        let live = self.live_endpoints();
        let out = etcdctl(&live, &["endpoint", "status", "-w", "json"]).await?;
        // A member that does not answer is left out of the array (and the
        // exit status is 1): the others still say who leads.
        let statuses: Vec<EndpointStatus> = serde_json::from_slice(&out).unwrap_or_default();
        let mut leader = None;
        for s in &statuses {
            if let Some(i) = self.members.iter().position(|m| m.client_url == s.endpoint) {
                self.ids[i] = Some(s.status.header.member_id);
            }
            match leader {
                None => leader = Some((s.status.leader, s.status.raft_term)),
                Some(l) if l != (s.status.leader, s.status.raft_term) => return Ok(None),
                Some(_) => {}
            }
        }
        let Some((id, term)) = leader else { return Ok(None) };
        let index = self.ids.iter().position(|m| *m == Some(id));
        Ok(index.filter(|&i| self.members[i].proc.is_some()).map(|leader| Leadership { leader, term }))
    }

    /// SIGKILLs member `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut p) = self.members[i].proc.take() {
            p.kill();
        }
    }
}

/// Runs `etcdctl` against `endpoints`; its stdout, whatever its exit
/// status (it prints what it could read and fails for the rest).
pub async fn etcdctl(endpoints: &[String], args: &[&str]) -> Result<Vec<u8>, FleetDayError> {
    let mut cmd = tokio::process::Command::new("etcdctl");
    cmd.arg(format!("--endpoints={}", endpoints.join(",")))
        .args(["--dial-timeout=1s", "--command-timeout=2s"])
        .args(args)
        .env("ETCDCTL_API", "3")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(ETCDCTL_TIMEOUT, cmd.output())
        .await
        .map_err(|_| FleetDayError::Etcd(format!("etcdctl {}: no answer within {ETCDCTL_TIMEOUT:?}", args.join(" "))))?
        .map_err(|e| FleetDayError::io(format!("running etcdctl {}", args.join(" ")), e))?;
    Ok(out.stdout)
}
