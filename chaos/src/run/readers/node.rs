//! One simulated node's host sensors.
//!
//! A real node runs its own daemon, whose config sets the `node` label;
//! here one engine watches every node, so the node's sensors register into
//! a private table carrying its node's label, and the reader re-registers
//! each series (same metric, labels and kind) in the engine's table.
//!
//! Each sensor is fed where it meets the host:
//! - `rdma_sysfs`: its [`Poller`] reads the node's sysfs tree, which the
//!   fabric rewrites every step;
//! - `ethtool`: its [`EthtoolPoller`] asks a [`SimDriver`] for the names
//!   and values the `SIOCETHTOOL` ioctls would return;
//! - `netlink_link`: its [`LinkTracker`] takes the `RTM_NEWLINK` message
//!   the kernel sends when a carrier changes (and a heartbeat each step);
//! - `nvml`: its [`SeriesCache`] turns the XID events NVML delivered into
//!   `gpu_xid` samples.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use engine::{Labels, Nanos, Sample, SensorContext, SeriesId, SeriesSpec, SeriesTable};
use rtnetlink::packet_route::link::{LinkAttribute, LinkMessage, State};
use sensors::ethtool::{EthtoolConfig, EthtoolPoller, StatsSource};
use sensors::netlink_link::{LinkReading, LinkTracker, NameFilter};
use sensors::nvml::reading::SeriesCache;
use sensors::rdma_sysfs::{Poller, RdmaSysfsConfig};
use sim::fabric::{Fabric, NetdevCounters, Nic};

use super::context;

/// The ifindex of a node's first NIC (1 is `lo`).
const FIRST_IFINDEX: u32 = 2;

/// The statistics a simulated mlx5 driver reports, per netdev: the
/// values of the last step, shared with the reader that updates them.
#[derive(Debug, Default)]
struct DriverState {
    names: Vec<String>,
    values: BTreeMap<String, Vec<u64>>,
}

/// The ethtool ioctls of one simulated node, answered from the fabric's
/// NIC counters.
#[derive(Debug, Clone, Default)]
pub struct SimDriver(Arc<Mutex<DriverState>>);

impl SimDriver {
    fn state(&self) -> std::sync::MutexGuard<'_, DriverState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the counters of the node's `nics` as the driver's values.
    fn update<'a>(&self, nics: impl Iterator<Item = &'a Nic>) {
        let mut state = self.state();
        if state.names.is_empty() {
            state.names = NetdevCounters::stat_names();
        }
        for nic in nics {
            nic.netdev_counters.stat_values(state.values.entry(nic.netdev.clone()).or_default());
        }
    }

    fn values(&self, netdev: &str) -> io::Result<Vec<u64>> {
        self.state().values.get(netdev).cloned().ok_or_else(|| io::Error::from_raw_os_error(ENODEV))
    }
}

/// Linux's `ENODEV`, the ioctls' error for an interface that does not exist.
const ENODEV: i32 = 19;

impl StatsSource for SimDriver {
    fn interfaces(&self) -> io::Result<Vec<String>> {
        Ok(self.state().values.keys().cloned().collect())
    }

    fn stats_count(&self, netdev: &str) -> io::Result<usize> {
        Ok(self.values(netdev)?.len())
    }

    fn stat_names(&self, netdev: &str, count: usize) -> io::Result<Vec<String>> {
        self.values(netdev)?;
        Ok(self.state().names.iter().take(count).cloned().collect())
    }

    fn stat_values(&self, netdev: &str, count: usize, values: &mut Vec<u64>) -> io::Result<()> {
        let now = self.values(netdev)?;
        values.clear();
        values.extend(now.iter().take(count));
        Ok(())
    }
}

/// The `RTM_NEWLINK` the kernel sends for `nic` at ifindex `index`.
fn link_message(nic: &Nic, index: u32) -> LinkMessage {
    let c = &nic.netdev_counters;
    let mut message = LinkMessage::default();
    message.header.index = index;
    message.attributes = vec![
        LinkAttribute::IfName(nic.netdev.clone()),
        LinkAttribute::OperState(if c.carrier_on { State::Up } else { State::Down }),
        LinkAttribute::Carrier(c.carrier_on as u8),
        LinkAttribute::CarrierUpCount(c.carrier_up),
        LinkAttribute::CarrierDownCount(c.carrier_down),
    ];
    message
}

/// One node's host sensors on the simulated fabric.
pub struct NodeReader {
    /// The node.
    pub node: String,
    private: SeriesTable,
    ctx: SensorContext,
    engine: SensorContext,
    ids: HashMap<SeriesId, SeriesId>,
    rdma: Poller,
    ethtool: EthtoolPoller,
    driver: SimDriver,
    links: LinkTracker,
    /// Per NIC of the node (by ifindex), the carrier counters last sent.
    link_sent: BTreeMap<u32, (u32, u32)>,
    gpus: SeriesCache,
    private_samples: Vec<Sample>,
}

impl NodeReader {
    /// The sensors of `node`, whose sysfs tree is mounted at `root`,
    /// registering into `table`.
    pub fn new(node: &str, root: &Path, table: &SeriesTable) -> NodeReader {
        let private = SeriesTable::new(None, Labels::from_pairs([("node", node)]));
        let ctx = context(&private, &format!("host@{node}"));
        let rdma_config =
            RdmaSysfsConfig { root: root.to_path_buf(), interval_ms: 100, rescan_every: 1_000, devices: Vec::new() };
        let rdma = Poller::new(&rdma_config, context(&private, &format!("rdma_sysfs@{node}")));
        let driver = SimDriver::default();
        let ethtool_config = EthtoolConfig { interval_ms: 100, rescan_every: 1_000, ..EthtoolConfig::default() };
        let filter = ethtool_config.filter().expect("the default ethtool filter compiles");
        let ethtool = EthtoolPoller::with_source(
            ethtool_config,
            filter,
            context(&private, &format!("ethtool@{node}")),
            Box::new(driver.clone()),
        );
        let links = LinkTracker::new(NameFilter::default());
        NodeReader {
            node: node.to_string(),
            engine: context(table, &format!("host@{node}")),
            ctx,
            private,
            ids: HashMap::new(),
            rdma,
            ethtool,
            driver,
            links,
            link_sent: BTreeMap::new(),
            gpus: SeriesCache::default(),
            private_samples: Vec::new(),
        }
    }

    /// Reads every sensor of the node, stamped `ts`, into `out`; takes the
    /// node's XID events out of `fabric`.
    pub fn poll(&mut self, fabric: &mut Fabric, ts: Nanos, out: &mut Vec<Sample>) {
        let mut samples = std::mem::take(&mut self.private_samples);
        samples.clear();
        samples.extend(self.rdma.poll(ts));
        let nics = || fabric.nics.iter().filter(|n| n.node == self.node);
        self.driver.update(nics());
        samples.extend(self.ethtool.poll(ts));
        self.read_links(fabric, ts, &mut samples);
        self.read_xids(fabric, ts, &mut samples);
        self.forward(&samples, out);
        self.private_samples = samples;
    }

    /// An `RTM_NEWLINK` for each NIC whose carrier counters moved (all of
    /// them at the first poll, as the sensor's initial dump), then the
    /// sensor's heartbeat.
    fn read_links(&mut self, fabric: &Fabric, ts: Nanos, out: &mut Vec<Sample>) {
        let nics = fabric.nics.iter().filter(|n| n.node == self.node);
        for (index, nic) in (FIRST_IFINDEX..).zip(nics) {
            let c = &nic.netdev_counters;
            let counts = (c.carrier_up, c.carrier_down);
            if self.link_sent.get(&index) == Some(&counts) {
                continue;
            }
            let reading = LinkReading::from_message(&link_message(nic, index));
            match self.links.observe(&self.ctx, &reading, ts, out) {
                Ok(()) => {
                    self.link_sent.insert(index, counts);
                }
                Err(error) => tracing::warn!(message = "Link message refused.", node = %self.node, %error),
            }
        }
        self.links.heartbeat(ts, out);
    }

    /// The node's XID events, as NVML's event set delivers them.
    fn read_xids(&mut self, fabric: &mut Fabric, ts: Nanos, out: &mut Vec<Sample>) {
        let node = self.node.as_str();
        let (mine, others): (Vec<_>, Vec<_>) = fabric.xid_events.drain(..).partition(|e| e.node == node);
        fabric.xid_events = others;
        for event in mine {
            match self.gpus.xid(&self.ctx, event.gpu, &event.pci_bus_id, Some(event.xid), ts) {
                Ok(sample) => out.push(sample),
                Err(error) => tracing::warn!(message = "XID refused.", node = %self.node, %error),
            }
        }
    }

    /// Re-registers the private series in the engine's table (once each)
    /// and appends the samples under the engine's ids.
    fn forward(&mut self, samples: &[Sample], out: &mut Vec<Sample>) {
        for s in samples {
            let id = match self.ids.get(&s.series) {
                Some(id) => *id,
                None => {
                    let spec = {
                        let reg = self.private.read();
                        let info = reg.info(s.series);
                        SeriesSpec {
                            metric: reg.metric_name(s.series).to_string(),
                            labels: reg.labels(s.series),
                            kind: info.kind,
                        }
                    };
                    match self.engine.register(&spec) {
                        Ok(id) => {
                            self.ids.insert(s.series, id);
                            id
                        }
                        Err(error) => {
                            tracing::warn!(message = "Series refused.", node = %self.node, %error);
                            continue;
                        }
                    }
                }
            };
            out.push(Sample { series: id, ts: s.ts, value: s.value });
        }
    }
}
