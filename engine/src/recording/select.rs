//! [`Select`]: the series and time range a reader of a recording wants.

use std::sync::Arc;

use crate::series::SeriesSpec;
use crate::time::Nanos;

/// Which series a reader wants.
pub type SeriesFilter = Arc<dyn Fn(&SeriesSpec) -> bool + Send + Sync>;

/// What to read of a recording: samples and notes within `[from, to]` of
/// the series `series` accepts. Segment starts are always read (they say
/// when series ids stop applying). A recording of blocks skips the blocks
/// outside the range without decompressing them and the series not wanted
/// without decoding them; a recording of JSON lines is read whole and
/// filtered.
#[derive(Clone, Default)]
pub struct Select {
    /// The earliest time wanted.
    pub from: Option<Nanos>,
    /// The latest time wanted.
    pub to: Option<Nanos>,
    /// The series wanted (all when `None`).
    pub series: Option<SeriesFilter>,
}

impl std::fmt::Debug for Select {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Select")
            .field("from", &self.from)
            .field("to", &self.to)
            .field("series", &self.series.as_ref().map(|_| "filter"))
            .finish()
    }
}

impl Select {
    /// Everything.
    pub fn all() -> Select {
        Select::default()
    }

    /// Whether time `t` is wanted.
    pub fn time(&self, t: Nanos) -> bool {
        self.from.is_none_or(|from| t >= from) && self.to.is_none_or(|to| t <= to)
    }

    /// Whether anything in `[first, last]` can be wanted.
    pub fn overlaps(&self, first: Nanos, last: Nanos) -> bool {
        self.from.is_none_or(|from| last >= from) && self.to.is_none_or(|to| first <= to)
    }

    /// Whether the series `spec` is wanted.
    pub fn series(&self, spec: &SeriesSpec) -> bool {
        self.series.as_ref().is_none_or(|f| f(spec))
    }

    /// Whether it selects everything.
    pub fn is_all(&self) -> bool {
        self.from.is_none() && self.to.is_none() && self.series.is_none()
    }
}
