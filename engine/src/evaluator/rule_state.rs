//! The per-rule state the evaluator keeps: subjects, window columns,
//! instances, and the per-series routes into them.

use std::collections::HashMap;
use std::sync::Arc;

use super::events::RuleHealth;
use super::subject::{Subject, SubjectIndex};
use crate::instance::{Instance, Timing};
use crate::labels::{LabelSet, Labels, Sym};
use crate::rule::Rule;
use crate::series::Registry;
use crate::series::{SampleKind, SeriesTable};
use crate::time::Nanos;
use crate::window::Column;

pub(super) const UNROUTED: u16 = u16::MAX;
/// The `route_len` of a series whose samples are all refused (a bad label).
pub(super) const REFUSED: u16 = u16::MAX - 1;

#[derive(Debug, Clone, Copy)]
pub(super) struct SeriesState {
    /// Counters: raw reading. Gauges: `f64` bits of the value.
    pub(super) last: u64,
    pub(super) last_ts: Nanos,
    pub(super) kind: SampleKind,
    pub(super) route_start: u32,
    pub(super) route_len: u16,
}

// 32 bytes: one of these per series is about a tenth of the memory budget.
// (24 before counters carried their rate bound: the kind outgrew its niche.)
const _: () = assert!(std::mem::size_of::<SeriesState>() <= 32);

impl SeriesState {
    /// Whether a reading came before (the first one has no increase).
    #[inline]
    pub(super) fn has_last(&self) -> bool {
        self.last_ts != Nanos::MIN
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Route {
    pub(super) rule: u16,
    /// Index into the rule's `metric_windows`.
    pub(super) slot: u16,
    pub(super) subject: u32,
}

/// The store's key of a subject: its `group_by` labels, `name=value,…`.
pub(super) fn subject_key(group_by: &[String], labels: &Labels) -> String {
    group_by.iter().map(|g| format!("{g}={}", labels.get(g).unwrap_or(""))).collect::<Vec<_>>().join(",")
}

pub(super) struct RuleRuntime {
    pub(super) rule: Arc<Rule>,
    pub(super) timing: Timing,
    /// Metric → indices of the windows reading it.
    pub(super) metric_windows: Vec<(Sym, Vec<u16>)>,
    pub(super) group_by: Vec<Sym>,
    pub(super) subject_index: SubjectIndex,
    pub(super) subjects: Vec<Subject>,
    /// Label sets of subjects whose series do not all carry the same labels.
    pub(super) narrowed: Vec<LabelSet>,
    pub(super) columns: Vec<Column>,
    /// Instances that are not idle, by subject.
    pub(super) instances: HashMap<u32, Instance>,
    /// Instances restored from the store or a reload, waiting for their
    /// subject to reappear, by subject key.
    pub(super) restored: HashMap<String, Instance>,
    pub(super) dirty: Vec<u32>,
    pub(super) health: RuleHealth,
    /// The longest window range: how long a subject's windows take to fill.
    pub(super) warm_up: Nanos,
    /// Subject keys restored as firing from the store at start.
    pub(super) from_store: std::collections::HashSet<String>,
    /// Subjects whose restored firing instance proposes again once.
    pub(super) repropose: Vec<u32>,
    pub(super) last_stale_scan: Nanos,
    /// What its scripts cost, against the budget.
    pub(super) cost: super::cost::CostMeter,
}

impl RuleRuntime {
    pub(super) fn new(rule: Arc<Rule>, series: &SeriesTable) -> RuleRuntime {
        let mut metric_windows: Vec<(Sym, Vec<u16>)> = Vec::new();
        for (i, (_, spec)) in rule.windows.iter().enumerate() {
            let sym = series.intern(&spec.metric);
            match metric_windows.iter_mut().find(|(m, _)| *m == sym) {
                Some((_, list)) => list.push(i as u16),
                None => metric_windows.push((sym, vec![i as u16])),
            }
        }
        // Metrics a selector names but no window reads still count for
        // staleness and subject labels.
        for sel in &rule.selectors {
            let sym = series.intern(&sel.metric);
            if !metric_windows.iter().any(|(m, _)| *m == sym) {
                metric_windows.push((sym, Vec::new()));
            }
        }
        let group_by = rule.group_by.iter().map(|g| series.intern(g)).collect();
        let warm_up = rule.windows.iter().map(|(_, s)| s.range).max().unwrap_or(0);
        RuleRuntime {
            timing: Timing { for_: rule.for_, keep_firing_for: rule.keep_firing_for, cooldown: rule.cooldown },
            columns: rule.windows.iter().map(|(_, s)| Column::new(s)).collect(),
            rule,
            metric_windows,
            group_by,
            subject_index: SubjectIndex::default(),
            subjects: Vec::new(),
            narrowed: Vec::new(),
            instances: HashMap::new(),
            restored: HashMap::new(),
            dirty: Vec::new(),
            health: RuleHealth::Ok,
            warm_up,
            from_store: Default::default(),
            repropose: Vec::new(),
            last_stale_scan: Nanos::MIN,
            cost: super::cost::CostMeter::default(),
        }
    }

    pub(super) fn subject_key(&self, labels: &Labels) -> String {
        subject_key(&self.rule.group_by, labels)
    }

    /// The labels of subject `s`.
    pub(super) fn labels_of<'a>(&'a self, s: u32, reg: &'a Registry) -> &'a LabelSet {
        self.subjects[s as usize].labels(reg, &self.narrowed)
    }

    pub(super) fn values(&self, subject: u32, now: Nanos) -> Vec<f64> {
        self.columns.iter().map(|c| c.value(subject as usize, now)).collect()
    }

    /// [`RuleRuntime::values`] appended to `out`.
    pub(super) fn values_into(&self, subject: u32, now: Nanos, out: &mut Vec<f64>) {
        out.extend(self.columns.iter().map(|c| c.value(subject as usize, now)));
    }

    pub(super) fn named_values(&self, values: &[f64]) -> Vec<(String, f64)> {
        self.rule.windows.iter().map(|(n, _)| n.clone()).zip(values.iter().copied()).collect()
    }
}
