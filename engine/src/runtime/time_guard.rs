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
//! - Backwards alike: a sample more than `max_ahead` behind the clock is
//!   let through (late samples are the windows' business), and once the
//!   recording goes on from there the clock steps back to it.
//! - "Goes on" means another source (node, or switch) follows within
//!   `max_ahead`; the same source alone confirms only in a recording of one
//!   source (its third sample). So one node whose clock is a day off, ahead
//!   or behind, never moves the clock of the others: ahead, its samples are
//!   refused; behind, they are taken for late, and its subjects go stale.

use super::ClockMode;
use crate::evaluator::Refusal;
pub use crate::recording::SEGMENT_START;
use crate::series::SeriesId;
use crate::time::{Nanos, SECOND};

/// How far ahead of the clock a sample may be stamped, unless configured.
pub const DEFAULT_MAX_AHEAD: Nanos = 5 * SECOND;

/// A possible gap in a recording: samples past the clock (or far behind
/// it), waiting for the recording to confirm them.
#[derive(Debug, Clone, Copy)]
struct Gap {
    /// The time after the gap.
    to: Nanos,
    /// The source that first stepped past it.
    source: Source,
    /// How many samples of that source did.
    seen: u8,
}

/// Where a sample's time comes from: its node's clock (or its switch's),
/// else its series'. A gap is confirmed by a second source: one node whose
/// clock is a day off never moves the recording's clock for the others.
pub type Source = u64;

/// A step back of a recording's clock, believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockStepBack {
    /// The clock before.
    pub from: Nanos,
    /// The clock after.
    pub to: Nanos,
}

/// Checks sample times against the clock (see the module doc).
#[derive(Debug, Clone)]
pub struct TimeGuard {
    mode: ClockMode,
    max_ahead: Nanos,
    /// The recording's clock: the latest time believed.
    clock: Option<Nanos>,
    /// Samples far ahead of the clock.
    gap: Option<Gap>,
    /// Samples far behind it.
    back: Option<Gap>,
    /// The first source seen, and whether another one has been since: a
    /// recording of one source confirms its gaps by itself.
    first_source: Option<Source>,
    many_sources: bool,
    /// The source of each series, by id, as far as known (`None` unknown):
    /// looked up once per series, not per sample.
    sources: Vec<Option<Source>>,
    /// Steps back believed since the caller last took them.
    stepped_back: Vec<ClockStepBack>,
}

/// Steps back kept between takes: one a batch is the most a recording makes.
const STEPS_KEPT: usize = 16;

impl TimeGuard {
    /// A guard for a run on `mode` allowing samples `max_ahead` of the clock.
    pub fn new(mode: ClockMode, max_ahead: Nanos) -> TimeGuard {
        TimeGuard {
            mode,
            max_ahead: max_ahead.max(0),
            clock: None,
            gap: None,
            back: None,
            first_source: None,
            many_sources: false,
            sources: Vec::new(),
            stepped_back: Vec::new(),
        }
    }

    /// The recording's clock: the latest time believed (`None` before the
    /// first sample, and always on the wall clock).
    pub fn clock(&self) -> Option<Nanos> {
        self.clock
    }

    /// The steps back of the recording's clock believed since the last call.
    pub fn take_steps_back(&mut self) -> Vec<ClockStepBack> {
        std::mem::take(&mut self.stepped_back)
    }

    /// Whether a sample of `series` (`None` for a note) stamped `ts` is
    /// believed, `wall_now` being the wall clock; each series is its own
    /// source.
    pub fn admit(&mut self, series: Option<SeriesId>, ts: Nanos, wall_now: Nanos) -> Result<(), Refusal> {
        self.admit_from(series, ts, wall_now, |id| Source::from(id.0))
    }

    /// [`Self::admit`], with the source of a series given by `source_of`
    /// (called once per series).
    pub fn admit_from(
        &mut self,
        series: Option<SeriesId>,
        ts: Nanos,
        wall_now: Nanos,
        source_of: impl FnOnce(SeriesId) -> Source,
    ) -> Result<(), Refusal> {
        let source = series.map(|id| self.source(id, source_of));
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
        if ahead < -self.max_ahead && self.mode == ClockMode::Samples {
            // Late samples are the windows' business; but if the recording
            // goes on from there, its clock stepped back, and so does ours.
            if self.confirmed(true, source, ts) {
                self.back = None;
                if self.stepped_back.len() < STEPS_KEPT {
                    self.stepped_back.push(ClockStepBack { from: now, to: ts });
                }
                self.clock = Some(ts);
            }
            return Ok(());
        }
        if ahead <= self.max_ahead {
            self.advance(ts);
            return Ok(());
        }
        if self.mode == ClockMode::Samples && self.confirmed(false, source, ts) {
            self.gap = None;
            self.advance(ts);
            return Ok(());
        }
        Err(Refusal::Future { ahead, skew: self.max_ahead })
    }

    /// The source of `series`, looked up the first time.
    fn source(&mut self, series: SeriesId, source_of: impl FnOnce(SeriesId) -> Source) -> Source {
        let i = series.0 as usize;
        if i >= self.sources.len() {
            self.sources.resize(i + 1, None);
        }
        let source = *self.sources[i].get_or_insert_with(|| source_of(series));
        match self.first_source {
            None => self.first_source = Some(source),
            Some(first) if first != source => self.many_sources = true,
            Some(_) => {}
        }
        source
    }

    /// A new recording segment starts at `ts`: the clock moves there.
    pub fn segment_start(&mut self, ts: Nanos) {
        if self.mode == ClockMode::Samples {
            self.gap = None;
            self.back = None;
            self.clock = Some(self.clock.map_or(ts, |c| c.max(ts)));
        }
    }

    fn advance(&mut self, ts: Nanos) {
        if self.mode == ClockMode::Samples {
            self.clock = Some(self.clock.map_or(ts, |c| c.max(ts)));
        }
    }

    /// Counts a sample far from the clock (`behind` it, or ahead) towards a
    /// gap; whether the recording has now confirmed it: a second source
    /// within `max_ahead` of it, or, in a recording of one source, the same
    /// source twice more. A note (no source) confirms nothing by itself.
    fn confirmed(&mut self, behind: bool, source: Option<Source>, ts: Nanos) -> bool {
        let max_ahead = self.max_ahead;
        let alone = !self.many_sources;
        let slot = if behind { &mut self.back } else { &mut self.gap };
        let Some(source) = source else { return false };
        match slot {
            Some(gap) if ts >= gap.to.saturating_sub(max_ahead) && ts <= gap.to.saturating_add(max_ahead) => {
                if source != gap.source || (alone && gap.seen >= 2) {
                    return true;
                }
                gap.seen = gap.seen.saturating_add(1);
                gap.to = if behind { gap.to.min(ts) } else { gap.to.max(ts) };
                false
            }
            _ => {
                *slot = Some(Gap { to: ts, source, seen: 1 });
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
        // One series alone resumes, in a recording of several: it never
        // moves the clock for the others, however many samples it sends.
        let later = after + 7200 * S;
        for i in 0..10 {
            assert!(guard.admit(Some(SeriesId(2)), later + i * S, 0).is_err());
        }
        // In a recording of one source, its third sample confirms.
        let mut alone = TimeGuard::new(ClockMode::Samples, 5 * S);
        assert!(alone.admit(Some(SeriesId(0)), 0, 0).is_ok());
        assert!(alone.admit(Some(SeriesId(0)), later, 0).is_err());
        assert!(alone.admit(Some(SeriesId(0)), later + S, 0).is_err());
        assert!(alone.admit(Some(SeriesId(0)), later + 2 * S, 0).is_ok());
    }

    #[test]
    fn a_recording_clock_steps_back_once_two_sources_go_on_from_there_and_not_for_one() {
        let mut guard = TimeGuard::new(ClockMode::Samples, 5 * S);
        let day = 86_400 * S;
        let start = 10 * day;
        for node in 0..3 {
            assert!(guard.admit(Some(SeriesId(node)), start, 0).is_ok());
        }
        // One node a day behind: let through, the clock stays.
        for i in 0..5 {
            assert!(guard.admit(Some(SeriesId(0)), start - day + i * S, 0).is_ok());
            assert!(guard.admit(Some(SeriesId(1)), start + i * S, 0).is_ok());
        }
        assert_eq!(guard.clock(), Some(start + 4 * S));
        assert!(guard.take_steps_back().is_empty());
        // Every node a day behind: the clock follows at the second.
        let back = start - day + 10 * S;
        assert!(guard.admit(Some(SeriesId(1)), back, 0).is_ok());
        assert_eq!(guard.clock(), Some(start + 4 * S));
        assert!(guard.admit(Some(SeriesId(2)), back, 0).is_ok());
        assert_eq!(guard.clock(), Some(back));
        assert_eq!(guard.take_steps_back(), vec![ClockStepBack { from: start + 4 * S, to: back }]);
        // One node a day ahead is refused, however long it goes on.
        for i in 0..10 {
            assert!(guard.admit(Some(SeriesId(0)), back + day + i * S, 0).is_err());
            assert!(guard.admit(Some(SeriesId(1)), back + i * S, 0).is_ok());
        }
        assert_eq!(guard.clock(), Some(back + 9 * S));
    }

    #[test]
    fn a_segment_start_moves_a_recording_clock_at_once() {
        let mut guard = TimeGuard::new(ClockMode::Samples, 5 * S);
        assert!(guard.admit(Some(SeriesId(0)), 0, 0).is_ok());
        guard.segment_start(3600 * S);
        assert!(guard.admit(Some(SeriesId(0)), 3600 * S, 0).is_ok());
    }
}
