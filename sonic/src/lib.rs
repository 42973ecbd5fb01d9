//! SONiC as it runs on a switch: its Redis databases, the names it gives ports and queues, the
//! counters each ASIC family has, and what its PFC watchdog records — for the sensors and
//! actuators that work on SONiC switches, and for their tests.
//!
//! # Brief overview
//!
//! - [`layout`]: where each database lives ([`DatabaseLayout`] from `database_config.json`,
//!   [`GlobalLayout`] for multi-ASIC switches, the optional password file);
//! - [`client`]: the switch's Redis over its unix socket or TCP: [`Switch`] opens a [`Db`];
//!   reads that say "absent" only when Redis does; CONFIG_DB writes in one transaction
//!   ([`ConfigDb::apply`], [`Change::Replace`] as `pfcwd start` rewrites an entry); keyspace
//!   notifications and channels ([`client::subscribe`]);
//! - [`names`]: SONiC port names and aliases ([`PortNames`]), queues by oid and by port
//!   ([`Queues`], from the COUNTERS_DB [`NameMaps`]), unicast versus multicast;
//! - [`qos`]: PFC priority → queue through `PORT_QOS_MAP` and `MAP_PFC_PRIORITY_TO_QUEUE`
//!   ([`Qos`]), never a multicast queue;
//! - [`asic`]: [`AsicFamily`] (Mellanox, VS, Broadcom, Marvell), how each is recognised, and
//!   what a storm poll is on each ([`AsicFamily::storming`]);
//! - [`hash`]: the generic hash's fields (`SWITCH_HASH|GLOBAL` `ecmp_hash`) and what a switch
//!   can hash on (STATE_DB `SWITCH_CAPABILITY|switch`);
//! - [`watchdog`]: the PFC watchdog's record per queue and port ([`WatchdogReader`]), its
//!   storm/restore channel ([`watchdog::Events`]), and the evidence that a change took effect
//!   ([`watchdog::RestartWatch`], [`watchdog::InForce`]);
//! - [`gnmi`]: the same databases over gNMI as sonic-gnmi serves them, from a client's side:
//!   [`gnmi::SwitchGnmi`] reads in the switch's style and says "absent" only on sonic-gnmi's
//!   own words ([`gnmi::texts`]); [`gnmi::write`] makes CONFIG_DB changes the Sets sonic-gnmi
//!   applies as meant (origin `sonic-db`, a replace as two Sets); a TLS mismatch is named;
//! - [`probe`]: one probe per switch, shared by the gNMI sensor and the switch actuators
//!   ([`probe::ProfileCache::global`]): its read style, whether it can be written, its
//!   instance element, its ports and aliases, its ASIC family ([`probe::SwitchProfile`]);
//! - `gnmi_front` (feature `gnmi-server`): a gNMI server that routes, serves and refuses as
//!   sonic-gnmi does, over the switch's Redis or an in-memory store of SONiC's databases;
//! - `peer` (feature `test-peer`): a SONiC switch for tests — a real `redis-server` seeded with
//!   sonic-utilities' databases, and an orchagent-like watchdog running SONiC's own Lua
//!   detectors.
//!
//! ```
//! use sonic::asic::{AsicFamily, StormSample};
//! use sonic::layout::DatabaseLayout;
//! use sonic::names::PortNames;
//! use std::time::Duration;
//!
//! // The layout every image has (read `database_config.json` with `DatabaseLayout::load`).
//! let layout = DatabaseLayout::standard();
//! let config = layout.database("CONFIG_DB").unwrap();
//! assert_eq!((config.id, config.key("PFC_WD", "Ethernet4")), (4, "PFC_WD|Ethernet4".to_string()));
//!
//! // Aliases map back to SONiC names, slashes and all.
//! let ports = PortNames::new([("Ethernet0".to_string(), Some("Ethernet1/1".to_string()))]).unwrap();
//! assert_eq!(ports.resolve("Ethernet1/1").unwrap(), "Ethernet0");
//!
//! // Broadcom has no pause duration: a storm poll is PFC frames arriving, no XON, queue paused.
//! let poll = |rx, paused| StormSample {
//!     pfc_rx_pkts: Some(rx), on2off_rx_pkts: Some(0), queue_paused: Some(paused),
//!     queue_tx_pkts: Some(9), queue_occupancy_bytes: Some(0), ..StormSample::default()
//! };
//! let step = Duration::from_millis(200);
//! assert_eq!(AsicFamily::Broadcom.storming(&poll(10, true), &poll(30, true), step), Some(true));
//! assert_eq!(AsicFamily::Broadcom.storming(&poll(10, false), &poll(30, true), step), Some(false));
//! ```

#![deny(missing_docs)]

pub mod asic;
pub mod client;
pub mod gnmi;
#[cfg(feature = "gnmi-server")]
pub mod gnmi_front;
pub mod hash;
pub mod layout;
pub mod names;
#[cfg(any(test, feature = "test-peer"))]
pub mod peer;
pub mod probe;
pub mod qos;
pub mod watchdog;

pub use asic::{AsicFamily, StormSample};
pub use client::{Change, ConfigDb, Db, DbError, Switch};
pub use layout::{DatabaseLayout, GlobalLayout, LayoutError};
pub use names::{NameError, NameMaps, PortNames, Queue, Queues};
pub use qos::Qos;
pub use watchdog::WatchdogReader;
