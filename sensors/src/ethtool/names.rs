//! ethtool statistic names → metric names and labels (`docs/signals.md`).

/// The metric a statistic feeds, with its `prio` label if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// The metric name, `ethtool_…`.
    pub metric: String,
    /// The priority of a per-priority statistic (`rx_prio3_pause` → 3).
    pub prio: Option<u8>,
}

/// Keeps `[A-Za-z0-9_]`, replaces anything else (drivers use `-`, `.`,
/// `:`, spaces and brackets) with `_`.
fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// Maps one statistic name.
///
/// - `rx_prio<p>_<what>` / `tx_prio<p>_<what>` → `ethtool_rx_prio_<what>`
///   with `prio = p` (`rx_prio3_pause` → `ethtool_rx_prio_pause{prio="3"}`);
/// - a name ending in `_pause_duration` (µs in mlx5) gets `_us` appended;
/// - everything else (`tx_pause_storm_warning_events`,
///   `link_down_events_phy`, `rx_pcs_symbol_err_phy`,
///   `rx_corrected_bits_phy`, `rx_bits_phy`, a driver's own names) is
///   `ethtool_<name>`, with characters outside `[A-Za-z0-9_]` as `_`.
pub fn map(name: &str) -> Mapped {
    let mut prio = None;
    let mut base = sanitize(name);
    for dir in ["rx", "tx"] {
        let Some(rest) = base.strip_prefix(dir).and_then(|r| r.strip_prefix("_prio")) else { continue };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let Some(what) = rest[digits..].strip_prefix('_') else { continue };
        let Ok(p) = rest[..digits].parse::<u8>() else { continue };
        if what.is_empty() {
            continue;
        }
        prio = Some(p);
        base = format!("{dir}_prio_{what}");
        break;
    }
    if base.ends_with("_pause_duration") {
        base.push_str("_us");
    }
    Mapped { metric: format!("ethtool_{base}"), prio }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str) -> (String, Option<u8>) {
        let got = map(name);
        (got.metric, got.prio)
    }

    #[test]
    fn per_priority_pause_counters_get_a_prio_label() {
        assert_eq!(m("rx_prio3_pause"), ("ethtool_rx_prio_pause".into(), Some(3)));
        assert_eq!(m("tx_prio0_pause"), ("ethtool_tx_prio_pause".into(), Some(0)));
        assert_eq!(m("rx_prio7_pause_transition"), ("ethtool_rx_prio_pause_transition".into(), Some(7)));
        assert_eq!(m("rx_prio4_discards"), ("ethtool_rx_prio_discards".into(), Some(4)));
    }

    #[test]
    fn pause_durations_are_microseconds() {
        assert_eq!(m("rx_prio3_pause_duration"), ("ethtool_rx_prio_pause_duration_us".into(), Some(3)));
        assert_eq!(m("tx_prio3_pause_duration"), ("ethtool_tx_prio_pause_duration_us".into(), Some(3)));
        assert_eq!(m("rx_pause_duration"), ("ethtool_rx_pause_duration_us".into(), None));
    }

    #[test]
    fn named_signals_keep_their_names() {
        for name in [
            "tx_pause_storm_warning_events",
            "tx_pause_storm_error_events",
            "link_down_events_phy",
            "rx_pcs_symbol_err_phy",
            "rx_corrected_bits_phy",
            "rx_bits_phy",
        ] {
            assert_eq!(m(name), (format!("ethtool_{name}"), None));
        }
    }

    #[test]
    fn unknown_names_pass_through_sanitized() {
        assert_eq!(m("peer_ifindex"), ("ethtool_peer_ifindex".into(), None));
        assert_eq!(m("rx_queue_0_xdp_packets"), ("ethtool_rx_queue_0_xdp_packets".into(), None));
        assert_eq!(m("rx-0.bytes"), ("ethtool_rx_0_bytes".into(), None));
        // Not a priority: no digits, or nothing after them.
        assert_eq!(m("rx_prio_pause"), ("ethtool_rx_prio_pause".into(), None));
        assert_eq!(m("rx_prio3"), ("ethtool_rx_prio3".into(), None));
        assert_eq!(m("rx_prio999_pause"), ("ethtool_rx_prio999_pause".into(), None));
    }
}
