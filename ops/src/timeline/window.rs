//! The window a timeline shows. `--from` and `--to` are what an SRE types
//! after "it slowed down at 03:12": an RFC 3339 time
//! (`2026-12-03T03:12:00Z`, `2026-12-03T04:12:00+01:00`), `now`, or a time
//! relative to now (`-15m`, `-2h`). Parsing takes `now` as a parameter, so
//! the tests do not depend on the clock.

use engine::time::{parse_duration, Nanos, SECOND};

/// The shown time range, `from` < `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Left edge.
    pub from: Nanos,
    /// Right edge.
    pub to: Nanos,
}

impl Window {
    /// A window; refused unless `from` is before `to`.
    pub fn new(from: Nanos, to: Nanos) -> Result<Window, String> {
        if from >= to {
            return Err(format!(
                "the window is empty: --from {} is not before --to {}",
                engine::time::rfc3339(from),
                engine::time::rfc3339(to)
            ));
        }
        Ok(Window { from, to })
    }

    /// Whether `t` is inside, edges included.
    pub fn contains(&self, t: Nanos) -> bool {
        (self.from..=self.to).contains(&t)
    }
}

/// Parses a time as `--from` / `--to` accept it.
pub fn parse_time(text: &str, now: Nanos) -> Result<Nanos, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("now") {
        return Ok(now);
    }
    if let Some(ago) = text.strip_prefix('-') {
        return parse_duration(ago).map(|d| now - d).map_err(|e| format!("{text:?}: {e}"));
    }
    rfc3339(text).ok_or_else(|| {
        format!(
            "{text:?} is not a time: expected RFC 3339 (2026-12-03T03:12:00Z), \"now\" or \"-15m\" (15 minutes ago)"
        )
    })
}

fn number(s: &str, range: std::ops::RangeInclusive<i64>) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|n| range.contains(n))
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `t`, `z` and a space for
/// `T` are accepted too (RFC 3339 allows them).
fn rfc3339(text: &str) -> Option<Nanos> {
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut d = date.split('-');
    let (year, month, day) = (number(d.next()?, 1970..=9999)?, number(d.next()?, 1..=12)?, number(d.next()?, 1..=31)?);
    if d.next().is_some() || date.len() != 10 {
        return None;
    }
    let (clock, offset) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        (c, 0)
    } else {
        let at = time.rfind(['+', '-'])?;
        let (c, o) = time.split_at(at);
        let (oh, om) = o[1..].split_once(':')?;
        let minutes = number(oh, 0..=23)? * 60 + number(om, 0..=59)?;
        (c, if o.starts_with('-') { -minutes } else { minutes })
    };
    let (hms, fraction) = match clock.split_once('.') {
        Some((hms, f)) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            (hms, format!("{f:0<9}").parse::<i64>().ok()?)
        }
        Some(_) => return None,
        None => (clock, 0),
    };
    let mut t = hms.split(':');
    let (h, m, s) = (number(t.next()?, 0..=23)?, number(t.next()?, 0..=59)?, number(t.next()?, 0..=60)?);
    if t.next().is_some() || hms.len() != 8 {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s - offset * 60;
    Some(secs * SECOND + fraction)
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil,
/// the inverse of what `engine::time::rfc3339` uses).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Nanos = 1_764_732_720 * SECOND;

    #[test]
    fn rfc3339_times_round_trip_with_the_engine_formatter() {
        for t in [0, 1_700_000_000 * SECOND, 1_700_000_000 * SECOND + 250_000_000, 4_102_444_800 * SECOND] {
            assert_eq!(parse_time(&engine::time::rfc3339(t), NOW), Ok(t));
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
        assert!(parse_time("-15x", NOW).unwrap_err().contains("unknown unit"));
    }

    #[test]
    fn malformed_times_are_refused_with_the_expected_forms() {
        for bad in ["03:12", "2026-13-03T03:12:00Z", "2026-12-03T25:00:00Z", "2026-12-03T03:12Z", "2026-12-03T03:12:00"]
        {
            let err = parse_time(bad, NOW).unwrap_err();
            assert!(err.contains("expected RFC 3339"), "{bad}: {err}");
        }
    }

    #[test]
    fn an_empty_window_is_refused() {
        assert!(Window::new(5, 5).unwrap_err().contains("is not before --to"));
        assert!(Window::new(6, 5).is_err());
        let w = Window::new(5, 9).unwrap();
        assert!(w.contains(5) && w.contains(9) && !w.contains(10));
    }
}
