//! The switch's data plane, reduced to the counters SONiC's watchdog reads, and the storms a
//! test injects into it. syncd's part ([`super::syncd`]) copies these numbers into COUNTERS_DB
//! the way its flex counter groups do; orchagent's handlers read them as they would call SAI.
//!
//! A storm on (port, priority) is a peer that keeps sending PFC pause frames for the priority:
//! each poll, the port's PFC RX frames grow and its pause duration grows by the time the storm
//! was on since the last poll (paused all the time from its start, so the first poll after a
//! start counts only part of its interval, as an ASIC's counter would); ON2OFF (XON) frames do
//! not come; the priority's queues hold data (occupancy > 0), send nothing (but what they sent
//! before the storm began), and read as paused. Without a storm traffic flows: the
//! queues send, hold nothing, and are not paused. Once the watchdog turns PFC off for the
//! priority (a drop or forward handler), the pause frames are still received but ignored:
//! the queue drains — dropping (drop) or sending (forward).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::watchdog::Action;

/// Bytes a queue holds while paused by a storm (1 MiB: a full lossless queue).
const STUCK_BYTES: u64 = 1 << 20;

/// One port's PFC counters, per priority.
#[derive(Debug, Clone, Default)]
pub(crate) struct PortModel {
    /// The port's SONiC name.
    pub name: String,
    /// `SAI_PORT_STAT_PFC_n_RX_PKTS`.
    pub rx: [u64; 8],
    /// `SAI_PORT_STAT_PFC_n_ON2OFF_RX_PKTS` (Broadcom).
    pub on2off: [u64; 8],
    /// The pause duration counter (µs; Marvell's counts the same numbers).
    pub duration: [u64; 8],
    /// Since when a storm is injected on the priority, if one is.
    pub storm_since: [Option<Instant>; 8],
}

/// One queue's counters.
#[derive(Debug, Clone, Default)]
pub(crate) struct QueueModel {
    /// Its port's object id.
    pub port_oid: String,
    /// Its SAI index (`COUNTERS_QUEUE_INDEX_MAP`): the detectors read the port's PFC counters
    /// of this number, so a storm on priority *n* holds the queues of index *n*.
    pub index: u32,
    /// `SAI_QUEUE_STAT_PACKETS`.
    pub tx: u64,
    /// `SAI_QUEUE_STAT_DROPPED_PACKETS`.
    pub dropped: u64,
    /// `SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES`.
    pub occupancy: u64,
    /// `SAI_QUEUE_ATTR_PAUSE_STATUS`.
    pub paused: bool,
}

/// What orchagent's handlers read through SAI (`PfcWdLossyHandler::getHwCounters`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HwStats {
    pub tx: u64,
    pub tx_dropped: u64,
    pub rx: u64,
    pub rx_dropped: u64,
}

/// Frames (and packets) in `d`: one per millisecond, at least one.
fn frames(d: Duration) -> u64 {
    (d.as_millis() as u64).max(1)
}

/// The data plane of every modelled port and queue.
#[derive(Debug, Clone)]
pub(crate) struct DataPlane {
    pub ports: BTreeMap<String, PortModel>,
    pub queues: BTreeMap<String, QueueModel>,
    /// The steady clock's origin for syncd's timestamps.
    pub epoch: Instant,
    last: Option<Instant>,
}

impl DataPlane {
    pub fn new(ports: BTreeMap<String, PortModel>, queues: BTreeMap<String, QueueModel>) -> Self {
        DataPlane { ports, queues, epoch: Instant::now(), last: None }
    }

    /// Moves the counters from the last call to `now`. `handled` holds the queues a drop or
    /// forward handler has taken over (PFC off for their priority).
    pub fn advance(&mut self, now: Instant, handled: &BTreeMap<String, Action>) {
        let Some(last) = self.last.replace(now) else { return };
        let elapsed = now.saturating_duration_since(last);
        if elapsed.is_zero() {
            return;
        }
        // The part of the interval a storm started at `since` covers.
        let stormed = |since: Option<Instant>| since.map(|since| now.saturating_duration_since(since.max(last)));
        for port in self.ports.values_mut() {
            for p in 0..8 {
                if let Some(on) = stormed(port.storm_since[p]) {
                    port.rx[p] += frames(on);
                    port.duration[p] += on.as_micros() as u64;
                }
            }
        }
        for (oid, queue) in self.queues.iter_mut() {
            let since = self.ports.get(&queue.port_oid).and_then(|p| p.storm_since.get(queue.index as usize).copied());
            let Some(on) = stormed(since.flatten()) else {
                queue.tx += frames(elapsed);
                queue.occupancy = 0;
                queue.paused = false;
                continue;
            };
            // What it sent before the storm began.
            let before = elapsed.saturating_sub(on);
            if !before.is_zero() {
                queue.tx += frames(before);
            }
            match handled.get(oid) {
                Some(Action::Drop) => {
                    queue.dropped += frames(on);
                    queue.occupancy = 0;
                    queue.paused = false;
                }
                Some(Action::Forward) => {
                    queue.tx += frames(on);
                    queue.occupancy = 0;
                    queue.paused = false;
                }
                _ => {
                    queue.occupancy = STUCK_BYTES;
                    queue.paused = true;
                }
            }
        }
    }

    /// The queue's hardware counters, as a handler reads them.
    pub fn hw_stats(&self, queue: &str) -> HwStats {
        self.queues.get(queue).map_or_else(HwStats::default, |q| HwStats {
            tx: q.tx,
            tx_dropped: q.dropped,
            rx: 0,
            rx_dropped: 0,
        })
    }
}
