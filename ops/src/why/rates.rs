//! Counters as rates: the one place where a recorded counter reading becomes
//! "increase per second", decoded as the engine decodes it (wraps at the
//! counter's width, saturation, resets), shared by `why` and the timeline
//! so both see the same numbers.

use engine::{CounterSpec, Nanos, Value};

/// The rate of one counter series, reading after reading.
#[derive(Debug, Clone, Copy)]
pub struct CounterRate {
    spec: CounterSpec,
    /// The previous accepted reading and its time.
    prev: Option<(Nanos, u64)>,
}

impl CounterRate {
    /// A counter of width and overflow `spec`, before its first reading.
    pub fn new(spec: CounterSpec) -> CounterRate {
        CounterRate { spec, prev: None }
    }

    /// The rate per second since the previous reading, or `None` for the
    /// first reading, a reading the engine would refuse (left out, the
    /// previous one stays the baseline) or a reading out of time order.
    /// A reset (the counter starting again from a small value) gives the
    /// engine's answer: the new value counts as the increase.
    pub fn next(&mut self, t: Nanos, value: Value) -> Option<f64> {
        let prev = self.prev.filter(|(pt, _)| *pt < t).map(|(pt, pv)| (pv, pt));
        let decoded = engine::counter::decode(self.spec, prev, value, t).ok()?;
        self.prev = Some((t, decoded.raw));
        let (_, rate) = decoded.step_and_rate();
        rate.is_finite().then_some(rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::SECOND;

    #[test]
    fn a_wrap_is_an_increase_and_the_first_reading_has_no_rate() {
        let mut r = CounterRate::new(CounterSpec::U32_WRAP);
        assert_eq!(r.next(0, Value::Count(4_294_967_000)), None);
        assert_eq!(r.next(SECOND, Value::Count(200)), Some(496.0));
        assert_eq!(r.next(2 * SECOND, Value::Count(700)), Some(500.0));
    }

    #[test]
    fn a_reading_back_in_time_gives_no_rate() {
        let mut r = CounterRate::new(CounterSpec::U64);
        r.next(2 * SECOND, Value::Count(10));
        assert_eq!(r.next(SECOND, Value::Count(20)), None);
    }
}
