//! Every metric `why` ranks, declared: how directly it points at a cause
//! (its weight), the smallest change of it worth a look (its noise floor),
//! and which way is bad. A metric this table does not know is not ranked
//! (`--all-metrics` ranks it with a low weight): a metric nobody described
//! has no floor, and with none any change of a counter that is usually
//! zero looks infinitely significant (a GPU's clock-event bitmask flipping
//! its power-cap bit, a job's RDMA write requests at step end).
//!
//! **Direction.** A slower job sends less: its traffic, its marks and its
//! pauses may fall. A fall of a metric whose bad way is up is a consequence
//! of the slowdown, never its cause, and is not scored.
//!
//! **Bitmasks.** DCGM's clock-event (throttle) reasons are a bitmask; only
//! the bits that mean the GPU slowed itself down count (hardware slowdown,
//! software and hardware thermal, power brake), not the power-cap bit a
//! busy GPU sets all the time. The table decodes them to 1 or 0.
//!
//! The table is the one docs/operations.md shows ("What why ranks").

/// Which way a metric moves when something is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// Up: errors, pauses, marks, temperature.
    Up,
    /// Down: a GPU's clock.
    Down,
    /// Either way: a link's state.
    Either,
}

impl Bad {
    /// Whether a move from `baseline` to `regression` is the bad way.
    pub fn admits(self, baseline: f64, regression: f64) -> bool {
        match self {
            Bad::Up => regression > baseline,
            Bad::Down => regression < baseline,
            Bad::Either => true,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Bad::Up => "up",
            Bad::Down => "down",
            Bad::Either => "either",
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    /// What the metric's name contains (lower case; the first row that matches wins).
    pub contains: &'static str,
    /// How directly it points at a cause.
    pub weight: f64,
    /// The smallest change worth a look, in its unit (per second for a counter).
    pub floor: f64,
    /// Which way is bad.
    pub bad: Bad,
    /// Values decoded before they are compared (a bitmask to its slowdown bits).
    pub decode: Option<fn(f64) -> f64>,
    /// What it is, for the docs.
    pub what: &'static str,
}

const fn row(contains: &'static str, weight: f64, floor: f64, bad: Bad, what: &'static str) -> Known {
    Known { contains, weight, floor, bad, decode: None, what }
}

/// The clock-event reasons that mean the GPU slowed itself down: HW_SLOWDOWN
/// (0x8), SW_THERMAL (0x20), HW_THERMAL (0x40), HW_POWER_BRAKE (0x80). Not
/// GPU_IDLE (0x1), APPLICATIONS_CLOCKS_SETTING (0x2), SW_POWER_CAP (0x4),
/// SYNC_BOOST (0x10) nor DISPLAY_CLOCK (0x100): a busy GPU at its power cap
/// is working as configured.
pub const SLOWDOWN_BITS: u64 = 0x8 | 0x20 | 0x40 | 0x80;

/// 1 when a clock-event bitmask has a slowdown bit set, else 0.
pub fn slowdown_bits(mask: f64) -> f64 {
    if mask.is_finite() && mask >= 0.0 && (mask as u64) & SLOWDOWN_BITS != 0 {
        1.0
    } else {
        0.0
    }
}

/// The table, most specific first.
pub const TABLE: &[Known] = &[
    row("gpu_xid", 2.0, 0.01, Bad::Up, "a GPU's XID events (NVML)"),
    row("xid_errors", 2.0, 0.01, Bad::Up, "DCGM's last XID"),
    Known {
        decode: Some(slowdown_bits),
        ..row("throttle_reasons", 1.5, 0.1, Bad::Up, "DCGM's clock-throttle reasons: the slowdown bits only")
    },
    Known {
        decode: Some(slowdown_bits),
        ..row("clocks_event_reasons", 1.5, 0.1, Bad::Up, "DCGM's clock-event reasons: the slowdown bits only")
    },
    row("tx_prio_pause_duration", 1.0, 1e4, Bad::Up, "µs a NIC paused its peer (sent pause)"),
    row("pfc_rx_pause_duration", 1.0, 1e4, Bad::Up, "µs a switch port received pause (its NIC storms)"),
    row("tx_prio_pause", 1.0, 100.0, Bad::Up, "pause frames a NIC sent"),
    row("pfc_rx_pkts", 1.0, 100.0, Bad::Up, "pause frames a switch port received"),
    row("pause_storm", 1.0, 100.0, Bad::Up, "a NIC's pause-storm counter"),
    row("pfcwd_stormed", 1.0, 0.1, Bad::Up, "the switch's PFC watchdog found a storm"),
    row("deadlock_detected", 1.0, 0.05, Bad::Up, "the switch's PFC watchdog found a storm"),
    row("oper_up", 1.0, 0.1, Bad::Either, "a port's state"),
    row("carrier", 1.0, 0.05, Bad::Up, "a link's carrier losses"),
    row("link_down", 1.0, 0.05, Bad::Up, "a link's downs"),
    row("link_transition", 1.0, 0.05, Bad::Up, "a link's state changes"),
    row("symbol_err", 1.0, 1.0, Bad::Up, "symbol errors"),
    row("symbol_error", 1.0, 1.0, Bad::Up, "symbol errors"),
    row("pre_fec_ber", 1.0, 1e-7, Bad::Up, "a link's bit error rate before FEC"),
    row("icrc", 1.0, 1.0, Bad::Up, "packets with a bad invariant CRC"),
    row("downed", 1.0, 0.05, Bad::Up, "a link's downs"),
    row("error_recovery", 1.0, 0.05, Bad::Up, "a link's error recoveries"),
    row("flap", 1.0, 0.05, Bad::Up, "a link's flaps"),
    row("active_speed", 1.0, 1.0, Bad::Down, "a link's trained speed"),
    row("active_width", 1.0, 0.5, Bad::Down, "a link's trained width"),
    row("phys_state", 1.0, 0.5, Bad::Either, "a port's physical state"),
    row("port_state", 1.0, 0.5, Bad::Either, "a port's state"),
    row("fcs_errors", 1.0, 1.0, Bad::Up, "frames with a bad checksum"),
    row("in_errors", 1.0, 1.0, Bad::Up, "frames received in error"),
    row("rcv_errors", 1.0, 1.0, Bad::Up, "packets received in error"),
    row("out_of_sequence", 0.7, 50.0, Bad::Up, "packets out of sequence (loss on the path)"),
    row("packet_seq_err", 0.7, 50.0, Bad::Up, "NAKs for a sequence error (loss on the path)"),
    row("corrected_bits", 1.0, 10.0, Bad::Up, "FEC-corrected bits (a marginal link)"),
    row("gpu_nvlink", 1.0, 10.0, Bad::Up, "NVLink errors"),
    row("gpu_pcie", 1.0, 10.0, Bad::Up, "PCIe replays"),
    row("switch_queue_ecn_marked", 1.0, 1e3, Bad::Up, "packets a switch queue marked"),
    row("occupancy_bytes", 1.0, 1e5, Bad::Up, "a switch queue's occupancy"),
    row("watermark_bytes", 1.0, 1e5, Bad::Up, "a switch queue's peak occupancy"),
    row("dropped", 0.6, 10.0, Bad::Up, "packets dropped"),
    row("discards", 0.6, 10.0, Bad::Up, "packets discarded"),
    row("out_of_buffer", 0.7, 10.0, Bad::Up, "packets a NIC had no buffer for"),
    row("on2off_rx", 0.5, 100.0, Bad::Up, "resume frames a switch port received"),
    row("np_ecn_marked", 0.7, 1e3, Bad::Up, "marked packets a NIC received"),
    row("cnp", 0.7, 1e3, Bad::Up, "congestion notifications"),
    row("xmit_wait", 0.4, 1e6, Bad::Up, "ticks a port waited to send (a victim)"),
    row("rx_prio_pause_duration", 0.4, 1e4, Bad::Up, "µs a NIC was paused (a victim)"),
    row("pfc_tx_pause_duration", 0.4, 1e4, Bad::Up, "µs a switch port paused its NIC (a victim)"),
    row("rx_prio_pause", 0.4, 100.0, Bad::Up, "pause frames a NIC received (a victim)"),
    row("pfc_tx_pkts", 0.4, 100.0, Bad::Up, "pause frames a switch port sent (a victim)"),
    row("rx_pause_duration", 0.4, 1e4, Bad::Up, "µs a NIC was paused (a victim)"),
    row("pause_transition", 0.4, 1.0, Bad::Up, "pause state changes a NIC saw (a victim)"),
    row("queue_paused", 0.4, 0.05, Bad::Up, "a switch queue paused (a victim)"),
    row("gpu_temp", 0.5, 5.0, Bad::Up, "a GPU's temperature"),
    row("temperature", 0.5, 5.0, Bad::Up, "a device's temperature"),
    row("sm_clock", 1.0, 100.0, Bad::Down, "a GPU's SM clock (MHz)"),
    row("utilization", 0.3, 10.0, Bad::Up, "a device's utilization"),
    row("gpu_util", 0.3, 10.0, Bad::Up, "a GPU's utilization"),
    row("bytes", 0.1, 1e6, Bad::Up, "traffic (the job's pace)"),
    row("octets", 0.1, 1e6, Bad::Up, "traffic (the job's pace)"),
    row("packets", 0.1, 1e5, Bad::Up, "traffic (the job's pace)"),
    row("_data", 0.1, 1e6, Bad::Up, "traffic (the job's pace)"),
    row("rx_bits", 0.1, 1e6, Bad::Up, "traffic (the job's pace)"),
    row("requests", 0.1, 1e5, Bad::Up, "RDMA operations (the job's pace)"),
];

/// What ranks an unknown metric under `--all-metrics`: a low weight, and
/// no floor of its own (NaN): a move counts relative to the metric's own
/// levels ([`level_effect_over`](super::rank::level_effect_over)).
pub const UNKNOWN: Known = row("", 0.3, f64::NAN, Bad::Either, "a metric the table does not know");

/// The row of `metric`, if the table knows it.
pub fn known(metric: &str) -> Option<&'static Known> {
    let lower = metric.to_ascii_lowercase();
    TABLE.iter().find(|k| lower.contains(k.contains))
}

/// The table as Markdown, for docs/operations.md.
pub fn markdown() -> String {
    let mut out = String::from(
        "| a metric whose name contains | weight | noise floor | bad when it goes | what |\n|---|---|---|---|---|\n",
    );
    for k in TABLE {
        let decode = if k.decode.is_some() { " (decoded)" } else { "" };
        out.push_str(&format!(
            "| `{}` | {} | {} | {}{decode} | {} |\n",
            k.contains,
            k.weight,
            k.floor,
            k.bad.name(),
            k.what
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEGIN: &str = "<!-- BEGIN why-signals (generated from ops/src/why/signals.rs: ROCEMEND_BLESS_DOCS=1 cargo test -p rocemend-ops why::signals) -->";
    const END: &str = "<!-- END why-signals -->";

    #[test]
    fn docs_operations_md_shows_the_table() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/operations.md");
        let text = std::fs::read_to_string(&path).unwrap();
        let (head, rest) = text.split_once(BEGIN).expect("docs/operations.md has the BEGIN marker");
        let (_, tail) = rest.split_once(END).expect("docs/operations.md has the END marker");
        let want = format!("{head}{BEGIN}\n{}{END}{tail}", markdown());
        if std::env::var_os("ROCEMEND_BLESS_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
            return;
        }
        assert!(
            text == want,
            "docs/operations.md is out of date; ROCEMEND_BLESS_DOCS=1 cargo test -p rocemend-ops why::signals"
        );
    }

    #[test]
    fn the_power_cap_bit_is_no_slowdown_and_thermal_bits_are() {
        assert_eq!(slowdown_bits(4.0), 0.0, "SW_POWER_CAP alone");
        assert_eq!(slowdown_bits(1.0 + 4.0 + 16.0), 0.0);
        assert_eq!(slowdown_bits(4.0 + 0x40 as f64), 1.0, "HW_THERMAL");
        assert_eq!(slowdown_bits(8.0), 1.0, "HW_SLOWDOWN");
        assert_eq!(slowdown_bits(f64::NAN), 0.0);
    }

    #[test]
    fn dcgm_names_are_known_whatever_their_case_and_unknown_ones_are_not() {
        assert_eq!(known("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS").map(|k| k.contains), Some("throttle_reasons"));
        assert_eq!(known("rdma_packet_seq_err").map(|k| k.floor), Some(50.0));
        assert_eq!(known("rdma_rx_write_requests").map(|k| k.weight), Some(0.1));
        assert!(known("some_exporter_thing").is_none());
        assert!(Bad::Up.admits(1.0, 2.0) && !Bad::Up.admits(2.0, 1.0));
        assert!(Bad::Down.admits(2.0, 1.0) && Bad::Either.admits(2.0, 1.0));
    }
}
