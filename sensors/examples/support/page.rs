//! A Prometheus exposition page like a large exporter's: `SERIES` series
//! of 100 metric families (90 counters, 10 gauges), each family over
//! 1,000 (node, NIC) pairs with `node`, `netdev`, `rdma_dev` and `port`
//! labels, with HELP and TYPE lines. Every counter moves by a different
//! amount on each page and gauges carry decimals, so values change from
//! one page to the next as on a busy fabric.

use std::fmt::Write as _;

/// Series on a page.
pub const SERIES: usize = 100_000;
/// Metric families.
const FAMILIES: usize = 100;

/// Writes page number `round` into `text` (cleared first).
pub fn write_page(text: &mut String, round: u64) {
    text.clear();
    let per_family = SERIES / FAMILIES;
    for f in 0..FAMILIES {
        let counter = f % 10 != 9;
        let name =
            if counter { format!("fabric_port_counter_{f:02}_total") } else { format!("fabric_port_gauge_{f:02}") };
        let kind = if counter { "counter" } else { "gauge" };
        let _ = writeln!(text, "# HELP {name} A synthetic port statistic.");
        let _ = writeln!(text, "# TYPE {name} {kind}");
        for s in 0..per_family {
            let (node, nic) = (s / 8, s % 8);
            let _ = write!(
                text,
                "{name}{{node=\"gpu-node-{node:04}\",netdev=\"eth{nic}\",rdma_dev=\"mlx5_{nic}\",port=\"1\"}} "
            );
            let x = mix((f * per_family + s) as u64 ^ (round << 40));
            if counter {
                let _ = writeln!(text, "{}", round * 1_000_000 + x % 1_000_000);
            } else {
                let _ = writeln!(text, "{}.{:02}", 20 + x % 80, x % 100);
            }
        }
    }
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}
