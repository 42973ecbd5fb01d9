//! `rocemend run`: the daemon.
//!
//! - [`condition`]: the Kubernetes node condition, fed by the loop's events;
//! - [`parts`]: the daemon's parts built from its configuration;
//! - [`signals`]: logging, signals and the rule directory watched;
//! - [`state_lock`]: one daemon per state directory.

mod condition;
mod parts;
mod signals;
mod state_lock;

use std::path::Path;

use engine::runtime;
use ops::config::Overrides;
use ops::control::{self, server::ControlService};
use ops::plan::Blueprint;
use ops::report;
use tokio::sync::{mpsc, watch};

use self::parts::Parts;
use self::signals::{init_logging, spawn_signal_handlers, watch_rules};
use super::Exit;
use crate::wiring::{self, Wiring};

/// `rocemend run --config PATH`: builds the same [`Blueprint`] `check` does,
/// so it refuses exactly the configs `check` refuses, with the same messages.
pub fn run(config_path: &Path) -> anyhow::Result<Exit> {
    let plan = Blueprint::build(config_path, &Overrides::default(), &Wiring).map_err(|problems| {
        anyhow::anyhow!(
            "{problems}\n{} problem(s) in the configuration; `rocemend check --config {}` lists them",
            problems.0.len(),
            config_path.display()
        )
    })?;
    refuse_taken(&plan, config_path)?;
    init_logging(plan.settings.log_format, &plan.settings.log_level)?;
    for warning in &plan.part.allowed_unsafe {
        tracing::warn!(message = "Unsafe setting allowed by allow_unsafe.", setting = %warning);
    }
    let parts = Parts::build(plan)?;
    tracing::info!(
        message = "Starting.",
        config = %config_path.display(),
        rules = %parts.rules_dir.display(),
        playbook = %parts.playbook.name,
        mode = parts.playbook.mode.as_str()
    );
    super::runtime()?.block_on(serve(parts, config_path))?;
    Ok(Exit::Ok)
}

/// A control socket a live daemon serves, or a listen address another
/// process holds: refused here, at its key, with the words `check` uses
/// ([`ops::plan::taken`]), rather than by a bind that fails later and names
/// no place in the config. A daemon holding this `state_dir` is refused by
/// the state lock instead.
fn refuse_taken(plan: &Blueprint, config_path: &Path) -> anyhow::Result<()> {
    let Ok(text) = engine::config::read_text(config_path) else { return Ok(()) };
    let at = engine::config::Locator::new(&text, &config_path.display().to_string());
    let taken = ops::plan::taken::in_use(&plan.config, &plan.settings.socket, &at).errors;
    if taken.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = taken.iter().map(ToString::to_string).collect();
    anyhow::bail!(
        "{}\n{} problem(s) on this machine; `rocemend check --config {}` lists them",
        lines.join("\n"),
        taken.len(),
        config_path.display()
    )
}

/// Runs the daemon with its control API, metrics, signal handlers and rule
/// watch until it is stopped.
async fn serve(parts: Parts, config_path: &Path) -> anyhow::Result<()> {
    let Parts {
        mut daemon,
        state_lock,
        ledger,
        job_tx,
        health,
        rules_dir,
        playbook,
        settings,
        config,
        node,
        tcp,
        web,
        actuators,
    } = parts;
    check_targets_in_background(actuators);
    let (dispatcher, departure) =
        wiring::fleet(daemon.dispatcher, &mut daemon.sensors, config.fleet.as_ref(), &playbook, &node).await?;
    daemon.dispatcher = dispatcher;
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let (command_tx, command_rx) = mpsc::channel(16);
    let hub = control::events::EventHub::default();
    let mut metrics = ops::metrics::Metrics::new();
    let remote_write = start_remote_write(&settings, &mut daemon, &mut metrics, &shutdown_rx);
    let node_condition = condition::start(&playbook, &node, &daemon, shutdown_rx.clone())?;
    let metrics = std::sync::Arc::new(metrics);
    let service = ControlService::new(command_tx.clone(), ledger.clone(), hub.clone(), job_tx)
        .with_health(health.clone())
        .with_rule_modes(playbook.rule_modes());
    if let Some(web) = web {
        let fleet = ops::web::fleet::FleetReader::connect(config.fleet.as_ref()).await?;
        let console =
            ops::web::routes::Console::new(service.clone(), web.token.clone(), web.is_tls(), config_path.to_path_buf())
                .with_fleet(fleet);
        web.serve(console, shutdown_rx.clone())?;
    }
    let control = control::serve::start(settings.socket.clone(), tcp, service, shutdown_rx.clone())?;
    if let Some(addr) = &config.metrics.listen {
        let endpoint = ops::metrics::http::Endpoint {
            metrics: metrics.clone(),
            commands: command_tx.clone(),
            ledger: Some(ledger),
            health,
        };
        let (_, serve) = ops::metrics::http::bind(addr, endpoint, shutdown_rx.clone())?;
        tokio::spawn(serve);
    }
    spawn_signal_handlers(shutdown_tx.clone(), command_tx.clone(), settings.engine.shutdown_timeout)?;
    if let Some(every) = settings.engine.reload_poll {
        tokio::spawn(watch_rules(rules_dir, every, command_tx));
    }
    let hub_at_stop = hub.clone();
    let observe = observer(metrics, hub, node_condition);
    // The loop runs on a worker of the runtime, not on this thread: its
    // tick's timer then fires on the thread that drives timers, instead of
    // that thread waking this one (and this one waking it back to re-arm
    // the timer) twenty times a second.
    let summary = tokio::spawn(runtime::run(daemon, shutdown_rx, command_rx, observe))
        .await
        .map_err(|e| anyhow::anyhow!("the engine's loop failed: {e}"))??;
    hub_at_stop.close();
    let _ = shutdown_tx.send(true);
    if let Some(task) = remote_write {
        // What was queued is sent once more; a receiver that does not
        // answer holds the stop for half its time at most.
        let _ = tokio::time::timeout(settings.engine.shutdown_timeout / 2, task).await;
    }
    departure.leave().await;
    if let Ok(Err(error)) = control.await {
        let error = report::chain(&error);
        tracing::error!(message = "Control API failed.", %error);
    }
    drop(state_lock);
    tracing::info!(message = "Stopped.", samples = summary.stats.samples, decisions = summary.decisions);
    Ok(())
}

/// The loop's observer: each event logged, counted, sent to the control
/// API's subscribers and, with `[kubernetes_condition]`, to the node
/// condition's reporter. None of them waits.
fn observer(
    metrics: std::sync::Arc<ops::metrics::Metrics>,
    hub: control::events::EventHub,
    node_condition: Option<actuators::node_condition::Feed>,
) -> impl FnMut(&runtime::DaemonEvent) + Send {
    move |event| {
        report::log_event(event);
        metrics.observe(event);
        hub.publish(event);
        if let Some(feed) = &node_condition {
            feed.observe(event);
        }
    }
}

/// With `[remote_write]`: the loop's sink of samples set on `daemon`, the
/// sender's metrics registered and its task started; the task, to wait on
/// at stop.
fn start_remote_write(
    settings: &ops::plan::DaemonSettings,
    daemon: &mut runtime::Daemon,
    metrics: &mut ops::metrics::Metrics,
    shutdown: &watch::Receiver<bool>,
) -> Option<tokio::task::JoinHandle<()>> {
    let plan = settings.remote_write.clone()?;
    tracing::info!(message = "Sending samples to a remote-write receiver.", url = %plan.url);
    let series = daemon.evaluator.series().clone();
    let (sink, task) = ops::remote_write::start(plan, series, metrics.register_remote_write(), shutdown.clone());
    daemon.sink = Some(Box::new(sink));
    Some(task)
}

/// Reaches each switch an actuator may change now, so one that cannot be
/// written (a read-only sonic-gnmi, native write off) is in the log at
/// start, not found in a storm. Each result is logged where it is found;
/// the task only keeps the start from waiting on it.
fn check_targets_in_background(actuators: Vec<std::sync::Arc<dyn engine::Actuator>>) {
    tokio::spawn(async move {
        let found = crate::commands::check::targets(&actuators).await;
        let refused = found.iter().filter(|(_, _, r)| r.is_err()).count();
        if refused > 0 {
            tracing::warn!(message = "Some targets of the actuators cannot be changed.", refused);
        }
    });
}
