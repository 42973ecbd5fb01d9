//! The `sonic_redis` sensor: a SONiC switch read from its own Redis, by a rocemend running on
//! the switch (a container with `/var/run/redis` mounted).
//!
//! It reads what sonic-swss writes, through the name maps, over the switch's Redis unix socket
//! ([`sonic::client`]): the layout from `database_config.json` (the image's standard one when
//! the file is absent), the password from `/run/redis/auth/passwd` when the build sets one.
//!
//! - every `interval_ms` (1 s by default: SONiC's port counters refresh once a second), in one
//!   transaction: COUNTERS_DB `COUNTERS:<port oid>` (PFC counters, each ASIC family's set) and
//!   `COUNTERS:<queue oid>` (queue counters, Broadcom's `SAI_QUEUE_ATTR_PAUSE_STATUS`, the
//!   watchdog's `PFC_WD_STATUS` and storm counts), then APPL_DB `PORT_TABLE:<port>`
//!   `oper_status`;
//! - ON_CHANGE, between polls: keyspace notifications of APPL_DB `PORT_TABLE:*` (port status)
//!   and `PFC_WD_TABLE_INSTORM:*` (orchagent's record of a storm), each read and sent at once;
//! - the series are those of [`crate::switch_series`], the same the `gnmi` sensor produces, so
//!   the standard rules read either; ports by their SONiC name (the key of `PORT|<name>`),
//!   queues by position, priorities through `PORT_QOS_MAP` and `MAP_PFC_PRIORITY_TO_QUEUE`.
//!
//! Failing closed: a field that does not read is one error (counted, logged once per field) and
//! the rest of the poll is used; the name maps missing (orchagent not up), a Redis error or a
//! subscription lost end the session, and the sensor reads everything again on reconnecting,
//! with a `reconnected` and a `gap` note measured from the last good poll.
//!
//! - [`config`]: [`SonicRedisConfig`], the settings;
//! - `read`: the tables a [`SwitchView`](crate::switch_series::SwitchView) is built from, and
//!   one poll's readings;
//! - [`sensor`]: [`SonicRedisSensor`], its session and reconnection.

pub mod config;
pub mod read;
pub mod sensor;

pub use config::SonicRedisConfig;
pub use sensor::SonicRedisSensor;
