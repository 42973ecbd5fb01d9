//! Window values for failure reports.
//!
//! A failed expectation is only useful with the numbers that decided it
//! ("expected firing, got pending (windows: paused=0.67)"), but the
//! evaluator hands window values out only with transitions. The runner
//! therefore feeds the same samples into its own [`Column`]s, the public
//! window accumulators the evaluator uses, reducing each sample to an
//! [`Observation`] exactly as `Evaluator::ingest` does. A unit test checks
//! that these values match the ones on every transition the engine reports.

use crate::counter;
use crate::rule::Rule;
use crate::series::{Sample, SampleKind};
use crate::time::Nanos;
use crate::window::{Column, Observation};

/// What the previous sample of a series was.
#[derive(Debug, Clone, Copy)]
struct Last {
    raw: u64,
    real: f64,
    ts: Nanos,
}

/// Shadow windows of one rule over one case's series.
#[derive(Debug, Clone)]
pub(super) struct Shadow {
    columns: Vec<Column>,
    /// Per case series: its subject and the windows it feeds, if the rule selects it.
    routes: Vec<Option<(usize, Vec<usize>)>>,
    kinds: Vec<SampleKind>,
    last: Vec<Option<Last>>,
}

impl Shadow {
    /// `routes[i]` is the subject of case series `i` (by index) and the
    /// metric it carries, or `None` when the rule does not select it.
    pub fn new(rule: &Rule, series: &[(Option<usize>, String, SampleKind)], subjects: usize) -> Shadow {
        let mut columns: Vec<Column> = rule.windows.iter().map(|(_, spec)| Column::new(spec)).collect();
        for c in &mut columns {
            c.grow(subjects);
        }
        let routes = series
            .iter()
            .map(|(subject, metric, _)| {
                subject.map(|s| {
                    let windows = rule.windows.iter().enumerate().filter(|(_, (_, w))| w.metric == *metric);
                    (s, windows.map(|(i, _)| i).collect())
                })
            })
            .collect();
        Shadow { columns, routes, kinds: series.iter().map(|(_, _, k)| *k).collect(), last: vec![None; series.len()] }
    }

    /// Feeds the sample of case series `index`.
    pub fn observe(&mut self, index: usize, sample: &Sample) {
        let last = self.last[index];
        let obs = match self.kinds[index] {
            SampleKind::Counter(spec) => {
                let prev = last.map(|prev| (prev.raw, prev.ts));
                let Ok(decoded) = counter::decode(spec, prev, sample.value, sample.ts) else { return };
                let (step, level) = decoded.step_and_rate();
                self.last[index] = Some(Last { raw: decoded.raw, real: 0.0, ts: sample.ts });
                Observation { ts: sample.ts, step, level, value: decoded.raw as f64 }
            }
            SampleKind::Gauge => {
                let x = sample.value.as_f64();
                let step = last.map_or(f64::NAN, |prev| x - prev.real);
                self.last[index] = Some(Last { raw: 0, real: x, ts: sample.ts });
                Observation { ts: sample.ts, step, level: x, value: x }
            }
            SampleKind::Event => {
                let x = sample.value.as_f64();
                Observation { ts: sample.ts, step: 1.0, level: x, value: x }
            }
        };
        if let Some((subject, windows)) = &self.routes[index] {
            for &w in windows {
                self.columns[w].observe(*subject, index as u32, &obs);
            }
        }
    }

    /// The window values of `subject` at `now`, in declaration order.
    pub fn values(&self, subject: usize, now: Nanos) -> Vec<f64> {
        self.columns.iter().map(|c| c.value(subject, now)).collect()
    }
}
