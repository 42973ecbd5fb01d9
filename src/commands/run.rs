//! `rocemend run`: the daemon.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use engine::ledger::{Ledger, Retention};
use engine::playbook::Playbook;
use engine::rule::Helpers;
use engine::runtime::{self, ClockMode, Command, Daemon, EngineCommand};
use engine::time::parse_duration;
use engine::{Evaluator, Labels, SeriesTable, Store};
use tokio::sync::{mpsc, watch};

use crate::config::DaemonConfig;
use crate::control::{self, server::ControlService};
use crate::{report, wiring, Outcome};

pub fn run(config_path: &Path) -> anyhow::Result<Outcome> {
    let config = DaemonConfig::load(config_path)?;
    init_logging(&config.log.format, &config.log.level)?;
    let topology = wiring::topology(config.inventory.as_deref())?;
    let playbook = Playbook::load(&config.playbook)?;
    let rules_dir = wiring::rules_dir(&config, &playbook)?;
    let default_labels = match &config.node {
        Some(node) => Labels::from_pairs([("node", node.as_str())]),
        None => Labels::default(),
    };
    let series = SeriesTable::new(topology.clone(), default_labels);
    let helpers = Helpers::new(Some(series.clone()), topology.clone());
    let rules = wiring::load_rules(&rules_dir, helpers, &playbook)?;
    std::fs::create_dir_all(&config.state_dir)
        .with_context(|| format!("creating state directory {}", config.state_dir.display()))?;
    let store = Store::open(&config.state_dir.join("state.sled"))?;
    let ledger = Ledger::open(&store, Retention::default())?;
    let evaluator = Evaluator::new(series, rules, Some(store))?;
    let dispatcher = actuators::registry::dispatcher(&playbook, topology.clone(), Some(ledger.clone()))?;
    let mut sensors = wiring::sensors(&config)?;
    // Job signals pushed over the control API enter as one more sensor; not
    // in a replay that exits when its sensors end, since this one never does.
    let job_tx = if config.engine.exit_when_sensors_end {
        None
    } else {
        let (tx, job_sensor) = control::jobs::channel();
        sensors.push(engine::runtime::SensorSlot {
            sensor: Box::new(job_sensor),
            max_series: config.engine.max_series_per_sensor,
        });
        Some(tx)
    };
    let health = engine::HealthBoard::default();
    let tcp = control::serve::tcp_side(&config.control)?;
    let clock = match config.engine.clock.as_str() {
        "wall" => ClockMode::Wall,
        "samples" => ClockMode::Samples,
        other => anyhow::bail!("{}: engine.clock {other:?}: expected wall or samples", config_path.display()),
    };
    let tick = Duration::from_nanos(parse_duration(&config.engine.tick)?.max(1_000_000) as u64);
    let reload_poll = parse_duration(&config.engine.reload_poll)?;
    let socket = config.control.socket.clone().unwrap_or_else(|| config.state_dir.join("control.sock"));
    let loader_dir = rules_dir.clone();
    let loader_playbook = playbook.clone();
    let daemon = Daemon {
        evaluator,
        dispatcher,
        sensors,
        loader: Some(Box::new(move |helpers| wiring::load_rules(&loader_dir, helpers, &loader_playbook))),
        clock,
        tick,
        record: config.record.clone(),
        stop_when_sensors_end: config.engine.exit_when_sensors_end,
        health: health.clone(),
    };
    tracing::info!(
        message = "Starting.",
        config = %config_path.display(),
        rules = %rules_dir.display(),
        playbook = %playbook.name,
        mode = playbook.mode.as_str()
    );
    let rt = super::runtime()?;
    rt.block_on(async move {
        let mut daemon = daemon;
        daemon.dispatcher = wiring::fleet(daemon.dispatcher, config.fleet.as_ref(), &playbook).await?;
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let (command_tx, command_rx) = mpsc::channel(16);
        let hub = control::events::EventHub::default();
        let metrics = std::sync::Arc::new(crate::metrics::Metrics::new());
        let service = ControlService::new(command_tx.clone(), ledger.clone(), hub.clone(), job_tx);
        let control = control::serve::start(socket, tcp, service, shutdown_rx.clone())?;
        if let Some(addr) = &config.metrics.listen {
            let endpoint = crate::metrics::http::Endpoint {
                metrics: metrics.clone(),
                commands: command_tx.clone(),
                ledger: Some(ledger),
                health,
            };
            let (_, serve) = crate::metrics::http::bind(addr, endpoint, shutdown_rx.clone())?;
            tokio::spawn(serve);
        }
        spawn_signal_handlers(shutdown_tx.clone(), command_tx.clone())?;
        if reload_poll > 0 {
            tokio::spawn(watch_rules(rules_dir, Duration::from_nanos(reload_poll as u64), command_tx));
        }
        let hub_at_stop = hub.clone();
        let observe = move |event: &runtime::DaemonEvent| {
            report::log_event(event);
            metrics.observe(event);
            hub.publish(event);
        };
        let summary = runtime::run(daemon, shutdown_rx, command_rx, observe).await?;
        hub_at_stop.close();
        let _ = shutdown_tx.send(true);
        if let Ok(Err(error)) = control.await {
            let error = format!("{error:#}");
            tracing::error!(message = "Control API failed.", %error);
        }
        tracing::info!(message = "Stopped.", samples = summary.stats.samples, decisions = summary.decisions);
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(Outcome::Ok)
}

fn init_logging(format: &str, level: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(level).context("log.level")?;
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        "human" => builder.init(),
        "json" => builder.json().init(),
        other => anyhow::bail!("log.format {other:?}: expected human or json"),
    }
    Ok(())
}

fn spawn_signal_handlers(shutdown: watch::Sender<bool>, commands: mpsc::Sender<Command>) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = hup.recv() => {
                    tracing::info!(message = "SIGHUP: reloading rules.");
                    let _ = commands.send(EngineCommand::Reload.into()).await;
                }
                _ = term.recv() => break,
                _ = int.recv() => break,
            }
        }
        tracing::info!(message = "Shutting down.");
        let _ = shutdown.send(true);
    });
    Ok(())
}

/// A fingerprint of the rule directory: names, sizes and modification
/// times of its rule files. Polling it costs a `readdir` and a few `stat`s.
fn fingerprint(dir: &Path) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "rhai"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((e.path(), meta.len(), meta.modified().ok()))
        })
        .collect();
    out.sort();
    out
}

async fn watch_rules(dir: PathBuf, every: Duration, commands: mpsc::Sender<Command>) {
    let mut last = fingerprint(&dir);
    let mut ticker = tokio::time::interval(every);
    loop {
        ticker.tick().await;
        let now = fingerprint(&dir);
        if now != last {
            last = now;
            tracing::info!(message = "Rule files changed: reloading.", dir = %dir.display());
            if commands.send(EngineCommand::Reload.into()).await.is_err() {
                return;
            }
        }
    }
}
