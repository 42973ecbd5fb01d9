//! syncd's part: its flex counter groups copy the data plane's counters into COUNTERS_DB, and
//! the PFC_WD group then runs the watchdog's Lua plugins on them.
//!
//! - The `PFC_WD` group (orchagent registers it, `pfcwdsworch.cpp:230-265`) polls, every
//!   watchdog poll, the lossless priorities' port counters of watched ports and the queue
//!   counters (and, on Broadcom, the pause status attribute) of watched queues; after writing
//!   them it stamps `COUNTERS:TIME_STAMP` `PFC_WD_Port_Counter_time_stamp` (steady clock, ns;
//!   sairedis `FlexCounter.cpp:1806-1832`), then runs the detector and the restore script with
//!   EVALSHA, KEYS the queue oids and ARGV the COUNTERS_DB number, `COUNTERS` and the poll
//!   interval in ms (`FlexCounter.cpp:4164-4185`, `:1582-1613`).
//! - The `PORT` group polls every port's PFC counters every second (`FLEX_COUNTER_TABLE|PORT`
//!   `POLL_INTERVAL` 1000 in the image), which is what a sensor reading PFC counters sees on
//!   ports the watchdog does not watch.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use redis::aio::MultiplexedConnection;

use super::dataplane::DataPlane;
use crate::asic::{AsicFamily, QUEUE_PAUSE_STATUS, QUEUE_STATS};

/// The PFC_WD group's members: port oid → lossless priorities, and the watched queues.
#[derive(Debug, Default, Clone)]
pub(crate) struct Registry {
    pub ports: BTreeMap<String, BTreeSet<u8>>,
    pub queues: BTreeSet<String>,
}

impl Registry {
    /// The watched queues in the order syncd passes them (its map is ordered by object id).
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.queues.iter().cloned().collect();
        keys.sort_by_key(|oid| u64::from_str_radix(oid.trim_start_matches("oid:0x"), 16).unwrap_or(u64::MAX));
        keys
    }
}

/// One PFC_WD group poll's counter writes, as one pipeline.
pub(crate) async fn write_pfc_wd_group(
    conn: &mut MultiplexedConnection,
    family: AsicFamily,
    plane: &DataPlane,
    registry: &Registry,
    now: Instant,
) -> redis::RedisResult<()> {
    let mut pipe = redis::pipe();
    for (port_oid, priorities) in &registry.ports {
        let Some(port) = plane.ports.get(port_oid) else { continue };
        let fields: Vec<(String, String)> = priorities.iter().flat_map(|&p| port_fields(family, port, p)).collect();
        if !fields.is_empty() {
            pipe.hset_multiple(format!("COUNTERS:{port_oid}"), &fields).ignore();
        }
    }
    for oid in &registry.queues {
        let Some(queue) = plane.queues.get(oid) else { continue };
        let mut fields = vec![
            (QUEUE_STATS[0].to_string(), queue.tx.to_string()),
            (QUEUE_STATS[1].to_string(), queue.occupancy.to_string()),
            ("SAI_QUEUE_STAT_DROPPED_PACKETS".to_string(), queue.dropped.to_string()),
        ];
        if family == AsicFamily::Broadcom {
            fields.push((QUEUE_PAUSE_STATUS.to_string(), queue.paused.to_string()));
        }
        pipe.hset_multiple(format!("COUNTERS:{oid}"), &fields).ignore();
    }
    let stamp = now.saturating_duration_since(plane.epoch).as_nanos().to_string();
    pipe.hset("COUNTERS:TIME_STAMP", "PFC_WD_Port_Counter_time_stamp", stamp).ignore();
    pipe.query_async(conn).await
}

/// One PORT group poll: every modelled port's PFC counters, all priorities.
pub(crate) async fn write_port_group(
    conn: &mut MultiplexedConnection,
    family: AsicFamily,
    plane: &DataPlane,
) -> redis::RedisResult<()> {
    let mut pipe = redis::pipe();
    for (oid, port) in &plane.ports {
        let fields: Vec<(String, String)> = (0..8).flat_map(|p| port_fields(family, port, p)).collect();
        pipe.hset_multiple(format!("COUNTERS:{oid}"), &fields).ignore();
    }
    pipe.query_async(conn).await
}

fn port_fields(family: AsicFamily, port: &super::dataplane::PortModel, priority: u8) -> Vec<(String, String)> {
    let p = usize::from(priority);
    let mut fields = vec![(AsicFamily::pfc_rx_counter(priority), port.rx[p].to_string())];
    if let Some(name) = family.pause_duration_counter(priority) {
        fields.push((name, port.duration[p].to_string()));
    }
    if let Some(name) = family.on2off_counter(priority) {
        fields.push((name, port.on2off[p].to_string()));
    }
    fields
}

/// Runs one Lua plugin as syncd does.
pub(crate) async fn run_plugin(
    conn: &mut MultiplexedConnection,
    sha: &str,
    keys: &[String],
    counters_db: u32,
    poll_ms: u128,
) -> redis::RedisResult<()> {
    redis::cmd("EVALSHA")
        .arg(sha)
        .arg(keys.len())
        .arg(keys)
        .arg(counters_db)
        .arg("COUNTERS")
        .arg(poll_ms.to_string())
        .query_async::<redis::Value>(conn)
        .await
        .map(drop)
}
