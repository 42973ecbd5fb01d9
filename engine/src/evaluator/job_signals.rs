//! The running jobs' own signals, read for outcome checks (`[[expect]]
//! worse = ["job.step_time"]`): what a remedy did to the training run,
//! which no fabric counter says.
//!
//! A job's step time (`job_step_time_seconds{job}`, from the job sensor or
//! a training job's exporter) is known only at the end of a step and read
//! only as often as it is scraped, so a reading counts for a check only if
//! it was taken after the check's `read_after` (the action's time plus its
//! settling time, `policy::outcomes`): an earlier one describes a step the
//! action did not shape.
//!
//! The step-time series are noted when a series is first routed (a cold
//! path), never looked for among all series.

use std::collections::BTreeMap;

use super::Evaluator;
use crate::labels::{Interner, Sym};
use crate::rule::Helpers;
use crate::series::{SampleKind, SeriesId, SeriesInfo, SeriesTable};
use crate::time::Nanos;

/// The step time of the jobs an action touches, the slowest one's.
pub const STEP_TIME: &str = "job.step_time";

/// The job signals a playbook's `worse` may name: (name, the metric read).
pub const JOB_SIGNALS: &[(&str, &str)] = &[(STEP_TIME, "job_step_time_seconds")];

/// Whether `name` is a job signal rather than a rule's window value.
pub fn is_job_signal(name: &str) -> bool {
    JOB_SIGNALS.iter().any(|(n, _)| *n == name)
}

/// What the series say of the jobs: series → (signal, job) of the job
/// signals' series.
#[derive(Debug)]
pub(super) struct JobSeries {
    job_label: Sym,
    node_label: Sym,
    metrics: Vec<Sym>,
    series: BTreeMap<u32, (usize, Sym)>,
}

impl JobSeries {
    pub(super) fn new(table: &SeriesTable) -> JobSeries {
        let metrics = JOB_SIGNALS.iter().map(|(_, metric)| table.intern(metric)).collect();
        let (job_label, node_label) = (table.intern("job"), table.intern("node"));
        JobSeries { job_label, node_label, metrics, series: BTreeMap::new() }
    }

    /// Takes in series `id` as it is first routed: a series labelled
    /// `{job, node}` places the job on the node for the helpers (`job_nodes`,
    /// the jobs an action touches), and a gauge of a job signal is noted.
    pub(super) fn note(&mut self, id: SeriesId, info: &SeriesInfo, interner: &Interner, helpers: &Helpers) {
        let Some(job) = info.labels.get(self.job_label) else { return };
        if let Some(node) = info.labels.get(self.node_label) {
            helpers.add_job_node(interner.resolve(job), interner.resolve(node));
        }
        if info.kind != SampleKind::Gauge {
            return;
        }
        if let Some(signal) = self.metrics.iter().position(|m| *m == info.metric) {
            self.series.insert(id.0, (signal, job));
        }
    }
}

impl Evaluator {
    /// The highest value of job signal `name` over the series of `jobs`
    /// read at or after `read_after`; `NaN` when there is none (an unknown
    /// name, no job, no reading yet).
    pub fn job_signal(&self, name: &str, jobs: &[String], read_after: Nanos) -> f64 {
        let Some(signal) = JOB_SIGNALS.iter().position(|(n, _)| *n == name) else { return f64::NAN };
        let reg = self.series.read();
        let wanted: Vec<Sym> = jobs.iter().filter_map(|j| reg.interner().get(j)).collect();
        let mut worst = f64::NAN;
        for (&idx, &(s, job)) in &self.job_series.series {
            let Some(state) = self.states.get(idx as usize) else { continue };
            if s != signal || !wanted.contains(&job) || !state.has_last() || state.last_ts < read_after {
                continue;
            }
            worst = worst.max(f64::from_bits(state.last));
        }
        worst
    }

    /// The job signals of the jobs an action touches as it is proposed, as
    /// the values its outcome check compares with (`job.step_time`).
    pub(super) fn job_values(&self, jobs: &[String]) -> Vec<(String, f64)> {
        if jobs.is_empty() {
            return Vec::new();
        }
        JOB_SIGNALS
            .iter()
            .map(|(name, _)| (name.to_string(), self.job_signal(name, jobs, Nanos::MIN)))
            .filter(|(_, v)| v.is_finite())
            .collect()
    }
}
