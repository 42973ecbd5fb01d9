//! Which queue a PFC priority pauses, and which priorities are lossless, from CONFIG_DB:
//!
//! - `PORT_QOS_MAP|<port>` `pfc_enable` (`3,4`): the priorities PFC is on for; `pfcwd_sw_enable`:
//!   the priorities the PFC watchdog watches (orchagent's lossless set for the watchdog:
//!   `qosorch.cpp:2136-2153` parses it, `pfcwdorch.cpp:62-92` reads it back; db_migrator sets it
//!   to `pfc_enable` where absent, sonic-utilities `scripts/db_migrator.py:1188-1194`);
//!   `pfc_to_queue_map` (`AZURE`, or the old `[MAP_PFC_PRIORITY_TO_QUEUE|AZURE]` form): the map;
//! - `MAP_PFC_PRIORITY_TO_QUEUE|<map>`: priority → queue index (`qosorch.cpp:995-1002`).
//!
//! A key of `PORT_QOS_MAP` may list several ports (`Ethernet0,Ethernet4`), as qosorch
//! tokenizes it (`qosorch.cpp:2058`); `global` is the switch-wide entry, not a port.
//!
//! A port without a `pfc_to_queue_map` is read as priority *i* → queue *i*: the PFC watchdog
//! itself assumes that (`pfcwdsworch.cpp:236-238` watches `port.m_queue_ids[i]` for priority
//! *i*), and the answer says it was assumed ([`QueueSource::Identity`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::client::{Db, Entry};
use crate::names::{NameError, Queue, Queues};

/// The CONFIG_DB table binding QoS maps and PFC to ports.
pub const PORT_QOS_MAP: &str = "PORT_QOS_MAP";
/// The CONFIG_DB table of priority → queue maps.
pub const MAP_PFC_PRIORITY_TO_QUEUE: &str = "MAP_PFC_PRIORITY_TO_QUEUE";

/// The highest PFC priority (eight of them, 0–7).
pub const MAX_PRIORITY: u8 = 7;

/// One port's PFC settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortQos {
    /// `pfc_enable`: the priorities with PFC on (lossless).
    pub pfc_enable: BTreeSet<u8>,
    /// `pfcwd_sw_enable`: the priorities the PFC watchdog watches, if the field is there.
    pub pfcwd_sw_enable: Option<BTreeSet<u8>>,
    /// `pfc_to_queue_map`: the name of the port's priority → queue map, if bound.
    pub pfc_to_queue_map: Option<String>,
}

impl PortQos {
    /// Reads one `PORT_QOS_MAP` entry; `key` names it in errors.
    pub fn from_entry(key: &str, entry: &Entry) -> Result<Self, NameError> {
        let list = |field: &str| entry.get(field).map(|v| priority_list(key, field, v)).transpose();
        Ok(PortQos {
            pfc_enable: list("pfc_enable")?.unwrap_or_default(),
            pfcwd_sw_enable: list("pfcwd_sw_enable")?,
            pfc_to_queue_map: entry.get("pfc_to_queue_map").map(|v| map_name(v)).filter(|m| !m.is_empty()),
        })
    }

    /// The priorities orchagent's watchdog watches: `pfcwd_sw_enable`. Without the field
    /// orchagent watches none (it reads an empty mask and retries the port,
    /// `pfcwdorch.cpp:84-88`); db_migrator normally fills it from `pfc_enable`.
    pub fn watchdog_priorities(&self) -> BTreeSet<u8> {
        self.pfcwd_sw_enable.clone().unwrap_or_default()
    }
}

/// Parses a priority list (`3,4`; empty is none), as qosorch does.
pub fn priority_list(key: &str, field: &str, value: &str) -> Result<BTreeSet<u8>, NameError> {
    value
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.parse::<u8>().ok().filter(|&n| n <= MAX_PRIORITY).ok_or_else(|| NameError::BadValue {
                key: key.to_string(),
                field: field.to_string(),
                value: value.to_string(),
                expected: "a list of PFC priorities 0-7, such as 3,4",
            })
        })
        .collect()
}

/// `AZURE` from `AZURE` or from the older reference form `[MAP_PFC_PRIORITY_TO_QUEUE|AZURE]`.
fn map_name(value: &str) -> String {
    let inner = value.trim().trim_start_matches('[').trim_end_matches(']');
    inner.rsplit_once('|').map_or(inner, |(_, name)| name).to_string()
}

/// Where a priority's queue index came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueSource {
    /// `MAP_PFC_PRIORITY_TO_QUEUE|<name>`.
    Map(String),
    /// The port binds no map: priority *i* is queue *i*, as the watchdog assumes.
    Identity,
}

/// A priority's queue and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityQueue<'q> {
    /// The PFC priority.
    pub priority: u8,
    /// Its unicast queue.
    pub queue: &'q Queue,
    /// Where the mapping came from.
    pub source: QueueSource,
}

/// Every port's PFC settings and every priority → queue map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Qos {
    ports: BTreeMap<String, PortQos>,
    maps: BTreeMap<String, BTreeMap<u8, u32>>,
}

impl Qos {
    /// From the raw entries: `PORT_QOS_MAP` keys → fields, `MAP_PFC_PRIORITY_TO_QUEUE` names →
    /// fields.
    pub fn from_entries(port_qos: &BTreeMap<String, Entry>, maps: &BTreeMap<String, Entry>) -> Result<Self, NameError> {
        let mut qos = Qos::default();
        for (key, entry) in port_qos {
            if key.eq_ignore_ascii_case("global") {
                continue;
            }
            let settings = PortQos::from_entry(&format!("{PORT_QOS_MAP}|{key}"), entry)?;
            for port in key.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                qos.ports.insert(port.to_string(), settings.clone());
            }
        }
        for (name, entry) in maps {
            let key = format!("{MAP_PFC_PRIORITY_TO_QUEUE}|{name}");
            let mut map = BTreeMap::new();
            for (priority, queue) in entry {
                let bad = |expected| NameError::BadValue {
                    key: key.clone(),
                    field: priority.clone(),
                    value: queue.clone(),
                    expected,
                };
                let p =
                    priority.parse::<u8>().ok().filter(|&p| p <= MAX_PRIORITY).ok_or_else(|| bad("a priority 0-7"))?;
                let q = queue.parse::<u32>().map_err(|_| bad("a queue index"))?;
                map.insert(p, q);
            }
            qos.maps.insert(name.clone(), map);
        }
        Ok(qos)
    }

    /// Reads `PORT_QOS_MAP` and `MAP_PFC_PRIORITY_TO_QUEUE` from CONFIG_DB.
    pub async fn read(config: &Db) -> Result<Self, NameError> {
        let mut tables = [BTreeMap::new(), BTreeMap::new()];
        for (table, out) in [PORT_QOS_MAP, MAP_PFC_PRIORITY_TO_QUEUE].into_iter().zip(tables.iter_mut()) {
            for key in config.keys(table).await? {
                // A key that vanished between the scan and the read is simply not there.
                if let Some(entry) = config.entry(table, &key).await? {
                    out.insert(key, entry);
                }
            }
        }
        let [port_qos, maps] = tables;
        Self::from_entries(&port_qos, &maps)
    }

    /// Port `port`'s settings (none: PFC is off on it).
    pub fn port(&self, port: &str) -> Option<&PortQos> {
        self.ports.get(port)
    }

    /// The queue index priority `priority` maps to on `port`, and where that came from.
    pub fn queue_index(&self, port: &str, priority: u8) -> Result<(u32, QueueSource), NameError> {
        let Some(map) = self.ports.get(port).and_then(|p| p.pfc_to_queue_map.as_ref()) else {
            return Ok((u32::from(priority), QueueSource::Identity));
        };
        let entries =
            self.maps.get(map).ok_or_else(|| NameError::MissingMap { port: port.to_string(), map: map.clone() })?;
        let index = entries.get(&priority).ok_or_else(|| NameError::PriorityNotMapped {
            port: port.to_string(),
            map: map.clone(),
            priority,
        })?;
        Ok((*index, QueueSource::Map(map.clone())))
    }

    /// The unicast queue priority `priority` pauses on `port` (never a multicast one).
    pub fn queue<'q>(&self, queues: &'q Queues, port: &str, priority: u8) -> Result<PriorityQueue<'q>, NameError> {
        let (index, source) = self.queue_index(port, priority)?;
        Ok(PriorityQueue { priority, queue: queues.unicast(port, index)?, source })
    }

    /// The queues of `port`'s lossless priorities (`pfc_enable`), each through the map.
    pub fn lossless_queues<'q>(&self, queues: &'q Queues, port: &str) -> Result<Vec<PriorityQueue<'q>>, NameError> {
        let priorities = self.ports.get(port).map(|p| p.pfc_enable.clone()).unwrap_or_default();
        priorities.into_iter().map(|p| self.queue(queues, port, p)).collect()
    }

    /// The queues orchagent's watchdog watches on `port`: for each `pfcwd_sw_enable` priority
    /// *i*, the queue at position *i* (`pfcwdsworch.cpp:236-238`, `port.m_queue_ids[i]`; the
    /// watchdog does not consult `pfc_to_queue_map`).
    pub fn watchdog_queues<'q>(&self, queues: &'q Queues, port: &str) -> Vec<(u8, &'q Queue)> {
        let priorities = self.ports.get(port).map(PortQos::watchdog_priorities).unwrap_or_default();
        priorities.into_iter().filter_map(|p| Some((p, queues.at(port, u32::from(p))?))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::NameMaps;

    fn entry(pairs: &[(&str, &str)]) -> Entry {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn queues() -> Queues {
        let map = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut maps = NameMaps { ports: map(&[("Ethernet4", "oid:0x1")]), ..NameMaps::default() };
        for q in 0..8u32 {
            let oid = format!("oid:0x1{q}");
            maps.queues.insert(format!("Ethernet4:{q}"), oid.clone());
            maps.queue_index.insert(oid.clone(), q.to_string());
            maps.queue_type.insert(oid, "SAI_QUEUE_TYPE_UNICAST".into());
        }
        // A multicast queue whose SAI index is 5, at position 10.
        maps.queues.insert("Ethernet4:10".into(), "oid:0x2a".into());
        maps.queue_index.insert("oid:0x2a".into(), "5".into());
        maps.queue_type.insert("oid:0x2a".into(), "SAI_QUEUE_TYPE_MULTICAST".into());
        Queues::from_maps(&maps).unwrap()
    }

    fn qos(port: &[(&str, &str)], map: &[(&str, &str)]) -> Qos {
        let ports = BTreeMap::from([("Ethernet4,Ethernet8".to_string(), entry(port)), ("global".into(), entry(&[]))]);
        let maps = BTreeMap::from([("AZURE".to_string(), entry(map))]);
        Qos::from_entries(&ports, &maps).unwrap()
    }

    #[test]
    fn a_priority_goes_to_its_queue_through_the_ports_map() {
        let qos = qos(
            &[("pfc_enable", "3,4"), ("pfcwd_sw_enable", "3,4"), ("pfc_to_queue_map", "AZURE")],
            &[("3", "5"), ("4", "4")],
        );
        let queues = queues();
        let q = qos.queue(&queues, "Ethernet4", 3).unwrap();
        // Priority 3 → index 5: the unicast queue 5, not the multicast queue of index 5.
        assert_eq!((q.queue.oid.as_str(), q.source.clone()), ("oid:0x15", QueueSource::Map("AZURE".into())));
        let lossless: Vec<_> =
            qos.lossless_queues(&queues, "Ethernet4").unwrap().into_iter().map(|q| q.queue.position).collect();
        assert_eq!(lossless, vec![5, 4]);
        // The port list key covers Ethernet8 too.
        assert_eq!(qos.port("Ethernet8").unwrap().pfc_enable, BTreeSet::from([3, 4]));
        // The watchdog's own queues: position i for priority i.
        let watched: Vec<_> =
            qos.watchdog_queues(&queues, "Ethernet4").into_iter().map(|(p, q)| (p, q.position)).collect();
        assert_eq!(watched, vec![(3, 3), (4, 4)]);
    }

    #[test]
    fn a_map_that_sends_a_priority_to_a_multicast_only_index_is_refused() {
        let mut maps = NameMaps::default();
        maps.queues.insert("Ethernet4:10".into(), "oid:0x2a".into());
        maps.queue_index.insert("oid:0x2a".into(), "5".into());
        maps.queue_type.insert("oid:0x2a".into(), "SAI_QUEUE_TYPE_MULTICAST".into());
        let queues = Queues::from_maps(&maps).unwrap();
        let qos =
            qos(&[("pfc_enable", "3"), ("pfc_to_queue_map", "[MAP_PFC_PRIORITY_TO_QUEUE|AZURE]")], &[("3", "10")]);
        // Position 10 holds a multicast queue: refused, with the reason.
        let e = qos.queue(&queues, "Ethernet4", 3).unwrap_err();
        assert!(e.to_string().contains("is multicast, not unicast"), "{e}");
    }

    #[test]
    fn without_a_map_priority_i_is_queue_i_and_says_so() {
        let qos = qos(&[("pfc_enable", "3,4")], &[]);
        assert_eq!(qos.queue_index("Ethernet4", 4).unwrap(), (4, QueueSource::Identity));
        // No pfcwd_sw_enable: the watchdog watches nothing on the port.
        assert!(qos.port("Ethernet4").unwrap().watchdog_priorities().is_empty());
    }

    #[test]
    fn a_missing_map_or_priority_is_an_error_naming_it() {
        let lossless = qos(&[("pfc_enable", "3"), ("pfc_to_queue_map", "LOSSLESS")], &[("3", "3")]);
        assert_eq!(
            lossless.queue_index("Ethernet4", 3).unwrap_err().to_string(),
            "PORT_QOS_MAP|Ethernet4 pfc_to_queue_map names \"LOSSLESS\", but MAP_PFC_PRIORITY_TO_QUEUE|LOSSLESS does not exist"
        );
        let azure = qos(&[("pfc_to_queue_map", "AZURE")], &[("3", "3")]);
        assert!(matches!(azure.queue_index("Ethernet4", 6), Err(NameError::PriorityNotMapped { priority: 6, .. })));
        let ports = BTreeMap::from([("Ethernet0".to_string(), entry(&[("pfc_enable", "3,9")]))]);
        let e = Qos::from_entries(&ports, &BTreeMap::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "PORT_QOS_MAP|Ethernet0 pfc_enable \"3,9\": a list of PFC priorities 0-7, such as 3,4"
        );
    }
}
