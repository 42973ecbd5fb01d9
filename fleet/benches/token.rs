//! Taking a fleet budget token on loopback etcd: the cost a fleet-scoped
//! action pays before its actuator runs (target: p99 at most 20 ms).
//!
//! Starts a one-member etcd with a temporary data directory; skips with a
//! printed reason when the `etcd` binary is missing. Each iteration takes a
//! token (a read of the budget cell, then one transaction) and gives it
//! back, so the budget never fills. Besides criterion's estimate it prints
//! p50/p99/max over 2000 takes, the figure the target is about.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use engine::contracts::{Admission, Coordinator, Release, TokenRequest};
use engine::policy::Impact;
use fleet::settings::FleetSettings;
use fleet::EtcdCoordinator;

struct Etcd {
    child: Child,
    _dir: tempfile::TempDir,
    url: String,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn etcd() -> Option<Etcd> {
    if Command::new("etcd").arg("--version").stdout(Stdio::null()).status().map(|s| !s.success()).unwrap_or(true) {
        eprintln!("SKIPPED fleet token benchmark: no `etcd` binary (Debian package etcd-server)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let (client, peer) = (port(), port());
    let url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let child = Command::new("etcd")
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--listen-client-urls", &url, "--advertise-client-urls", &url])
        .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", &format!("default={peer_url}"), "--logger", "zap", "--log-level", "error"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    Some(Etcd { child, _dir: dir, url })
}

fn settings(url: &str) -> FleetSettings {
    FleetSettings::new(&fleet::probe::cordon_budget(&[url.to_string()], "bench", 3, Some(Duration::from_secs(600)), 10))
        .unwrap()
}

async fn take_and_give_back(c: &EtcdCoordinator, i: u64) -> Duration {
    let request =
        TokenRequest { decision: format!("d{i}"), kind: "node.cordon".into(), impact: Impact::default(), at: 0 };
    let started = Instant::now();
    let token = match c.acquire(&request).await {
        Admission::Granted(t) => t,
        other => panic!("not granted: {other:?}"),
    };
    let took = started.elapsed();
    c.release(&token, Release::NotDone).await.unwrap();
    took
}

fn bench(cr: &mut Criterion) {
    let Some(etcd) = etcd() else { return };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let c = rt.block_on(async {
        let c = EtcdCoordinator::start(settings(&etcd.url)).await.unwrap();
        c.ready(Duration::from_secs(20)).await.unwrap();
        Arc::new(c)
    });
    let mut samples: Vec<Duration> = rt.block_on(async {
        let mut out = Vec::new();
        for i in 0..2000 {
            out.push(take_and_give_back(&c, i).await);
        }
        out
    });
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    println!(
        "fleet token take on loopback etcd, {} takes: p50 {:?}, p99 {:?}, max {:?}",
        samples.len(),
        at(0.50),
        at(0.99),
        samples[samples.len() - 1]
    );
    let mut i = 1_000_000u64;
    cr.bench_function("fleet_token_take_loopback_etcd", |b| {
        b.to_async(&rt).iter(|| {
            i += 1;
            let c = c.clone();
            async move { take_and_give_back(&c, i).await }
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
