//! `rocemend chaos run` and `rocemend chaos report`: the chaos crate's
//! runner on scenario files, the reports written, the table printed; and
//! the control-socket side of a game day attached to a running daemon.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use chaos::report::table::{first_failures, table};
use chaos::report::{html, Report};
use chaos::run::{run_scenario, AttachError, AttachedDaemon, Options, Sources};
use chaos::scenario::{self, Clock};
use engine::dispatch::{Decision, Mode};
use engine::playbook::Playbook;
use engine::{Nanos, Topology};

use ops::config::DaemonConfig;
use ops::control::client::{self, Address, ClientError};
use ops::progress::Progress;

use super::Exit;

/// What `rocemend chaos run` was asked.
pub struct RunArgs {
    /// Runs, instead of each scenario's.
    pub runs: Option<u32>,
    /// Seed of run 0, instead of each scenario's.
    pub seed: Option<u64>,
    /// `--config`: a daemon config whose rules, playbook and inventory to run.
    pub config: Option<PathBuf>,
    /// `--rules`: a rule directory instead of each scenario's.
    pub rules: Option<PathBuf>,
    /// A playbook instead of each scenario's.
    pub playbook: Option<PathBuf>,
    /// `--rule-mode RULE=MODE`.
    pub rule_modes: Vec<(String, Mode)>,
    /// `--daemon SOCKET`: attach to a running daemon.
    pub daemon: Option<PathBuf>,
    /// `--quiet`: no progress bar.
    pub quiet: bool,
}

/// A running daemon asked over its control socket (a game day attached to
/// it; every daemon of a fleet game day).
pub(crate) struct ControlSocket(pub(crate) PathBuf);

#[async_trait::async_trait]
impl AttachedDaemon for ControlSocket {
    fn address(&self) -> String {
        self.0.display().to_string()
    }

    async fn decisions_since(&self, since: Nanos) -> Result<Vec<Decision>, AttachError> {
        client::decisions(&Address::Unix(self.0.clone()), since).await.map_err(|e| match e {
            ClientError::Refused(status) | ClientError::Failed(status) => AttachError::Refused(status),
            other => AttachError::Unreachable(ops::report::chain(&other)),
        })
    }
}

/// What a daemon config gives a scenario: its playbook, rules and inventory.
struct Site {
    playbook: PathBuf,
    rules: PathBuf,
    inventory: Option<Arc<Topology>>,
}

impl Site {
    /// The files the daemon config at `path` names, found as `rocemend run`
    /// finds them.
    fn read(path: &Path) -> anyhow::Result<Site> {
        let config = DaemonConfig::load(path)?;
        let playbook = Playbook::load(&config.playbook)?;
        let rules = config
            .rules_dir(&playbook)
            .context("no rule directory: set `rules` in the config or in the playbook")
            .with_context(|| format!("config {}", path.display()))?;
        let inventory =
            ops::config::topology(config.inventory.as_deref()).with_context(|| format!("config {}", path.display()))?;
        Ok(Site { playbook: config.playbook, rules, inventory })
    }
}

/// `rocemend chaos run`.
pub fn run(scenarios: &[PathBuf], args: RunArgs, out_dir: &Path) -> anyhow::Result<Exit> {
    let daemon = args.daemon.map(|socket| Arc::new(ControlSocket(socket)) as Arc<dyn AttachedDaemon>);
    let site = args.config.as_deref().map(Site::read).transpose()?;
    let inventory = site.as_ref().and_then(|s| s.inventory.clone());
    let options = Options {
        runs: args.runs,
        seed: args.seed,
        playbook: args.playbook.or_else(|| site.as_ref().map(|s| s.playbook.clone())),
        rules: args.rules.or_else(|| site.as_ref().map(|s| s.rules.clone())),
        rule_modes: args.rule_modes,
        daemon,
        progress: None,
    };
    let runtime = super::runtime()?;
    let mut reports = Vec::new();
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    // Every scenario is read and its --rule-mode names checked before the
    // first run: a typo found after an hour of runs is found too late.
    let mut planned = Vec::new();
    for path in scenarios {
        let loaded = scenario::load_on(path, inventory.clone())?;
        let sources = Sources::read(&loaded, options.rules.as_deref(), options.playbook.as_deref())?;
        check_rule_modes(&options.rule_modes, &sources)?;
        planned.push((path, loaded, sources));
    }
    for (path, loaded, sources) in planned {
        let runs = options.runs.unwrap_or(loaded.plan.runs).max(1);
        eprintln!(
            "chaos: {} ({}, {} run(s), {} clock)",
            loaded.plan.name,
            path.display(),
            runs,
            if loaded.plan.clock == Clock::Virtual { "virtual" } else { "wall" }
        );
        eprintln!(
            "  rules {} ({} files), playbook {}",
            sources.rules_origin,
            sources.rules.len(),
            sources.playbook_origin
        );
        let bar = if args.quiet { Progress::hidden() } else { Progress::runs(runs as u64) };
        let options = Options { progress: Some(run_progress(bar.clone())), ..options.clone() };
        let report = runtime.block_on(run_scenario(&loaded, &sources, &options));
        bar.finish();
        let report = match report {
            Ok(report) => report,
            // A part this machine lacks (root, iproute2, a qdisc module): the
            // scenario is skipped with the reason, not failed.
            Err(chaos::ChaosError::CannotRunHere { reason, .. }) => {
                eprintln!("  skipped: {reason}");
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        write(&report, out_dir)?;
        reports.push(report);
    }
    print!("{}", table(&reports));
    Ok(if reports.iter().all(|r| r.failed == 0) { Exit::Ok } else { Exit::Findings })
}

/// The runner's report after each run, drawn on `bar`.
fn run_progress(bar: Progress) -> chaos::run::RunProgress {
    Arc::new(move |done, _total, failed| {
        bar.set(done as u64);
        bar.message(format!("runs, {failed} failed"));
    })
}

/// Refuses a `--rule-mode` naming a rule the scenario does not run:
/// `switch-pfc-strom=dry-run` would force nothing, and the rule meant to be
/// switched off would run, and pass. A rule set that does not load is left
/// to the run, which reports every error of it.
fn check_rule_modes(rule_modes: &[(String, Mode)], sources: &Sources) -> anyhow::Result<()> {
    if rule_modes.is_empty() {
        return Ok(());
    }
    let Ok(rules) = engine::rule::load_sources(&sources.rules, engine::Helpers::new(None, None)) else {
        return Ok(());
    };
    let names = || rules.rules.iter().map(|r| r.name.as_str());
    for (rule, mode) in rule_modes {
        if !names().any(|n| n == rule) {
            anyhow::bail!(
                "--rule-mode {rule}={mode}: {} has no rule {rule:?}{}",
                sources.rules_origin,
                engine::names::did_you_mean(rule, names())
            );
        }
    }
    Ok(())
}

/// Writes `report` as JSON and HTML into `out_dir`, and says so.
fn write(report: &Report, out_dir: &Path) -> anyhow::Result<()> {
    let json = out_dir.join(format!("{}.json", report.scenario));
    let page = out_dir.join(format!("{}.html", report.scenario));
    std::fs::write(&json, serde_json::to_vec(report)?).with_context(|| format!("writing {}", json.display()))?;
    std::fs::write(&page, html::render(report)).with_context(|| format!("writing {}", page.display()))?;
    eprintln!(
        "  {} passed, {} failed in {:.1} s; report {} and {}",
        report.passed,
        report.failed,
        report.elapsed_ms / 1e3,
        json.display(),
        page.display()
    );
    for line in first_failures(report) {
        eprintln!("{line}");
    }
    Ok(())
}

/// `rocemend chaos report`: renders a JSON report as HTML again.
pub fn report(json: &Path, out: Option<&Path>) -> anyhow::Result<Exit> {
    let text = std::fs::read(json).with_context(|| format!("reading {}", json.display()))?;
    let report: Report =
        serde_json::from_slice(&text).with_context(|| format!("{} is not a chaos report", json.display()))?;
    let page = out.map(Path::to_path_buf).unwrap_or_else(|| json.with_extension("html"));
    std::fs::write(&page, html::render(&report)).with_context(|| format!("writing {}", page.display()))?;
    println!("{}", page.display());
    print!("{}", table(std::slice::from_ref(&report)));
    Ok(Exit::Ok)
}
