//! `rocemend sensors`: what the configured sensors find on this node, and
//! `rocemend sensors watch`: their samples, live ([`live`]).

mod live;

pub use live::watch;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use engine::{Batch, HealthBoard, Labels, SensorContext, SeriesId, SeriesTable, Topology};
use ops::config::{DaemonConfig, DEFAULT_CONFIG};
use ops::report::sensors::Found;
use tokio::sync::{mpsc, watch};

use super::Exit;
use crate::wiring;

/// Runs the configured sensors for `duration` (or until Ctrl-C when
/// `watch`), handing every batch to `on_batch`, and calling `on_tick` once
/// a second whether or not anything came.
pub(super) async fn run_sensors(
    config: &DaemonConfig,
    inventory: Option<&Topology>,
    series: SeriesTable,
    health: HealthBoard,
    duration: Option<Duration>,
    mut on_batch: impl FnMut(&Batch),
    mut on_tick: impl FnMut(),
) -> anyhow::Result<()> {
    let slots = wiring::sensors(config, inventory)?;
    let (tx, mut rx) = mpsc::channel::<Batch>(engine::runtime::BATCH_CHANNEL);
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    for slot in slots {
        let name = slot.sensor.name().to_string();
        let ctx = SensorContext::new(series.clone(), &name, slot.max_series, tx.clone(), stop_rx.clone())
            .with_health(health.clone());
        let board = health.clone();
        tasks.spawn(async move {
            let result = slot.sensor.run(ctx).await;
            let detail = match &result {
                Ok(()) => "finished".to_string(),
                Err(e) => e.to_string(),
            };
            if result.is_err()
                || !matches!(
                    board.snapshot().iter().find(|h| h.name == name).map(|h| h.state),
                    Some(engine::HealthState::Unavailable)
                )
            {
                board.set_state(&name, engine::HealthState::Stopped, &detail);
            }
        });
    }
    drop(tx);
    let deadline = duration.map(|d| tokio::time::Instant::now() + d);
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            batch = rx.recv() => match batch {
                Some(b) => on_batch(&b),
                None => break,
            },
            _ = ticker.tick() => on_tick(),
            _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// The sensors of a node without a configuration: every one that needs no
/// setting, with its defaults. Each says for itself when what it reads is
/// not on this node (no RDMA device, no NVIDIA driver). `state_dir` and
/// `playbook` are there because a daemon config requires them; `sensors`
/// reads neither.
const NODE_SENSORS: &str = "\
state_dir = \"/var/lib/rocemend\"
playbook = \"/etc/rocemend/playbook.toml\"
[[sensor]]
type = \"netlink_link\"
[[sensor]]
type = \"rdma_sysfs\"
[[sensor]]
type = \"ethtool\"
[[sensor]]
type = \"nvml\"
";

/// The configuration whose sensors `sensors` runs: `path`, else the
/// default config file when there is one, else [`NODE_SENSORS`]. Says
/// which on stderr.
pub(super) fn sensors_config(path: Option<&Path>) -> anyhow::Result<DaemonConfig> {
    let default = Path::new(DEFAULT_CONFIG);
    match path {
        Some(path) => Ok(DaemonConfig::load(path)?),
        None if default.exists() => {
            eprintln!("sensors of {}", default.display());
            Ok(DaemonConfig::load(default)?)
        }
        None => {
            eprintln!("no --config and no {}: this node's sensors with their default settings", default.display());
            Ok(DaemonConfig::parse(NODE_SENSORS, Path::new("/etc/rocemend/rocemend.toml"))?)
        }
    }
}

/// `rocemend sensors [--config FILE]`.
pub fn list(config_path: Option<&Path>, seconds: f64) -> anyhow::Result<Exit> {
    let config = sensors_config(config_path)?;
    let topology = ops::config::topology(config.inventory.as_deref())?;
    let defaults = config.node.as_deref().map(|n| Labels::from_pairs([("node", n)])).unwrap_or_default();
    let series = SeriesTable::new(topology.clone(), defaults);
    let health = HealthBoard::default();
    let mut samples: BTreeMap<u16, u64> = BTreeMap::new();
    let s2 = series.clone();
    super::runtime()?.block_on(run_sensors(
        &config,
        topology.as_deref(),
        series.clone(),
        health.clone(),
        Some(Duration::from_secs_f64(seconds)),
        |b| {
            let reg = s2.read();
            for s in &b.samples {
                *samples.entry(reg.info(s.series).sensor.0).or_default() += 1;
            }
        },
        || {},
    ))?;
    let reg = series.read();
    let mut metrics: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..reg.len() {
        *metrics.entry(reg.metric_name(SeriesId(i as u32)).to_string()).or_default() += 1;
    }
    let found = Found { health: &health.snapshot(), usage: &reg.sensor_usage(), samples: &samples, metrics: &metrics };
    print!("{}", found.text());
    let mut unhealthy = found.unhealthy();
    // Sensors that read nothing at all, without saying that what they read
    // does not exist here, are a finding: the daemon would see nothing.
    let blind = health.not_ready();
    if !blind.is_empty() {
        let names: Vec<&str> = blind.iter().map(|h| h.name.as_str()).collect();
        eprintln!("no sample from: {}", names.join(", "));
        unhealthy = true;
    }
    Ok(if unhealthy { Exit::Findings } else { Exit::Ok })
}
