//! The time guard: a sample stamped too far ahead of the clock is refused
//! before it reaches the evaluator, so one bad timestamp can neither hide
//! the series' later samples (they would all look older than it) nor, on a
//! recording's own clock, move every other series into the past.
//!
//! - On the wall clock, a sample may be at most `max_ahead` later than now
//!   (clocks of nodes and switches disagree by milliseconds under NTP; the
//!   default of 5 s is generous).
//! - On a recording's clock (replays), the clock is the latest time
//!   believed. A sample more than `max_ahead` past it is believed only when
//!   the recording goes on from there: a second series follows it within
//!   `max_ahead`, or the same series twice more. That is a gap in the
//!   recording (a sensor or daemon that was down); a lone sample far ahead
//!   is a bad timestamp. A `start` note (a recording's new segment, written
//!   when a daemon starts) moves the clock at once.

use super::ClockMode;
use crate::evaluator::Refusal;
pub use crate::recording::SEGMENT_START;
use crate::series::SeriesId;
use crate::time::{Nanos, SECOND};

/// How far ahead of the clock a sample may be stamped, unless configured.
pub const DEFAULT_MAX_AHEAD: Nanos = 5 * SECOND;

/// A possible gap in a recording: samples past the clock, waiting for the
/// recording to confirm them.
#[derive(Debug, Clone, Copy)]
struct Gap {
    /// The time after the gap.
    to: Nanos,
    /// The series that first stepped past it.
    series: Option<SeriesId>,
    /// How many samples of that series did.
    seen: u8,
}

/// Checks sample times against the clock (see the module doc).
#[derive(Debug, Clone)]
pub struct TimeGuard {
    mode: ClockMode,
    max_ahead: Nanos,
    /// The recording's clock: the latest time believed.
    clock: Option<Nanos>,
    gap: Option<Gap>,
}

impl TimeGuard {
    /// A guard for a run on `mode` allowing samples `max_ahead` of the clock.
    pub fn new(mode: ClockMode, max_ahead: Nanos) -> TimeGuard {
        TimeGuard { mode, max_ahead: max_ahead.max(0), clock: None, gap: None }
    }

    /// The recording's clock: the latest time believed (`None` before the
    /// first sample, and always on the wall clock).
    pub fn clock(&self) -> Option<Nanos> {
        self.clock
    }

    /// Whether a sample of `series` (`None` for a note) stamped `ts` is
    /// believed, `wall_now` being the wall clock.
    pub fn admit(&mut self, series: Option<SeriesId>, ts: Nanos, wall_now: Nanos) -> Result<(), Refusal> {
        let now = match self.mode {
            ClockMode::Wall => wall_now,
            ClockMode::Samples => match self.clock {
                Some(clock) => clock,
                None => {
                    self.clock = Some(ts);
                    return Ok(());
                }
            },
        };
        let ahead = ts.saturating_sub(now);
        if ahead <= self.max_ahead {
            self.advance(ts);
            return Ok(());
        }
        if self.mode == ClockMode::Samples && self.gap_confirmed(series, ts) {
            self.gap = None;
            self.advance(ts);
            return Ok(());
        }
        Err(Refusal::Future { ahead, skew: self.max_ahead })
    }

    /// A new recording segment starts at `ts`: the clock moves there.
    pub fn segment_start(&mut self, ts: Nanos) {
        if self.mode == ClockMode::Samples {
            self.gap = None;
            self.clock = Some(self.clock.map_or(ts, |c| c.max(ts)));
        }
    }

    fn advance(&mut self, ts: Nanos) {
        if self.mode == ClockMode::Samples {
            self.clock = Some(self.clock.map_or(ts, |c| c.max(ts)));
        }
    }

    /// Counts a sample past the clock towards a gap; whether the recording
    /// has now confirmed it.
    fn gap_confirmed(&mut self, series: Option<SeriesId>, ts: Nanos) -> bool {
        match &mut self.gap {
            Some(gap) if ts >= gap.to.saturating_sub(self.max_ahead) && ts <= gap.to.saturating_add(self.max_ahead) => {
                if series != gap.series || gap.seen >= 2 {
                    return true;
                }
                gap.seen += 1;
                gap.to = gap.to.max(ts);
                false
            }
            _ => {
                self.gap = Some(Gap { to: ts, series, seen: 1 });
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = SECOND;

    #[test]
    fn on_the_wall_clock_a_sample_may_be_a_little_ahead_not_a_day() {
        let mut guard = TimeGuard::new(ClockMode::Wall, 5 * S);
        let now = 1_000 * S;
        assert!(guard.admit(Some(SeriesId(0)), now + 4 * S, now).is_ok());
        assert!(guard.admit(Some(SeriesId(0)), now - 3600 * S, now).is_ok(), "late samples are the windows' business");
        let err = guard.admit(Some(SeriesId(0)), now + 86_400 * S, now).unwrap_err();
        assert_eq!(err.to_string(), "its time is 86400s ahead of the clock (at most 5s allowed)");
        assert!(guard.admit(Some(SeriesId(1)), i64::MAX, now).is_err());
    }

    #[test]
    fn on_a_recording_one_far_sample_does_not_move_the_clock() {
        let mut guard = TimeGuard::new(ClockMode::Samples, 5 * S);
        for t in 0..10 {
            assert!(guard.admit(Some(SeriesId(0)), t * S, 0).is_ok());
            if t == 4 {
                assert!(guard.admit(Some(SeriesId(1)), i64::MAX, 0).is_err());
                assert!(guard.admit(Some(SeriesId(0)), t * S + 86_400 * S, 0).is_err());
            }
        }
        assert_eq!(guard.clock(), Some(9 * S));
    }

    #[test]
    fn a_gap_in_a_recording_is_believed_once_the_recording_goes_on() {
        let mut guard = TimeGuard::new(ClockMode::Samples, 5 * S);
        assert!(guard.admit(Some(SeriesId(0)), 0, 0).is_ok());
        let after = 3600 * S;
        // Two series resume an hour later: the first waits, the second confirms.
        assert!(guard.admit(Some(SeriesId(0)), after, 0).is_err());
        assert!(guard.admit(Some(SeriesId(1)), after + S / 10, 0).is_ok());
        assert_eq!(guard.clock(), Some(after + S / 10));
        assert!(guard.admit(Some(SeriesId(0)), after + S, 0).is_ok());
        // One series alone resumes: its third sample confirms.
        let later = after + 7200 * S;
        assert!(guard.admit(Some(SeriesId(2)), later, 0).is_err());
        assert!(guard.admit(Some(SeriesId(2)), later + S, 0).is_err());
        assert!(guard.admit(Some(SeriesId(2)), later + 2 * S, 0).is_ok());
    }

    #[test]
    fn a_segment_start_moves_a_recording_clock_at_once() {
        let mut guard = TimeGuard::new(ClockMode::Samples, 5 * S);
        assert!(guard.admit(Some(SeriesId(0)), 0, 0).is_ok());
        guard.segment_start(3600 * S);
        assert!(guard.admit(Some(SeriesId(0)), 3600 * S, 0).is_ok());
    }
}
