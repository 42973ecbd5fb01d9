//! The switch's ASIC: what its hardware counts, before syncd copies it into COUNTERS_DB.
//!
//! Counters here are numbers, whatever the family: a Broadcom port still counts pause time
//! in this model, its SAI just does not report it (syncd, [`super::syncd`], writes what each
//! family reports). A priority's pause is honoured unless a PFC watchdog handler turned PFC
//! off for it ([`Port::pfc_off`]); what the peer sends (a storm) is [`Queue::storm_since`]
//! on the queue of that priority.

use std::time::Duration;

/// PFC priorities per port.
pub const PRIORITIES: usize = 8;

/// Packets per second each unicast queue carries when the switch's own clock advances:
/// enough that counters visibly move, small enough to stay readable.
pub const BASELINE_PPS: u64 = 1_000;
/// Bytes per packet of the baseline traffic.
pub const PACKET_BYTES: u64 = 1_024;
/// PAUSE frames per second a storming peer sends (one per ~quanta refresh at 100G, order of
/// magnitude).
pub const STORM_PAUSE_PPS: u64 = 20_000;
/// What a paused lossless queue holds: its share of the buffer, full.
pub const PAUSED_OCCUPANCY: u64 = PACKET_BYTES * 1024;

/// One priority's PFC counters of a port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pfc {
    /// PFC frames received (`SAI_PORT_STAT_PFC_n_RX_PKTS`).
    pub rx_pkts: u64,
    /// PFC frames sent.
    pub tx_pkts: u64,
    /// Time the port was held paused, µs.
    pub rx_pause_us: u64,
    /// Time the port held its peer paused, µs.
    pub tx_pause_us: u64,
    /// XON frames (pause with zero quanta) received (`…_ON2OFF_RX_PKTS`).
    pub on2off_rx_pkts: u64,
}

/// One queue.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Queue {
    /// Multicast (listed after the unicast queues).
    pub multicast: bool,
    /// Packets sent.
    pub packets: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets dropped.
    pub dropped_packets: u64,
    /// Bytes dropped.
    pub dropped_bytes: u64,
    /// Bytes held now.
    pub occupancy_bytes: u64,
    /// The most held since the watermark was last read (read and clear).
    pub watermark_bytes: u64,
    /// Packets sent ECN-marked.
    pub ecn_marked_packets: u64,
    /// When the peer started pausing this queue's priority without end (model time).
    pub storm_since: Option<Duration>,
    /// The `green_min_threshold` (bytes) of the WRED profile qosorch bound to the queue.
    pub wred_green_min: Option<f64>,
}

impl Queue {
    /// Records `bytes` held now (and in the watermark).
    pub fn hold(&mut self, bytes: u64) {
        self.occupancy_bytes = bytes;
        self.watermark_bytes = self.watermark_bytes.max(bytes);
    }
}

/// One port.
#[derive(Debug, Clone)]
pub struct Port {
    /// `EthernetN`.
    pub name: String,
    /// Its alias (`etp1`).
    pub alias: String,
    /// SAI's port object id (`oid:0x…`).
    pub oid: String,
    /// Oper-status: admin-up and the link up.
    pub oper_up: bool,
    /// Administratively up (CONFIG_DB `admin_status`, as portsorch applied it).
    pub admin_up: bool,
    /// The physical link (carrier), as a fault or a peer leaves it.
    pub link_up: bool,
    /// Oper-status changes to down (portsorch's `flap_count`).
    pub flaps: u64,
    /// Every change of oper-status.
    pub oper_transitions: u64,
    /// `SAI_PORT_STAT_IF_IN_OCTETS`.
    pub in_octets: u64,
    /// `SAI_PORT_STAT_IF_OUT_OCTETS`.
    pub out_octets: u64,
    /// `SAI_PORT_STAT_IF_IN_ERRORS`.
    pub in_errors: u64,
    /// `SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS`.
    pub fec_symbol_errors: u64,
    /// Per priority.
    pub pfc: [Pfc; PRIORITIES],
    /// Priorities whose PFC a watchdog handler turned off (bit n: priority n): their pause
    /// is not honoured.
    pub pfc_off: u8,
    /// Unicast queues, then multicast ones.
    pub queues: Vec<Queue>,
}

/// The port counters (`SAI_PORT_STAT_*`) other than PFC, by name.
pub const PORT_STATS: [&str; 4] = [
    "SAI_PORT_STAT_IF_IN_OCTETS",
    "SAI_PORT_STAT_IF_OUT_OCTETS",
    "SAI_PORT_STAT_IF_IN_ERRORS",
    "SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS",
];

/// The suffixes of the per-priority PFC counters (`SAI_PORT_STAT_PFC_<n>_<suffix>`), every
/// family's included; which a switch reports is its family's business.
pub const PFC_SUFFIXES: [&str; 7] = [
    "RX_PKTS",
    "TX_PKTS",
    "RX_PAUSE_DURATION_US",
    "TX_PAUSE_DURATION_US",
    "RX_PAUSE_DURATION",
    "TX_PAUSE_DURATION",
    "ON2OFF_RX_PKTS",
];

/// Whether `field` names a port counter some ASIC family reports.
pub fn is_port_counter(field: &str) -> bool {
    if PORT_STATS.contains(&field) {
        return true;
    }
    let Some((p, suffix)) = field.strip_prefix("SAI_PORT_STAT_PFC_").and_then(|r| r.split_once('_')) else {
        return false;
    };
    p.parse::<usize>().is_ok_and(|p| p < PRIORITIES) && PFC_SUFFIXES.contains(&suffix)
}

/// The queue counters, by name.
pub const QUEUE_STATS: [&str; 7] = [
    "SAI_QUEUE_STAT_PACKETS",
    "SAI_QUEUE_STAT_BYTES",
    "SAI_QUEUE_STAT_DROPPED_PACKETS",
    "SAI_QUEUE_STAT_DROPPED_BYTES",
    "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES",
    "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES",
    "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS",
];

/// Pause quanta per microsecond at 400 Gb/s (a quantum is 512 bit times): what Marvell's
/// `…_PAUSE_DURATION` counts.
pub const QUANTA_PER_US: f64 = 400_000.0 / 512.0;

impl Port {
    /// The `index`th port (`Ethernet<4·index>`), called `alias` for people, up, counting
    /// nothing yet, with `unicast` unicast queues then `multicast` multicast ones.
    pub fn new(index: usize, alias: String, unicast: usize, multicast: usize) -> Port {
        Port {
            name: format!("Ethernet{}", index * 4),
            alias,
            oid: port_oid(index),
            oper_up: true,
            admin_up: true,
            link_up: true,
            flaps: 0,
            oper_transitions: 0,
            in_octets: 0,
            out_octets: 0,
            in_errors: 0,
            fec_symbol_errors: 0,
            pfc: Default::default(),
            pfc_off: 0,
            queues: (0..unicast + multicast).map(|q| Queue { multicast: q >= unicast, ..Queue::default() }).collect(),
        }
    }

    /// Whether priority `p`'s pause is honoured (PFC on for it).
    pub fn pfc_on(&self, p: usize) -> bool {
        self.pfc_off & (1 << p) == 0
    }

    /// Whether the queue at `index` is held paused by its peer now.
    pub fn paused(&self, index: usize) -> bool {
        index < PRIORITIES && self.queues.get(index).is_some_and(|q| q.storm_since.is_some()) && self.pfc_on(index)
    }

    /// Recomputes oper-status from admin-status and the link; a change counts a transition
    /// (and a flap when down). Returns whether it changed.
    pub fn update_oper(&mut self) -> bool {
        let up = self.admin_up && self.link_up;
        if self.oper_up == up {
            return false;
        }
        self.oper_up = up;
        self.oper_transitions += 1;
        if !up {
            self.flaps += 1;
        }
        true
    }

    /// A port counter by its SAI name (any family's).
    pub fn counter(&self, field: &str) -> Option<u64> {
        match field {
            "SAI_PORT_STAT_IF_IN_OCTETS" => return Some(self.in_octets),
            "SAI_PORT_STAT_IF_OUT_OCTETS" => return Some(self.out_octets),
            "SAI_PORT_STAT_IF_IN_ERRORS" => return Some(self.in_errors),
            "SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS" => return Some(self.fec_symbol_errors),
            _ => {}
        }
        let (p, suffix) = field.strip_prefix("SAI_PORT_STAT_PFC_")?.split_once('_')?;
        let pfc = self.pfc.get(p.parse::<usize>().ok()?)?;
        match suffix {
            "RX_PKTS" => Some(pfc.rx_pkts),
            "TX_PKTS" => Some(pfc.tx_pkts),
            "RX_PAUSE_DURATION_US" => Some(pfc.rx_pause_us),
            "TX_PAUSE_DURATION_US" => Some(pfc.tx_pause_us),
            "ON2OFF_RX_PKTS" => Some(pfc.on2off_rx_pkts),
            _ => None,
        }
    }

    /// A port counter by its SAI name, to change; the `…_PAUSE_DURATION` (quanta) counters are
    /// views of the µs ones and cannot be set.
    pub fn counter_mut(&mut self, field: &str) -> Option<&mut u64> {
        match field {
            "SAI_PORT_STAT_IF_IN_OCTETS" => return Some(&mut self.in_octets),
            "SAI_PORT_STAT_IF_OUT_OCTETS" => return Some(&mut self.out_octets),
            "SAI_PORT_STAT_IF_IN_ERRORS" => return Some(&mut self.in_errors),
            "SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS" => return Some(&mut self.fec_symbol_errors),
            _ => {}
        }
        let (p, suffix) = field.strip_prefix("SAI_PORT_STAT_PFC_")?.split_once('_')?;
        let pfc = self.pfc.get_mut(p.parse::<usize>().ok()?)?;
        match suffix {
            "RX_PKTS" => Some(&mut pfc.rx_pkts),
            "TX_PKTS" => Some(&mut pfc.tx_pkts),
            "RX_PAUSE_DURATION_US" => Some(&mut pfc.rx_pause_us),
            "TX_PAUSE_DURATION_US" => Some(&mut pfc.tx_pause_us),
            "ON2OFF_RX_PKTS" => Some(&mut pfc.on2off_rx_pkts),
            _ => None,
        }
    }
}

impl Queue {
    /// A queue counter by its SAI name, to change.
    pub fn counter_mut(&mut self, field: &str) -> Option<&mut u64> {
        match field {
            "SAI_QUEUE_STAT_PACKETS" => Some(&mut self.packets),
            "SAI_QUEUE_STAT_BYTES" => Some(&mut self.bytes),
            "SAI_QUEUE_STAT_DROPPED_PACKETS" => Some(&mut self.dropped_packets),
            "SAI_QUEUE_STAT_DROPPED_BYTES" => Some(&mut self.dropped_bytes),
            "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES" => Some(&mut self.watermark_bytes),
            "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES" => Some(&mut self.occupancy_bytes),
            "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS" => Some(&mut self.ecn_marked_packets),
            _ => None,
        }
    }
}

/// A port's SAI object id: SAI's port object type in the top bits, as on a real switch
/// (`oid:0x1000000000001` for the first port).
pub fn port_oid(index: usize) -> String {
    format!("oid:0x{:x}", 0x1000000000001u64 + index as u64)
}

/// A queue's object id: SAI's queue object type (0x15) in the top bits.
pub fn queue_oid(index: usize, queue: usize) -> String {
    format!("oid:0x{:x}", 0x15000000000000u64 + index as u64 * 0x100 + queue as u64)
}

/// Moves one port by `dt` of the switch's own clock: baseline traffic on every unicast queue
/// of an up port, and the pause of a storming peer. A paused queue sends nothing and holds
/// its buffer; a storm whose priority's PFC a lossy watchdog handler turned off is not
/// honoured, and the queue drains (dropping, with `drop`; sending, with `forward`).
pub fn advance_port(port: &mut Port, dt: Duration, dropping: u8) {
    let us = dt.as_micros() as u64;
    let ms = dt.as_millis() as u64;
    let pkts = BASELINE_PPS * ms / 1000;
    let unicast = port.queues.iter().filter(|q| !q.multicast).count() as u64;
    if port.oper_up {
        port.in_octets += pkts * PACKET_BYTES * unicast;
        port.out_octets += pkts * PACKET_BYTES * unicast;
    }
    for i in 0..port.queues.len() {
        let paused = port.paused(i);
        let storm = port.queues[i].storm_since.is_some();
        if storm && i < PRIORITIES {
            // The peer keeps sending PAUSE frames; the time counts only while honoured.
            port.pfc[i].rx_pkts += STORM_PAUSE_PPS * ms / 1000;
            if paused {
                port.pfc[i].rx_pause_us += us;
            }
        }
        let q = &mut port.queues[i];
        if q.multicast || !port.oper_up {
            continue;
        }
        if paused {
            q.hold(q.occupancy_bytes.max(PAUSED_OCCUPANCY));
        } else if storm && dropping & (1 << i) != 0 {
            q.dropped_packets += pkts;
            q.dropped_bytes += pkts * PACKET_BYTES;
            q.hold(0);
        } else {
            q.packets += pkts;
            q.bytes += pkts * PACKET_BYTES;
            if storm {
                q.hold(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port() -> Port {
        Port::new(0, "etp1".into(), 8, 8)
    }

    #[test]
    fn a_storm_pauses_its_queue_until_pfc_is_turned_off_for_its_priority() {
        let mut p = port();
        p.queues[3].storm_since = Some(Duration::ZERO);
        advance_port(&mut p, Duration::from_millis(200), 0);
        assert_eq!((p.pfc[3].rx_pause_us, p.pfc[3].rx_pkts), (200_000, 4_000));
        assert_eq!(p.queues[3].packets, 0, "paused: nothing leaves");
        assert_eq!(p.queues[3].occupancy_bytes, PAUSED_OCCUPANCY);
        assert_eq!(p.queues[4].packets, 200);
        assert_eq!(p.queues[9].packets, 0, "no multicast traffic");
        // A drop handler: PFC off for priority 3, the queue drops what it holds.
        p.pfc_off = 1 << 3;
        advance_port(&mut p, Duration::from_millis(200), 1 << 3);
        assert_eq!(p.pfc[3].rx_pause_us, 200_000, "not paused any more");
        assert_eq!(p.pfc[3].rx_pkts, 8_000, "the frames still arrive");
        assert_eq!((p.queues[3].dropped_packets, p.queues[3].occupancy_bytes), (200, 0));
        assert_eq!(p.queues[3].watermark_bytes, PAUSED_OCCUPANCY, "the watermark keeps the peak");
    }

    #[test]
    fn counters_are_named_as_sai_names_them() {
        let mut p = port();
        *p.counter_mut("SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS").unwrap() = 5;
        assert_eq!(p.pfc[3].on2off_rx_pkts, 5);
        assert_eq!(p.counter("SAI_PORT_STAT_IF_IN_ERRORS"), Some(0));
        assert_eq!(p.counter("SAI_PORT_STAT_PFC_8_RX_PKTS"), None);
        assert_eq!(p.counter("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION"), None, "a view, not a counter");
        assert!(!p.update_oper() && p.flaps == 0);
        p.link_up = false;
        assert!(p.update_oper() && p.flaps == 1 && p.oper_transitions == 1);
    }
}
