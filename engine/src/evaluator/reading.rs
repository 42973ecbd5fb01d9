//! A rule's own view of one subject, read on request: what a canary is
//! judged by ([`crate::dispatch`]'s `[[canary]]`).

use super::Evaluator;
use crate::labels::Labels;
use crate::rule::Condition;
use crate::time::Nanos;

/// What `rule` sees of one subject now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The named window value (`NaN`: the rule, the subject or the value is
    /// unknown, or its window is empty).
    pub value: f64,
    /// Whether the rule's clear condition holds on the subject's windows
    /// (`false` when it cannot be evaluated).
    pub cleared: bool,
}

/// What a rule sees of one subject for an outcome check.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Whether its clear condition holds.
    pub cleared: bool,
    /// The window values asked for, in order (`NaN`: unknown or empty).
    pub values: Vec<f64>,
}

impl Reading {
    /// Nothing could be read.
    pub const UNREAD: Reading = Reading { value: f64::NAN, cleared: false };
}

impl Evaluator {
    /// What `rule` reads for `subject` at `now`: its window value `name`
    /// and whether its clear condition holds. A stale subject reads as
    /// [`Reading::UNREAD`]: nothing is judged on stale data. Costs a scan of
    /// the rule's subjects: for occasional questions, not for every sample.
    pub fn reading(&mut self, rule: &str, subject: &Labels, name: &str, now: Nanos) -> Reading {
        let Some(ri) = self.rules.iter().position(|r| r.rule.name == rule) else { return Reading::UNREAD };
        let Some(s) = self.subject_index(ri, subject) else { return Reading::UNREAD };
        if self.rules[ri].instances.get(&s).is_some_and(|i| i.stale) {
            return Reading::UNREAD;
        }
        let values = self.rules[ri].values(s, now);
        let value =
            self.rules[ri].named_values(&values).into_iter().find(|(n, _)| n == name).map_or(f64::NAN, |(_, v)| v);
        let cleared = self.condition(ri, s, Condition::Clear, &values).unwrap_or(false);
        Reading { value, cleared }
    }

    /// What `rule` sees of `subject` for an outcome check: whether its clear
    /// condition holds, and each of the window values `names` (`NaN` for one
    /// it does not have); `None` when the rule or the subject is unknown or
    /// stale.
    pub fn observe(&mut self, rule: &str, subject: &Labels, names: &[String], now: Nanos) -> Option<Observation> {
        let ri = self.rules.iter().position(|r| r.rule.name == rule)?;
        let s = self.subject_index(ri, subject)?;
        if self.rules[ri].instances.get(&s).is_some_and(|i| i.stale) {
            return None;
        }
        let values = self.rules[ri].values(s, now);
        let named = self.rules[ri].named_values(&values);
        let value = |name: &String| named.iter().find(|(n, _)| n == name).map_or(f64::NAN, |(_, v)| *v);
        let cleared = self.condition(ri, s, Condition::Clear, &values).unwrap_or(false);
        Some(Observation { cleared, values: names.iter().map(value).collect() })
    }

    /// The subject of rule `ri` whose labels are `subject`.
    fn subject_index(&self, ri: usize, subject: &Labels) -> Option<u32> {
        let rt = &self.rules[ri];
        let reg = self.series.read();
        (0..rt.subjects.len() as u32).find(|&s| &rt.labels_of(s, &reg).to_labels(reg.interner()) == subject)
    }
}
