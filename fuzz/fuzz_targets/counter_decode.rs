//! The counter decoder on arbitrary readings: it never panics, never yields
//! an increase larger than the counter's range or, for a bounded counter,
//! than physics allows in the time, and never a negative or infinite step.

#![no_main]

use engine::counter::{decode, CounterSpec, Increase, Overflow, RateBound};
use engine::Value;
use libfuzzer_sys::fuzz_target;

fn spec(byte: u8, bound: u8) -> CounterSpec {
    let bits = 1 + byte % 64;
    let overflow = if byte & 0x80 == 0 { Overflow::Wrap } else { Overflow::Saturate };
    let bound = match bound % 4 {
        0 => RateBound::Unknown,
        1 => RateBound::Micros,
        2 => RateBound::Bytes,
        _ => RateBound::Packets,
    };
    CounterSpec { bits, overflow, bound, refresh_ms: u32::from(byte & 0x40 != 0) * 1000 }
}

fuzz_target!(|input: (u8, u8, u64, i64, u64, f64, bool, i64)| {
    let (shape, bound, prev_raw, prev_ts, now_raw, now_real, real, ts) = input;
    let spec = spec(shape, bound);
    let prev = (prev_raw <= spec.max()).then_some((prev_raw, prev_ts));
    let value = if real { Value::Real(now_real) } else { Value::Count(now_raw) };
    let Ok(decoded) = decode(spec, prev, value, ts) else { return };
    assert!(decoded.raw <= spec.max(), "{decoded:?} outside {spec:?}");
    if let Some(Increase::Normal(n) | Increase::Wrapped(n) | Increase::Saturated(n)) = decoded.increase {
        assert!(n <= spec.max(), "{decoded:?} counts more than the range of {spec:?}");
        if let Some(allowed) = spec.allowance(decoded.dt) {
            assert!(n as f64 <= allowed, "{decoded:?} counts more than {spec:?} can in {} ns", decoded.dt);
        }
    }
    let (step, rate) = decoded.step_and_rate();
    assert!(step.is_nan() || (step >= 0.0 && step.is_finite()), "step {step}");
    assert!(rate.is_nan() || rate >= 0.0, "rate {rate}");
});
