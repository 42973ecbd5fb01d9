//! Queues: COUNTERS_DB's name maps joined into one table of [`Queue`]s.

use std::collections::BTreeMap;

use super::error::NameError;
use crate::client::{Db, DbError, Entry};

/// SONiC name → port object id.
pub const PORT_NAME_MAP: &str = "COUNTERS_PORT_NAME_MAP";
/// `<port>:<position>` → queue object id.
pub const QUEUE_NAME_MAP: &str = "COUNTERS_QUEUE_NAME_MAP";
/// Queue object id → SAI queue index.
pub const QUEUE_INDEX_MAP: &str = "COUNTERS_QUEUE_INDEX_MAP";
/// Queue object id → port object id.
pub const QUEUE_PORT_MAP: &str = "COUNTERS_QUEUE_PORT_MAP";
/// Queue object id → `SAI_QUEUE_TYPE_UNICAST` | `SAI_QUEUE_TYPE_MULTICAST` | `SAI_QUEUE_TYPE_ALL`.
pub const QUEUE_TYPE_MAP: &str = "COUNTERS_QUEUE_TYPE_MAP";
/// The table of counters, keyed by object id (`COUNTERS:oid:0x…`): the client's, which
/// reads it ([`Db::counters`]) below the name maps.
pub use crate::client::COUNTERS;

/// The five COUNTERS_DB name maps, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMaps {
    /// `COUNTERS_PORT_NAME_MAP`: SONiC name → port oid.
    pub ports: BTreeMap<String, String>,
    /// `COUNTERS_QUEUE_NAME_MAP`: `<port>:<position>` → queue oid.
    pub queues: BTreeMap<String, String>,
    /// `COUNTERS_QUEUE_INDEX_MAP`: queue oid → SAI index.
    pub queue_index: BTreeMap<String, String>,
    /// `COUNTERS_QUEUE_PORT_MAP`: queue oid → port oid.
    pub queue_port: BTreeMap<String, String>,
    /// `COUNTERS_QUEUE_TYPE_MAP`: queue oid → SAI queue type.
    pub queue_type: BTreeMap<String, String>,
}

impl NameMaps {
    /// Reads the maps. The port and queue name maps must exist: orchagent writes them once the
    /// ports are created, so their absence is a switch not yet up ([`DbError::NotReady`]), not
    /// a switch without ports. The others may be absent (a queue without counters enabled has
    /// no index or type).
    pub async fn read(counters: &Db) -> Result<Self, DbError> {
        let required = |name: &'static str, map: Option<Entry>| {
            map.ok_or_else(|| DbError::NotReady {
                database: counters.name().to_string(),
                key: name.to_string(),
                why: "orchagent writes it when it creates the ports",
            })
        };
        Ok(NameMaps {
            ports: required(PORT_NAME_MAP, counters.hash(PORT_NAME_MAP).await?)?,
            queues: required(QUEUE_NAME_MAP, counters.hash(QUEUE_NAME_MAP).await?)?,
            queue_index: counters.hash(QUEUE_INDEX_MAP).await?.unwrap_or_default(),
            queue_port: counters.hash(QUEUE_PORT_MAP).await?.unwrap_or_default(),
            queue_type: counters.hash(QUEUE_TYPE_MAP).await?.unwrap_or_default(),
        })
    }
}

/// A queue's type (`COUNTERS_QUEUE_TYPE_MAP`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueKind {
    /// `SAI_QUEUE_TYPE_UNICAST`: what PFC pauses.
    Unicast,
    /// `SAI_QUEUE_TYPE_MULTICAST`.
    Multicast,
    /// `SAI_QUEUE_TYPE_ALL` (unicast and multicast together; VOQ systems).
    All,
    /// Another type, kept as SONiC wrote it.
    Other(String),
}

impl QueueKind {
    /// Parses SAI's name.
    pub fn parse(text: &str) -> Self {
        match text {
            "SAI_QUEUE_TYPE_UNICAST" => QueueKind::Unicast,
            "SAI_QUEUE_TYPE_MULTICAST" => QueueKind::Multicast,
            "SAI_QUEUE_TYPE_ALL" => QueueKind::All,
            other => QueueKind::Other(other.to_string()),
        }
    }
}

impl std::fmt::Display for QueueKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueueKind::Unicast => f.write_str("unicast"),
            QueueKind::Multicast => f.write_str("multicast"),
            QueueKind::All => f.write_str("unicast+multicast (SAI_QUEUE_TYPE_ALL)"),
            QueueKind::Other(other) => f.write_str(other),
        }
    }
}

/// One queue of a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue {
    /// Its object id (`oid:0x15000000000382`), the key of its counters.
    pub oid: String,
    /// Its port's SONiC name.
    pub port: String,
    /// Its position in the port's queue list: the `<n>` of `<port>:<n>` in
    /// `COUNTERS_QUEUE_NAME_MAP`, and the `i` of orchagent's `port.m_queue_ids[i]`.
    pub position: u32,
    /// Its SAI index (`COUNTERS_QUEUE_INDEX_MAP`), if recorded.
    pub index: Option<u32>,
    /// Its type (`COUNTERS_QUEUE_TYPE_MAP`), if recorded.
    pub kind: Option<QueueKind>,
}

impl Queue {
    /// `Ethernet4:3`, as COUNTERS_QUEUE_NAME_MAP names it.
    pub fn name(&self) -> String {
        format!("{}:{}", self.port, self.position)
    }
}

/// Every queue of every port, by oid and by (port, position).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Queues {
    by_oid: BTreeMap<String, Queue>,
    by_port: BTreeMap<String, BTreeMap<u32, String>>,
}

impl Queues {
    /// Joins the maps. A queue name that is not `<port>:<number>`, or an index that is not a
    /// number, is an error naming the entry: a map that does not read is not silently thinned.
    pub fn from_maps(maps: &NameMaps) -> Result<Self, NameError> {
        let mut queues = Queues::default();
        for (name, oid) in &maps.queues {
            // The position is after the last ':' (a port name could hold one; a number cannot).
            let parsed = name.rsplit_once(':').and_then(|(port, n)| Some((port, n.parse::<u32>().ok()?)));
            let Some((port, position)) = parsed.filter(|(port, _)| !port.is_empty()) else {
                return Err(NameError::BadValue {
                    key: QUEUE_NAME_MAP.into(),
                    field: name.clone(),
                    value: oid.clone(),
                    expected: "a queue is named <port>:<position>",
                });
            };
            let index = match maps.queue_index.get(oid) {
                None => None,
                Some(text) => Some(text.parse::<u32>().map_err(|_| NameError::BadValue {
                    key: QUEUE_INDEX_MAP.into(),
                    field: oid.clone(),
                    value: text.clone(),
                    expected: "a queue index is a number",
                })?),
            };
            let kind = maps.queue_type.get(oid).map(|t| QueueKind::parse(t));
            let queue = Queue { oid: oid.clone(), port: port.to_string(), position, index, kind };
            queues.by_port.entry(queue.port.clone()).or_default().insert(position, oid.clone());
            queues.by_oid.insert(oid.clone(), queue);
        }
        Ok(queues)
    }

    /// The queue with object id `oid`.
    pub fn get(&self, oid: &str) -> Option<&Queue> {
        self.by_oid.get(oid)
    }

    /// The queue at `position` of `port` (`<port>:<position>`).
    pub fn at(&self, port: &str, position: u32) -> Option<&Queue> {
        self.by_oid.get(self.by_port.get(port)?.get(&position)?)
    }

    /// The queues of `port`, by position.
    pub fn of_port<'a>(&'a self, port: &str) -> impl Iterator<Item = &'a Queue> + 'a {
        self.by_port.get(port).into_iter().flat_map(|q| q.values()).filter_map(|oid| self.by_oid.get(oid))
    }

    /// The unicast queue of SAI index `index` on `port`: the queue PFC priorities map to.
    /// A queue of type ALL is taken only when the port has no unicast queue of that index
    /// (systems that only have ALL queues); a multicast queue never.
    pub fn unicast(&self, port: &str, index: u32) -> Result<&Queue, NameError> {
        let of_index = |kind: &QueueKind| {
            self.of_port(port).find(|q| q.kind.as_ref() == Some(kind) && q.index.unwrap_or(q.position) == index)
        };
        if let Some(queue) = of_index(&QueueKind::Unicast).or_else(|| of_index(&QueueKind::All)) {
            return Ok(queue);
        }
        // Say why the obvious candidate, `<port>:<index>`, is not it.
        match self.at(port, index) {
            Some(q) => Err(NameError::NotUnicast {
                port: port.to_string(),
                index,
                oid: q.oid.clone(),
                kind: q.kind.as_ref().map_or_else(|| "of unknown type".to_string(), ToString::to_string),
            }),
            None => Err(NameError::UnknownQueue { port: port.to_string(), index }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn maps() -> NameMaps {
        let map = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        NameMaps {
            ports: map(&[("Ethernet1/1", "oid:0x1")]),
            queues: map(&[
                ("Ethernet1/1:3", "oid:0x13"),
                ("Ethernet1/1:13", "oid:0x23"),
                ("Ethernet1/1:4", "oid:0x14"),
            ]),
            queue_index: map(&[("oid:0x13", "3"), ("oid:0x23", "3"), ("oid:0x14", "4")]),
            queue_port: map(&[("oid:0x13", "oid:0x1"), ("oid:0x23", "oid:0x1"), ("oid:0x14", "oid:0x1")]),
            // Broadcom-style: the multicast queue shares SAI index 3; queue 4 is multicast only.
            queue_type: map(&[
                ("oid:0x13", "SAI_QUEUE_TYPE_UNICAST"),
                ("oid:0x23", "SAI_QUEUE_TYPE_MULTICAST"),
                ("oid:0x14", "SAI_QUEUE_TYPE_MULTICAST"),
            ]),
        }
    }

    #[test]
    fn queues_join_the_maps_and_names_with_slashes_parse() {
        let queues = Queues::from_maps(&maps()).unwrap();
        let q = queues.get("oid:0x23").unwrap();
        assert_eq!(
            (q.port.as_str(), q.position, q.index, q.kind.clone()),
            ("Ethernet1/1", 13, Some(3), Some(QueueKind::Multicast))
        );
        assert_eq!(q.name(), "Ethernet1/1:13");
        assert_eq!(queues.at("Ethernet1/1", 3).unwrap().oid, "oid:0x13");
        assert_eq!(queues.of_port("Ethernet1/1").map(|q| q.position).collect::<Vec<_>>(), vec![3, 4, 13]);
    }

    #[test]
    fn a_multicast_queue_is_never_taken_for_a_unicast_index() {
        let queues = Queues::from_maps(&maps()).unwrap();
        // Index 3: the unicast one, though a multicast queue has index 3 too.
        assert_eq!(queues.unicast("Ethernet1/1", 3).unwrap().oid, "oid:0x13");
        let e = queues.unicast("Ethernet1/1", 4).unwrap_err();
        assert_eq!(
            e.to_string(),
            "port Ethernet1/1 queue 4 (oid:0x14) is multicast, not unicast; a PFC priority is never a multicast queue"
        );
        assert!(matches!(queues.unicast("Ethernet1/1", 5), Err(NameError::UnknownQueue { index: 5, .. })));
    }

    #[test]
    fn a_map_entry_that_does_not_read_is_an_error() {
        let mut bad = maps();
        bad.queues.insert("Ethernet0".into(), "oid:0x99".into());
        assert!(Queues::from_maps(&bad).unwrap_err().to_string().contains("a queue is named <port>:<position>"));
        let mut bad = maps();
        bad.queue_index.insert("oid:0x13".into(), "three".into());
        assert!(Queues::from_maps(&bad).unwrap_err().to_string().contains("a queue index is a number"));
    }
}
