//! The daemon's ordinary readers, pointed at the simulated fabric and
//! driven by the lockstep loop with the step's timestamp.
//!
//! - [`NodeReader`]: the `rdma_sysfs` sensor's [`Poller`] on one node's
//!   sysfs tree. A real node runs its own daemon, whose config sets the
//!   `node` label; here one engine watches every node, so each poller
//!   registers into a private table carrying its node's label and the
//!   reader re-registers each series (same metric, labels and kind) in the
//!   engine's table.
//! - [`SwitchReader`]: the gNMI sensor's paths on one leaf, read through
//!   the simulated switch's data tree and mapped by the gNMI sensor's own
//!   [`map_update`], labelled as the gNMI sensor labels them.
//! - [`PromReader`]: Prometheus text through the Prometheus sensor's
//!   [`parse`](sensors::prometheus::parse::parse).

use std::collections::HashMap;
use std::path::Path;

use engine::{Batch, Labels, Nanos, Sample, SampleKind, SensorContext, SeriesId, SeriesSpec, SeriesTable, Value};
use gnmi_proto::gnmi::Encoding;
use sensors::gnmi::mapping::{map_update, Kind, Reading};
use sensors::rdma_sysfs::{Poller, RdmaSysfsConfig};
use sim::fabric::Fabric;
use sim::switch::{tree, Model};
use tokio::sync::{mpsc, watch};

use crate::ChaosError;

/// Series a reader may register: a node has 8 NICs × 8 counters; a leaf a
/// few ports × (32 PFC + 48 queue + 32 watchdog + 4 interface) series.
const MAX_SERIES: usize = 10_000;

/// A context for a reader that is driven, not run: nothing is sent on its
/// channel and shutdown is never asked.
fn context(table: &SeriesTable, name: &str) -> SensorContext {
    let (tx, _rx) = mpsc::channel::<Batch>(1);
    let (_stop, shutdown) = watch::channel(false);
    SensorContext::new(table.clone(), name, MAX_SERIES, tx, shutdown)
}

/// One node's RDMA counters from its sysfs tree.
pub struct NodeReader {
    /// The node.
    pub node: String,
    poller: Poller,
    private: SeriesTable,
    engine: SensorContext,
    ids: HashMap<SeriesId, SeriesId>,
}

impl NodeReader {
    /// A reader of `node`'s tree, mounted at `root`, registering into `table`.
    pub fn new(node: &str, root: &Path, table: &SeriesTable) -> NodeReader {
        let private = SeriesTable::new(None, Labels::from_pairs([("node", node)]));
        let config =
            RdmaSysfsConfig { root: root.to_path_buf(), interval_ms: 100, rescan_every: 1_000, devices: Vec::new() };
        let name = format!("rdma_sysfs@{node}");
        let poller = Poller::new(&config, context(&private, &name));
        NodeReader { node: node.to_string(), poller, engine: context(table, &name), private, ids: HashMap::new() }
    }

    /// Reads every counter, stamped `ts`, into `out`.
    pub fn poll(&mut self, ts: Nanos, out: &mut Vec<Sample>) {
        for s in self.poller.poll(ts) {
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
            out.push(Sample { series: id, ts, value: s.value });
        }
    }
}

/// The gNMI sensor's subscription paths: its `sonic_pfc` and
/// `sonic_pfcwd` presets and OpenConfig oper-status, what the chaos rules
/// and the timeline need. (The queue counters and the OpenConfig error
/// counters would triple the cost of a step and feed no rule.)
const PATHS: &[&str] = &[
    "COUNTERS_DB@/COUNTERS/Ethernet*",
    "COUNTERS_DB@/COUNTERS/Ethernet*/Pfcwd",
    "openconfig:/interfaces/interface[name=*]/state/oper-status",
];

/// A reading's series key: port, metric, queue, priority.
type ReadingKey = (String, &'static str, Option<u8>, Option<u8>);

/// One leaf's telemetry through its gNMI data tree.
pub struct SwitchReader {
    /// The switch.
    pub name: String,
    paths: Vec<gnmi_proto::gnmi::Path>,
    ctx: SensorContext,
    series: HashMap<ReadingKey, SeriesId>,
    readings: Vec<Reading>,
}

impl SwitchReader {
    /// A reader of switch `name`, registering into `table`.
    pub fn new(name: &str, table: &SeriesTable) -> Result<SwitchReader, ChaosError> {
        let paths = PATHS
            .iter()
            .map(|p| gnmi_proto::path::parse_path(p).map_err(|e| ChaosError::Daemon(format!("gNMI path {p}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SwitchReader {
            name: name.to_string(),
            paths,
            ctx: context(table, &format!("gnmi@{name}")),
            series: HashMap::new(),
            readings: Vec::new(),
        })
    }

    /// Reads every path of `model`, stamped `ts`, into `out`.
    pub fn poll(&mut self, model: &Model, ts: Nanos, out: &mut Vec<Sample>) {
        self.readings.clear();
        {
            let state = model.read();
            for path in &self.paths {
                match tree::read(&state, path, Encoding::JsonIetf) {
                    Ok(updates) => {
                        for (p, v) in updates {
                            if let Err(error) = map_update(&p, &v, &mut self.readings) {
                                tracing::warn!(message = "Unmapped gNMI update.", switch = %self.name, %error);
                            }
                        }
                    }
                    Err(status) => {
                        tracing::warn!(message = "gNMI read failed.", switch = %self.name, error = %status.message())
                    }
                }
            }
        }
        for r in self.readings.drain(..) {
            let key = (r.port.clone(), r.metric, r.queue, r.prio);
            let id = match self.series.get(&key) {
                Some(id) => *id,
                None => {
                    // As the gNMI sensor labels them.
                    match self.ctx.register(&r.spec(&self.name)) {
                        Ok(id) => {
                            self.series.insert(key, id);
                            id
                        }
                        Err(error) => {
                            tracing::warn!(message = "Series refused.", switch = %self.name, %error);
                            continue;
                        }
                    }
                }
            };
            let value = match r.kind {
                Kind::Counter => Value::Count(r.count),
                Kind::Gauge => Value::Real(r.level),
            };
            out.push(Sample { series: id, ts, value });
        }
    }
}

/// The jobs' Prometheus text.
pub struct PromReader {
    ctx: SensorContext,
    series: HashMap<(String, Labels), SeriesId>,
}

impl PromReader {
    /// A reader registering into `table`.
    pub fn new(table: &SeriesTable) -> PromReader {
        PromReader { ctx: context(table, "prometheus@jobs"), series: HashMap::new() }
    }

    /// Parses the fabric's exposition text, stamped `ts`, into `out`.
    pub fn poll(&mut self, fabric: &Fabric, ts: Nanos, out: &mut Vec<Sample>) {
        let text = sim::fabric::prom::render(fabric);
        let parsed = match sensors::prometheus::parse::parse(&text) {
            Ok(p) => p,
            Err(error) => {
                tracing::warn!(message = "Exposition text refused.", %error);
                return;
            }
        };
        for p in parsed {
            if !p.value.is_finite() {
                continue;
            }
            let labels = Labels(p.labels.into_iter().collect());
            let key = (p.name, labels);
            let id = match self.series.get(&key) {
                Some(id) => *id,
                None => match self.ctx.register(&SeriesSpec {
                    metric: key.0.clone(),
                    labels: key.1.clone(),
                    kind: SampleKind::Gauge,
                }) {
                    Ok(id) => {
                        self.series.insert(key, id);
                        id
                    }
                    Err(_) => continue,
                },
            };
            out.push(Sample { series: id, ts, value: Value::Real(p.value) });
        }
    }
}
