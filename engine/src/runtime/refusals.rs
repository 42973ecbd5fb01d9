//! Reporting refused samples: each counts against its sensor's health, and
//! the log names the series and the reason, at most one line per sensor
//! every [`LOG_EVERY`] (a sensor gone wrong refuses every sample it sends).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::contracts::HealthBoard;
use crate::evaluator::Refused;
use crate::series::SeriesTable;

/// The least time between two log lines about one sensor's refusals.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Reports refusals to the health board and the log.
#[derive(Debug, Default)]
pub(super) struct RefusalReporter {
    /// Per sensor: when it was last logged, and refusals not logged since.
    logged: HashMap<String, (Option<Instant>, u64)>,
}

impl RefusalReporter {
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
