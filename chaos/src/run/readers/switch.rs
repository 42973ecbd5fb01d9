//! A leaf's telemetry as the switch sensors read it: the simulated switch's COUNTERS_DB and
//! APPL_DB, named through its CONFIG_DB and name maps as the `sonic_redis` sensor names them
//! (`sensors::sonic_redis::read`), read without a network in the lockstep runner.

use std::collections::{BTreeMap, HashMap};

use engine::{Nanos, Sample, SensorContext, SeriesId, SeriesTable};
use sensors::sonic_redis::read::{map_poll, PollKeys, PORT_TABLE};
use sensors::switch_series::view::PauseUnit;
use sensors::switch_series::{SwitchView, ViewTables};
use sim::switch::Model;
use sonic::client::Entry;
use sonic::gnmi_front::MemoryStore;
use sonic::layout::db::{APPL_DB, CONFIG_DB, COUNTERS_DB};
use sonic::names::queues::{PORT_NAME_MAP, QUEUE_INDEX_MAP, QUEUE_NAME_MAP, QUEUE_PORT_MAP, QUEUE_TYPE_MAP};
use sonic::NameMaps;

use super::context;
use crate::ChaosError;

/// A reading's series key: port, metric, queue, priority.
type ReadingKey = (compact_str::CompactString, &'static str, Option<u8>, Option<u8>);

/// One leaf's telemetry through its databases.
pub struct SwitchReader {
    /// The switch.
    pub name: String,
    ctx: SensorContext,
    series: HashMap<ReadingKey, SeriesId>,
    /// How the switch names its readings, and the keys one poll reads: built at the first poll
    /// (the switch has booted by then), as the sensor builds it at each session.
    view: Option<(SwitchView, PollKeys)>,
}

impl SwitchReader {
    /// A reader of switch `name`, registering into `table`.
    pub fn new(name: &str, table: &SeriesTable) -> Result<SwitchReader, ChaosError> {
        Ok(SwitchReader {
            name: name.to_string(),
            ctx: context(table, &format!("gnmi@{name}")),
            series: HashMap::new(),
            view: None,
        })
    }

    /// Reads `model`'s counters and port states, stamped `ts`, into `out`.
    pub fn poll(&mut self, model: &Model, ts: Nanos, out: &mut Vec<Sample>) {
        let store = model.store();
        if self.view.is_none() {
            match view_of(store) {
                Ok(view) => self.view = Some(view),
                Err(error) => {
                    tracing::warn!(message = "Switch not readable yet.", switch = %self.name, %error);
                    return;
                }
            }
        }
        let Some((view, keys)) = &self.view else { return };
        let counters: Vec<Option<Entry>> = keys.counter_keys().iter().map(|k| store.get(COUNTERS_DB, k)).collect();
        let status: Vec<Option<Entry>> = keys.status.iter().map(|(_, k)| store.get(APPL_DB, k)).collect();
        let mapped = map_poll(view, keys, &counters, &status);
        for (key, error) in &mapped.errors {
            tracing::warn!(message = "Field not read.", switch = %self.name, key, error = ?error);
        }
        for r in mapped.readings {
            let key = (r.port.clone(), r.metric, r.queue, r.prio);
            let id = match self.series.get(&key) {
                Some(id) => *id,
                None => match self.ctx.register(&r.spec(&self.name)) {
                    Ok(id) => {
                        self.series.insert(key, id);
                        id
                    }
                    Err(error) => {
                        tracing::warn!(message = "Series refused.", switch = %self.name, %error);
                        continue;
                    }
                },
            };
            out.push(Sample { series: id, ts, value: r.value() });
        }
    }
}

/// The view of the switch in `store` and the keys a poll reads.
fn view_of(store: &MemoryStore) -> Result<(SwitchView, PollKeys), String> {
    let table = |name: &str| -> BTreeMap<String, Entry> {
        let prefix = format!("{name}|");
        (store.entries_with_prefix(CONFIG_DB, &prefix).into_iter())
            .map(|(key, entry)| (key[prefix.len()..].to_string(), entry))
            .collect()
    };
    let map = |key: &str| store.get(COUNTERS_DB, key).unwrap_or_default().into_iter().collect();
    let name_maps = NameMaps {
        ports: map(PORT_NAME_MAP),
        queues: map(QUEUE_NAME_MAP),
        queue_index: map(QUEUE_INDEX_MAP),
        queue_port: map(QUEUE_PORT_MAP),
        queue_type: map(QUEUE_TYPE_MAP),
    };
    if name_maps.ports.is_empty() {
        return Err("COUNTERS_PORT_NAME_MAP is empty: orchagent has not written it yet".into());
    }
    let port_counters =
        name_maps.ports.values().next().and_then(|oid| store.get(COUNTERS_DB, &format!("COUNTERS:{oid}")));
    let tables = ViewTables {
        ports: Some(table("PORT")),
        port_qos: Some(table("PORT_QOS_MAP")),
        pfc_maps: Some(table("MAP_PFC_PRIORITY_TO_QUEUE")),
        metadata: store.get(CONFIG_DB, "DEVICE_METADATA|localhost"),
        name_maps: Some(name_maps),
        port_counters,
    };
    let (view, problems) = SwitchView::build(&tables, PauseUnit::default()).map_err(|e| e.to_string())?;
    for problem in problems {
        tracing::warn!(message = "Part of the switch not named.", %problem);
    }
    let keys = PollKeys {
        ports: view.port_oids().into_iter().map(|(name, oid)| (name.to_string(), format!("COUNTERS:{oid}"))).collect(),
        queues: (view.queue_oids().into_iter())
            .map(|((port, position), oid)| ((port.to_string(), position), format!("COUNTERS:{oid}")))
            .collect(),
        status: view
            .port_oids()
            .into_iter()
            .map(|(name, _)| (name.to_string(), format!("{PORT_TABLE}:{name}")))
            .collect(),
    };
    Ok((view, keys))
}
