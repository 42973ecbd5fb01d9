//! The `gnmi` sensor: streams switch telemetry over gNMI Subscribe.
//!
//! Each target (a switch: address, name, optional TLS and credentials) gets
//! one task and one STREAM subscription built from presets (`sonic_pfc`,
//! `sonic_queues`, `sonic_pfcwd`, `openconfig_interfaces`) and the user's own
//! paths. Updates are mapped to metrics by [`mapping`]
//! (`switch_pfc_rx_pkts{switch,port,prio}`, `switch_oper_up{switch,port}`,
//! …); a stream that fails reconnects with bounded, jittered backoff.
//!
//! - [`config`]: [`GnmiConfig`], the user's settings;
//! - [`mapping`]: gNMI paths and fields → metric names and labels;
//! - [`sensor`]: [`GnmiSensor`], the running part.

pub mod config;
pub mod mapping;
pub mod sensor;

pub use config::{GnmiConfig, Preset};
pub use sensor::GnmiSensor;
