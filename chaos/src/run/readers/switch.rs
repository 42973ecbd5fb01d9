//! A leaf's telemetry through the gNMI sensor's update mapping.

use std::collections::HashMap;

use engine::{Nanos, Sample, SensorContext, SeriesId, SeriesTable, Value};
use gnmi_proto::gnmi::Encoding;
use sensors::gnmi::mapping::{map_update, Reading, ReadingKind};
use sim::switch::{tree, Model};

use super::context;
use crate::ChaosError;

/// The gNMI sensor's subscription paths: its `sonic_pfc`, `sonic_queues`
/// and `sonic_pfcwd` presets and OpenConfig oper-status, what the standard
/// switch rules and the timeline read.
const PATHS: &[&str] = &[
    "COUNTERS_DB@/COUNTERS/Ethernet*",
    "COUNTERS_DB@/COUNTERS/Ethernet*/Queues",
    "COUNTERS_DB@/COUNTERS/Ethernet*/Pfcwd",
    "openconfig:/interfaces/interface[name=*]/state/oper-status",
];

/// A reading's series key: port, metric, queue, priority.
type ReadingKey = (compact_str::CompactString, &'static str, Option<u8>, Option<u8>);

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
                ReadingKind::Counter => Value::Count(r.count),
                ReadingKind::Gauge => Value::Real(r.level),
            };
            out.push(Sample { series: id, ts, value });
        }
    }
}
