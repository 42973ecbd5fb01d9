//! What the daemon does besides its run loop: logging set up once, signals
//! (SIGTERM and SIGINT stop it within its shutdown timeout, a second one at
//! once; SIGHUP reloads the rules), and the rule directory watched for
//! changes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use engine::runtime::{Command, EngineCommand};
use tokio::sync::{mpsc, watch};

use ops::plan::LogFormat;

pub(super) fn init_logging(format: LogFormat, level: &str) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(level).context("log.level")?;
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
    Ok(())
}

pub(super) fn spawn_signal_handlers(
    shutdown: watch::Sender<bool>,
    commands: mpsc::Sender<Command>,
    timeout: Duration,
) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = hup.recv() => {
                    tracing::info!(message = "SIGHUP: reloading rules.");
                    let _ = commands.send(EngineCommand::reload().into()).await;
                }
                _ = term.recv() => break,
                _ = int.recv() => break,
            }
        }
        tracing::info!(message = "Shutting down.", timeout = ?timeout);
        let _ = shutdown.send(true);
        exit_after(timeout);
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::warn!(message = "A second signal: exiting now.");
        std::process::exit(1);
    });
    Ok(())
}

/// Ends the process `timeout` from now if it is still running: whatever
/// holds it up (an actuator that does not answer, a client that keeps a
/// stream open, a task that never yields), a stop asked for is a stop
/// within the shutdown timeout. Exiting there is as safe as a crash, which
/// the ledger is built for: an intent is on disk before any change. A
/// thread, not a task, so that a runtime whose workers are all stuck still
/// ends.
fn exit_after(timeout: Duration) {
    let spawned = std::thread::Builder::new().name("shutdown-timeout".into()).spawn(move || {
        std::thread::sleep(timeout);
        tracing::error!(
            message = "Stopping took longer than the shutdown timeout; exiting now.",
            timeout = ?timeout
        );
        std::process::exit(1);
    });
    if let Err(error) = spawned {
        tracing::error!(message = "Could not start the shutdown timer; stopping without a time limit.", %error);
    }
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

/// Polls the rule directory and asks for a reload once a change has
/// settled: the fingerprint changed, then stayed the same for one more
/// poll. A deployment that copies or deletes files over a few seconds is
/// read once, when it is done, not halfway through.
pub(super) async fn watch_rules(dir: PathBuf, every: Duration, commands: mpsc::Sender<Command>) {
    let mut loaded = fingerprint(&dir);
    let mut seen = loaded.clone();
    let mut ticker = tokio::time::interval(every);
    loop {
        ticker.tick().await;
        let dir2 = dir.clone();
        let Ok(now) = tokio::task::spawn_blocking(move || fingerprint(&dir2)).await else { return };
        let settled = now == seen;
        seen = now;
        if settled && seen != loaded {
            loaded = seen.clone();
            tracing::info!(message = "Rule files changed: reloading.", dir = %dir.display());
            if commands.send(EngineCommand::reload().into()).await.is_err() {
                return;
            }
        }
    }
}
