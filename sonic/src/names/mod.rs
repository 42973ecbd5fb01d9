//! SONiC's names for ports and queues.
//!
//! A port has one name everywhere in rocemend: its SONiC name (`Ethernet4`), the key of
//! `PORT|Ethernet4`, `PFC_WD|Ethernet4` and `COUNTERS_PORT_NAME_MAP`. The vendor's alias (`etp2`,
//! `Ethernet1/1`) is what sonic-gnmi's virtual paths are keyed by (`virtual_db.go:90-108`), so
//! anything read by alias is mapped back through [`PortNames`] before it is used.
//!
//! A queue is an object id (`oid:0x15000000000382`) in COUNTERS_DB. portsorch names it
//! `<port>:<position>` in `COUNTERS_QUEUE_NAME_MAP` (the position in the port's queue list) and
//! records its SAI index and type (unicast, multicast, all) in `COUNTERS_QUEUE_INDEX_MAP` and
//! `COUNTERS_QUEUE_TYPE_MAP` (`portsorch.cpp:8660-8743`, `generateQueueMapPerPort`);
//! [`Queues`] joins the maps.
//!
//! - [`ports`]: [`PortNames`], alias ↔ name from CONFIG_DB `PORT|<name>` `alias`;
//! - [`queues`]: [`NameMaps`] (the five COUNTERS_DB maps as read), [`Queues`], [`Queue`],
//!   [`QueueKind`].

mod error;
pub mod ports;
pub mod queues;

pub use error::NameError;
pub use ports::PortNames;
pub use queues::{NameMaps, Queue, QueueKind, Queues};
