//! What each RDMA counter file is: its metric name, width, overflow and
//! scale (see `shared/REFERENCE.md` §2 and `docs/signals.md`).

use engine::CounterSpec;

/// Which directory of a port a counter file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CounterDir {
    /// `ports/<p>/counters`: IB PMA PortCounters (and the extended ones).
    Pma,
    /// `ports/<p>/hw_counters`: driver counters (mlx5 Q-counters and
    /// congestion counters).
    Hw,
}

impl CounterDir {
    /// The directory's name under `ports/<p>/`.
    pub fn dir_name(self) -> &'static str {
        match self {
            CounterDir::Pma => "counters",
            CounterDir::Hw => "hw_counters",
        }
    }
}

/// How to read and emit one counter file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterMeaning {
    /// The metric name, `rdma_<counter>` (`rdma_<counter>_bytes` for the data
    /// counters).
    pub metric: String,
    /// Width and overflow.
    pub spec: CounterSpec,
    /// What to multiply the raw reading by (4 for the data counters, which
    /// count 4-byte words).
    pub scale: u64,
}

/// What `name` in `dir` is, or `None` for a file that is not a counter
/// (`hw_counters/lifespan` is the cache lifetime in ms, a setting).
pub fn meaning(dir: CounterDir, name: &str) -> Option<CounterMeaning> {
    let plain = |spec| Some(CounterMeaning { metric: format!("rdma_{name}"), spec, scale: 1 });
    match dir {
        CounterDir::Pma => match name {
            "port_xmit_data" | "port_rcv_data" => {
                Some(CounterMeaning { metric: format!("rdma_{name}_bytes"), spec: CounterSpec::U64, scale: 4 })
            }
            // Extended PortCounters: 64 bits wide.
            "port_xmit_packets"
            | "port_rcv_packets"
            | "unicast_xmit_packets"
            | "unicast_rcv_packets"
            | "multicast_xmit_packets"
            | "multicast_rcv_packets" => plain(CounterSpec::U64),
            "port_xmit_wait" => plain(CounterSpec::saturating(32)),
            "symbol_error"
            | "port_rcv_errors"
            | "port_rcv_remote_physical_errors"
            | "port_rcv_switch_relay_errors"
            | "port_xmit_discards"
            | "VL15_dropped" => plain(CounterSpec::saturating(16)),
            "link_error_recovery" | "link_downed" | "port_xmit_constraint_errors" | "port_rcv_constraint_errors" => {
                plain(CounterSpec::saturating(8))
            }
            "local_link_integrity_errors" | "excessive_buffer_overrun_errors" => plain(CounterSpec::saturating(4)),
            // A PMA counter this table does not know: the widest PMA width,
            // saturating, since every PMA counter clamps rather than wraps.
            _ => plain(CounterSpec::saturating(32)),
        },
        CounterDir::Hw => {
            if name == "lifespan" {
                None
            } else if name.starts_with("np_") || name.starts_with("rp_") || name == "rx_icrc_encapsulated" {
                // Congestion counters (read from their `*_high` halves) and
                // the PPCNT extended ICRC counter.
                plain(CounterSpec::U64)
            } else {
                // mlx5 Q-counters: the driver reads a be32 and never extends it.
                plain(CounterSpec::U32_WRAP)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(dir: CounterDir, name: &str) -> (String, CounterSpec, u64) {
        let m = meaning(dir, name).unwrap();
        (m.metric, m.spec, m.scale)
    }

    #[test]
    fn pma_counters_saturate_at_their_widths() {
        assert_eq!(of(CounterDir::Pma, "symbol_error").1, CounterSpec::saturating(16));
        assert_eq!(of(CounterDir::Pma, "link_downed").1, CounterSpec::saturating(8));
        assert_eq!(of(CounterDir::Pma, "local_link_integrity_errors").1, CounterSpec::saturating(4));
        assert_eq!(
            of(CounterDir::Pma, "port_xmit_wait"),
            ("rdma_port_xmit_wait".into(), CounterSpec::saturating(32), 1)
        );
    }

    #[test]
    fn data_counters_are_bytes() {
        assert_eq!(of(CounterDir::Pma, "port_xmit_data"), ("rdma_port_xmit_data_bytes".into(), CounterSpec::U64, 4));
        assert_eq!(of(CounterDir::Pma, "port_rcv_data"), ("rdma_port_rcv_data_bytes".into(), CounterSpec::U64, 4));
    }

    #[test]
    fn mlx5_q_counters_wrap_at_32_bits_and_congestion_counters_are_64() {
        assert_eq!(of(CounterDir::Hw, "out_of_sequence"), ("rdma_out_of_sequence".into(), CounterSpec::U32_WRAP, 1));
        assert_eq!(of(CounterDir::Hw, "np_cnp_sent").1, CounterSpec::U64);
        assert_eq!(of(CounterDir::Hw, "rp_cnp_handled").1, CounterSpec::U64);
        assert_eq!(of(CounterDir::Hw, "rx_icrc_encapsulated").1, CounterSpec::U64);
        assert_eq!(meaning(CounterDir::Hw, "lifespan"), None);
    }
}
