//! What the evaluator reports and counts.

use crate::contracts::{Proposal, Severity};
use crate::instance::{Instance, State};
use crate::labels::Labels;
use crate::rule::ScriptError;
use crate::time::Nanos;

/// What the evaluator reports.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// An instance changed state.
    Transition {
        /// Rule name.
        rule: String,
        /// Subject labels.
        subject: Labels,
        /// Old state.
        from: State,
        /// New state.
        to: State,
        /// When.
        at: Nanos,
        /// Window values that decided it.
        values: Vec<(String, f64)>,
        /// The rule's severity, for consumers that judge by it (the node
        /// condition of `[kubernetes_condition]`) without the rule set.
        severity: Severity,
    },
    /// A firing instance proposes an action.
    Proposal(Proposal),
    /// A proposal could not be made (a template needs a label the subject lacks).
    ActionError {
        /// Rule name.
        rule: String,
        /// Subject labels.
        subject: Labels,
        /// What is wrong.
        message: String,
    },
    /// A subject's inputs went stale: the rule cannot protect it.
    SensorStale {
        /// Rule name.
        rule: String,
        /// Subject labels.
        subject: Labels,
        /// The last sample seen.
        last_seen: Nanos,
        /// When it was noticed.
        at: Nanos,
    },
    /// A stale subject receives samples again.
    SensorFresh {
        /// Rule name.
        rule: String,
        /// Subject labels.
        subject: Labels,
        /// When.
        at: Nanos,
    },
    /// A rule failed at run time and is no longer evaluated until reloaded.
    Quarantined {
        /// Rule name.
        rule: String,
        /// The failure.
        error: ScriptError,
        /// When.
        at: Nanos,
    },
}

/// Whether a rule is being evaluated.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleHealth {
    /// Evaluated normally.
    Ok,
    /// Failed at run time; skipped until a reload brings a new version.
    Quarantined {
        /// The failure.
        error: ScriptError,
        /// When.
        at: Nanos,
    },
}

/// Counters about the evaluator's own work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Samples ingested.
    pub samples: u64,
    /// Samples dropped because they were a little older than the series'
    /// last one (at most [`super::STEP_BACK_AFTER`]: reordered on the way).
    pub out_of_order: u64,
    /// Samples far older than their series' last one: its clock stepped
    /// back. Each resynchronizes its series ([`super::SteppedBack`]).
    pub steps_back: u64,
    /// Counter readings that wrapped.
    pub counter_wraps: u64,
    /// Counter readings that went backwards (resets).
    pub counter_resets: u64,
    /// Counter readings stuck at all-ones.
    pub counter_saturated: u64,
    /// Samples not believed, by reason.
    pub refused: RefusedCounts,
    /// Script calls made.
    pub script_calls: u64,
    /// Conditions answered by a native predicate instead of a script call
    /// (not counted in `script_calls`).
    pub native_calls: u64,
    /// Evaluations answered from the cache (window values unchanged).
    pub cache_hits: u64,
}

/// Samples the evaluator refused, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RefusedCounts {
    /// Counter readings outside the width, negative or fractional.
    pub bad_counter: u64,
    /// Counter increases beyond what the metric can physically count.
    pub implausible: u64,
    /// Samples stamped too far ahead of the clock (counted by the run loop).
    pub future: u64,
    /// Samples of a series with a label value its kind does not allow.
    pub bad_label: u64,
}

impl RefusedCounts {
    /// All refusals.
    pub fn total(&self) -> u64 {
        self.bad_counter + self.implausible + self.future + self.bad_label
    }
}

/// What changed in a reload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// Rules whose content is unchanged: state and windows kept.
    pub unchanged: Vec<String>,
    /// Rules whose content changed: instance state kept by subject, windows restarted.
    pub changed: Vec<String>,
    /// New rules.
    pub added: Vec<String>,
    /// Rules no longer in the set.
    pub removed: Vec<String>,
}

/// A read-only view of one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceView {
    /// Rule name.
    pub rule: String,
    /// Subject labels.
    pub subject: Labels,
    /// The instance.
    pub instance: Instance,
}

/// Bytes of evaluator state by part (see [`super::Evaluator::state_breakdown`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateBytes {
    /// Per-series decode state (last reading, time, routes into rules).
    pub series: usize,
    /// Routes: one per (series, matching rule).
    pub routes: usize,
    /// Rule subjects, with the label sets of multi-series subjects.
    pub subjects: usize,
    /// Window accumulators.
    pub windows: usize,
    /// The lookup of subjects by group-by values.
    pub subject_index: usize,
    /// Instances that are not idle.
    pub instances: usize,
    /// Lists of subjects waiting for evaluation.
    pub dirty: usize,
}

impl StateBytes {
    /// The sum of the parts.
    pub fn total(&self) -> usize {
        self.series + self.routes + self.subjects + self.windows + self.subject_index + self.instances + self.dirty
    }
}
