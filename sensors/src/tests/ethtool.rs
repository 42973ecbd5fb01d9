//! The `ethtool` sensor against real veth interfaces in a network namespace
//! the test creates. Needs root and `ip` (iproute2); skips otherwise.

use std::process::Command;

use engine::{CounterSpec, HealthState, SampleKind, SensorContext, SeriesTable, Value};
use sensors::ethtool::{EthtoolConfig, EthtoolPoller};

/// Why the test cannot run here, if it cannot.
fn missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (network namespaces need CAP_SYS_ADMIN)".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(out) if out.status.success() => None,
        _ => Some("`ip` (iproute2) is missing".into()),
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// A network namespace with a veth pair, deleted on drop.
struct Netns(String);

impl Netns {
    fn new() -> Netns {
        Netns::new_named("veth")
    }

    /// Tests run in parallel: each gets its own namespace.
    fn new_named(tag: &str) -> Netns {
        let name = format!("rocemend-ethtool-{tag}-{}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let ns = Netns(name);
        ip(&["-n", &ns.0, "link", "add", "veth0", "type", "veth", "peer", "name", "veth1"]);
        for link in ["lo", "veth0", "veth1"] {
            ip(&["-n", &ns.0, "link", "set", link, "up"]);
        }
        ns
    }

    /// Runs `f` on a thread inside the namespace.
    fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/run/netns/{}", self.0);
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).unwrap();
            // SAFETY: setns on a valid namespace fd; it changes only this thread.
            let rc = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&file), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .unwrap()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

fn context(table: &SeriesTable) -> SensorContext {
    let (tx, _rx) = tokio::sync::mpsc::channel(1);
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    SensorContext::new(table.clone(), "ethtool", 10_000, tx, shutdown)
}

#[test]
fn veth_statistics_are_read_and_named() {
    if let Some(reason) = missing() {
        return test_peers::missing(reason);
    }
    let ns = Netns::new();
    let (readings, veth1_index, health) = ns.run(|| {
        let table = SeriesTable::default();
        let ctx = context(&table);
        let config = EthtoolConfig::default();
        let mut poller = EthtoolPoller::new(config.clone(), config.filter().unwrap(), ctx.clone());
        let samples = poller.poll(1);
        let reg = table.read();
        let readings: Vec<(String, Option<String>, SampleKind, Value)> = samples
            .iter()
            .map(|s| {
                let labels = reg.labels(s.series);
                (
                    reg.metric_name(s.series).to_string(),
                    labels.get("netdev").map(str::to_string),
                    reg.info(s.series).kind,
                    s.value,
                )
            })
            .collect();
        // SAFETY: a NUL-terminated literal.
        let index = unsafe { libc::if_nametoindex(c"veth1".as_ptr()) };
        (readings, index as u64, ctx.health().snapshot().pop().unwrap())
    });
    let of = |metric: &str, netdev: &str| {
        readings.iter().find(|(m, n, _, _)| m == metric && n.as_deref() == Some(netdev)).map(|(_, _, k, v)| (*k, *v))
    };
    // veth0's peer is veth1: its `peer_ifindex` statistic is veth1's index.
    assert_eq!(
        of("ethtool_peer_ifindex", "veth0"),
        Some((SampleKind::Counter(CounterSpec::U64), Value::Count(veth1_index)))
    );
    assert!(of("ethtool_rx_queue_0_xdp_packets", "veth0").is_some(), "{readings:?}");
    assert!(of("ethtool_rx_queue_0_xdp_packets", "veth1").is_some(), "{readings:?}");
    // Loopback is never listed automatically.
    assert!(readings.iter().all(|(_, n, _, _)| n.as_deref() != Some("lo")));
    assert!(readings.iter().all(|(m, _, _, _)| m.starts_with("ethtool_")));
    assert_eq!(health.state, HealthState::Up, "{health:?}");
    assert_eq!(health.detail, "2 interfaces");
}

#[test]
fn an_interface_without_statistics_is_reported_unavailable() {
    if let Some(reason) = missing() {
        return test_peers::missing(reason);
    }
    let ns = Netns::new_named("nostats");
    let health = ns.run(|| {
        let table = SeriesTable::default();
        let ctx = context(&table);
        let config = EthtoolConfig { interfaces: vec!["lo".into(), "nope0".into()], ..EthtoolConfig::default() };
        let mut poller = EthtoolPoller::new(config.clone(), config.filter().unwrap(), ctx.clone());
        assert!(poller.poll(1).is_empty());
        ctx.health().snapshot().pop().unwrap()
    });
    assert_eq!(health.state, HealthState::Unavailable, "{health:?}");
    assert!(health.detail.contains("lo: no ethtool statistics"), "{}", health.detail);
    assert!(health.detail.contains("nope0: no such interface"), "{}", health.detail);
    assert_eq!(health.errors.get("unsupported"), Some(&1));
    assert_eq!(health.errors.get("gone"), Some(&1));
}

#[test]
fn one_failing_interface_degrades_but_the_others_are_read() {
    if let Some(reason) = missing() {
        return test_peers::missing(reason);
    }
    let ns = Netns::new_named("degraded");
    let (n, health) = ns.run(|| {
        let table = SeriesTable::default();
        let ctx = context(&table);
        let config = EthtoolConfig {
            interfaces: vec!["veth0".into(), "lo".into()],
            include: vec!["^peer_ifindex$".into()],
            ..EthtoolConfig::default()
        };
        let mut poller = EthtoolPoller::new(config.clone(), config.filter().unwrap(), ctx.clone());
        let n = poller.poll(1).len();
        (n, ctx.health().snapshot().pop().unwrap())
    });
    assert_eq!(n, 1, "only veth0's peer_ifindex passes the filter");
    assert_eq!(health.state, HealthState::Degraded, "{health:?}");
    assert!(health.detail.starts_with("lo: no ethtool statistics"), "{}", health.detail);
}
