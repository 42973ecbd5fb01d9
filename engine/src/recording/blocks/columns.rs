//! The columns of a block: its timestamps, and each series' sample times
//! and values.
//!
//! - **Timestamps** are a table of the block's distinct times, ascending, as
//!   deltas of deltas: a sensor polled on a steady interval costs about a
//!   byte a poll before compression and nearly nothing after, and one poll
//!   stamps every series it reads with the same time, so a time is stored
//!   once however many series share it.
//! - **Sample times** of a series are indexes into that table, as deltas
//!   (mostly 1, or the same small pattern when sensors interleave).
//! - **Values** are typed per series and block: exact counters and
//!   integral gauges as deltas of deltas (a steady rate costs a byte),
//!   other gauges as the XOR with the previous value's bits, its zero bytes
//!   at either end dropped (the Gorilla idea, by the byte: compression
//!   then squeezes what is left).

use super::varint::{put_i64, put_u64, Cursor, Malformed};
use crate::series::Value;

/// How a series' values are stored in one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Encoding {
    /// All exact counter readings.
    Counts = 0,
    /// All gauge readings that are whole numbers within ±2^53.
    Integral = 1,
    /// All gauge readings, some not whole.
    Floats = 2,
    /// Counter readings and numbers mixed (a hand-made recording): a
    /// bitmap says which is which.
    Mixed = 3,
}

/// Appends the table of distinct times (ascending).
pub fn put_times(out: &mut Vec<u8>, times: &[i64]) {
    put_u64(out, times.len() as u64);
    let mut prev = (0i64, 0i64);
    for (i, &t) in times.iter().enumerate() {
        if i == 0 {
            put_i64(out, t);
        } else {
            let delta = t.wrapping_sub(prev.0);
            put_i64(out, delta.wrapping_sub(prev.1));
            prev.1 = delta;
        }
        prev.0 = t;
    }
}

/// Reads the table of times.
pub fn times(c: &mut Cursor) -> Result<Vec<i64>, Malformed> {
    let n = c.count(1, "times")?;
    let mut out = Vec::with_capacity(n);
    let mut prev = (0i64, 0i64);
    for i in 0..n {
        let t = if i == 0 {
            c.i64()?
        } else {
            let delta = prev.1.wrapping_add(c.i64()?);
            prev.1 = delta;
            prev.0.wrapping_add(delta)
        };
        if i > 0 && t <= prev.0 {
            return Err(Malformed("the times of a block are not ascending".into()));
        }
        prev.0 = t;
        out.push(t);
    }
    Ok(out)
}

/// Appends one series' samples: `at` are indexes into the time table,
/// ascending (equal when a series has two readings at one time).
pub fn put_series(out: &mut Vec<u8>, at: &[u32], values: &[Value]) {
    debug_assert_eq!(at.len(), values.len());
    put_u64(out, at.len() as u64);
    let mut prev = 0u32;
    for &i in at {
        put_u64(out, u64::from(i - prev));
        prev = i;
    }
    let encoding = encoding(values);
    out.push(encoding as u8);
    match encoding {
        Encoding::Counts => put_steady(out, values.iter().map(|v| count_bits(*v))),
        Encoding::Integral => put_steady(out, values.iter().map(|v| v.as_f64() as i64 as u64)),
        Encoding::Floats => put_floats(out, values.iter().map(|v| v.as_f64())),
        Encoding::Mixed => {
            let mut bitmap = vec![0u8; values.len().div_ceil(8)];
            for (i, v) in values.iter().enumerate() {
                if matches!(v, Value::Real(_)) {
                    bitmap[i / 8] |= 1 << (i % 8);
                }
            }
            out.extend_from_slice(&bitmap);
            put_steady(out, values.iter().filter(|v| matches!(v, Value::Count(_))).map(|v| count_bits(*v)));
            put_floats(out, values.iter().filter(|v| matches!(v, Value::Real(_))).map(|v| v.as_f64()));
        }
    }
}

fn count_bits(v: Value) -> u64 {
    match v {
        Value::Count(n) => n,
        Value::Real(x) => x.to_bits(),
    }
}

/// The most compact encoding that keeps every value exactly.
fn encoding(values: &[Value]) -> Encoding {
    let (mut counts, mut integral) = (0usize, true);
    for v in values {
        match *v {
            Value::Count(_) => counts += 1,
            Value::Real(x) => {
                integral &= x.fract() == 0.0 && x.abs() < (1u64 << 53) as f64 && x.to_bits() != (-0.0f64).to_bits()
            }
        }
    }
    match counts {
        c if c == values.len() => Encoding::Counts,
        0 if integral => Encoding::Integral,
        0 => Encoding::Floats,
        _ => Encoding::Mixed,
    }
}

/// The first value, then deltas of deltas (the first delta against 0),
/// wrapping: exact for any `u64` sequence.
fn put_steady(out: &mut Vec<u8>, mut values: impl Iterator<Item = u64>) {
    let Some(first) = values.next() else { return };
    put_u64(out, first);
    let (mut prev, mut delta) = (first, 0i64);
    for v in values {
        let d = v.wrapping_sub(prev) as i64;
        put_i64(out, d.wrapping_sub(delta));
        (prev, delta) = (v, d);
    }
}

fn steady(c: &mut Cursor, n: usize, mut each: impl FnMut(u64)) -> Result<(), Malformed> {
    if n == 0 {
        return Ok(());
    }
    let (mut prev, mut delta) = (c.u64()?, 0i64);
    each(prev);
    for _ in 1..n {
        delta = delta.wrapping_add(c.i64()?);
        prev = prev.wrapping_add(delta as u64);
        each(prev);
    }
    Ok(())
}

/// Each value XORed with the previous one's bits: a byte saying how many
/// zero bytes lead and trail (high and low nibble), then the bytes between.
/// An unchanged value is the single byte 0x80.
fn put_floats(out: &mut Vec<u8>, values: impl Iterator<Item = f64>) {
    let mut prev = 0u64;
    for x in values {
        let xor = x.to_bits() ^ prev;
        prev = x.to_bits();
        if xor == 0 {
            out.push(0x80);
            continue;
        }
        let lead = xor.leading_zeros() / 8;
        let trail = xor.trailing_zeros() / 8;
        out.push(((lead << 4) | trail) as u8);
        let bytes = xor.to_be_bytes();
        out.extend_from_slice(&bytes[lead as usize..8 - trail as usize]);
    }
}

fn floats(c: &mut Cursor, n: usize, mut each: impl FnMut(f64)) -> Result<(), Malformed> {
    let mut prev = 0u64;
    for _ in 0..n {
        let head = c.byte()?;
        if head != 0x80 {
            let (lead, trail) = (usize::from(head >> 4), usize::from(head & 0xf));
            if lead + trail >= 8 {
                return Err(Malformed(format!("a value's header byte {head:#04x} is not one this writer writes")));
            }
            let mut bytes = [0u8; 8];
            bytes[lead..8 - trail].copy_from_slice(c.take(8 - lead - trail)?);
            prev ^= u64::from_be_bytes(bytes);
        }
        each(f64::from_bits(prev));
    }
    Ok(())
}

/// Reads one series' samples, appending to `at` and `values`. `times` is
/// the length of the block's time table: an index past it is refused.
pub fn series(c: &mut Cursor, times: usize, at: &mut Vec<u32>, values: &mut Vec<Value>) -> Result<(), Malformed> {
    let n = c.count(2, "samples")?;
    let mut i = 0u64;
    for _ in 0..n {
        i += c.u64()?;
        if i >= times as u64 {
            return Err(Malformed(format!("a sample at time {i} of a block of {times} times")));
        }
        at.push(i as u32);
    }
    let encoding = c.byte()?;
    match encoding {
        0 => steady(c, n, |v| values.push(Value::Count(v))),
        1 => steady(c, n, |v| values.push(Value::Real(v as i64 as f64))),
        2 => floats(c, n, |x| values.push(Value::Real(x))),
        3 => {
            let bitmap = c.take(n.div_ceil(8))?.to_vec();
            let is_real = |i: usize| bitmap[i / 8] & (1 << (i % 8)) != 0;
            let reals = (0..n).filter(|i| is_real(*i)).count();
            let (mut counts, mut xs) = (Vec::with_capacity(n - reals), Vec::with_capacity(reals));
            steady(c, n - reals, |v| counts.push(v))?;
            floats(c, reals, |x| xs.push(x))?;
            let (mut counts, mut xs) = (counts.into_iter(), xs.into_iter());
            for i in 0..n {
                values.push(if is_real(i) {
                    Value::Real(xs.next().unwrap_or(0.0))
                } else {
                    Value::Count(counts.next().unwrap_or(0))
                });
            }
            Ok(())
        }
        other => Err(Malformed(format!("value encoding {other} is not one this reader knows"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(values: &[Value]) -> (Vec<Value>, usize) {
        let at: Vec<u32> = (0..values.len() as u32).collect();
        let mut out = Vec::new();
        put_series(&mut out, &at, values);
        let (mut back_at, mut back) = (Vec::new(), Vec::new());
        let mut c = Cursor::new(&out);
        series(&mut c, values.len(), &mut back_at, &mut back).unwrap();
        assert_eq!((back_at, c.remaining()), (at, 0));
        (back, out.len())
    }

    #[test]
    fn every_value_comes_back_bit_for_bit() {
        let cases: Vec<Vec<Value>> = vec![
            vec![Value::Count(u64::MAX - 1), Value::Count(3), Value::Count(0), Value::Count(u64::MAX)],
            vec![Value::Real(45.0), Value::Real(46.0), Value::Real(-9e15), Value::Real(0.0)],
            vec![
                Value::Real(-0.0),
                Value::Real(0.1),
                Value::Real(f64::NAN),
                Value::Real(f64::INFINITY),
                Value::Real(1e-310),
            ],
            vec![Value::Count(7), Value::Real(1.5), Value::Count(9), Value::Real(1.5), Value::Real(2.0)],
        ];
        for values in cases {
            let (back, _) = round_trip(&values);
            let bits =
                |v: &[Value]| v.iter().map(|v| (matches!(v, Value::Count(_)), count_bits(*v))).collect::<Vec<_>>();
            assert_eq!(bits(&back), bits(&values), "{values:?}");
        }
    }

    #[test]
    fn a_steady_counter_and_an_unchanged_gauge_cost_a_byte_a_sample_before_compression() {
        let counter: Vec<Value> = (0..1000).map(|k| Value::Count(1_000_000 + 4096 * k)).collect();
        let (_, bytes) = round_trip(&counter);
        assert!(bytes <= 2 * 1000 + 16, "{bytes} bytes for 1000 samples (index and value)");
        let gauge: Vec<Value> = (0..1000).map(|_| Value::Real(0.731)).collect();
        let (_, bytes) = round_trip(&gauge);
        assert!(bytes <= 2 * 1000 + 16, "{bytes} bytes");
    }

    #[test]
    fn times_round_trip_and_must_ascend() {
        let t = [1_700_000_000_000_000_000i64, 1_700_000_000_100_000_123, 1_700_000_000_200_000_001, i64::MAX];
        let mut out = Vec::new();
        put_times(&mut out, &t);
        assert_eq!(times(&mut Cursor::new(&out)).unwrap(), t);
        let mut out = Vec::new();
        put_times(&mut out, &[5, 5]);
        assert!(times(&mut Cursor::new(&out)).is_err());
    }

    #[test]
    fn an_index_past_the_time_table_is_refused() {
        let mut out = Vec::new();
        put_series(&mut out, &[0, 4], &[Value::Count(1), Value::Count(2)]);
        let err = series(&mut Cursor::new(&out), 3, &mut Vec::new(), &mut Vec::new()).unwrap_err();
        assert!(err.0.contains("a sample at time 4 of a block of 3 times"), "{err}");
    }
}
