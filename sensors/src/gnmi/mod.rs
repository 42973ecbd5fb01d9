//! The `gnmi` sensor: streams switch telemetry over gNMI Subscribe.
//!
//! Each target (a switch: address, name, optional TLS and credentials) gets
//! one task, with one STREAM subscription per request prefix, each on a
//! connection of its own (sonic-gnmi ends a client's running Subscribe when
//! a second one arrives), built from presets (`sonic_pfc`, `sonic_queues`, `sonic_pfcwd`,
//! `openconfig_interfaces`) and the user's own paths. gNMI reads a target
//! only in the request prefix (spec 2.2.2.1), so that is where it goes: a
//! SONiC database is named by the prefix's target (`prefix-target`, classic
//! SONiC telemetry) or by origin `sonic-db` and the database as the first
//! path element (`sonic-db-origin`), per target, or found out at the first
//! connection (`auto`). Updates, named by the notification's prefix joined
//! with their path, are mapped to metrics by [`mapping`]
//! (`switch_pfc_rx_pkts{switch,port,prio}`, `switch_oper_up{switch,port}`,
//! …); ON_CHANGE values are sent again on a heartbeat so they go stale only
//! when the sensor is gone; a stream that fails reconnects within about
//! `backoff_initial` of the switch's return, and a `reconnected` note tells
//! the daemon to read back what it set on that switch.
//!
//! - [`config`]: [`GnmiConfig`], the user's settings;
//! - [`plan`]: the typed plan they build: per target, the path style and
//!   the Subscribe requests;
//! - [`mapping`]: gNMI paths and fields → metric names and labels;
//! - `queues`: a queue table mapped straight from its JSON text, without a
//!   tree (the bulk of a large aggregator's updates);
//! - [`sensor`]: [`GnmiSensor`], the running part: a task per target and
//!   its reconnection;
//! - `session`: one connection: style detection, streams, heartbeat;
//! - [`ingest`]: notifications → samples, the ON_CHANGE memory, parse errors.

pub mod config;
pub mod ingest;
pub mod mapping;
pub mod plan;
mod queues;
pub mod sensor;
mod session;

pub use config::{GnmiConfig, PathStyleSetting, Preset};
pub use sensor::GnmiSensor;
