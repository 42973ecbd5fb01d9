//! `rocemend sensors watch`: every sample the configured sensors read, as
//! it comes, filtered by metric.

use crate::{wiring, Exit};
use engine::{HealthBoard, Labels, SampleKind, SeriesId, SeriesTable, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use super::{run_sensors, sensors_config};

/// Series → (its previous raw counter value and time, the value shown).
type Latest = BTreeMap<SeriesId, (Option<(u64, i64)>, String)>;

/// `rocemend sensors watch [--config FILE] [--filter M]`: a table of the
/// newest value (counters: per-second rate) of every matching series,
/// redrawn every second.
pub fn watch(config_path: Option<&Path>, filter: Option<String>) -> anyhow::Result<Exit> {
    let config = sensors_config(config_path)?;
    let topology = wiring::topology(config.inventory.as_deref())?;
    let defaults = config.node.as_deref().map(|n| Labels::from_pairs([("node", n)])).unwrap_or_default();
    let series = SeriesTable::new(topology.clone(), defaults);
    let health = HealthBoard::default();
    // series → (previous raw, its time, shown value)
    let latest: Latest = BTreeMap::new();
    let s2 = series.clone();
    let latest = std::cell::RefCell::new(latest);
    let board = health.clone();
    crate::commands::runtime()?.block_on(run_sensors(
        &config,
        topology.as_deref(),
        series.clone(),
        health,
        None,
        |b| {
            let reg = s2.read();
            let mut latest = latest.borrow_mut();
            for s in &b.samples {
                let name = reg.metric_name(s.series);
                if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
                    continue;
                }
                let entry = latest.entry(s.series).or_insert((None, String::new()));
                entry.1 = shown(reg.info(s.series).kind, s.value, s.ts, &mut entry.0);
            }
        },
        || draw(&s2, &board, &latest.borrow()),
    ))?;
    Ok(Exit::Ok)
}

/// A sample as shown: counters as a per-second rate since the previous
/// reading (`prev`, updated), everything else as read.
fn shown(kind: SampleKind, value: Value, ts: i64, prev: &mut Option<(u64, i64)>) -> String {
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

/// Redraws the screen: each sensor's state and last error, then the newest
/// value of every series (the first 200).
fn draw(series: &SeriesTable, health: &HealthBoard, latest: &Latest) {
    let reg = series.read();
    let mut out = String::from("\x1b[2J\x1b[H");
    out.push_str(&format!("rocemend sensors watch — {} series (Ctrl-C to stop)\n", latest.len()));
    for h in health.snapshot() {
        let state = serde_json::to_value(h.state).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let error = h.last_error.as_deref().map(|e| format!("  last error: {e}")).unwrap_or_default();
        out.push_str(&format!("  {:<16} {:<11} {:>8} samples{error}\n", h.name, state, h.samples));
    }
    out.push('\n');
    for (id, (_, shown)) in latest.iter().take(200) {
        out.push_str(&format!("{:<44} {:>18}  {}\n", reg.metric_name(*id), shown, reg.labels(*id)));
    }
    print!("{out}");
    let _ = std::io::stdout().flush();
}
