//! Samples the evaluator did not believe, kept for the caller to report.

use crate::counter::BadReading;
use crate::series::{Sample, SeriesId};
use crate::time::{Nanos, Span};

/// Why a sample was refused.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// A counter reading no counter of its width can hold.
    #[error("{0}")]
    Counter(#[from] BadReading),
    /// A counter increase beyond what the metric can count in the time.
    #[error("an increase of {amount} in {span} is more than the metric can count; taken as a new baseline", span = Span(*.dt))]
    Implausible {
        /// The increase.
        amount: u64,
        /// The time between the readings, ns.
        dt: Nanos,
    },
    /// A sample of a series with a label its kind does not allow.
    #[error("{0}")]
    Label(#[from] crate::label_check::BadLabel),
    /// A sample too far ahead of the clock.
    #[error("its time is {span} ahead of the clock (at most {skew} allowed)", span = Span(*.ahead), skew = Span(*.skew))]
    Future {
        /// How far ahead.
        ahead: Nanos,
        /// The skew allowed.
        skew: Nanos,
    },
}

/// A series whose clock stepped back: a sample at `to`, after one at
/// `from`, more than [`super::STEP_BACK_AFTER`] later. The series is
/// resynchronized at `to` (a new counter baseline, its windows emptied)
/// rather than every later sample dropped until its clock is back at `from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SteppedBack {
    /// The series.
    pub series: SeriesId,
    /// Its last time before the step.
    pub from: Nanos,
    /// Its first time after.
    pub to: Nanos,
}

/// One refused sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Refused {
    /// Its series.
    pub series: SeriesId,
    /// Its time.
    pub ts: Nanos,
    /// Why.
    pub refusal: Refusal,
}

/// The refusals waiting to be reported: the first [`Refusals::KEPT`] since
/// the last take. A sensor gone wrong refuses every sample; the counts say
/// how many, a few examples say which.
#[derive(Debug, Default)]
pub struct Refusals(Vec<Refused>);

impl Refusals {
    /// Refusals kept between takes.
    pub const KEPT: usize = 64;

    /// Notes that `sample` was refused for `refusal`.
    #[cold]
    pub fn note(&mut self, sample: &Sample, refusal: Refusal) {
        if self.0.len() < Refusals::KEPT {
            self.0.push(Refused { series: sample.series, ts: sample.ts, refusal });
        }
    }

    /// The refusals noted since the last take.
    pub fn take(&mut self) -> Vec<Refused> {
        std::mem::take(&mut self.0)
    }
}
