//! Times for people: RFC 3339 printed (`2026-12-02T16:48:25.123Z`) and
//! read back, and the times `--from` / `--to` take, which are what an SRE
//! types after "it slowed down at 03:12": an RFC 3339 time
//! (`2026-12-03T03:12:00Z`, `2026-12-03T04:12:00+01:00`), `now`, or a time
//! relative to now (`-15m`, `-2h`).
//!
//! Both directions go through `humantime`, which reads and writes UTC only:
//! an offset is taken off here. Parsing takes `now` as a parameter, so the
//! tests do not depend on the clock.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use engine::time::{parse_duration, DurationError, Nanos, SECOND};

/// A `--from` / `--to` time that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimeError {
    /// `-15x`: a time ago whose duration is wrong.
    #[error("{text:?}: {cause}")]
    Ago {
        /// As given.
        text: String,
        /// What is wrong with its duration.
        cause: DurationError,
    },
    /// Neither RFC 3339, `now` nor a time ago.
    #[error("{text:?} is not a time: expected RFC 3339 (2026-12-03T03:12:00Z), \"now\" or \"-15m\" (15 minutes ago)")]
    Malformed {
        /// As given.
        text: String,
    },
}

/// `t` (nanoseconds since the epoch) as RFC 3339 UTC with milliseconds, as
/// every verb and page prints times. A time before the epoch (never a real
/// sample's, ledger's or daemon's) is printed as the epoch.
pub fn rfc3339(t: Nanos) -> String {
    let since_epoch = Duration::from_nanos(t.max(0) as u64);
    humantime::format_rfc3339_millis(UNIX_EPOCH + since_epoch).to_string()
}

/// Parses a time as `--from` / `--to` accept it.
pub fn parse_time(text: &str, now: Nanos) -> Result<Nanos, TimeError> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("now") {
        return Ok(now);
    }
    if let Some(ago) = text.strip_prefix('-') {
        return parse_duration(ago).map(|d| now - d).map_err(|cause| TimeError::Ago { text: text.to_string(), cause });
    }
    parse_rfc3339(text).ok_or_else(|| TimeError::Malformed { text: text.to_string() })
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `t`, `z` and a space for
/// `T` are accepted too (RFC 3339 allows them). The zone is required: a
/// time without one would silently be read as UTC.
pub fn parse_rfc3339(text: &str) -> Option<Nanos> {
    let (clock, offset_minutes) = match text.strip_suffix(['Z', 'z']) {
        Some(clock) => (clock, 0),
        None => split_offset(text)?,
    };
    // humantime reads `YYYY-MM-DDTHH:MM:SS[.f]Z`: the separator and the zone as it wants them.
    let (date, time) = (clock.get(..10)?, clock.get(10..)?);
    let time = time.strip_prefix(['T', 't', ' '])?;
    if let Some((_, fraction)) = time.split_once('.') {
        if fraction.is_empty() || fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
    }
    let at = humantime::parse_rfc3339(&format!("{date}T{time}Z")).ok()?;
    let ns = Nanos::try_from(at.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_nanos()).ok()?;
    Some(ns - offset_minutes * 60 * SECOND)
}

/// `…±HH:MM` → the time before it and the offset in minutes.
fn split_offset(text: &str) -> Option<(&str, i64)> {
    let at = text.len().checked_sub(6).filter(|&at| text.is_char_boundary(at))?;
    let (clock, zone) = text.split_at(at);
    let sign = match zone.as_bytes()[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (hours, minutes) = zone[1..].split_once(':')?;
    let two_digits = |s: &str, max: i64| {
        (s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<i64>().ok())
            .flatten()
            .filter(|n| *n <= max)
    };
    Some((clock, sign * (two_digits(hours, 23)? * 60 + two_digits(minutes, 59)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Nanos = 1_764_732_720 * SECOND;

    #[test]
    fn rfc3339_times_print_with_milliseconds_and_read_back() {
        assert_eq!(rfc3339(1_700_000_000 * SECOND + 250_999_999), "2023-11-14T22:13:20.250Z");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(-1), "1970-01-01T00:00:00.000Z", "before the epoch: the epoch");
        for t in [0, 1_700_000_000 * SECOND, 1_700_000_000 * SECOND + 250_000_000, 4_102_444_800 * SECOND] {
            assert_eq!(parse_time(&rfc3339(t), NOW), Ok(t));
        }
        assert_eq!(parse_time("2023-11-14T22:13:20Z", NOW), Ok(1_700_000_000 * SECOND));
        assert_eq!(parse_time("2023-11-14 22:13:20.5z", NOW), Ok(1_700_000_000 * SECOND + 500_000_000));
    }

    #[test]
    fn an_offset_is_subtracted_to_get_utc() {
        let utc = parse_time("2026-12-03T03:12:00Z", NOW).unwrap();
        assert_eq!(parse_time("2026-12-03T04:12:00+01:00", NOW), Ok(utc));
        assert_eq!(parse_time("2026-12-02T21:42:00-05:30", NOW), Ok(utc));
    }

    #[test]
    fn relative_times_count_back_from_now() {
        assert_eq!(parse_time("now", NOW), Ok(NOW));
        assert_eq!(parse_time("-15m", NOW), Ok(NOW - 15 * 60 * SECOND));
        assert_eq!(parse_time("-1h30m", NOW), Ok(NOW - 90 * 60 * SECOND));
        assert!(parse_time("-15x", NOW).unwrap_err().to_string().contains("unknown unit"));
    }

    #[test]
    fn malformed_times_are_refused_with_the_expected_forms() {
        for bad in [
            "03:12",
            "2026-13-03T03:12:00Z",
            "2026-12-03T25:00:00Z",
            "2026-12-03T03:12Z",
            "2026-12-03T03:12:00",
            "2026-12-03T03:12:00.Z",
            "2026-12-03T03:12:00+1:00",
            "2026-12-03T03:12:00.1234567890Z",
            "2026-12-03T03:12:00Zé",
        ] {
            let err = parse_time(bad, NOW).unwrap_err().to_string();
            assert!(err.contains("expected RFC 3339"), "{bad}: {err}");
        }
    }
}
