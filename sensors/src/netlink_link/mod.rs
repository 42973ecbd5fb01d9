//! The `netlink_link` sensor: carrier counters and operational state of
//! every network link, pushed by the kernel over rtnetlink.
//!
//! At start (and after every reconnection or receive-buffer overrun) the
//! sensor dumps all links, then listens on the `RTNLGRP_LINK` multicast group:
//! each `RTM_NEWLINK` becomes a [`Batch`](engine::Batch) at once, stamped with
//! the wall clock at receipt. Per link (filtered by name) it emits
//!
//! - `link_carrier_down_count` / `link_carrier_up_count`: 32-bit wrapping
//!   counters from `IFLA_CARRIER_DOWN_COUNT` / `IFLA_CARRIER_UP_COUNT`;
//! - `link_oper_up`: 1 when `IFLA_OPERSTATE` is UP, else 0;
//! - `link_transition{to}`: one event per carrier change, derived from how
//!   much the counters rose since the previous message, so a flap shorter
//!   than the gap between two messages (or lost to an overrun) still counts.
//!
//! - [`config`]: [`NetlinkLinkConfig`], the user's settings;
//! - [`tracker`]: [`LinkTracker`], messages in, samples out (no I/O);
//! - [`sensor`]: [`NetlinkLinkSensor`], the subscription and its retries.

pub mod config;
pub mod sensor;
pub mod tracker;

pub use config::{NameFilter, NetlinkLinkConfig};
pub use sensor::NetlinkLinkSensor;
pub use tracker::{LinkReading, LinkTracker};
