//! Reloading a running loop: the rule files are read off the loop, so a
//! FIFO named like a rule neither blocks the loop nor is read; a reload
//! that would empty the rule set is refused unless asked for.

use super::common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::storm;
use engine::dispatch::{DispatchConfig, Dispatcher};
use engine::policy::PolicySettings;
use engine::runtime::{self, ClockMode, Command, Daemon, EngineCommand, EngineView, ReloadRequest, ReloadResult};
use engine::{rule, Evaluator, HealthBoard, Helpers, Mode, SeriesTable};
use tokio::sync::{mpsc, oneshot, watch};

/// A loop with no sensors over the rules of `dir`, reloading from it.
fn daemon(dir: &Path) -> Daemon {
    let series = SeriesTable::default();
    let rules = rule::load_dir(dir, Helpers::default()).expect("the first rules load");
    let dir = dir.to_path_buf();
    Daemon {
        evaluator: Evaluator::new(series, rules, None).expect("no store"),
        dispatcher: Dispatcher::new(
            DispatchConfig {
                mode: Mode::DryRun,
                rule_modes: HashMap::new(),
                routes: Vec::new(),
                timeout: Duration::from_secs(1),
                policy: PolicySettings::defaults(),
                topology: None,
            },
            None,
        ),
        sensors: Vec::new(),
        loader: Some(Arc::new(move |helpers| rule::load_dir(&dir, helpers))),
        clock: ClockMode::Wall,
        max_ahead: runtime::DEFAULT_MAX_AHEAD,
        tick: Duration::from_millis(20),
        record: None,
        sink: None,
        stop_when_sensors_end: false,
        shutdown_grace: runtime::DEFAULT_SHUTDOWN_GRACE,
        health: HealthBoard::default(),
    }
}

async fn reload(commands: &mpsc::Sender<Command>, allow_shrink: bool) -> ReloadResult {
    let (reply, answer) = oneshot::channel();
    let request = ReloadRequest { allow_shrink, reply: Some(reply) };
    commands.send(EngineCommand::Reload(request).into()).await.expect("the loop runs");
    tokio::time::timeout(Duration::from_secs(10), answer).await.expect("answered within 10 s").expect("answered")
}

async fn view(commands: &mpsc::Sender<Command>) -> EngineView {
    let (reply, answer) = oneshot::channel();
    commands.send(EngineCommand::View { reply }.into()).await.expect("the loop runs");
    tokio::time::timeout(Duration::from_secs(2), answer).await.expect("the loop answers at once").expect("answered")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_named_like_a_rule_is_refused_without_blocking_and_an_empty_directory_needs_permission() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pfc-storm.rhai"), storm("")).unwrap();
    let (shutdown_tx, shutdown) = watch::channel(false);
    let (commands, rx) = mpsc::channel(16);
    let running = tokio::spawn(runtime::run(daemon(dir.path()), shutdown, rx, |_| {}));

    let fifo = dir.path().join("x.rhai");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !status.is_ok_and(|s| s.success()) {
        return test_peers::missing("mkfifo is not available (Debian coreutils)");
    }
    let refused = reload(&commands, false).await.expect_err("a FIFO is not a rule file").to_string();
    assert!(refused.contains("x.rhai") && refused.contains("not a regular file (a FIFO)"), "{refused}");
    assert_eq!(view(&commands).await.rules.len(), 1, "the running rule stays");

    std::fs::remove_file(&fifo).unwrap();
    std::fs::remove_file(dir.path().join("pfc-storm.rhai")).unwrap();
    let refused = reload(&commands, false).await.expect_err("an emptied directory is refused").to_string();
    assert!(refused.contains("empty") && refused.contains("--allow-shrink"), "{refused}");
    assert_eq!(view(&commands).await.rules.len(), 1);

    let report = reload(&commands, true).await.expect("allowed");
    assert_eq!(report.removed, ["pfc-storm"]);
    assert_eq!(view(&commands).await.rules.len(), 0);

    shutdown_tx.send(true).unwrap();
    running.await.unwrap().unwrap();
}
