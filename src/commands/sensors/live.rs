//! `rocemend sensors watch`: every sample the configured sensors read, as
//! it comes, filtered by metric.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use engine::{HealthBoard, Labels, SeriesId, SeriesTable};
use ops::report::sensors::{screen, shown};

use super::{run_sensors, sensors_config};
use crate::commands::Exit;

/// Series → (its previous raw counter value and time, the value shown).
type Latest = BTreeMap<SeriesId, (Option<(u64, i64)>, String)>;

/// `rocemend sensors watch [--config FILE] [--filter M]`: a table of the
/// newest value (counters: per-second rate) of every matching series,
/// redrawn every second.
pub fn watch(config_path: Option<&Path>, filter: Option<String>) -> anyhow::Result<Exit> {
    let config = sensors_config(config_path)?;
    let topology = ops::config::topology(config.inventory.as_deref())?;
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

/// Redraws the screen: each sensor's state and last error, then the newest
/// value of every series.
fn draw(series: &SeriesTable, health: &HealthBoard, latest: &Latest) {
    let reg = series.read();
    let rows =
        latest.iter().map(|(id, (_, shown))| (reg.metric_name(*id), shown.as_str(), reg.labels(*id).to_string()));
    print!("{}", screen(&health.snapshot(), rows, latest.len()));
    let _ = std::io::stdout().flush();
}
