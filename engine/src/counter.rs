//! Counter arithmetic: turning two raw readings into an increase.
//!
//! Hardware counters misbehave in three ways and none of them may turn into
//! a negative or absurd rate:
//! - mlx5 Q-counters are 32 bits wide and **wrap** to zero;
//! - IB PMA counters (`symbol_error`, `port_xmit_wait`, …) **saturate** at
//!   all-ones and stay there;
//! - a device reset or a driver reload makes any counter **go backwards**.

use serde::{Deserialize, Serialize};

/// What a counter does when it reaches the top of its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Overflow {
    /// Wraps to zero and keeps counting (mlx5 Q-counters, netdev counters).
    Wrap,
    /// Clamps at all-ones (InfiniBand PMA PortCounters).
    Saturate,
}

/// The width and overflow behaviour of one counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CounterSpec {
    /// Width in bits, 1..=64.
    pub bits: u8,
    /// Wrap or saturate at the top.
    pub overflow: Overflow,
}

impl CounterSpec {
    /// A 64-bit counter that wraps (in practice: never overflows).
    pub const U64: CounterSpec = CounterSpec { bits: 64, overflow: Overflow::Wrap };
    /// A 32-bit counter that wraps, like the mlx5 Q-counters.
    pub const U32_WRAP: CounterSpec = CounterSpec { bits: 32, overflow: Overflow::Wrap };

    /// A counter of `bits` width that saturates, like an IB PMA counter.
    pub const fn saturating(bits: u8) -> CounterSpec {
        CounterSpec { bits, overflow: Overflow::Saturate }
    }

    /// A counter of `bits` width that wraps.
    pub const fn wrapping(bits: u8) -> CounterSpec {
        CounterSpec { bits, overflow: Overflow::Wrap }
    }

    /// The largest value the counter can hold.
    pub const fn max(&self) -> u64 {
        if self.bits >= 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }
}

/// How a counter moved between two readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Increase {
    /// It counted up by this much.
    Normal(u64),
    /// It wrapped past the top of its width; the increase is exact.
    Wrapped(u64),
    /// It reached all-ones and is stuck there: the increase is a lower
    /// bound and later increases are invisible until the counter is cleared.
    Saturated(u64),
    /// It went backwards (device reset, counters cleared). The increase is
    /// the new reading: what was counted since the reset.
    Reset(u64),
}

impl Increase {
    /// The increase to feed the windows.
    pub fn amount(self) -> u64 {
        match self {
            Increase::Normal(n) | Increase::Wrapped(n) | Increase::Saturated(n) | Increase::Reset(n) => n,
        }
    }
}

/// The increase of a counter from reading `prev` to reading `now`.
///
/// A backwards step is read as a wrap only if the previous reading was in
/// the top quarter of the counter's range (it was about to wrap); anything
/// else is a reset. This is what keeps a reset of a 32-bit counter from
/// showing up as billions of events, and a 64-bit counter going backwards is
/// therefore always a reset.
pub fn increase(spec: CounterSpec, prev: u64, now: u64) -> Increase {
    let max = spec.max();
    // A reading wider than the declared width is a sensor bug; keep it inside
    // the width so the arithmetic below stays meaningful.
    let now = match spec.overflow {
        Overflow::Wrap => now & max,
        Overflow::Saturate => now.min(max),
    };
    let prev = prev.min(max);
    if now >= prev {
        let d = now - prev;
        if spec.overflow == Overflow::Saturate && now == max {
            return Increase::Saturated(d);
        }
        return Increase::Normal(d);
    }
    match spec.overflow {
        Overflow::Wrap => {
            if prev >= max - max / 4 {
                Increase::Wrapped((max - prev).wrapping_add(now).wrapping_add(1))
            } else {
                Increase::Reset(now)
            }
        }
        Overflow::Saturate => Increase::Reset(now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_up_normally() {
        assert_eq!(increase(CounterSpec::U32_WRAP, 10, 25), Increase::Normal(15));
        assert_eq!(increase(CounterSpec::U64, 0, 0), Increase::Normal(0));
    }

    #[test]
    fn a_32_bit_counter_wraps_to_an_exact_small_increase() {
        let inc = increase(CounterSpec::U32_WRAP, u32::MAX as u64 - 4, 10);
        assert_eq!(inc, Increase::Wrapped(15));
    }

    #[test]
    fn a_reset_of_a_32_bit_counter_is_not_four_billion_events() {
        // From 3,000,000,000 down to 7: 3e9 is not in the top quarter of the
        // range, so it was not about to wrap; a wrap would mean 1.29e9 events
        // in one poll. It is a reset.
        let inc = increase(CounterSpec::U32_WRAP, 3_000_000_000, 7);
        assert_eq!(inc, Increase::Reset(7));
    }

    #[test]
    fn a_saturating_pma_counter_stops_at_all_ones() {
        let spec = CounterSpec::saturating(16);
        assert_eq!(increase(spec, 65_530, 65_535), Increase::Saturated(5));
        assert_eq!(increase(spec, 65_535, 65_535), Increase::Saturated(0));
        // It cannot wrap: going down is a clear or a reset.
        assert_eq!(increase(spec, 65_535, 3), Increase::Reset(3));
    }

    #[test]
    fn a_64_bit_counter_going_backwards_is_a_reset() {
        assert_eq!(increase(CounterSpec::U64, 1 << 40, 100), Increase::Reset(100));
        assert_eq!(increase(CounterSpec::U64, u64::MAX - 1, 3), Increase::Wrapped(5));
    }

    #[test]
    fn readings_wider_than_the_width_are_kept_inside_it() {
        let spec = CounterSpec::saturating(8);
        assert_eq!(increase(spec, 250, 1000), Increase::Saturated(5));
        assert_eq!(increase(CounterSpec::wrapping(8), 250, 256 + 4), Increase::Wrapped(10));
    }
}
