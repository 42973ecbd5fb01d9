//! Counter arithmetic: turning two raw readings into an increase, as
//! physics allows.
//!
//! Hardware counters misbehave in four ways and none of them may turn into
//! a negative or absurd rate:
//! - mlx5 Q-counters are 32 bits wide and **wrap** to zero;
//! - IB PMA counters (`symbol_error`, `port_xmit_wait`, …) **saturate** at
//!   all-ones and stay there;
//! - a device reset, a driver reload or a re-read makes any counter **go
//!   backwards**, by a little or by a lot;
//! - a broken sensor sends values outside the counter's width, fractions,
//!   or jumps no port can produce.
//!
//! A decrease is a reset (as Prometheus reads it) unless a wrap is
//! *plausible*: the wrapped increase fits what the metric can physically do
//! in the time between the readings ([`RateBound`]). A reset contributes
//! nothing to the windows: the counter starts afresh from its new reading,
//! as after a NIC reset. An increase beyond the bound is refused the same
//! way, and the reading becomes the new baseline, so one garbage value costs
//! one interval and never fires a rule.

use serde::{Deserialize, Serialize};

use crate::time::{Nanos, MS, SECOND};

/// The value of a sample: counters carry their exact integer reading, since
/// a 64-bit byte counter passes 2^53 within days and an `f64` would lose it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A raw counter reading.
    Count(u64),
    /// A gauge level or an event payload.
    Real(f64),
}

impl Value {
    /// The value as a float (lossy for counters above 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Count(n) => n as f64,
            Value::Real(x) => x,
        }
    }
}

/// What a counter does when it reaches the top of its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Overflow {
    /// Wraps to zero and keeps counting (mlx5 Q-counters, netdev counters).
    Wrap,
    /// Clamps at all-ones (InfiniBand PMA PortCounters).
    Saturate,
}

/// The most a counter can count per second, by what it counts. Physics
/// gives a bound for time, bytes and packets; for the rest (`Unknown`) only
/// the width is checked and a wrap is believed only near the top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateBound {
    /// Nothing known.
    #[default]
    Unknown,
    /// Microseconds of a condition (pause duration): at most 1,000,000 per
    /// second, per priority and direction.
    Micros,
    /// Bytes on one link: at most 2.5e11 per second (a 2 Tb/s link; every
    /// RoCE link in service is slower).
    Bytes,
    /// Packets or frames on one link: at most 3e9 per second (2 Tb/s of
    /// minimum-size frames with preamble and gap, 84 bytes each, is 2.98e9).
    Packets,
}

impl RateBound {
    /// The bound per second, if any.
    pub const fn per_second(self) -> Option<f64> {
        match self {
            RateBound::Unknown => None,
            RateBound::Micros => Some(1e6),
            RateBound::Bytes => Some(2.5e11),
            RateBound::Packets => Some(3e9),
        }
    }

    /// The bound a metric's name implies, by the naming conventions of the
    /// sensors (`_duration_us`, `_bytes`, `_octets`, `_packets`, `_pkts`,
    /// `_pause`, `_frames`), for series that do not declare one (recordings
    /// of older versions, Prometheus scrapes).
    pub fn of_metric(metric: &str) -> RateBound {
        let name = metric.strip_suffix("_total").unwrap_or(metric);
        if name.ends_with("_us") || name.ends_with("_duration_us") {
            RateBound::Micros
        } else if name.ends_with("_bytes") || name.ends_with("_octets") || name.ends_with("_data") {
            RateBound::Bytes
        } else if ["_packets", "_pkts", "_pause", "_frames", "_discards", "_errors"].iter().any(|s| name.ends_with(s)) {
            RateBound::Packets
        } else {
            RateBound::Unknown
        }
    }

    fn is_unknown(&self) -> bool {
        *self == RateBound::Unknown
    }
}

/// The width, overflow behaviour and physical bound of one counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CounterSpec {
    /// Width in bits, 1..=64.
    pub bits: u8,
    /// Wrap or saturate at the top.
    pub overflow: Overflow,
    /// What it can count per second at most.
    #[serde(default, skip_serializing_if = "RateBound::is_unknown")]
    pub bound: RateBound,
    /// How often the reading is refreshed where the sensor reads it, ms;
    /// 0 when the sensor reads the device itself. A switch's counters are
    /// copies: SONiC's syncd copies the ASIC's into COUNTERS_DB at its flex
    /// counter polls (ports every second), and gNMI and Redis serve that
    /// copy, so a reading may be up to a refresh older than its timestamp,
    /// and two readings a second apart may hold up to two seconds of count
    /// between them (two polls fell between the reads).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refresh_ms: u32,
}

fn is_zero(ms: &u32) -> bool {
    *ms == 0
}

impl CounterSpec {
    /// A 64-bit counter that wraps (in practice: never overflows).
    pub const U64: CounterSpec = CounterSpec::wrapping(64);
    /// A 32-bit counter that wraps, like the mlx5 Q-counters.
    pub const U32_WRAP: CounterSpec = CounterSpec::wrapping(32);

    /// A counter of `bits` width that saturates, like an IB PMA counter.
    pub const fn saturating(bits: u8) -> CounterSpec {
        CounterSpec { bits, overflow: Overflow::Saturate, bound: RateBound::Unknown, refresh_ms: 0 }
    }

    /// A counter of `bits` width that wraps.
    pub const fn wrapping(bits: u8) -> CounterSpec {
        CounterSpec { bits, overflow: Overflow::Wrap, bound: RateBound::Unknown, refresh_ms: 0 }
    }

    /// The same counter, bounded by `bound`.
    pub const fn bounded(self, bound: RateBound) -> CounterSpec {
        CounterSpec { bound, ..self }
    }

    /// The same counter, read from a copy refreshed every `ms` (see
    /// [`CounterSpec::refresh_ms`]).
    pub const fn refreshed_every(self, ms: u32) -> CounterSpec {
        CounterSpec { refresh_ms: ms, ..self }
    }

    /// The largest value the counter can hold.
    pub const fn max(&self) -> u64 {
        if self.bits >= 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }

    /// The most it can count in `dt` nanoseconds, if bounded. Timestamps are
    /// taken when a sensor reads, not when the device counted, so the bound
    /// allows 10 ms of jitter, the refresh of a copy ([`CounterSpec::refresh_ms`]),
    /// and a quarter more on top (a refresh that comes late).
    pub fn allowance(&self, dt: Nanos) -> Option<f64> {
        let per_second = self.bound.per_second()?;
        let slack = 10 * MS + Nanos::from(self.refresh_ms) * MS;
        Some(per_second * dt.max(0).saturating_add(slack) as f64 / SECOND as f64 * 1.25)
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
    /// It went backwards (device reset, counters cleared, a re-read): it
    /// starts afresh from the new reading, and the step counts nothing.
    Reset,
    /// It went up by more than the metric can count in the time: a broken
    /// reading. It becomes the new baseline and counts nothing.
    Implausible(u64),
}

impl Increase {
    /// The increase to feed the windows; `None` when the step counts
    /// nothing (a reset, an implausible jump).
    pub fn amount(self) -> Option<u64> {
        match self {
            Increase::Normal(n) | Increase::Wrapped(n) | Increase::Saturated(n) => Some(n),
            Increase::Reset | Increase::Implausible(_) => None,
        }
    }
}

/// The increase of a counter from reading `prev` to reading `now`, `dt`
/// nanoseconds later. Both readings are within the width (see [`reading`]).
///
/// A backwards step is a wrap only if the wrapped increase fits the
/// counter's bound over `dt`; for an unbounded counter, only if the previous
/// reading was in the top quarter of the range (it was about to wrap). A
/// 64-bit counter going backwards is therefore practically always a reset.
#[inline]
pub fn increase(spec: CounterSpec, prev: u64, now: u64, dt: Nanos) -> Increase {
    let max = spec.max();
    let allowance = spec.allowance(dt);
    let fits = |amount: u64| allowance.is_none_or(|a| amount as f64 <= a);
    if now >= prev {
        let d = now - prev;
        if !fits(d) {
            return Increase::Implausible(d);
        }
        if spec.overflow == Overflow::Saturate && now == max {
            return Increase::Saturated(d);
        }
        return Increase::Normal(d);
    }
    if spec.overflow == Overflow::Saturate {
        return Increase::Reset;
    }
    let wrapped = (max - prev).wrapping_add(now).wrapping_add(1);
    let plausible = match allowance {
        Some(_) => fits(wrapped),
        None => prev >= max - max / 4,
    };
    if plausible {
        Increase::Wrapped(wrapped)
    } else {
        Increase::Reset
    }
}

/// A counter reading no counter of this spec can hold.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BadReading {
    /// Above the top of the counter's width.
    #[error("{value} is outside the counter's {bits}-bit range (0..={max})")]
    OutOfRange {
        /// The value read.
        value: f64,
        /// The width.
        bits: u8,
        /// The largest value it can hold.
        max: u64,
    },
    /// Negative, fractional or not a number: counters count.
    #[error("{0} is not a count (a counter reads a whole number from 0 up)")]
    NotACount(f64),
}

/// The raw reading a sample holds for a counter of `spec`: an exact whole
/// number within the width, or why it cannot be one.
#[inline]
pub fn reading(spec: CounterSpec, value: Value) -> Result<u64, BadReading> {
    let max = spec.max();
    let n = match value {
        Value::Count(n) => n,
        Value::Real(x) => {
            if !(x.is_finite() && x >= 0.0 && x.fract() == 0.0) {
                return Err(BadReading::NotACount(x));
            }
            // 2^64 and above do not fit any counter.
            if x >= 18_446_744_073_709_551_616.0 {
                return Err(BadReading::OutOfRange { value: x, bits: spec.bits, max });
            }
            x as u64
        }
    };
    if n > max {
        return Err(BadReading::OutOfRange { value: n as f64, bits: spec.bits, max });
    }
    Ok(n)
}

/// A counter sample decoded against the previous reading of its series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decoded {
    /// The reading: the series' next baseline.
    pub raw: u64,
    /// How it moved since the previous reading; `None` for the first.
    pub increase: Option<Increase>,
    /// Nanoseconds since the previous reading (0 for the first).
    pub dt: Nanos,
}

impl Decoded {
    /// What the windows see: the increase and the increase per second, both
    /// `NaN` where the step counts nothing (the first reading, a reset, an
    /// implausible jump) or, for the rate, where no time passed.
    #[inline]
    pub fn step_and_rate(&self) -> (f64, f64) {
        match self.increase.and_then(Increase::amount) {
            Some(amount) => {
                let amount = amount as f64;
                (amount, if self.dt > 0 { amount / (self.dt as f64 / SECOND as f64) } else { f64::NAN })
            }
            None => (f64::NAN, f64::NAN),
        }
    }
}

/// Decodes `value`, read at `ts`, for a counter of `spec` whose previous
/// reading was `prev` (raw, time): the one place that turns readings into
/// increases, for the evaluator and every check of it.
#[inline]
pub fn decode(spec: CounterSpec, prev: Option<(u64, Nanos)>, value: Value, ts: Nanos) -> Result<Decoded, BadReading> {
    let raw = reading(spec, value)?;
    Ok(match prev {
        Some((last, last_ts)) => {
            let dt = ts.saturating_sub(last_ts);
            Decoded { raw, increase: Some(increase(spec, last, raw, dt)), dt }
        }
        None => Decoded { raw, increase: None, dt: 0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAUSE_US: CounterSpec = CounterSpec::U32_WRAP.bounded(RateBound::Micros);

    #[test]
    fn counts_up_normally() {
        assert_eq!(increase(CounterSpec::U32_WRAP, 10, 25, SECOND), Increase::Normal(15));
        assert_eq!(increase(CounterSpec::U64, 0, 0, SECOND), Increase::Normal(0));
    }

    #[test]
    fn a_32_bit_counter_wraps_to_an_exact_small_increase() {
        let inc = increase(CounterSpec::U32_WRAP, u32::MAX as u64 - 4, 10, SECOND);
        assert_eq!(inc, Increase::Wrapped(15));
        assert_eq!(increase(PAUSE_US, u32::MAX as u64 - 4, 10, SECOND), Increase::Wrapped(15));
    }

    #[test]
    fn a_reset_of_a_32_bit_counter_is_not_four_billion_events() {
        // From 3,000,000,000 down to 7: 3e9 is not in the top quarter of the
        // range, so it was not about to wrap; a wrap would mean 1.29e9 events
        // in one poll. It is a reset.
        let inc = increase(CounterSpec::U32_WRAP, 3_000_000_000, 7, SECOND);
        assert_eq!(inc, Increase::Reset);
        assert_eq!(inc.amount(), None, "a reset counts nothing");
    }

    #[test]
    fn a_pause_counter_lowered_by_one_is_a_reset_not_a_wrap() {
        // The phantom storm: near the top of a 32-bit range a decrease of one
        // would be a wrap of 4.29e9 µs, 4,295 s of pause in one second.
        let near_top = u32::MAX as u64 - 100;
        assert_eq!(increase(PAUSE_US, near_top, near_top - 1, SECOND), Increase::Reset);
        // Unbounded, the same step near the top is believed a wrap.
        assert!(matches!(increase(CounterSpec::U32_WRAP, near_top, near_top - 1, SECOND), Increase::Wrapped(_)));
    }

    #[test]
    fn an_increase_no_port_can_produce_is_refused() {
        // 2 s of pause in 1 s of time.
        assert_eq!(increase(PAUSE_US, 0, 2_000_000, SECOND), Increase::Implausible(2_000_000));
        assert_eq!(increase(PAUSE_US, 0, 1_000_000, SECOND), Increase::Normal(1_000_000));
        // Reading jitter: 1.05 s of pause stamped 1 s apart is believed.
        assert_eq!(increase(PAUSE_US, 0, 1_050_000, SECOND), Increase::Normal(1_050_000));
        let packets = CounterSpec::U64.bounded(RateBound::Packets);
        assert!(matches!(increase(packets, 0, 1 << 62, SECOND), Increase::Implausible(_)));
    }

    #[test]
    fn a_copy_refreshed_every_second_may_hold_two_polls_between_two_reads() {
        // A storm read from SONiC's COUNTERS_DB: two flex counter polls of a
        // second each fell between reads 1.07 s apart (seen in the fleet game
        // day: 1,399,991 µs in 1,071,977,102 ns). Read from the device it is
        // impossible; from a copy refreshed every second it is what a storm
        // shows.
        let copied = PAUSE_US.refreshed_every(1000);
        let dt = 1_071_977_102;
        assert_eq!(increase(PAUSE_US, 0, 1_399_991, dt), Increase::Implausible(1_399_991));
        assert_eq!(increase(copied, 0, 1_399_991, dt), Increase::Normal(1_399_991));
        assert_eq!(increase(copied, 0, 2_000_000, SECOND), Increase::Normal(2_000_000));
        // The copy's age is bounded too: 3 s of pause in 1 s is still refused.
        assert_eq!(increase(copied, 0, 3_000_000, SECOND), Increase::Implausible(3_000_000));
    }

    #[test]
    fn a_saturating_pma_counter_stops_at_all_ones() {
        let spec = CounterSpec::saturating(16);
        assert_eq!(increase(spec, 65_530, 65_535, SECOND), Increase::Saturated(5));
        assert_eq!(increase(spec, 65_535, 65_535, SECOND), Increase::Saturated(0));
        // It cannot wrap: going down is a clear or a reset.
        assert_eq!(increase(spec, 65_535, 3, SECOND), Increase::Reset);
    }

    #[test]
    fn a_64_bit_counter_going_backwards_is_a_reset() {
        assert_eq!(increase(CounterSpec::U64, 1 << 40, 100, SECOND), Increase::Reset);
        assert_eq!(increase(CounterSpec::U64, u64::MAX - 1, 3, SECOND), Increase::Wrapped(5));
    }

    #[test]
    fn readings_outside_the_width_or_not_whole_are_refused() {
        assert_eq!(reading(CounterSpec::saturating(8), Value::Count(255)), Ok(255));
        assert!(matches!(
            reading(CounterSpec::saturating(8), Value::Count(100_000)),
            Err(BadReading::OutOfRange { .. })
        ));
        assert!(matches!(reading(CounterSpec::U64, Value::Real(1e30)), Err(BadReading::OutOfRange { .. })));
        assert!(matches!(reading(CounterSpec::U64, Value::Real(2f64.powi(64))), Err(BadReading::OutOfRange { .. })));
        assert_eq!(reading(CounterSpec::U64, Value::Real(1.5)), Err(BadReading::NotACount(1.5)));
        assert_eq!(reading(CounterSpec::U64, Value::Real(-1.0)), Err(BadReading::NotACount(-1.0)));
        assert!(reading(CounterSpec::U64, Value::Real(f64::NAN)).is_err());
        assert_eq!(reading(CounterSpec::U64, Value::Real(7.0)), Ok(7));
        let err = reading(CounterSpec::saturating(8), Value::Count(100_000)).unwrap_err();
        assert_eq!(err.to_string(), "100000 is outside the counter's 8-bit range (0..=255)");
    }

    #[test]
    fn a_decoded_reset_counts_nothing_and_becomes_the_baseline() {
        let first = decode(PAUSE_US, None, Value::Count(500), 0).unwrap();
        assert_eq!((first.raw, first.increase), (500, None));
        assert!(first.step_and_rate().0.is_nan());
        let next = decode(PAUSE_US, Some((500, 0)), Value::Count(250_500), SECOND / 2).unwrap();
        assert_eq!(next.step_and_rate(), (250_000.0, 500_000.0));
        let reset = decode(PAUSE_US, Some((250_500, SECOND / 2)), Value::Count(250_499), SECOND).unwrap();
        assert_eq!((reset.raw, reset.increase), (250_499, Some(Increase::Reset)));
        assert!(reset.step_and_rate().0.is_nan() && reset.step_and_rate().1.is_nan());
    }

    #[test]
    fn metric_names_imply_their_bound() {
        assert_eq!(RateBound::of_metric("ethtool_tx_prio_pause_duration_us"), RateBound::Micros);
        assert_eq!(RateBound::of_metric("switch_pfc_rx_pause_duration_us"), RateBound::Micros);
        assert_eq!(RateBound::of_metric("node_network_receive_bytes_total"), RateBound::Bytes);
        assert_eq!(RateBound::of_metric("ethtool_rx_prio_pause"), RateBound::Packets);
        assert_eq!(RateBound::of_metric("rdma_port_xmit_wait"), RateBound::Unknown);
    }
}
