//! A real etcd (Debian's `etcd-server`) on loopback ports with a temporary
//! data directory, one member or several; and a daemon's dispatcher wired
//! to the etcd coordinator.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use engine::Proposal;
use fleet::settings::FleetSettings;
use fleet::{probe, EtcdCoordinator};

/// Whether the `etcd` binary is here; says why the test cannot run if not
/// (which fails it under `ROCEMEND_REQUIRE_PEERS=1`, at the caller's line).
#[track_caller]
pub fn etcd_available() -> bool {
    match Command::new("etcd").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(s) if s.success() => true,
        _ => {
            test_peers::missing("no `etcd` binary (Debian package etcd-server); .ci/run installs it");
            false
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free loopback port")
}

struct Member {
    name: String,
    client: u16,
    peer: u16,
    child: Option<Child>,
}

/// An etcd cluster of one or more members, killed when dropped.
pub struct Cluster {
    dir: tempfile::TempDir,
    members: Vec<Member>,
    initial: String,
}

impl Cluster {
    /// Starts `n` members and waits until the cluster answers.
    pub async fn start(n: usize) -> Cluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let members: Vec<Member> = (0..n)
            .map(|i| Member { name: format!("m{i}"), client: free_port(), peer: free_port(), child: None })
            .collect();
        let initial =
            members.iter().map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer)).collect::<Vec<_>>().join(",");
        let mut c = Cluster { dir, members, initial };
        for i in 0..n {
            c.spawn(i);
        }
        c.wait_ready().await;
        c
    }

    fn spawn(&mut self, i: usize) {
        let m = &self.members[i];
        let data: PathBuf = self.dir.path().join(&m.name);
        let log = std::fs::File::create(self.dir.path().join(format!("{}.log", m.name))).expect("etcd log file");
        let client_url = format!("http://127.0.0.1:{}", m.client);
        let peer_url = format!("http://127.0.0.1:{}", m.peer);
        let child = Command::new("etcd")
            .args(["--name", &m.name])
            .arg("--data-dir")
            .arg(&data)
            .args(["--listen-client-urls", &client_url, "--advertise-client-urls", &client_url])
            .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &self.initial, "--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", "rocemend-test"])
            // Fast elections: a killed leader is replaced within about a second.
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .args(["--logger", "zap", "--log-level", "warn"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting etcd");
        self.members[i].child = Some(child);
    }

    /// Client URLs of every member.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| format!("http://127.0.0.1:{}", m.client)).collect()
    }

    /// Kills member `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts member `i` again on its data directory and ports.
    pub async fn restart(&mut self, i: usize) {
        self.spawn(i);
    }

    /// The index of the member that leads the raft group.
    pub async fn leader(&self) -> usize {
        for (i, url) in self.endpoints().iter().enumerate() {
            if self.members[i].child.is_none() {
                continue;
            }
            if let Ok(mut c) = fleet::etcd_client::Client::connect([url.as_str()], None).await {
                if let Ok(s) = c.status().await {
                    if s.leader() == s.header().map(|h| h.member_id()).unwrap_or(0) {
                        return i;
                    }
                }
            }
        }
        panic!("no etcd member says it leads");
    }

    async fn wait_ready(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(mut c) = fleet::etcd_client::Client::connect(self.endpoints(), None).await {
                if c.put("/ready", "1", None).await.is_ok() {
                    return;
                }
            }
            if tokio::time::Instant::now() > deadline {
                let log = std::fs::read_to_string(self.dir.path().join("m0.log")).unwrap_or_default();
                panic!("etcd did not come up within 20s; its log:\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Live token keys of `budget` (under the default prefix).
    pub async fn tokens(&self, budget: &str) -> Vec<String> {
        let mut c = fleet::etcd_client::Client::connect(self.live_endpoints(), None).await.expect("etcd client");
        let prefix = format!("/rocemend/fleet/budget/{budget}/");
        let r =
            c.get(prefix, Some(fleet::etcd_client::GetOptions::new().with_prefix())).await.expect("reading the budget");
        r.kvs()
            .iter()
            .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
            .filter(|k| k.contains("/token/"))
            .collect()
    }

    fn live_endpoints(&self) -> Vec<String> {
        self.members.iter().filter(|m| m.child.is_some()).map(|m| format!("http://127.0.0.1:{}", m.client)).collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

/// Settings for daemon `identity` with one cordon budget of `max` per 10
/// minutes.
pub fn settings(endpoints: &[String], identity: &str, max: u32, ttl_secs: u64) -> FleetSettings {
    FleetSettings::new(&probe::cordon_budget(endpoints, identity, max, Some(Duration::from_secs(600)), ttl_secs))
        .expect("valid fleet settings")
}

/// A coordinator with a live session.
pub async fn coordinator(settings: FleetSettings) -> Arc<EtcdCoordinator> {
    let c = EtcdCoordinator::start(settings).await.expect("starting the coordinator");
    c.ready(Duration::from_secs(10)).await.expect("an etcd session");
    Arc::new(c)
}

pub use fleet::probe::{dispatcher, Counting};

/// The proposal every daemon under the failed spine makes: `kind` on its
/// `node`, now.
pub fn proposal(kind: &str, node: &str) -> Proposal {
    probe::proposal(kind, node, engine::time::wall_clock_now())
}
