//! Which way a rule's condition is answered: its native predicate, the
//! subject's cached result, or its Rhai body.
//!
//! The choice is kept apart from the evaluation loop because it is where
//! the two ways of answering must stay interchangeable: a native predicate
//! ([`crate::rule::native`]) answers only when it gives Rhai's answer, and
//! hands anything it cannot answer (an integer overflow, a division by
//! zero) back to the script so that errors and quarantine are the script's
//! own. Keeping that contract, the cache that only scripts use and the
//! cost accounting of both in one place makes it checkable on one screen.

use super::subject::CachedResult;
use super::Evaluator;
use crate::rule::{Condition, ScriptError};

impl Evaluator {
    /// Whether conditions compiled into native predicates use them (the
    /// default) or always call the script. The answers are the same; this is
    /// for measuring the difference and for ruling the compiler out.
    pub fn set_native_predicates(&mut self, on: bool) {
        self.native_predicates = on;
    }

    /// The value of condition `cond` of rule `ri` for subject `s` on
    /// `values`: from its native predicate when it has one (see
    /// [`crate::rule::native`]); else from the subject's cache when neither
    /// the values nor (for cross-series rules) other rules' instances
    /// changed, else from the script, its time counted against the rule's
    /// cost budget.
    ///
    /// A native predicate cannot fail: where the script would fail (integer
    /// overflow, division by zero) it gives no answer and the script runs,
    /// so the error, and the quarantine, are the script's own. Its cost is
    /// not timed (two clock reads cost as much as the predicate, and a
    /// preemption would land on it): each call is charged
    /// [`cost::native_cost`](super::cost::native_cost) of its size, above what it measures, against
    /// the same budget.
    pub(super) fn condition(
        &mut self,
        ri: usize,
        s: u32,
        cond: Condition,
        values: &[f64],
    ) -> Result<bool, ScriptError> {
        let rt = &mut self.rules[ri];
        if self.native_predicates {
            if let Some((result, nodes)) = rt.rule.eval_native_sized(cond, values) {
                rt.cost.spent_native(nodes);
                self.stats.native_calls += 1;
                return Ok(result);
            }
        }
        // Rules that ask about other rules' instances must be evaluated again
        // when those change, not only their windows.
        let epoch = if rt.rule.cross_series { self.scripts.helpers().epoch() } else { 0 };
        let hash = hash_values(values) ^ epoch.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let clear = cond == Condition::Clear;
        if let Some(cached) = rt.subjects[s as usize].cached(hash).filter(|c| c.clear == clear) {
            self.stats.cache_hits += 1;
            return Ok(cached.result);
        }
        self.stats.script_calls += 1;
        let labels = rt.labels_of(s, &self.series.read()).clone();
        let w = rt.rule.window_values(values.to_vec());
        let started = std::time::Instant::now();
        let result = self.scripts.eval(&rt.rule, cond, &labels, w);
        rt.cost.spent(started.elapsed());
        let result = result?;
        rt.subjects[s as usize].set_cached(hash, CachedResult { clear, result });
        Ok(result)
    }
}

/// A cheap hash of window values, to skip scripts whose inputs did not move.
fn hash_values(values: &[f64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in values {
        h = (h ^ v.to_bits()).wrapping_mul(0x0100_0000_01b3).rotate_left(17);
    }
    h
}
