//! What a rule's scripts cost, and the budget it must stay within.
//!
//! The sandbox bounds one call (operations, depth, sizes); a rule can stay
//! within those and still cost a core by being called often with a
//! heavy body. The meter adds up the time its script calls take over a
//! window of the evaluation clock; a rule whose share of a core over the
//! window passes the budget is quarantined like a rule that fails, with the
//! figures in its reason.
//!
//! Conditions compiled into native predicates ([`crate::rule::native`])
//! count too, but are not timed: reading the clock twice costs as much as
//! the predicate, and a preemption during one call would be charged to it.
//! Each call is charged [`native_cost`] of the predicate's size instead,
//! above what it takes (the engine bench prints both: the standard rules'
//! conditions take about 10 to 40 ns and are charged 28 to 104). A
//! predicate has no loops and
//! at most [`MAX_NODES`](crate::rule::native::MAX_NODES) nodes, so only
//! a very large one evaluated very often can reach the budget.

use std::time::Duration;

use crate::rule::ScriptError;
use crate::time::{Nanos, SECOND};

/// The share of a core one rule may spend unless configured: 5 %. The
/// standard rules spend well under 0.1 % on a busy node.
pub const DEFAULT_COST_BUDGET: f64 = 0.05;

/// What one native predicate call is charged, fixed part.
pub const NATIVE_CALL_NS: u64 = 20;
/// What one native predicate call is charged per node of the predicate.
pub const NATIVE_NODE_NS: u64 = 4;

/// The cost charged for one call of a native predicate of `nodes` nodes:
/// [`NATIVE_CALL_NS`] + `nodes` × [`NATIVE_NODE_NS`].
#[inline]
pub fn native_cost(nodes: usize) -> Duration {
    Duration::from_nanos(NATIVE_CALL_NS + nodes as u64 * NATIVE_NODE_NS)
}

/// The window the cost is measured over, on the evaluation clock: long
/// enough that one slow call (a page fault, a preempted thread) does not
/// count as a trend.
pub const COST_WINDOW: Nanos = 10 * SECOND;

/// Script time spent in the current window.
#[derive(Debug, Clone, Copy, Default)]
pub struct CostMeter {
    window_start: Option<Nanos>,
    spent: Duration,
    /// What native predicate calls were charged, in nanoseconds (added to
    /// `spent` at the end of the window: a `Duration` sum per call would
    /// cost a division).
    native_ns: u64,
}

impl CostMeter {
    /// Adds the time of one script call.
    #[inline]
    pub fn spent(&mut self, took: Duration) {
        self.spent += took;
    }

    /// Adds the charge of one native predicate call of `nodes` nodes:
    /// [`native_cost`].
    #[inline]
    pub fn spent_native(&mut self, nodes: usize) {
        self.native_ns = self.native_ns.saturating_add(NATIVE_CALL_NS + nodes as u64 * NATIVE_NODE_NS);
    }

    /// At the end of a window: why the rule is over `budget` (a share of a
    /// core), if it is; the window starts over either way.
    pub fn over_budget(&mut self, now: Nanos, budget: f64) -> Option<ScriptError> {
        let start = *self.window_start.get_or_insert(now);
        let elapsed = now.saturating_sub(start);
        if elapsed < COST_WINDOW {
            return None;
        }
        self.spent += Duration::from_nanos(std::mem::take(&mut self.native_ns));
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

    #[test]
    fn native_calls_are_charged_by_size() {
        assert_eq!(native_cost(5), Duration::from_nanos(40));
        let mut meter = CostMeter::default();
        assert!(meter.over_budget(0, 0.05).is_none());
        // 2,500 calls of 40 ns: 100 µs in 10 s, 1e-5 of a core.
        for _ in 0..2_500 {
            meter.spent_native(5);
        }
        assert!(meter.over_budget(COST_WINDOW, 1e-4).is_none(), "1e-5 is under 1e-4");
        for _ in 0..2_500 {
            meter.spent_native(5);
        }
        let error = meter.over_budget(2 * COST_WINDOW, 1e-6).expect("1e-5 is over 1e-6");
        assert!(error.over_budget, "{error:?}");
    }
}
