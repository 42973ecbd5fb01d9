//! `rocemend sensors watch`: every sample the configured sensors read, as
//! it comes, filtered by metric.

use crate::config::DaemonConfig;
use crate::{wiring, Exit};
use engine::{HealthBoard, Labels, SampleKind, SeriesId, SeriesTable, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use super::run_sensors;

/// `rocemend sensors watch --config FILE [--filter M]`: a table of the
/// newest value (counters: per-second rate) of every matching series,
/// redrawn every second.
pub fn watch(config_path: &Path, filter: Option<String>) -> anyhow::Result<Exit> {
    let config = DaemonConfig::load(config_path)?;
    let topology = wiring::topology(config.inventory.as_deref())?;
    let defaults = config.node.as_deref().map(|n| Labels::from_pairs([("node", n)])).unwrap_or_default();
    let series = SeriesTable::new(topology, defaults);
    let health = HealthBoard::default();
    // series → (previous raw, its time, shown value)
    let mut latest: BTreeMap<SeriesId, (Option<(u64, i64)>, String)> = BTreeMap::new();
    let mut last_draw = Instant::now();
    let s2 = series.clone();
    crate::commands::runtime()?.block_on(run_sensors(&config, series.clone(), health, None, |b| {
        let reg = s2.read();
        for s in &b.samples {
            let name = reg.metric_name(s.series);
            if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
                continue;
            }
            let entry = latest.entry(s.series).or_insert((None, String::new()));
            entry.1 = match (reg.info(s.series).kind, s.value) {
                (SampleKind::Counter(_), Value::Count(n)) => {
                    let shown = match entry.0 {
                        Some((prev, t)) if s.ts > t && n >= prev => {
                            format!("{:.1}/s", (n - prev) as f64 / ((s.ts - t) as f64 / 1e9))
                        }
                        _ => format!("{n} (total)"),
                    };
                    entry.0 = Some((n, s.ts));
                    shown
                }
                (_, v) => format!("{}", v.as_f64()),
            };
        }
        if last_draw.elapsed() >= Duration::from_secs(1) {
            last_draw = Instant::now();
            let mut out = String::from("\x1b[2J\x1b[H");
            out.push_str(&format!("rocemend sensors watch — {} series (Ctrl-C to stop)\n\n", latest.len()));
            for (id, (_, shown)) in latest.iter().take(200) {
                out.push_str(&format!("{:<44} {:>18}  {}\n", reg.metric_name(*id), shown, reg.labels(*id)));
            }
            print!("{out}");
            let _ = std::io::stdout().flush();
        }
    }))?;
    Ok(Exit::Ok)
}
