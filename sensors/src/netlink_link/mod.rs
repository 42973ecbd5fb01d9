//! The `netlink_link` sensor: carrier counters and operational state of
//! every network link, pushed by the kernel over rtnetlink, and sent again
//! on a heartbeat while nothing changes.
//!
//! At start (and after every reconnection or receive-buffer overrun) the
//! sensor dumps all links and sends every watched link's state at once, then
//! listens on the `RTNLGRP_LINK` multicast group: each `RTM_NEWLINK` becomes
//! a [`Batch`](engine::Batch) at once, stamped with the wall clock at
//! receipt. Per link (filtered by name) it emits
//!
//! - `link_carrier_down_count` / `link_carrier_up_count`: 32-bit wrapping
//!   counters from `IFLA_CARRIER_DOWN_COUNT` / `IFLA_CARRIER_UP_COUNT`;
//! - `link_oper_up`: 1 when `IFLA_OPERSTATE` is UP, else 0;
//! - `link_transition{to}`: one event per carrier change, derived from how
//!   much the counters rose since the previous message, so a flap shorter
//!   than the gap between two messages (or lost to an overrun) still counts.
//!
//! Every `heartbeat` (1 s by default; `"0"` turns it off) it sends the two
//! counters and `link_oper_up` of every watched link again, unchanged values
//! included, stamped with the time of the beat; events are never repeated.
//! The kernel only speaks on a change, and a rule finds a subject stale when
//! its newest sample is older than the rule's `stale_after` (5 s by
//! default): without the beat, every link that stays up, or stays down after
//! `link.isolate`, would go stale, and its rule instance could neither fire
//! nor resolve. With it, a link goes stale only when the sensor stops: its
//! subscription failed (the beat stops with it) or the daemon lost it. A
//! deleted link is forgotten and no longer sent (its series then go stale
//! too: the engine has no way yet to retire a series).
//!
//! - [`config`]: [`NetlinkLinkConfig`], the user's settings;
//! - [`tracker`]: [`LinkTracker`], messages in, samples out (no I/O);
//! - [`sensor`]: [`NetlinkLinkSensor`], the subscription, its heartbeat and
//!   its retries;
//! - `source`: the rtnetlink socket behind a small trait, so the tests can
//!   drive the sensor's loop with a script on a paused clock.

pub mod config;
pub mod sensor;
mod source;
pub mod tracker;

pub use config::{NameFilter, NetlinkLinkConfig};
pub use sensor::NetlinkLinkSensor;
pub use tracker::{LinkReading, LinkTracker};
