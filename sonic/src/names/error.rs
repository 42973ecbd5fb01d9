//! A name, queue or QoS map that does not resolve.

use crate::client::DbError;

/// A port, queue or priority that cannot be resolved, or a map SONiC wrote that does not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// Reading the maps failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// No port has this name or alias.
    #[error("no port is named or aliased {0:?}")]
    UnknownPort(String),
    /// The text is one port's name and another port's alias: which one is meant cannot be told.
    #[error("{given:?} is port {given}'s name and port {alias_of}'s alias; say which port by its SONiC name")]
    AmbiguousPort {
        /// What was given.
        given: String,
        /// The port whose alias it is.
        alias_of: String,
    },
    /// Two ports share an alias.
    #[error("ports {first} and {second} both have alias {alias:?}")]
    DuplicateAlias {
        /// The alias.
        alias: String,
        /// One port.
        first: String,
        /// The other.
        second: String,
    },
    /// The port has no unicast queue of this index.
    #[error("port {port} has no unicast queue {index} in COUNTERS_QUEUE_NAME_MAP/COUNTERS_QUEUE_INDEX_MAP")]
    UnknownQueue {
        /// The port.
        port: String,
        /// The queue index.
        index: u32,
    },
    /// The queue a priority maps to is not a unicast queue: PFC pauses unicast queues, and
    /// reading a multicast queue's counters for a priority would watch the wrong traffic.
    #[error("port {port} queue {index} ({oid}) is {kind}, not unicast; a PFC priority is never a multicast queue")]
    NotUnicast {
        /// The port.
        port: String,
        /// The queue index.
        index: u32,
        /// The queue's object id.
        oid: String,
        /// Its type as COUNTERS_QUEUE_TYPE_MAP says (or `of unknown type`).
        kind: String,
    },
    /// The port names a priority → queue map that CONFIG_DB does not have.
    #[error("PORT_QOS_MAP|{port} pfc_to_queue_map names {map:?}, but MAP_PFC_PRIORITY_TO_QUEUE|{map} does not exist")]
    MissingMap {
        /// The port.
        port: String,
        /// The map's name.
        map: String,
    },
    /// The map does not map this priority.
    #[error("MAP_PFC_PRIORITY_TO_QUEUE|{map} (used by {port}) does not map priority {priority}")]
    PriorityNotMapped {
        /// The port.
        port: String,
        /// The map.
        map: String,
        /// The priority.
        priority: u8,
    },
    /// A value SONiC writes in a known form is not in it.
    #[error("{key} {field} {value:?}: {expected}")]
    BadValue {
        /// The Redis key (`PORT_QOS_MAP|Ethernet4`, `COUNTERS_QUEUE_NAME_MAP`).
        key: String,
        /// The field.
        field: String,
        /// The value found.
        value: String,
        /// What it should look like.
        expected: &'static str,
    },
}
