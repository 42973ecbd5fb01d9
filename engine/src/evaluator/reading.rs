//! A rule's own view of one subject, read on request: what a canary and an
//! outcome check are judged by (`crate::dispatch`).

use super::{is_job_signal, Evaluator};
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

/// What an outcome check asks the evaluator.
#[derive(Debug, Clone, Copy)]
pub struct ObserveRequest<'a> {
    /// The rule that asked for the action.
    pub rule: &'a str,
    /// Its subject.
    pub subject: &'a Labels,
    /// The values watched: the rule's window values and job signals.
    pub names: &'a [String],
    /// The jobs the action touched, whose signals are read.
    pub jobs: &'a [String],
    /// Job signals read before this are not the action's doing.
    pub jobs_read_after: Nanos,
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

    /// What an outcome check sees: whether its rule's clear condition holds
    /// on its subject, and each watched value, a window value of the rule
    /// or a job signal of the jobs the action touched (`NaN` for one
    /// unknown, or a job signal not read since `jobs_read_after`); `None`
    /// when the rule or the subject is unknown or stale.
    pub fn observe(&mut self, request: &ObserveRequest<'_>, now: Nanos) -> Option<Observation> {
        let ri = self.rules.iter().position(|r| r.rule.name == request.rule)?;
        let s = self.subject_index(ri, request.subject)?;
        if self.rules[ri].instances.get(&s).is_some_and(|i| i.stale) {
            return None;
        }
        let values = self.rules[ri].values(s, now);
        let named = self.rules[ri].named_values(&values);
        let value = |name: &String| {
            if is_job_signal(name) {
                return self.job_signal(name, request.jobs, request.jobs_read_after);
            }
            named.iter().find(|(n, _)| n == name).map_or(f64::NAN, |(_, v)| *v)
        };
        let watched = request.names.iter().map(value).collect();
        let cleared = self.condition(ri, s, Condition::Clear, &values).unwrap_or(false);
        Some(Observation { cleared, values: watched })
    }

    /// The subject of rule `ri` whose labels are `subject`.
    fn subject_index(&self, ri: usize, subject: &Labels) -> Option<u32> {
        let rt = &self.rules[ri];
        let reg = self.series.read();
        (0..rt.subjects.len() as u32).find(|&s| &rt.labels_of(s, &reg).to_labels(reg.interner()) == subject)
    }
}
