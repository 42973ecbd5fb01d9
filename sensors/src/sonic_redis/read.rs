//! What the sensor reads from the switch's Redis: the tables that name its readings, and one
//! poll's counters and port states.

use std::collections::BTreeMap;

use sonic::client::{Db, DbError, Entry};
use sonic::NameMaps;

use crate::switch_series::fields::{port_entry, port_status_entry, queue_entry};
use crate::switch_series::{FieldError, QueueFields, Reading, SwitchView, ViewTables};

/// APPL_DB's port table (`PORT_TABLE:<port>`), where orchagent records `oper_status`.
pub const PORT_TABLE: &str = "PORT_TABLE";

/// Every entry of `table` in `db`: its keys by `SCAN`, then their hashes in one transaction. An
/// entry deleted between the two is left out; an error is an error, never an empty table.
pub async fn table(db: &Db, table: &str) -> Result<BTreeMap<String, Entry>, DbError> {
    let keys = db.keys(table).await?;
    let redis_keys: Vec<String> = keys.iter().map(|k| db.key(table, k)).collect();
    let hashes = db.hashes(&redis_keys).await?;
    Ok(keys.into_iter().zip(hashes).filter_map(|(k, h)| Some((k, h?))).collect())
}

/// The tables a [`SwitchView`] is built from, read from CONFIG_DB and COUNTERS_DB. The name
/// maps are required (their absence is orchagent not up yet: [`DbError::NotReady`]).
pub async fn view_tables(config: &Db, counters: &Db) -> Result<ViewTables, DbError> {
    let name_maps = NameMaps::read(counters).await?;
    // One port's counters tell the ASIC family (each family writes its own PFC counters).
    let port_counters = match name_maps.ports.values().next() {
        Some(oid) => counters.counters(oid).await?,
        None => None,
    };
    Ok(ViewTables {
        ports: Some(table(config, "PORT").await?),
        port_qos: Some(table(config, "PORT_QOS_MAP").await?),
        pfc_maps: Some(table(config, "MAP_PFC_PRIORITY_TO_QUEUE").await?),
        metadata: config.entry("DEVICE_METADATA", "localhost").await?,
        name_maps: Some(name_maps),
        port_counters,
    })
}

/// The keys one poll reads, from a view: each port's and each queue's counters, each port's
/// APPL_DB entry.
#[derive(Debug, Clone, Default)]
pub struct PollKeys {
    /// Port name → `COUNTERS:<oid>`.
    pub ports: Vec<(String, String)>,
    /// (port, position) → `COUNTERS:<oid>`.
    pub queues: Vec<((String, u8), String)>,
    /// Port name → `PORT_TABLE:<port>`.
    pub status: Vec<(String, String)>,
}

impl PollKeys {
    /// The keys of `view`'s ports and queues (`counters` and `appl` give the separators).
    pub fn of(view: &SwitchView, counters: &Db, appl: &Db) -> PollKeys {
        let counter_key = |oid: &str| counters.key(sonic::client::COUNTERS, oid);
        PollKeys {
            ports: view.port_oids().into_iter().map(|(name, oid)| (name.to_string(), counter_key(oid))).collect(),
            queues: view
                .queue_oids()
                .into_iter()
                .map(|((port, position), oid)| ((port.to_string(), position), counter_key(oid)))
                .collect(),
            status: view
                .port_oids()
                .into_iter()
                .map(|(name, _)| (name.to_string(), appl.key(PORT_TABLE, name)))
                .collect(),
        }
    }

    /// The counters keys, ports first, in one list (one transaction reads them).
    pub fn counter_keys(&self) -> Vec<String> {
        self.ports.iter().map(|(_, k)| k.clone()).chain(self.queues.iter().map(|(_, k)| k.clone())).collect()
    }
}

/// A field that did not read, with the Redis key it is in.
pub type KeyedError = (String, FieldError);

/// What one poll made of what it read.
#[derive(Debug, Default)]
pub struct Mapped {
    /// The readings.
    pub readings: Vec<Reading>,
    /// The fields that did not read (each costs only itself).
    pub errors: Vec<KeyedError>,
}

/// Maps one poll's counter hashes (in [`PollKeys::counter_keys`] order) and port entries.
pub fn map_poll(view: &SwitchView, keys: &PollKeys, counters: &[Option<Entry>], status: &[Option<Entry>]) -> Mapped {
    let mut mapped = Mapped::default();
    let (port_hashes, queue_hashes) = counters.split_at(keys.ports.len().min(counters.len()));
    for ((name, key), hash) in keys.ports.iter().zip(port_hashes) {
        let Some(hash) = hash else { continue };
        let mut errors = Vec::new();
        port_entry(view, name, hash, &mut mapped.readings, &mut errors);
        mapped.errors.extend(errors.into_iter().map(|e| (key.clone(), e)));
    }
    let all = QueueFields { counters: true, watchdog: true, paused: true };
    for (((port, position), key), hash) in keys.queues.iter().zip(queue_hashes) {
        let Some(hash) = hash else { continue };
        map_queue(view, (port, *position), key, hash, all, &mut mapped);
    }
    for ((name, key), entry) in keys.status.iter().zip(status) {
        let Some(entry) = entry else { continue };
        map_status(name, key, entry, &mut mapped);
    }
    mapped
}

/// One queue's hash into `mapped`.
pub fn map_queue(
    view: &SwitchView,
    queue: (&str, u8),
    key: &str,
    hash: &Entry,
    which: QueueFields,
    mapped: &mut Mapped,
) {
    let mut errors = Vec::new();
    queue_entry(view, queue, hash, which, &mut mapped.readings, &mut errors);
    mapped.errors.extend(errors.into_iter().map(|e| (key.to_string(), e)));
}

/// One port's APPL_DB entry into `mapped`.
pub fn map_status(port: &str, key: &str, entry: &Entry, mapped: &mut Mapped) {
    let mut errors = Vec::new();
    port_status_entry(port, entry, &mut mapped.readings, &mut errors);
    mapped.errors.extend(errors.into_iter().map(|e| (key.to_string(), e)));
}
