//! `rocemend chaos`: runs chaos scenarios against the daemon's own sensors,
//! engine, dispatcher and safety policy, on the simulated fabric, and
//! reports time to detect, to mitigate and to recover.
//!
//! - [`lockstep`]: one run on the virtual clock;
//! - [`readers`]: the daemon's sysfs, gNMI and Prometheus readers on the
//!   simulated fabric;
//! - [`switches`]: the fabric's leaves served over gNMI, for the
//!   playbook's real switch actuators;
//! - [`actuator`]: the simulated fabric's host and scheduler side (`ip
//!   link`, the scheduler's drain and cordon);
//! - [`wall`]: scenarios on real links (veth pairs in network namespaces)
//!   on the wall clock;
//! - [`embedded`]: the scenario library, its rules and playbook, built in
//!   for `rocemend demo`.
//!
//! The scenario format, the fabric model and the report live in the
//! `chaos` crate; this module is the wiring that needs the sensors.

pub mod actuator;
pub mod embedded;
pub mod lockstep;
pub mod readers;
pub mod switches;
pub mod wall;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use chaos::report::{html, Report, RunRecord};
use chaos::scenario::{self, Clock, Loaded};
use engine::dispatch::Mode;
use engine::playbook::Playbook;

use crate::Outcome;

/// How to run a scenario.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Runs, instead of the scenario's.
    pub runs: Option<u32>,
    /// Seed of run 0, instead of the scenario's.
    pub seed: Option<u64>,
    /// A playbook instead of the scenario's.
    pub playbook: Option<PathBuf>,
    /// Rule modes forced over the playbook's (`RULE=dry-run` switches a
    /// rule's mitigation off).
    pub rule_modes: Vec<(String, Mode)>,
    /// A running daemon's control socket to attach to (wall clock).
    pub daemon: Option<PathBuf>,
    /// Progress on stderr.
    pub progress: bool,
}

/// Parses `RULE=MODE`.
pub fn parse_rule_mode(text: &str) -> Result<(String, Mode), String> {
    let (rule, mode) = text.split_once('=').ok_or_else(|| format!("{text:?}: expected RULE=MODE"))?;
    Ok((rule.to_string(), mode.parse()?))
}

/// The rules of a rule directory, `(path, text)`, in name order.
fn read_rules(dir: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("rule directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rhai"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
            Ok((p.display().to_string(), text))
        })
        .collect()
}

/// What a scenario runs with: its rules and playbook, read from disk or
/// built in.
pub struct Sources {
    /// Rule sources.
    pub rules: Vec<(String, String)>,
    /// The playbook.
    pub playbook: Playbook,
}

impl Sources {
    /// The rules and playbook `loaded` names, `playbook` overriding.
    pub fn read(loaded: &Loaded, playbook: Option<&Path>) -> anyhow::Result<Sources> {
        let path = playbook.unwrap_or(&loaded.plan.playbook);
        Ok(Sources { rules: read_rules(&loaded.plan.rules_dir)?, playbook: Playbook::load(path)? })
    }
}

fn progress(done: usize, total: usize, failed: usize) {
    let width = 30;
    let filled = done * width / total.max(1);
    eprint!("\r  [{}{}] {done}/{total} runs, {failed} failed", "#".repeat(filled), ".".repeat(width - filled));
    let _ = std::io::stderr().flush();
    if done == total {
        eprintln!();
    }
}

/// Runs `loaded` with `sources` and `options`: every run, then the report.
pub async fn run_scenario(loaded: &Loaded, sources: &Sources, options: &Options) -> anyhow::Result<Report> {
    let plan = &loaded.plan;
    let runs = options.runs.unwrap_or(plan.runs).max(1);
    let seed = options.seed.unwrap_or(plan.seed);
    let started = Instant::now();
    let mut records: Vec<RunRecord> = Vec::with_capacity(runs as usize);
    // The sysfs trees are rewritten every step: on tmpfs when there is one.
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() {
        tempfile::Builder::new().prefix("rocemend-chaos-").tempdir_in(shm)?
    } else {
        tempfile::Builder::new().prefix("rocemend-chaos-").tempdir()?
    };
    let mut failed = 0;
    for i in 0..runs {
        let record = match plan.clock {
            Clock::Virtual => {
                let setup = lockstep::Setup {
                    rules: &sources.rules,
                    playbook: &sources.playbook,
                    rule_modes: &options.rule_modes,
                    scratch: scratch.path(),
                };
                lockstep::run(plan, &setup, i, seed.wrapping_add(i as u64)).await?
            }
            Clock::Wall => wall::run(plan, sources, options, i, seed.wrapping_add(i as u64)).await?,
        };
        if !record.outcome.passed {
            failed += 1;
        }
        records.push(record);
        if options.progress {
            progress(i as usize + 1, runs as usize, failed);
        }
    }
    let summary = Report::summarize(&records);
    Ok(Report {
        scenario: plan.name.clone(),
        description: plan.description.clone(),
        file: loaded.path.display().to_string(),
        clock: match plan.clock {
            Clock::Virtual => "virtual".into(),
            Clock::Wall => "wall".into(),
        },
        step: plan.step,
        passed: records.len() - failed,
        failed,
        elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
        summary,
        bounds: plan.probes.clone(),
        runs: records,
    })
}

fn cell(v: Option<f64>) -> String {
    v.map(|v| format!("{v:>7.0}")).unwrap_or_else(|| format!("{:>7}", "-"))
}

/// The recovery table of `reports`, for a terminal.
pub fn table(reports: &[Report]) -> String {
    let mut out = format!(
        "  {:<18} {:>5} {:>6}   {:>7} {:>7} {:>7}   {:>7} {:>7} {:>7}   {:>7} {:>7} {:>7}\n",
        "scenario", "runs", "failed", "TTD p50", "p99", "max", "TTM p50", "p99", "max", "TTR p50", "p99", "max"
    );
    for r in reports {
        let s = &r.summary;
        out.push_str(&format!(
            "  {:<18} {:>5} {:>6}   {} {} {}   {} {} {}   {} {} {}\n",
            r.scenario,
            r.runs.len(),
            r.failed,
            cell(s.detect.p50),
            cell(s.detect.p99),
            cell(s.detect.max),
            cell(s.mitigate.p50),
            cell(s.mitigate.p99),
            cell(s.mitigate.max),
            cell(s.recover.p50),
            cell(s.recover.p99),
            cell(s.recover.max),
        ));
    }
    for r in reports {
        // Scenarios whose deadlines run from the fault that triggered the
        // rule (the third flap, say): those latencies too.
        let s = &r.summary;
        if s.detect_from_trigger.count > 0 && s.detect_from_trigger.p50 != s.detect.p50 {
            out.push_str(&format!(
                "  {:<18} from the trigger: TTD p50 {:.1} p99 {:.1} max {:.1}, TTM p50 {:.1} p99 {:.1} max {:.1}\n",
                r.scenario,
                s.detect_from_trigger.p50.unwrap_or(f64::NAN),
                s.detect_from_trigger.p99.unwrap_or(f64::NAN),
                s.detect_from_trigger.max.unwrap_or(f64::NAN),
                s.mitigate_from_trigger.p50.unwrap_or(f64::NAN),
                s.mitigate_from_trigger.p99.unwrap_or(f64::NAN),
                s.mitigate_from_trigger.max.unwrap_or(f64::NAN),
            ));
        }
    }
    out.push_str("  (milliseconds from the fault's start: time to detect, to mitigate, to recover)\n");
    out
}

fn first_failures(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for r in report.runs.iter().filter(|r| !r.outcome.passed).take(3) {
        out.push(format!("  run {} (seed {}): {}", r.run, r.seed, r.outcome.failures.join("; ")));
    }
    out
}

/// `rocemend chaos run`.
pub fn run_command(scenarios: &[PathBuf], options: &Options, out_dir: &Path) -> anyhow::Result<Outcome> {
    let runtime = crate::commands::runtime()?;
    let mut reports = Vec::new();
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    for path in scenarios {
        let loaded = scenario::load(path)?;
        let sources = Sources::read(&loaded, options.playbook.as_deref())?;
        eprintln!(
            "chaos: {} ({}, {} run(s), {} clock)",
            loaded.plan.name,
            path.display(),
            options.runs.unwrap_or(loaded.plan.runs),
            if loaded.plan.clock == Clock::Virtual { "virtual" } else { "wall" }
        );
        let report = runtime.block_on(run_scenario(&loaded, &sources, options))?;
        let json = out_dir.join(format!("{}.json", report.scenario));
        let page = out_dir.join(format!("{}.html", report.scenario));
        std::fs::write(&json, serde_json::to_vec(&report)?).with_context(|| format!("writing {}", json.display()))?;
        std::fs::write(&page, html::render(&report)).with_context(|| format!("writing {}", page.display()))?;
        eprintln!(
            "  {} passed, {} failed in {:.1} s; report {} and {}",
            report.passed,
            report.failed,
            report.elapsed_ms / 1e3,
            json.display(),
            page.display()
        );
        for line in first_failures(&report) {
            eprintln!("{line}");
        }
        reports.push(report);
    }
    print!("{}", table(&reports));
    Ok(if reports.iter().all(|r| r.failed == 0) { Outcome::Ok } else { Outcome::Findings })
}

/// `rocemend chaos report`: renders a JSON report as HTML again.
pub fn report_command(json: &Path, out: Option<&Path>) -> anyhow::Result<Outcome> {
    let text = std::fs::read(json).with_context(|| format!("reading {}", json.display()))?;
    let report: Report =
        serde_json::from_slice(&text).with_context(|| format!("{} is not a chaos report", json.display()))?;
    let page = out.map(Path::to_path_buf).unwrap_or_else(|| json.with_extension("html"));
    std::fs::write(&page, html::render(&report)).with_context(|| format!("writing {}", page.display()))?;
    println!("{}", page.display());
    print!("{}", table(std::slice::from_ref(&report)));
    Ok(Outcome::Ok)
}
