//! Reporting refused samples: each counts against its sensor's health, and
//! the log names the series and the reason, at most one line per sensor
//! every [`LOG_EVERY`] (a sensor gone wrong refuses every sample it sends).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::contracts::HealthBoard;
use crate::evaluator::{Refused, SteppedBack};
use crate::series::SeriesTable;
use crate::time::{rfc3339, Span};

/// The least time between two log lines about one sensor's refusals.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Reports refusals to the health board and the log.
#[derive(Debug, Default)]
pub(super) struct RefusalReporter {
    /// Per sensor: when it was last logged, and refusals not logged since.
    logged: HashMap<String, (Option<Instant>, u64)>,
    /// Per sensor: when a step back of its clock was last logged, and the
    /// series that stepped since. A step moves every series of a sensor at
    /// once: one line says it, with its size.
    steps_logged: HashMap<String, (Option<Instant>, u64)>,
}

impl RefusalReporter {
    /// Reports series whose clock stepped back: each counted in its
    /// sensor's health, one log line per sensor per step (at most one every
    /// [`LOG_EVERY`]) with the size of the step.
    pub fn report_steps_back(&mut self, steps: &[SteppedBack], series: &SeriesTable, health: &HealthBoard) {
        if steps.is_empty() {
            return;
        }
        let reg = series.read();
        for step in steps {
            let info = reg.info(step.series);
            let sensor = reg.sensor_name(info.sensor).to_string();
            let what = format!("{}{}", reg.metric_name(step.series), reg.labels(step.series));
            let by = Span(step.from - step.to);
            let why =
                format!("the clock of {what} stepped back {by}, to {}: taken up again from there", rfc3339(step.to));
            health.clock_stepped(&sensor, &why);
            let now = Instant::now();
            let entry = self.steps_logged.entry(sensor.clone()).or_insert((None, 0));
            if entry.0.is_none_or(|last| now.duration_since(last) >= LOG_EVERY) {
                *entry = (Some(now), 0);
                tracing::warn!(
                    message = "A clock stepped back; its series are taken up again from the new time.",
                    sensor = %sensor,
                    series = %what,
                    by = %by,
                    from = %rfc3339(step.from),
                    to = %rfc3339(step.to),
                );
            } else {
                entry.1 += 1;
            }
        }
    }

    pub fn report(&mut self, refused: &[Refused], series: &SeriesTable, health: &HealthBoard) {
        if refused.is_empty() {
            return;
        }
        let reg = series.read();
        for r in refused {
            let info = reg.info(r.series);
            let sensor = reg.sensor_name(info.sensor).to_string();
            let what = format!("{}{}", reg.metric_name(r.series), reg.labels(r.series));
            let why = format!("sample of {what} at {}: {}", crate::time::rfc3339(r.ts), r.refusal);
            health.refused(&sensor, &why);
            let now = Instant::now();
            let entry = self.logged.entry(sensor.clone()).or_insert((None, 0));
            if entry.0.is_none_or(|last| now.duration_since(last) >= LOG_EVERY) {
                let unlogged = entry.1;
                *entry = (Some(now), 0);
                tracing::warn!(
                    message = "Sample refused.",
                    sensor = %sensor,
                    series = %what,
                    at = r.ts,
                    reason = %r.refusal,
                    refused_since_last_line = unlogged
                );
            } else {
                entry.1 += 1;
            }
        }
    }
}
