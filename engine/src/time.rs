//! Time as the engine sees it: nanoseconds since the Unix epoch, and the
//! human durations (`"200ms"`, `"1s"`, `"5m"`) that rules and configs use.
//!
//! Time is always a parameter: the engine never reads the wall clock itself,
//! so tests step through time and a replay runs on recorded time.

use std::fmt;

/// Nanoseconds since the Unix epoch.
pub type Nanos = i64;

/// One millisecond in nanoseconds.
pub const MS: Nanos = 1_000_000;
/// One second in nanoseconds.
pub const SECOND: Nanos = 1_000_000_000;

/// The current wall-clock time, for the places (sensors, the live run loop)
/// that stamp samples. The engine itself only ever receives time.
pub fn wall_clock_now() -> Nanos {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_nanos()).unwrap_or(i64::MAX)
}

/// A duration could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {input:?}: {reason} (expected e.g. \"250ms\", \"10s\", \"5m\", \"1h30m\")")]
pub struct DurationError {
    /// The text that was given.
    pub input: String,
    /// What was wrong with it.
    pub reason: &'static str,
}

/// Parses a duration such as `"0"`, `"250ms"`, `"1.5s"`, `"5m"` or `"1h30m"`
/// into nanoseconds. Units: `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`, `d`.
pub fn parse_duration(input: &str) -> Result<Nanos, DurationError> {
    let err = |reason| DurationError { input: input.to_string(), reason };
    let text = input.trim();
    if text.is_empty() {
        return Err(err("empty"));
    }
    if text == "0" {
        return Ok(0);
    }
    let mut total: f64 = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(|| err("missing unit"))?;
        if number_len == 0 {
            return Err(err("expected a number"));
        }
        let number: f64 = rest[..number_len].parse().map_err(|_| err("bad number"))?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "d" => 86400e9,
            _ => return Err(err("unknown unit")),
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    if !total.is_finite() || total > i64::MAX as f64 {
        return Err(err("too large"));
    }
    Ok(total.round() as Nanos)
}

/// `ts` (nanoseconds since the epoch) as RFC 3339 UTC with milliseconds,
/// e.g. `2026-12-02T16:48:25.123Z`: for people and for APIs that want it
/// (Alertmanager's `startsAt`).
pub fn rfc3339(ts: Nanos) -> String {
    // humantime formats instants from the epoch on. The Gregorian calendar
    // repeats every 400 years (146,097 days), so an earlier instant (a
    // sentinel, a clock gone wrong) is formatted 400 years later and its
    // year put back.
    const CYCLE_SECS: u64 = 146_097 * 86_400;
    let (secs, nanos) = (ts.div_euclid(SECOND), ts.rem_euclid(SECOND) as u32);
    let shifted = secs < 0;
    let secs = if shifted { (secs + CYCLE_SECS as i64) as u64 } else { secs as u64 };
    let at = std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos);
    let text = humantime::format_rfc3339_millis(at).to_string();
    match (shifted, text.get(..4).and_then(|y| y.parse::<u32>().ok())) {
        (true, Some(year)) => format!("{:04}{}", year - 400, &text[4..]),
        _ => text,
    }
}

/// A duration in nanoseconds, displayed the way it is written in rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Span(pub Nanos);

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n == 0 {
            write!(f, "0s")
        } else if n % SECOND == 0 {
            write!(f, "{}s", n / SECOND)
        } else if n % MS == 0 {
            write!(f, "{}ms", n / MS)
        } else if n % 1000 == 0 {
            write!(f, "{}us", n / 1000)
        } else {
            write!(f, "{n}ns")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_units_rules_use() {
        assert_eq!(parse_duration("0"), Ok(0));
        assert_eq!(parse_duration("250ms"), Ok(250 * MS));
        assert_eq!(parse_duration("1.5s"), Ok(1_500 * MS));
        assert_eq!(parse_duration("5m"), Ok(300 * SECOND));
        assert_eq!(parse_duration("1h30m"), Ok(5400 * SECOND));
        assert_eq!(parse_duration("10us"), Ok(10_000));
    }

    #[test]
    fn rejects_what_is_not_a_duration() {
        assert!(parse_duration("").is_err());
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_700_000_000_123_000_000), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339(951_782_400_000_000_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(Nanos::MIN), "1677-09-21T00:12:43.145Z");
    }

    #[test]
    fn span_displays_in_the_largest_exact_unit() {
        assert_eq!(Span(2 * SECOND).to_string(), "2s");
        assert_eq!(Span(200 * MS).to_string(), "200ms");
        assert_eq!(Span(0).to_string(), "0s");
    }
}
