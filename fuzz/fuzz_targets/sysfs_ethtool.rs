//! Counter names and values as the kernel gives them, arbitrary: a sysfs
//! counter file's bytes (`rdma_sysfs`), an RDMA counter's name, and an
//! ethtool statistic's name (`ethtool -S`, as the driver spells it) with
//! two readings for the pre-FEC BER. Nothing panics; a counter parses only
//! from decimal digits; every ethtool metric name is `[A-Za-z0-9_]`; a BER is a
//! ratio in [0, 1] when the corrected bits are a share of the bits.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sensors::ethtool::names::map;
use sensors::ethtool::sensor::pre_fec_ber;
use sensors::rdma_sysfs::counters::{meaning, CounterDir};
use sensors::rdma_sysfs::poller::parse as parse_counter;

/// A counter file's contents, a counter file's name, an ethtool
/// statistic's name, and (corrected, bits) at two polls.
type Input<'a> = (&'a [u8], &'a str, &'a str, (u64, u64), (u64, u64));

fn metric_ok(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fuzz_target!(|input: Input<'_>| {
    let (file, counter, stat, prev, now) = input;
    if let Some(n) = parse_counter(file) {
        let text = std::str::from_utf8(file).expect("a counter from bytes that are not UTF-8");
        let digits = text.trim().trim_start_matches('+');
        assert!(digits.bytes().all(|b| b.is_ascii_digit()), "{n} from {text:?}");
        assert_eq!(digits.parse::<u64>().ok(), Some(n));
    }
    for dir in [CounterDir::Pma, CounterDir::Hw] {
        if let Some(m) = meaning(dir, counter) {
            // The name is the kernel's (a file name): kept as it is.
            assert!(m.scale == 1 || m.scale == 4, "{m:?}");
            assert!(m.metric.starts_with("rdma_") && m.metric.contains(counter), "{:?} → {m:?}", counter);
        }
    }
    let mapped = map(stat);
    assert!(mapped.metric.starts_with("ethtool_") && metric_ok(&mapped.metric), "{:?} → {mapped:?}", stat);
    if let Some(p) = mapped.prio {
        assert!(stat.contains(&format!("prio{p}")) || stat.contains("prio0"), "{:?} → {mapped:?}", stat);
    }
    if let Some(ber) = pre_fec_ber(prev, now) {
        assert!(ber.is_finite() && ber >= 0.0, "BER {ber} of {:?} → {:?}", prev, now);
        let (dc, db) = (now.0 - prev.0, now.1 - prev.1);
        if dc <= db {
            assert!(ber <= 1.0, "BER {ber} of {:?} → {:?}", prev, now);
        }
    }
});
