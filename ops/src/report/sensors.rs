//! `rocemend sensors`: what the configured sensors found on this node, and
//! `rocemend sensors watch`: the newest value of each series, redrawn.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use engine::{HealthState, SampleKind, SensorHealth, Value};

use super::rfc3339;
use super::table::Table;

/// What the sensors of one `rocemend sensors` run read.
pub struct Found<'a> {
    /// Each sensor's health at the end.
    pub health: &'a [SensorHealth],
    /// The series table's `sensor_usage`: name, series, cap, by sensor index.
    pub usage: &'a [(String, usize, usize)],
    /// Samples read, by sensor index.
    pub samples: &'a BTreeMap<u16, u64>,
    /// Series by metric name.
    pub metrics: &'a BTreeMap<String, usize>,
}

impl Found<'_> {
    /// Whether a sensor is degraded, or stopped on an error: a finding.
    pub fn unhealthy(&self) -> bool {
        self.health
            .iter()
            .any(|h| h.state == HealthState::Degraded || (h.state == HealthState::Stopped && h.last_error.is_some()))
    }

    /// The table of sensors, then the metrics discovered.
    pub fn text(&self) -> String {
        let mut t = Table::new(["SENSOR", "STATE", "SERIES", "SAMPLES", "ERRORS", "CPU ms", "detail / last error"])
            .right(&[2, 3, 4, 5]);
        for h in self.health {
            let (series, samples) = match self.usage.iter().position(|(n, _, _)| *n == h.name) {
                Some(i) => (self.usage[i].1, self.samples.get(&(i as u16)).copied().unwrap_or(0)),
                None => (0, 0),
            };
            let errors: u64 = h.errors.values().sum();
            let detail = match (&h.last_error, h.detail.is_empty()) {
                (Some(e), _) => format!("{} (last error: {e})", h.detail),
                (None, false) => h.detail.clone(),
                (None, true) => h.last_ok.map(|t| format!("last read {}", rfc3339(t))).unwrap_or_default(),
            };
            let state = format!("{:?}", h.state).to_lowercase();
            let cpu = format!("{:.1}", h.busy_ns as f64 / 1e6);
            t.row([h.name.clone(), state, series.to_string(), samples.to_string(), errors.to_string(), cpu, detail]);
        }
        let mut out = t.render();
        let series: usize = self.metrics.values().sum();
        let _ = writeln!(out, "\n{series} series of {} metrics discovered:", self.metrics.len());
        for (m, n) in self.metrics {
            let _ = writeln!(out, "  {m:<48} {n:>6}");
        }
        out
    }
}

/// A sample as `sensors watch` shows it: counters as a per-second rate
/// since the previous reading (`prev`, updated), everything else as read.
pub fn shown(kind: SampleKind, value: Value, ts: i64, prev: &mut Option<(u64, i64)>) -> String {
    match (kind, value) {
        (SampleKind::Counter(_), Value::Count(n)) => {
            let text = match *prev {
                Some((p, t)) if ts > t && n >= p => format!("{:.1}/s", (n - p) as f64 / ((ts - t) as f64 / 1e9)),
                _ => format!("{n} (total)"),
            };
            *prev = Some((n, ts));
            text
        }
        (_, v) => format!("{}", v.as_f64()),
    }
}

/// Series `sensors watch` shows at most: a screen, not a log.
pub const WATCHED: usize = 200;

/// The screen of `sensors watch`: clear, each sensor's state and last error,
/// then the newest value of the first [`WATCHED`] series (`metric`, value
/// shown, labels) of the `total` seen.
pub fn screen<'a>(
    health: &[SensorHealth],
    rows: impl Iterator<Item = (&'a str, &'a str, String)>,
    total: usize,
) -> String {
    let mut out = String::from("\x1b[2J\x1b[H");
    let _ = writeln!(out, "rocemend sensors watch — {total} series (Ctrl-C to stop)");
    for h in health {
        let state = serde_json::to_value(h.state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let error = h.last_error.as_deref().map(|e| format!("  last error: {e}")).unwrap_or_default();
        let _ = writeln!(out, "  {:<16} {:<11} {:>8} samples{error}", h.name, state, h.samples);
    }
    out.push('\n');
    for (metric, shown, labels) in rows.take(WATCHED) {
        let _ = writeln!(out, "{metric:<44} {shown:>18}  {labels}");
    }
    out
}
