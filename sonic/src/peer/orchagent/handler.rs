//! The storm handlers (`pfcactionhandler.cpp`): what a storm does to the queue and its port,
//! and the counters each handler keeps in COUNTERS_DB.
//!
//! - alert (`PfcWdActionHandler`): counters only; its hardware counters read as zeros;
//! - forward (`PfcWdLossyHandler`): PFC off for the priority in the port's mask
//!   (`:541-595`), restored when the handler goes; its counters are the queue's SAI counters;
//! - drop: the lossy handler plus, on Mellanox, VS and Marvell, the queue's buffer profile
//!   swapped for a zero one (`PfcWdZeroBufferHandler`, `:660-727`); on Broadcom the ACL drop
//!   rule (`PfcWdAclHandler`) is not modelled, only its lossy part.
//!
//! The port's PFC mask and the queue's buffer profile are kept where syncd keeps SAI state:
//! ASIC_DB `ASIC_STATE:SAI_OBJECT_TYPE_PORT:<oid>` / `…_QUEUE:<oid>`.

use redis::AsyncCommands;

use super::{Orchagent, QueueEntry};
use crate::asic::AsicFamily;
use crate::peer::dataplane::HwStats;
use crate::watchdog::{fields, Action};

/// The buffer profile a drop handler gives the queue (`ZeroBufferProfile`), as an object id.
const ZERO_PROFILE: &str = "oid:0x19000000000fff";
const PFC_MASK: &str = "SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL";
const QUEUE_PROFILE: &str = "SAI_QUEUE_ATTR_BUFFER_PROFILE_ID";

/// Which `PfcWdActionHandler` a storm got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HandlerKind {
    /// `PfcWdActionHandler`: counters only.
    Alert,
    /// `PfcWdLossyHandler` (and `PfcWdZeroBufferHandler` when `zero_buffer`).
    Lossy { zero_buffer: bool, original_profile: Option<String> },
}

#[derive(Debug, Clone)]
pub(super) struct Handler {
    pub kind: HandlerKind,
    /// `m_hwStats`: the hardware counters at the last commit.
    pub hw: HwStats,
}

/// `PfcWdQueueStats`, as `getQueueStats` reads it.
#[derive(Debug, Clone, Default)]
pub(super) struct QueueStats {
    detect: u64,
    restore: u64,
    operational: bool,
    tx: u64,
    tx_drop: u64,
    rx: u64,
    rx_drop: u64,
    tx_last: u64,
    tx_drop_last: u64,
    rx_last: u64,
    rx_drop_last: u64,
}

impl Orchagent {
    /// The handler of the entry's action, constructed (PFC off, zero buffer) and its counters
    /// initialised (`initCounters`).
    pub(super) async fn make_handler(&self, queue: &str, entry: &QueueEntry) -> Result<Handler, String> {
        let kind = match entry.action {
            Action::Alert => HandlerKind::Alert,
            Action::Forward => HandlerKind::Lossy { zero_buffer: false, original_profile: None },
            // Broadcom's drop handler is the ACL one (PfcWdAclHandler), the others the zero buffer.
            Action::Drop => {
                HandlerKind::Lossy { zero_buffer: self.family != AsicFamily::Broadcom, original_profile: None }
            }
        };
        let kind = match kind {
            HandlerKind::Lossy { zero_buffer, .. } => {
                self.set_pfc_bit(&entry.port_oid, entry.index, false).await?;
                let original_profile =
                    if zero_buffer { self.swap_profile(queue, Some(ZERO_PROFILE.into())).await? } else { None };
                HandlerKind::Lossy { zero_buffer, original_profile }
            }
            alert => alert,
        };
        let mut handler = Handler { kind, hw: HwStats::default() };
        handler.hw = self.hw_stats(queue, &handler);
        let mut stats = self.queue_stats(queue).await?;
        // A storm already counted (before a warm reboot) is not counted twice.
        if stats.detect <= stats.restore {
            stats.detect += 1;
            stats.tx_last = 0;
            stats.tx_drop_last = 0;
            stats.rx_last = 0;
            stats.rx_drop_last = 0;
        }
        stats.operational = false;
        self.update_wd_counters(queue, &stats).await?;
        tracing::info!(message = "SONiC peer: PFC storm handled.", port = %entry.port, priority = entry.index, action = entry.action.as_str());
        Ok(handler)
    }

    /// The handler's destructor: PFC back on, the queue's buffer profile back.
    pub(super) async fn drop_handler(&self, queue: &str, entry: &QueueEntry, handler: Handler) {
        if let HandlerKind::Lossy { zero_buffer, original_profile } = handler.kind {
            if zero_buffer {
                if let Err(e) = self.swap_profile(queue, original_profile).await {
                    self.note_error(e);
                }
            }
            if let Err(e) = self.set_pfc_bit(&entry.port_oid, entry.index, true).await {
                self.note_error(e);
            }
        }
    }

    /// `getHwCounters`: zeros for an alert handler, the queue's SAI counters for a lossy one.
    fn hw_stats(&self, queue: &str, handler: &Handler) -> HwStats {
        match handler.kind {
            HandlerKind::Alert => HwStats::default(),
            HandlerKind::Lossy { .. } => self.shared.plane.lock().unwrap_or_else(|e| e.into_inner()).hw_stats(queue),
        }
    }

    /// `commitCounters(periodic)`.
    pub(super) async fn commit_counters(
        &self,
        queue: &str,
        handler: &Handler,
        periodic: bool,
    ) -> Result<HwStats, String> {
        let hw = self.hw_stats(queue, handler);
        let mut stats = self.queue_stats(queue).await?;
        if !periodic {
            stats.restore += 1;
        }
        stats.operational = !periodic;
        let d = |now: u64, then: u64| now.wrapping_sub(then);
        stats.tx_last += d(hw.tx, handler.hw.tx);
        stats.tx_drop_last += d(hw.tx_dropped, handler.hw.tx_dropped);
        stats.rx_last += d(hw.rx, handler.hw.rx);
        stats.rx_drop_last += d(hw.rx_dropped, handler.hw.rx_dropped);
        stats.tx += d(hw.tx, handler.hw.tx);
        stats.tx_drop += d(hw.tx_dropped, handler.hw.tx_dropped);
        stats.rx += d(hw.rx, handler.hw.rx);
        stats.rx_drop += d(hw.rx_dropped, handler.hw.rx_dropped);
        self.update_wd_counters(queue, &stats).await?;
        Ok(hw)
    }

    /// `getQueueStats`.
    async fn queue_stats(&self, queue: &str) -> Result<QueueStats, String> {
        let entry =
            self.counters.hash(&format!("COUNTERS:{queue}")).await.map_err(|e| e.to_string())?.unwrap_or_default();
        let n = |field: &str| entry.get(field).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        Ok(QueueStats {
            detect: n(fields::DETECTED),
            restore: n(fields::RESTORED),
            operational: entry.get(fields::STATUS).is_none_or(|s| s == "operational"),
            tx: n("PFC_WD_QUEUE_STATS_TX_PACKETS"),
            tx_drop: n("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS"),
            rx: n("PFC_WD_QUEUE_STATS_RX_PACKETS"),
            rx_drop: n("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS"),
            tx_last: n("PFC_WD_QUEUE_STATS_TX_PACKETS_LAST"),
            tx_drop_last: n("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS_LAST"),
            rx_last: n("PFC_WD_QUEUE_STATS_RX_PACKETS_LAST"),
            rx_drop_last: n("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS_LAST"),
        })
    }

    /// `initWdCounters`: the counts kept, the status operational.
    pub(super) async fn init_wd_counters(&self, queue: &str) -> Result<(), String> {
        let stats = self.queue_stats(queue).await?;
        let values = [
            (fields::DETECTED, stats.detect.to_string()),
            (fields::RESTORED, stats.restore.to_string()),
            (fields::STATUS, "operational".to_string()),
        ];
        let mut conn = self.counters.connection();
        conn.hset_multiple::<_, _, _, ()>(format!("COUNTERS:{queue}"), &values).await.map_err(|e| e.to_string())
    }

    /// `updateWdCounters`.
    async fn update_wd_counters(&self, queue: &str, s: &QueueStats) -> Result<(), String> {
        let values = [
            (fields::DETECTED, s.detect),
            (fields::RESTORED, s.restore),
            ("PFC_WD_QUEUE_STATS_TX_PACKETS", s.tx),
            ("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS", s.tx_drop),
            ("PFC_WD_QUEUE_STATS_RX_PACKETS", s.rx),
            ("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS", s.rx_drop),
            ("PFC_WD_QUEUE_STATS_TX_PACKETS_LAST", s.tx_last),
            ("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS_LAST", s.tx_drop_last),
            ("PFC_WD_QUEUE_STATS_RX_PACKETS_LAST", s.rx_last),
            ("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS_LAST", s.rx_drop_last),
        ];
        let mut values: Vec<(&str, String)> = values.iter().map(|(f, v)| (*f, v.to_string())).collect();
        values.push((fields::STATUS, if s.operational { "operational" } else { "stormed" }.to_string()));
        let mut conn = self.counters.connection();
        conn.hset_multiple::<_, _, _, ()>(format!("COUNTERS:{queue}"), &values).await.map_err(|e| e.to_string())
    }

    /// `PortsOrch::setPortPfc` through a handler: one priority's bit of the port's PFC mask in
    /// ASIC_DB.
    async fn set_pfc_bit(&self, port_oid: &str, priority: u8, on: bool) -> Result<(), String> {
        let key = format!("ASIC_STATE:SAI_OBJECT_TYPE_PORT:{port_oid}");
        let mut conn = self.asic.connection();
        let mask: Option<String> = conn.hget(&key, PFC_MASK).await.map_err(|e| e.to_string())?;
        let mask: u8 = mask.and_then(|m| m.parse().ok()).unwrap_or(0);
        let mask = if on { mask | (1 << priority) } else { mask & !(1 << priority) };
        conn.hset::<_, _, _, ()>(&key, PFC_MASK, mask.to_string()).await.map_err(|e| e.to_string())
    }

    /// Sets (or with `None`, removes) the queue's buffer profile in ASIC_DB; returns the old one.
    async fn swap_profile(&self, queue: &str, profile: Option<String>) -> Result<Option<String>, String> {
        let key = format!("ASIC_STATE:SAI_OBJECT_TYPE_QUEUE:{queue}");
        let mut conn = self.asic.connection();
        let old: Option<String> = conn.hget(&key, QUEUE_PROFILE).await.map_err(|e| e.to_string())?;
        match profile {
            Some(p) => conn.hset::<_, _, _, ()>(&key, QUEUE_PROFILE, p).await,
            None => conn.hdel::<_, _, ()>(&key, QUEUE_PROFILE).await,
        }
        .map_err(|e| e.to_string())?;
        Ok(old)
    }
}
