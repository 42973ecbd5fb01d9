//! The `rdma_sysfs` sensor against a sysfs tree in the real mlx5 layout:
//! two devices × two ports, written by the test into a temp dir.

#[path = "rdma_sysfs/tree.rs"]
mod tree;

use engine::testing::SensorHarness as Harness;
use std::time::Duration;

use engine::counter::{increase, Increase};
use engine::{CounterSpec, HealthState, Sample, SampleKind, Value};
use sensors::rdma_sysfs::{Poller, RdmaSysfsConfig};
use tree::{Tree, HW, PMA};

fn harness() -> Harness {
    Harness::new("rdma", 10_000)
}

fn config(tree: &Tree, rescan_every: u32) -> RdmaSysfsConfig {
    RdmaSysfsConfig { root: tree.root().to_path_buf(), interval_ms: 10, rescan_every, devices: Vec::new() }
}

/// The value of `metric` for device `dev`, port `port` in `samples`.
fn value(h: &Harness, samples: &[Sample], metric: &str, dev: &str, port: &str) -> Option<u64> {
    let reg = h.table.read();
    samples.iter().find_map(|s| {
        let labels = reg.labels(s.series);
        let hit = reg.metric_name(s.series) == metric
            && labels.get("rdma_dev") == Some(dev)
            && labels.get("rdma_port") == Some(port);
        match (hit, s.value) {
            (true, Value::Count(n)) => Some(n),
            _ => None,
        }
    })
}

fn kind(h: &Harness, samples: &[Sample], metric: &str) -> SampleKind {
    let reg = h.table.read();
    let s = samples.iter().find(|s| reg.metric_name(s.series) == metric).unwrap_or_else(|| panic!("no {metric}"));
    reg.info(s.series).kind
}

fn health(h: &Harness) -> engine::SensorHealth {
    h.ctx.health().snapshot().into_iter().next().unwrap()
}

#[test]
fn every_counter_of_two_devices_by_two_ports_is_read_with_its_kind() {
    let tree = Tree::mlx5(2, 2);
    tree.set(0, 1, "counters", "port_xmit_data", 1000);
    tree.set(1, 2, "counters", "symbol_error", 7);
    tree.set(1, 1, "hw_counters", "out_of_sequence", 42);
    tree.set(0, 2, "hw_counters", "np_cnp_sent", 1 << 40);
    let h = harness();
    let mut poller = Poller::new(&config(&tree, 50), h.ctx.clone());
    let samples = poller.poll(1);

    // `lifespan` is a setting, not a counter.
    assert_eq!(samples.len(), 2 * 2 * (PMA.len() + HW.len()));
    assert_eq!(h.table.read().len(), samples.len());
    assert_eq!(value(&h, &samples, "rdma_port_xmit_data_bytes", "mlx5_0", "1"), Some(4000));
    assert_eq!(value(&h, &samples, "rdma_port_xmit_data_bytes", "mlx5_0", "2"), Some(0));
    assert_eq!(value(&h, &samples, "rdma_symbol_error", "mlx5_1", "2"), Some(7));
    assert_eq!(value(&h, &samples, "rdma_out_of_sequence", "mlx5_1", "1"), Some(42));
    assert_eq!(value(&h, &samples, "rdma_np_cnp_sent", "mlx5_0", "2"), Some(1 << 40));
    assert_eq!(value(&h, &samples, "rdma_lifespan", "mlx5_0", "1"), None);

    let bytes = SampleKind::Counter(CounterSpec::U64.bounded(engine::RateBound::Bytes));
    assert_eq!(kind(&h, &samples, "rdma_port_xmit_data_bytes"), bytes);
    assert_eq!(kind(&h, &samples, "rdma_port_rcv_data_bytes"), bytes);
    assert_eq!(kind(&h, &samples, "rdma_symbol_error"), SampleKind::Counter(CounterSpec::saturating(16)));
    assert_eq!(kind(&h, &samples, "rdma_link_downed"), SampleKind::Counter(CounterSpec::saturating(8)));
    assert_eq!(kind(&h, &samples, "rdma_port_xmit_wait"), SampleKind::Counter(CounterSpec::saturating(32)));
    assert_eq!(kind(&h, &samples, "rdma_out_of_sequence"), SampleKind::Counter(CounterSpec::U32_WRAP));
    assert_eq!(kind(&h, &samples, "rdma_rp_cnp_handled"), SampleKind::Counter(CounterSpec::U64));
    assert_eq!(kind(&h, &samples, "rdma_rx_icrc_encapsulated"), SampleKind::Counter(CounterSpec::U64));

    // Every series carries its device's netdev.
    let reg = h.table.read();
    let labels = reg.labels(samples[0].series);
    let dev = labels.get("rdma_dev").unwrap();
    let expected = if dev == "mlx5_0" { "ens0f0np0" } else { "ens1f0np0" };
    assert_eq!(labels.get("netdev"), Some(expected));
    drop(reg);
    let health = health(&h);
    assert_eq!(health.state, HealthState::Up);
    assert_eq!(health.reads, 1);
}

/// Reads `metric` of mlx5_0 port 1 across polls with `values` written to
/// `dir/name`, returning the increases the engine computes between them.
fn increases(dir: &str, name: &str, metric: &str, values: &[u64]) -> Vec<Increase> {
    let tree = Tree::mlx5(2, 2);
    let h = harness();
    let mut poller = Poller::new(&config(&tree, 50), h.ctx.clone());
    let mut readings = Vec::new();
    let mut spec = None;
    for (i, v) in values.iter().enumerate() {
        tree.set(0, 1, dir, name, *v);
        let samples = poller.poll(i as i64);
        readings.push(value(&h, &samples, metric, "mlx5_0", "1").unwrap());
        let SampleKind::Counter(s) = kind(&h, &samples, metric) else { panic!("{metric} is not a counter") };
        spec = Some(s);
    }
    readings.windows(2).map(|w| increase(spec.unwrap(), w[0], w[1], engine::SECOND)).collect()
}

#[test]
fn a_32_bit_q_counter_wrapping_is_a_small_exact_increase() {
    let got = increases("hw_counters", "out_of_sequence", "rdma_out_of_sequence", &[4_294_967_290, 5, 9]);
    assert_eq!(got, vec![Increase::Wrapped(11), Increase::Normal(4)]);
}

#[test]
fn a_16_bit_pma_counter_saturates_instead_of_wrapping() {
    let got = increases("counters", "symbol_error", "rdma_symbol_error", &[65_530, 65_535, 65_535]);
    assert_eq!(got, vec![Increase::Saturated(5), Increase::Saturated(0)]);
}

#[test]
fn a_counter_reset_is_not_a_huge_increase() {
    // port_xmit_data is in 4-byte words: 10^12 words, then a reset to 25.
    let got = increases("counters", "port_xmit_data", "rdma_port_xmit_data_bytes", &[1_000_000_000_000, 25, 30]);
    assert_eq!(got, vec![Increase::Reset, Increase::Normal(20)]);
}

#[test]
fn an_unplugged_device_is_reported_and_read_again_when_it_comes_back() {
    let tree = Tree::mlx5(2, 2);
    let h = harness();
    let mut poller = Poller::new(&config(&tree, 2), h.ctx.clone());
    let all = poller.poll(0);
    let per_device = all.len() / 2;
    let before = value(&h, &all, "rdma_port_xmit_wait", "mlx5_1", "2");
    assert_eq!(before, Some(0));

    tree.remove_device(1);
    // Poll 2 reads the files still open; poll 3 rescans and sees them gone.
    poller.poll(1);
    let after = poller.poll(2);
    assert_eq!(after.len(), per_device, "only mlx5_0 is read");
    assert_eq!(value(&h, &after, "rdma_port_xmit_wait", "mlx5_1", "2"), None);
    let health = health(&h);
    assert_eq!(health.state, HealthState::Degraded, "{health:?}");
    assert!(health.detail.contains(&format!("{per_device} counter files gone")), "{}", health.detail);
    assert_eq!(health.errors.get("gone"), Some(&1));
    assert!(health.last_error.as_deref().unwrap().contains("mlx5_1"), "{:?}", health.last_error);

    tree.add_device(1, 2);
    tree.set(1, 2, "counters", "port_xmit_wait", 77);
    poller.poll(3);
    let back = poller.poll(4);
    assert_eq!(back.len(), all.len());
    assert_eq!(value(&h, &back, "rdma_port_xmit_wait", "mlx5_1", "2"), Some(77));
    // Same series as before the unplug: the engine sees one history.
    let ids = |s: &[Sample]| s.iter().map(|s| s.series).collect::<std::collections::BTreeSet<_>>();
    assert_eq!(ids(&back), ids(&all));
    assert_eq!(health_state(&h), HealthState::Up);
}

fn health_state(h: &Harness) -> HealthState {
    health(h).state
}

#[test]
fn a_single_counter_file_removed_then_restored() {
    let tree = Tree::mlx5(2, 2);
    let h = harness();
    let mut poller = Poller::new(&config(&tree, 1), h.ctx.clone());
    let n = poller.poll(0).len();
    let path = tree.device_dir(0).join("ports/1/hw_counters/out_of_sequence");
    std::fs::remove_file(&path).unwrap();
    let samples = poller.poll(1);
    assert_eq!(samples.len(), n - 1);
    assert_eq!(health_state(&h), HealthState::Degraded);
    assert!(health(&h).last_error.unwrap().contains("out_of_sequence"));
    std::fs::write(&path, "9\n").unwrap();
    let samples = poller.poll(2);
    assert_eq!(samples.len(), n);
    assert_eq!(value(&h, &samples, "rdma_out_of_sequence", "mlx5_0", "1"), Some(9));
    assert_eq!(health_state(&h), HealthState::Up);
}

#[test]
fn no_rdma_devices_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let h = harness();
    let config = RdmaSysfsConfig { root: dir.path().into(), ..RdmaSysfsConfig::default() };
    let mut poller = Poller::new(&config, h.ctx.clone());
    assert!(poller.poll(0).is_empty());
    let health = health(&h);
    assert_eq!(health.state, HealthState::Unavailable);
    assert!(health.detail.starts_with("no RDMA devices under "), "{}", health.detail);
}

#[test]
fn a_device_filter_reads_only_the_named_devices() {
    let tree = Tree::mlx5(2, 2);
    let h = harness();
    let config = RdmaSysfsConfig { devices: vec!["mlx5_1".into()], ..config(&tree, 50) };
    let samples = Poller::new(&config, h.ctx.clone()).poll(0);
    assert_eq!(samples.len(), 2 * (PMA.len() + HW.len()));
    assert_eq!(value(&h, &samples, "rdma_symbol_error", "mlx5_0", "1"), None);
    assert_eq!(value(&h, &samples, "rdma_symbol_error", "mlx5_1", "1"), Some(0));
}

#[test]
fn garbage_in_a_counter_file_is_skipped_not_fatal() {
    let tree = Tree::mlx5(1, 1);
    std::fs::write(tree.device_dir(0).join("ports/1/hw_counters/out_of_buffer"), "N/A\n").unwrap();
    let h = harness();
    let samples = Poller::new(&config(&tree, 50), h.ctx.clone()).poll(0);
    assert_eq!(samples.len(), PMA.len() + HW.len() - 1);
    assert_eq!(value(&h, &samples, "rdma_out_of_buffer", "mlx5_0", "1"), None);
}

#[tokio::test(start_paused = true)]
async fn the_sensor_built_from_config_polls_at_its_interval_until_shutdown() {
    let tree = Tree::mlx5(2, 2);
    let mut settings = toml::Table::new();
    settings.insert("root".into(), tree.root().display().to_string().into());
    settings.insert("interval_ms".into(), 10.into());
    let sensor = sensors::build("rdma_sysfs", "rdma", settings).unwrap();
    let mut h = harness();
    let run = tokio::spawn(sensor.run(h.ctx.clone()));
    let first = h.rx.recv().await.unwrap();
    tree.set(0, 1, "hw_counters", "np_cnp_sent", 12);
    let start = tokio::time::Instant::now();
    let second = h.rx.recv().await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(10));
    assert_eq!(first.samples.len(), 2 * 2 * (PMA.len() + HW.len()));
    assert_eq!(value(&h, &second.samples, "rdma_np_cnp_sent", "mlx5_0", "1"), Some(12));
    h.stop.send(true).unwrap();
    run.await.unwrap().unwrap();
}

#[test]
fn an_interval_below_the_minimum_is_refused_by_build() {
    let settings: toml::Table = toml::from_str("interval_ms = 1").unwrap();
    let err = sensors::build("rdma_sysfs", "r", settings).err().unwrap().to_string();
    assert!(err.contains("interval_ms 1 is below the minimum of 10 ms"), "{err}");
}
