//! The cost of one `rdma_sysfs` poll: 8 mlx5 devices × 2 ports × every
//! counter (52 files a port, 832 in all) in a temp tree. The target is
//! ≤ 1 ms per poll, i.e. ≤ 1 % of one core at the 100 ms default interval.

#[path = "../src/tests/rdma_sysfs/tree.rs"]
mod tree;

use criterion::{criterion_group, criterion_main, Criterion};
use engine::{SensorContext, SeriesTable};
use sensors::rdma_sysfs::{Poller, RdmaSysfsConfig};

fn poll(c: &mut Criterion) {
    let tree = tree::Tree::mlx5(8, 2);
    let (tx, _rx) = tokio::sync::mpsc::channel(1);
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let ctx = SensorContext::new(SeriesTable::default(), "bench", 100_000, tx, shutdown);
    // No periodic rescan inside the measurement: it is amortised over 50
    // polls in production and measured separately below.
    let config = RdmaSysfsConfig { root: tree.root().into(), rescan_every: u32::MAX, ..RdmaSysfsConfig::default() };
    let mut poller = Poller::new(&config, ctx.clone());
    poller.poll(0);
    assert_eq!(poller.open_files(), 8 * 2 * (tree::PMA.len() + tree::HW.len()));
    c.bench_function("rdma_sysfs poll 8 devices x 2 ports", |b| b.iter(|| poller.poll(1)));

    let rescan = RdmaSysfsConfig { rescan_every: 1, ..config };
    let mut poller = Poller::new(&rescan, ctx);
    c.bench_function("rdma_sysfs rescan + poll 8 devices x 2 ports", |b| b.iter(|| poller.poll(1)));
}

criterion_group!(benches, poll);
criterion_main!(benches);
