//! What a rule's scripts cost, and the budget it must stay within.
//!
//! The sandbox bounds one call (operations, depth, sizes); a rule can stay
//! within those and still cost a core by being called often with a
//! heavy body. The meter adds up the time its script calls take over a
//! window of the evaluation clock; a rule whose share of a core over the
//! window passes the budget is quarantined like a rule that fails, with the
//! figures in its reason.

use std::time::Duration;

use crate::rule::ScriptError;
use crate::time::{Nanos, SECOND};

/// The share of a core one rule may spend unless configured: 5 %. The
/// standard rules spend well under 0.1 % on a busy node.
pub const DEFAULT_COST_BUDGET: f64 = 0.05;

/// The window the cost is measured over, on the evaluation clock: long
/// enough that one slow call (a page fault, a preempted thread) does not
/// count as a trend.
pub const COST_WINDOW: Nanos = 10 * SECOND;

/// Script time spent in the current window.
#[derive(Debug, Clone, Copy, Default)]
pub struct CostMeter {
    window_start: Option<Nanos>,
    spent: Duration,
}

impl CostMeter {
    /// Adds the time of one script call.
    #[inline]
    pub fn spent(&mut self, took: Duration) {
        self.spent += took;
    }

    /// At the end of a window: why the rule is over `budget` (a share of a
    /// core), if it is; the window starts over either way.
    pub fn over_budget(&mut self, now: Nanos, budget: f64) -> Option<ScriptError> {
        let start = *self.window_start.get_or_insert(now);
        let elapsed = now.saturating_sub(start);
        if elapsed < COST_WINDOW {
            return None;
        }
        let share = self.spent.as_nanos() as f64 / elapsed as f64;
        self.window_start = Some(now);
        let spent = std::mem::take(&mut self.spent);
        (share > budget).then(|| ScriptError {
            message: format!(
                "over its cost budget: its scripts took {:.0} ms in {:.0} s, {:.1}% of a core, more than the {:.1}% a rule may spend",
                spent.as_secs_f64() * 1e3,
                elapsed as f64 / SECOND as f64,
                share * 100.0,
                budget * 100.0
            ),
            line: 0,
            column: 0,
            over_budget: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_over_its_share_of_a_core_is_named_with_its_figures() {
        let mut meter = CostMeter::default();
        assert!(meter.over_budget(0, 0.05).is_none(), "the window starts");
        meter.spent(Duration::from_millis(400));
        assert!(meter.over_budget(5 * SECOND, 0.05).is_none(), "not a window yet");
        meter.spent(Duration::from_millis(400));
        let error = meter.over_budget(COST_WINDOW, 0.05).expect("800 ms in 10 s is 8%");
        assert_eq!(
            error.message,
            "over its cost budget: its scripts took 800 ms in 10 s, 8.0% of a core, more than the 5.0% a rule may spend"
        );
        meter.spent(Duration::from_millis(100));
        assert!(meter.over_budget(2 * COST_WINDOW, 0.05).is_none(), "1% in the next window");
    }
}
