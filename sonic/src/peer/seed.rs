//! The databases a peer starts with: sonic-utilities' mock tables (`tests/mock_tables/*.json`,
//! captured from real switches), cut down to some ports or extended with more, brought to what
//! a booted image holds, and given one ASIC family's counters.
//!
//! The files map full Redis keys (`PORT|Ethernet0`, `COUNTERS:oid:0x…`) to field → value.
//! sonic-utilities loads them into a fake Redis as they are; a few values there are numbers,
//! lists or objects, which Redis can only hold as text: numbers are written in decimal, lists
//! joined with `,` (as ConfigDBConnector writes list fields), objects as their JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::{ExtraPort, PeerError, Prerequisites};
use crate::asic::AsicFamily;
use crate::client::Entry;
use crate::names::queues::{PORT_NAME_MAP, QUEUE_INDEX_MAP, QUEUE_NAME_MAP, QUEUE_PORT_MAP, QUEUE_TYPE_MAP};

/// Redis key → fields, for one database.
pub(crate) type Tables = BTreeMap<String, Entry>;

/// The contents of the databases a peer starts with.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seed {
    pub config: Tables,
    pub counters: Tables,
    pub appl: Tables,
    pub state: Tables,
    pub asic: Tables,
}

/// Unicast queues per added port (positions and SAI indices 0–9), then as many multicast
/// (positions and indices 10–19): the shape of sonic-utilities' mock ports.
const ADDED_QUEUES: u32 = 10;

impl Seed {
    /// Reads the four databases of sonic-utilities' mock tables.
    pub fn load(prereq: &Prerequisites) -> Result<Self, PeerError> {
        let read = |name: &str| read_tables(&prereq.utilities_file(name));
        Ok(Seed {
            config: read("config_db.json")?,
            counters: read("counters_db.json")?,
            appl: read("appl_db.json")?,
            state: read("state_db.json")?,
            asic: Tables::new(),
        })
    }

    /// Every port the seed knows: CONFIG_DB's `PORT` table and COUNTERS_DB's name map.
    pub fn port_names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> =
            self.config.keys().filter_map(|k| k.strip_prefix("PORT|")).map(str::to_string).collect();
        names.extend(self.counters.get(PORT_NAME_MAP).into_iter().flat_map(|m| m.keys().cloned()));
        names
    }

    /// Drops every port not in `keep`: its entries in every database (any key whose first part
    /// after the table is the port), its name map entries, and the counters of its objects.
    pub fn keep_ports(&mut self, keep: &BTreeSet<String>) -> Result<(), PeerError> {
        let all = self.port_names();
        if let Some(unknown) = keep.iter().find(|p| !all.contains(*p)) {
            return Err(PeerError::Seed(format!("no port {unknown} in sonic-utilities' databases")));
        }
        let dropped: BTreeSet<&String> = all.iter().filter(|p| !keep.contains(*p)).collect();
        let about_dropped = |key: &str, separator: char| {
            let Some((_, rest)) = key.split_once(separator) else { return false };
            let first = rest.split(separator).next().unwrap_or_default();
            let ports: Vec<&str> = first.split(',').collect();
            ports.iter().all(|p| dropped.contains(&p.to_string()))
        };
        for (tables, separator) in [(&mut self.config, '|'), (&mut self.state, '|'), (&mut self.appl, ':')] {
            tables.retain(|key, _| !about_dropped(key, separator));
        }
        // COUNTERS_DB: the objects of dropped ports, found through the maps.
        let mut oids = BTreeSet::new();
        let maps = &self.counters;
        if let Some(ports) = maps.get(PORT_NAME_MAP) {
            oids.extend(ports.iter().filter(|(name, _)| dropped.contains(name)).map(|(_, oid)| oid.clone()));
        }
        for map in [QUEUE_NAME_MAP, "COUNTERS_PG_NAME_MAP"] {
            if let Some(m) = maps.get(map) {
                let of_dropped =
                    |name: &String| name.rsplit_once(':').is_some_and(|(p, _)| dropped.contains(&p.to_string()));
                oids.extend(m.iter().filter(|(name, _)| of_dropped(name)).map(|(_, oid)| oid.clone()));
            }
        }
        // Queues recorded only by their port (the index/port/type maps hold some the name map lacks).
        if let Some(m) = maps.get(QUEUE_PORT_MAP) {
            let port_oids = oids.clone();
            oids.extend(m.iter().filter(|(_, port)| port_oids.contains(*port)).map(|(q, _)| q.clone()));
        }
        self.counters.retain(|key, _| !oids.iter().any(|oid| key.ends_with(oid.as_str())));
        for (key, fields) in self.counters.iter_mut() {
            if key.contains("_MAP") {
                fields.retain(|field, value| {
                    let port = field.rsplit_once(':').map_or(field.as_str(), |(p, _)| p);
                    !(oids.contains(field) || oids.contains(value) || dropped.contains(&port.to_string()))
                });
            }
        }
        Ok(())
    }

    /// Adds `port` (the `n`th added one, for its object ids): CONFIG_DB `PORT` with its alias,
    /// `PORT_QOS_MAP` with its lossless priorities, `PFC_WD` if given; APPL_DB and STATE_DB
    /// port tables; COUNTERS_DB name maps for the port and ten unicast and ten multicast queues.
    pub fn add_port(&mut self, port: &ExtraPort, n: usize) -> Result<(), PeerError> {
        if self.port_names().contains(&port.name) {
            return Err(PeerError::Seed(format!("port {} is already in the databases", port.name)));
        }
        let port_oid = format!("oid:0x10000000f{n:04x}");
        let mut config_port =
            entry(&[("admin_status", "up"), ("mtu", "9100"), ("speed", "400000"), ("index", &(1000 + n).to_string())]);
        if let Some(alias) = &port.alias {
            config_port.insert("alias".into(), alias.clone());
        }
        self.config.insert(format!("PORT|{}", port.name), config_port);
        if !port.pfc_enable.is_empty() {
            self.config.insert(format!("PORT_QOS_MAP|{}", port.name), entry(&[("pfc_enable", &port.pfc_enable)]));
        }
        if let Some(pfc_wd) = &port.pfc_wd {
            self.config.insert(format!("PFC_WD|{}", port.name), pfc_wd.clone());
        }
        let mut appl = entry(&[("admin_status", "up"), ("oper_status", "up")]);
        appl.extend(port.alias.iter().map(|a| ("alias".to_string(), a.clone())));
        self.appl.insert(format!("PORT_TABLE:{}", port.name), appl);
        self.state.insert(format!("PORT_TABLE|{}", port.name), entry(&[("state", "ok"), ("netdev_oper_status", "up")]));
        self.map(PORT_NAME_MAP).insert(port.name.clone(), port_oid.clone());
        self.counters.insert(format!("COUNTERS:{port_oid}"), Entry::new());
        for position in 0..2 * ADDED_QUEUES {
            let oid = format!("oid:0x150000000f{n:04x}{position:02x}");
            let kind = if position < ADDED_QUEUES { "SAI_QUEUE_TYPE_UNICAST" } else { "SAI_QUEUE_TYPE_MULTICAST" };
            self.map(QUEUE_NAME_MAP).insert(format!("{}:{position}", port.name), oid.clone());
            self.map(QUEUE_INDEX_MAP).insert(oid.clone(), position.to_string());
            self.map(QUEUE_PORT_MAP).insert(oid.clone(), port_oid.clone());
            self.map(QUEUE_TYPE_MAP).insert(oid.clone(), kind.to_string());
            self.counters.insert(
                format!("COUNTERS:{oid}"),
                entry(&[("SAI_QUEUE_STAT_PACKETS", "0"), ("SAI_QUEUE_STAT_DROPPED_PACKETS", "0")]),
            );
        }
        Ok(())
    }

    fn map(&mut self, name: &str) -> &mut Entry {
        self.counters.entry(name.to_string()).or_default()
    }

    /// What a booted image holds beyond the mock: db_migrator's `pfcwd_sw_enable` (set to
    /// `pfc_enable` where absent, sonic-utilities `scripts/db_migrator.py:1188-1194`) and the
    /// QoS template's priority → queue map `AZURE` bound to each PFC port.
    pub fn image_defaults(&mut self) {
        let azure = "MAP_PFC_PRIORITY_TO_QUEUE|AZURE";
        if !self.config.contains_key(azure) {
            let identity: Entry = (0..8).map(|p| (p.to_string(), p.to_string())).collect();
            self.config.insert(azure.to_string(), identity);
        }
        for (key, fields) in self.config.iter_mut() {
            if !key.starts_with("PORT_QOS_MAP|") {
                continue;
            }
            if let Some(pfc) = fields.get("pfc_enable").cloned() {
                fields.entry("pfcwd_sw_enable".into()).or_insert(pfc);
                fields.entry("pfc_to_queue_map".into()).or_insert_with(|| "AZURE".into());
            }
        }
    }

    /// Gives every port the PFC counters of `family` (the ones it lacks start at 0) and takes
    /// away other families' (sonic-utilities' capture carries Broadcom's estimates,
    /// `EST_PORT_STAT_PFC_*`, which only Broadcom's detector writes).
    pub fn family_counters(&mut self, family: AsicFamily) {
        let port_oids: Vec<String> =
            self.counters.get(PORT_NAME_MAP).map(|m| m.values().cloned().collect()).unwrap_or_default();
        for oid in port_oids {
            let counters = self.counters.entry(format!("COUNTERS:{oid}")).or_default();
            counters.retain(|field, _| {
                let foreign = AsicFamily::ALL
                    .iter()
                    .filter(|f| f.counter_set() != family.counter_set())
                    .any(|f| (0..8).any(|p| f.port_counters(p).iter().skip(1).any(|c| c == field)));
                !(foreign || (family != AsicFamily::Broadcom && field.starts_with("EST_PORT_STAT_PFC_")))
            });
            for priority in 0..8 {
                for field in family.port_counters(priority) {
                    counters.entry(field).or_insert_with(|| "0".into());
                }
            }
        }
    }

    /// ASIC_DB as qosorch leaves it: each PFC port's mask (`SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL`,
    /// from `pfc_enable`, `qosorch.cpp:2207-2221`) under the port's object id.
    pub fn asic_state(&mut self) -> Result<(), PeerError> {
        let ports = self.counters.get(PORT_NAME_MAP).cloned().unwrap_or_default();
        for (name, oid) in ports {
            let Some(qos) = self.config.get(&format!("PORT_QOS_MAP|{name}")) else { continue };
            let Some(pfc) = qos.get("pfc_enable") else { continue };
            let key = format!("PORT_QOS_MAP|{name}");
            let priorities =
                crate::qos::priority_list(&key, "pfc_enable", pfc).map_err(|e| PeerError::Seed(e.to_string()))?;
            let mask: u8 = priorities.iter().fold(0, |m, p| m | (1 << p));
            self.asic.insert(
                format!("ASIC_STATE:SAI_OBJECT_TYPE_PORT:{oid}"),
                entry(&[("SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL", &mask.to_string())]),
            );
        }
        Ok(())
    }
}

fn entry(pairs: &[(&str, &str)]) -> Entry {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// One mock table file: key → fields, each value as Redis would hold it.
fn read_tables(path: &Path) -> Result<Tables, PeerError> {
    let text = std::fs::read_to_string(path).map_err(|e| PeerError::Seed(format!("{}: {e}", path.display())))?;
    let raw: BTreeMap<String, Value> =
        serde_json::from_str(&text).map_err(|e| PeerError::Seed(format!("{}: {e}", path.display())))?;
    let mut tables = Tables::new();
    for (key, value) in raw {
        let Value::Object(fields) = value else {
            return Err(PeerError::Seed(format!("{}: {key} is not an object of fields", path.display())));
        };
        let fields = fields.into_iter().map(|(f, v)| (f, as_text(v))).collect();
        tables.insert(key, fields);
    }
    Ok(tables)
}

fn as_text(value: Value) -> String {
    match value {
        Value::String(s) => s,
        Value::Array(items) => items.into_iter().map(as_text).collect::<Vec<_>>().join(","),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
