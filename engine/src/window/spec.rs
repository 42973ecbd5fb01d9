//! What a window computes.

use std::fmt;

use crate::time::{Nanos, Span};

/// The function a window applies to its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WindowFn {
    /// Sum of counter increases over the range (gauges: net change).
    Increase,
    /// [`WindowFn::Increase`] divided by the range in seconds.
    Rate,
    /// Number of samples over the range whose value moved (counters: a
    /// non-zero increase). `changes(m, r) >= 2` is "confirmed over two
    /// samples", the way the SONiC PFC watchdog confirms a storm.
    Changes,
    /// Smallest value over the range (counters: per-second rate between
    /// consecutive samples).
    MinOver,
    /// Largest value over the range (counters: per-second rate).
    MaxOver,
    /// Mean value over the range (counters: per-second rate).
    AvgOver,
    /// The latest value (counters: the raw reading; events: the payload).
    Last,
    /// Exponentially weighted moving average with the range as half-life
    /// (counters: of the per-second rate).
    Ewma,
    /// Number of event samples over the range.
    CountEvents,
    /// 1 when no sample arrived over the range, else 0 (a boolean to scripts).
    Absent,
    /// How unevenly the subject's series of the metric moved over the range: the largest
    /// series' increase over the mean increase of the series that moved. The uplinks of one
    /// ECMP group carrying a job's flows: 1 when they share evenly, 2 when one carries twice
    /// its share. `NaN` when fewer than two series moved.
    Skew,
}

impl WindowFn {
    /// The name a rule uses to declare this window.
    pub fn name(self) -> &'static str {
        match self {
            WindowFn::Increase => "increase",
            WindowFn::Rate => "rate",
            WindowFn::Changes => "changes",
            WindowFn::MinOver => "min_over",
            WindowFn::MaxOver => "max_over",
            WindowFn::AvgOver => "avg_over",
            WindowFn::Last => "last",
            WindowFn::Ewma => "ewma",
            WindowFn::CountEvents => "count_events",
            WindowFn::Absent => "absent",
            WindowFn::Skew => "skew",
        }
    }

    /// Every window function, in documentation order.
    pub const ALL: [WindowFn; 11] = [
        WindowFn::Increase,
        WindowFn::Rate,
        WindowFn::Changes,
        WindowFn::MinOver,
        WindowFn::MaxOver,
        WindowFn::AvgOver,
        WindowFn::Last,
        WindowFn::Ewma,
        WindowFn::CountEvents,
        WindowFn::Absent,
        WindowFn::Skew,
    ];

    /// Whether the function takes a range (all but `last`).
    pub fn has_range(self) -> bool {
        self != WindowFn::Last
    }
}

/// One declared window: a function over one metric of the rule's subject.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WindowSpec {
    /// What to compute.
    pub func: WindowFn,
    /// The metric it reads (one of the rule's selectors).
    pub metric: String,
    /// The range (the half-life for `ewma`; 0 for `last`).
    pub range: Nanos,
}

impl fmt::Display for WindowSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.func.has_range() {
            write!(f, "{}({:?}, \"{}\")", self.func.name(), self.metric, Span(self.range))
        } else {
            write!(f, "{}({:?})", self.func.name(), self.metric)
        }
    }
}
