//! Promtool's expanding notation for series values.
//!
//! A values string is a space-separated list of terms, one value per step:
//!
//! | term | yields |
//! |---|---|
//! | `7` | one value, 7 |
//! | `a+bxn` | n+1 values: a, a+b, …, a+n·b |
//! | `a-bxn` | n+1 values: a, a−b, …, a−n·b |
//! | `axn` | n+1 copies of a |
//! | `_` | one step without a sample |
//! | `_xn` | n steps without a sample |
//!
//! Whole numbers are kept exact (a 64-bit counter near its wrap point does
//! not fit an `f64`); anything with a fraction or an exponent is a float.

use std::fmt;

/// Most values one string may expand to. A day of 1 s samples fits; a typo
/// such as `0x100000000` is refused before it allocates gigabytes.
pub const MAX_VALUES: usize = 100_000;

/// One number of the notation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A whole number, exact.
    Int(i128),
    /// A number with a fraction or an exponent.
    Float(f64),
}

impl Number {
    /// The number as a float (lossy for whole numbers above 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(n) => n as f64,
            Number::Float(x) => x,
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Int(n) => write!(f, "{n}"),
            Number::Float(x) => write!(f, "{x}"),
        }
    }
}

/// A values string could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpandError {
    /// Byte offset of the offending term in the string.
    pub offset: usize,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Expands `text` into one entry per step; `None` is a step without a sample.
pub fn expand(text: &str) -> Result<Vec<Option<Number>>, ExpandError> {
    let mut out = Vec::new();
    for (offset, term) in terms(text) {
        let err = |message: String| ExpandError { offset, message };
        let (head, count) = match term.rsplit_once('x') {
            Some((head, n)) => {
                let n: usize = n.parse().map_err(|_| {
                    err(format!("term {term:?}: the repeat count after 'x' must be a whole number ≥ 0, found {n:?}"))
                })?;
                (head, Some(n))
            }
            None => (term, None),
        };
        let len = count.map_or(1, |n| n.saturating_add(1));
        if out.len().saturating_add(len) > MAX_VALUES {
            return Err(err(format!("the values expand to more than {MAX_VALUES} steps")));
        }
        if head == "_" {
            // `_xn` is n missing samples, not n+1: promtool's definition.
            let missing = count.unwrap_or(1);
            out.extend(std::iter::repeat_n(None, missing));
            continue;
        }
        let (start, step) = match split_operator(head) {
            Some((a, sign, b)) => {
                let Some(count) = count else {
                    return Err(err(format!(
                        "term {term:?}: a step `{a}{sign}{b}` needs a repeat count, e.g. `{head}x10`"
                    )));
                };
                let a = number(a).map_err(|m| err(format!("term {term:?}: {m}")))?;
                let b = number(b).map_err(|m| err(format!("term {term:?}: {m}")))?;
                let b = if sign == '-' { negate(b) } else { b };
                (a, Some((b, count)))
            }
            None => (number(head).map_err(|m| err(format!("term {term:?}: {m}")))?, None),
        };
        match (step, count) {
            (Some((b, n)), _) => {
                for k in 0..=n {
                    out.push(Some(nth(start, b, k).ok_or_else(|| err(format!("term {term:?} overflows")))?));
                }
            }
            (None, Some(n)) => out.extend(std::iter::repeat_n(Some(start), n + 1)),
            (None, None) => out.push(Some(start)),
        }
    }
    Ok(out)
}

/// The space-separated terms of `text` with their byte offsets.
fn terms(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = text;
    let mut base = 0;
    std::iter::from_fn(move || {
        let trimmed = rest.trim_start();
        base += rest.len() - trimmed.len();
        if trimmed.is_empty() {
            return None;
        }
        let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let item = (base, &trimmed[..end]);
        base += end;
        rest = &trimmed[end..];
        Some(item)
    })
}

/// Splits `a+b` / `a-b` at the operator, skipping a leading sign and the
/// sign of an exponent (`1e-6+1e-6`).
fn split_operator(head: &str) -> Option<(&str, char, &str)> {
    let bytes = head.as_bytes();
    (1..bytes.len()).find_map(|i| {
        let c = bytes[i];
        let after_exponent = matches!(bytes[i - 1], b'e' | b'E');
        ((c == b'+' || c == b'-') && !after_exponent).then(|| (&head[..i], c as char, &head[i + 1..]))
    })
}

fn number(text: &str) -> Result<Number, String> {
    if let Ok(n) = text.parse::<i128>() {
        return Ok(Number::Int(n));
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && text.bytes().all(|b| b.is_ascii_digit() || b".+-eE".contains(&b)) => {
            Ok(Number::Float(x))
        }
        _ => Err(format!("{text:?} is not a number")),
    }
}

fn negate(n: Number) -> Number {
    match n {
        Number::Int(n) => Number::Int(-n),
        Number::Float(x) => Number::Float(-x),
    }
}

/// `a + k·b`, exact when both are whole numbers. Computed from `a` each time
/// rather than by repeated addition, so float steps do not drift.
fn nth(a: Number, b: Number, k: usize) -> Option<Number> {
    match (a, b) {
        (Number::Int(a), Number::Int(b)) => a.checked_add(b.checked_mul(k as i128)?).map(Number::Int),
        _ => Some(Number::Float(a.as_f64() + b.as_f64() * k as f64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(text: &str) -> Vec<Option<i128>> {
        expand(text)
            .unwrap()
            .into_iter()
            .map(|v| {
                v.map(|n| match n {
                    Number::Int(n) => n,
                    Number::Float(x) => panic!("{x} is not whole"),
                })
            })
            .collect()
    }

    #[test]
    fn steps_up_and_down_yield_n_plus_one_values() {
        assert_eq!(ints("1+2x3"), [Some(1), Some(3), Some(5), Some(7)]);
        assert_eq!(ints("10-3x2"), [Some(10), Some(7), Some(4)]);
        assert_eq!(ints("-5-1x1"), [Some(-5), Some(-6)]);
        assert_eq!(ints("0+100000x0"), [Some(0)]);
    }

    #[test]
    fn repeats_plain_numbers_and_gaps() {
        assert_eq!(ints("4x2 9"), [Some(4), Some(4), Some(4), Some(9)]);
        assert_eq!(ints("_ 1 _x3 2"), [None, Some(1), None, None, None, Some(2)]);
        assert_eq!(ints("  7   8 "), [Some(7), Some(8)]);
        assert_eq!(ints(""), []);
    }

    #[test]
    fn whole_numbers_near_the_64_bit_top_stay_exact() {
        let top = u64::MAX as i128;
        assert_eq!(ints("18446744073709551613+1x2"), [Some(top - 2), Some(top - 1), Some(top)]);
    }

    #[test]
    fn fractions_and_exponents_are_floats_without_drift() {
        let v = expand("1e-6+1e-6x2 0.5").unwrap();
        assert_eq!(
            v,
            [Some(Number::Float(1e-6)), Some(Number::Float(2e-6)), Some(Number::Float(3e-6)), Some(Number::Float(0.5))]
        );
        let many = expand("0+0.1x1000").unwrap();
        assert_eq!(many[1000], Some(Number::Float(100.0)));
    }

    #[test]
    fn errors_name_the_term_and_its_offset() {
        let e = expand("1 2 3+x4").unwrap_err();
        assert_eq!(e.offset, 4);
        assert!(e.message.contains("\"3+x4\""), "{}", e.message);
        let e = expand("0 1+1").unwrap_err();
        assert!(e.message.contains("needs a repeat count"), "{}", e.message);
        let e = expand("5xq").unwrap_err();
        assert!(e.message.contains("repeat count"), "{}", e.message);
        assert!(expand("inf").is_err());
        assert!(expand("0x5 0+1x99999").unwrap_err().message.contains("more than"));
    }
}
