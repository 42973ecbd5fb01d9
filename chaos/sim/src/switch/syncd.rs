//! syncd's flex counter groups: what the ASIC counted, copied into COUNTERS_DB at each group's
//! poll, with the counters the ASIC family's SAI reports and no other.
//!
//! | group (`FLEX_COUNTER_TABLE`) | poll (image default) | writes |
//! |---|---|---|
//! | `PORT` | 1 s | `COUNTERS:<port oid>`: `SAI_PORT_STAT_IF_*` and per priority `…_PFC_n_RX_PKTS`, `…_TX_PKTS` and the family's own: `…_RX/TX_PAUSE_DURATION_US` (Mellanox, VS), `…_RX/TX_PAUSE_DURATION` in pause quanta (Marvell), `…_ON2OFF_RX_PKTS` (Broadcom) |
//! | `QUEUE` | 10 s | `COUNTERS:<queue oid>`: packets, bytes, dropped packets and bytes (no occupancy: `queue_stat_ids`, sonic-swss `portsorch.cpp:392`) |
//! | `WRED_ECN_QUEUE` | 10 s | the queue's WRED ECN-marked and WRED-dropped packets and bytes |
//! | `QUEUE_WATERMARK` | 60 s | `SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES`, read and cleared, in `COUNTERS:` and `PERIODIC_WATERMARKS:` |
//! | `PFCWD` | the watchdog's poll | for the watched priorities and queues only: the port counters the family's detector reads, the queue's packets and `…_CURR_OCCUPANCY_BYTES`, and on Broadcom the queue attribute `SAI_QUEUE_ATTR_PAUSE_STATUS` |

use sonic::asic::{CounterSet, QUEUE_PAUSE_STATUS};
use sonic::AsicFamily;

use super::asic::{Port, Queue, PORT_STATS, PRIORITIES, QUANTA_PER_US};
use super::model::State;

/// The suffixes of the per-priority PFC counters `family` reports.
fn pfc_fields(family: AsicFamily) -> &'static [&'static str] {
    match family.counter_set() {
        CounterSet::PauseDurationUs => &["RX_PKTS", "TX_PKTS", "RX_PAUSE_DURATION_US", "TX_PAUSE_DURATION_US"],
        CounterSet::PauseDuration => &["RX_PKTS", "TX_PKTS", "RX_PAUSE_DURATION", "TX_PAUSE_DURATION"],
        CounterSet::On2Off => &["RX_PKTS", "TX_PKTS", "ON2OFF_RX_PKTS"],
    }
}

/// The value of `SAI_PORT_STAT_PFC_<p>_<suffix>` on `port`.
fn pfc_value(port: &Port, p: usize, suffix: &str) -> u64 {
    let pfc = &port.pfc[p];
    match suffix {
        "RX_PKTS" => pfc.rx_pkts,
        "TX_PKTS" => pfc.tx_pkts,
        "RX_PAUSE_DURATION_US" => pfc.rx_pause_us,
        "TX_PAUSE_DURATION_US" => pfc.tx_pause_us,
        "RX_PAUSE_DURATION" => (pfc.rx_pause_us as f64 * QUANTA_PER_US) as u64,
        "TX_PAUSE_DURATION" => (pfc.tx_pause_us as f64 * QUANTA_PER_US) as u64,
        "ON2OFF_RX_PKTS" => pfc.on2off_rx_pkts,
        _ => 0,
    }
}

/// Whether `family`'s SAI reports the port counter `field`.
pub fn reports(family: AsicFamily, field: &str) -> bool {
    if PORT_STATS.contains(&field) {
        return true;
    }
    let Some((p, suffix)) = field.strip_prefix("SAI_PORT_STAT_PFC_").and_then(|r| r.split_once('_')) else {
        return false;
    };
    p.parse::<usize>().is_ok_and(|p| p < PRIORITIES) && pfc_fields(family).contains(&suffix)
}

/// Every port counter `family` reports, of `port`.
pub fn port_fields(family: AsicFamily, port: &Port) -> Vec<(String, String)> {
    let suffixes = pfc_fields(family);
    let mut out = Vec::with_capacity(PORT_STATS.len() + PRIORITIES * suffixes.len());
    for name in PORT_STATS {
        out.push((name.to_string(), port.counter(name).unwrap_or(0).to_string()));
    }
    for p in 0..PRIORITIES {
        for suffix in suffixes {
            out.push((format!("SAI_PORT_STAT_PFC_{p}_{suffix}"), pfc_value(port, p, suffix).to_string()));
        }
    }
    out
}

fn queue_fields(q: &Queue) -> [(&'static str, String); 4] {
    [
        ("SAI_QUEUE_STAT_PACKETS", q.packets.to_string()),
        ("SAI_QUEUE_STAT_BYTES", q.bytes.to_string()),
        ("SAI_QUEUE_STAT_DROPPED_PACKETS", q.dropped_packets.to_string()),
        ("SAI_QUEUE_STAT_DROPPED_BYTES", q.dropped_bytes.to_string()),
    ]
}

fn wred_fields(q: &Queue, packet_bytes: u64) -> [(&'static str, String); 4] {
    [
        ("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", q.ecn_marked_packets.to_string()),
        ("SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES", (q.ecn_marked_packets * packet_bytes).to_string()),
        ("SAI_QUEUE_STAT_WRED_DROPPED_PACKETS", "0".to_string()),
        ("SAI_QUEUE_STAT_WRED_DROPPED_BYTES", "0".to_string()),
    ]
}

/// The `PORT` group.
pub fn port_group(state: &State) {
    for port in &state.ports {
        state.counters_hset(&port.oid, port_fields(state.profile.asic, port));
    }
}

/// The `QUEUE` group.
pub fn queue_group(state: &State) {
    for (i, port) in state.ports.iter().enumerate() {
        for (q, queue) in port.queues.iter().enumerate() {
            state.counters_hset(&state.queue_oid(i, q), queue_fields(queue));
        }
    }
}

/// The `WRED_ECN_QUEUE` group.
pub fn wred_group(state: &State) {
    for (i, port) in state.ports.iter().enumerate() {
        for (q, queue) in port.queues.iter().enumerate() {
            state.counters_hset(&state.queue_oid(i, q), wred_fields(queue, super::asic::PACKET_BYTES));
        }
    }
}

/// The `QUEUE_WATERMARK` group: read and clear.
pub fn watermark_group(state: &mut State) {
    for i in 0..state.ports.len() {
        for q in 0..state.ports[i].queues.len() {
            let queue = &mut state.ports[i].queues[q];
            let held = queue.watermark_bytes;
            queue.watermark_bytes = queue.occupancy_bytes;
            let oid = state.queue_oid(i, q);
            let value = [("SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES", held.to_string())];
            state.counters_hset(&oid, value.clone());
            let _ = state.store.hset("COUNTERS_DB", &format!("PERIODIC_WATERMARKS:{oid}"), value);
        }
    }
}

/// The `PFCWD` group: the watched priorities' port counters the detector reads, and the
/// watched queues' packets, occupancy (and pause status on Broadcom).
pub fn pfcwd_group(state: &State, watched: &[(usize, u8)]) {
    let family = state.profile.asic;
    let mut ports: Vec<usize> = watched.iter().map(|(i, _)| *i).collect();
    ports.dedup();
    for index in ports {
        let port = &state.ports[index];
        let mut fields = Vec::new();
        for &(_, p) in watched.iter().filter(|(i, _)| *i == index) {
            let prefix = format!("SAI_PORT_STAT_PFC_{p}_");
            for name in family.port_counters(p) {
                let value = pfc_value(port, usize::from(p), name.strip_prefix(&prefix).unwrap_or_default());
                fields.push((name, value.to_string()));
            }
            let queue = &port.queues[usize::from(p)];
            let mut queue_fields = vec![
                ("SAI_QUEUE_STAT_PACKETS", queue.packets.to_string()),
                ("SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES", queue.occupancy_bytes.to_string()),
            ];
            if family == AsicFamily::Broadcom {
                queue_fields.push((QUEUE_PAUSE_STATUS, port.paused(usize::from(p)).to_string()));
            }
            state.counters_hset(&state.queue_oid(index, usize::from(p)), queue_fields);
        }
        state.counters_hset(&port.oid, fields);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_family_reports_its_own_pfc_counters() {
        let us = "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US";
        let quanta = "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION";
        let on2off = "SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS";
        assert!(reports(AsicFamily::Mellanox, us) && !reports(AsicFamily::Mellanox, quanta));
        assert!(!reports(AsicFamily::Mellanox, on2off));
        assert!(reports(AsicFamily::MarvellTeralynx, quanta) && !reports(AsicFamily::MarvellTeralynx, us));
        assert!(reports(AsicFamily::Broadcom, on2off) && !reports(AsicFamily::Broadcom, us));
        assert!(!reports(AsicFamily::Broadcom, quanta));
        for family in AsicFamily::ALL {
            assert!(reports(family, "SAI_PORT_STAT_PFC_7_RX_PKTS") && reports(family, "SAI_PORT_STAT_IF_IN_ERRORS"));
            assert!(!reports(family, "SAI_PORT_STAT_PFC_8_RX_PKTS"));
        }
    }
}
