//! `rocemend preview`: what a playbook would do on a recording — its rules
//! and its whole safety policy (mode, de-duplication, cooldowns, limits,
//! breaker, approvals, undo, the fleet budget counted locally), on the
//! recording's clock, with actuators that only plan. `--diff OLD` runs two
//! playbooks on the same recording and prints only what differs.
//!
//! - [`simulate`]: one run of the dispatcher on the recording's clock;
//! - [`planner`]: the actuator that records and sends nothing;
//! - [`budget`]: the daemon config's fleet budgets, counted in memory;
//! - [`show`]: a decision in words or JSON, and the summary;
//! - [`diff`]: two runs matched, and what differs.

mod budget;
mod diff;
mod planner;
mod show;
mod simulate;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::config::TomlError;
use engine::store::StoreError;
use engine::topology::TopologyError;
use engine::{Labels, SeriesTable, Topology};

use self::budget::LocalBudgets;
use self::simulate::{Inputs, Preview};
use crate::plan::{Components, PlaybookInputs, PlaybookPart, Problems};
use crate::progress::Progress;
use crate::report::offset;

/// Why a preview could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreviewError {
    /// The inventory.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The daemon config.
    #[error(transparent)]
    Config(#[from] TomlError),
    /// Its `[fleet]` table.
    #[error("{}: [fleet]: {cause}", path.display())]
    Fleet {
        /// The daemon config.
        path: PathBuf,
        /// What is wrong.
        cause: fleet::FleetError,
    },
    /// The playbook, its rules or its actuators.
    #[error("the playbook {} is refused", path.display())]
    Refused {
        /// The playbook.
        path: PathBuf,
        /// Every problem.
        source: Problems,
    },
    /// The recording cannot be opened.
    #[error("opening {}", path.display())]
    Open {
        /// The recording.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The preview's own ledger.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The recording, run through the rules.
    #[error(transparent)]
    Backtest(#[from] engine::backtest::BacktestError),
    /// A temporary directory or the runtime.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What `rocemend preview` is asked.
pub struct Request<'a> {
    /// The playbook previewed (NEW with `diff`).
    pub playbook: &'a Path,
    /// The recording.
    pub recording: &'a Path,
    /// The playbook compared with (OLD).
    pub diff: Option<&'a Path>,
    /// The inventory; the example inventory without it.
    pub inventory: Option<&'a Path>,
    /// A daemon config whose `[fleet]` budgets are counted.
    pub config: Option<&'a Path>,
    /// JSON lines instead of text.
    pub json: bool,
}

/// What a preview found: its text, and whether a diff found differences.
#[derive(Debug, Clone)]
pub struct Previewed {
    /// What to print.
    pub text: String,
    /// With `diff`: whether any decision differs.
    pub differs: bool,
}

/// Runs the preview `request` asks for, with the playbook's actuators
/// planned and its dispatcher's settings from `components`.
pub fn preview(request: &Request<'_>, components: &dyn Components) -> Result<Previewed, PreviewError> {
    let topology = Arc::new(match request.inventory {
        Some(p) => Topology::load(p)?,
        None => Topology::parse(engine::topology::EXAMPLE_INVENTORY, "example inventory")?,
    });
    let fleet = fleet_budgets(request.config)?;
    let new = run_one(request.playbook, request, &topology, components, "NEW")?;
    let Some(old_path) = request.diff else {
        return Ok(Previewed { text: one(request, &new.0, &new.1, fleet.as_deref()), differs: false });
    };
    let old = run_one(old_path, request, &topology, components, "OLD")?;
    let changes = diff::changes(&old.1, &new.1);
    let t0 = new.1.span.0;
    let mut out = String::new();
    if request.json {
        for change in &changes {
            let _ = writeln!(out, "{}", diff::json(change, t0));
        }
        let _ = writeln!(out, "{}", diff::summary_json(&changes));
    } else {
        let (new_path, recording) = (request.playbook.display(), request.recording.display());
        let _ = writeln!(out, "OLD = {}   NEW = {new_path}   on {recording}", old_path.display());
        for change in &changes {
            let _ = writeln!(out, "{}", diff::text(change, t0));
        }
        let _ = writeln!(out, "{}", diff::summary(&changes));
    }
    Ok(Previewed { text: out, differs: !changes.is_empty() })
}

/// The `[fleet]` budgets of `config`, if it has a `[fleet]` table, in
/// words for the header; `None` without one.
fn fleet_budgets(config: Option<&Path>) -> Result<Option<String>, PreviewError> {
    Ok(local_budgets(config)?.map(|b| b.describe()))
}

fn local_budgets(config: Option<&Path>) -> Result<Option<LocalBudgets>, PreviewError> {
    let Some(path) = config else { return Ok(None) };
    let config = crate::config::DaemonConfig::load(path)?;
    let Some(fleet) = &config.fleet else { return Ok(None) };
    let settings =
        fleet::FleetSettings::new(fleet).map_err(|cause| PreviewError::Fleet { path: path.to_path_buf(), cause })?;
    Ok(Some(LocalBudgets::new(settings.budgets)))
}

/// Loads `playbook` as `check` does and runs the recording through it.
fn run_one(
    playbook: &Path,
    request: &Request<'_>,
    topology: &Arc<Topology>,
    components: &dyn Components,
    which: &str,
) -> Result<(PlaybookPart, Preview), PreviewError> {
    let series = SeriesTable::new(Some(topology.clone()), Labels::default());
    let mut errors = Vec::new();
    let inputs = PlaybookInputs {
        path: playbook.to_path_buf(),
        rules: None,
        node: None,
        topology: Some(topology.clone()),
        series: series.clone(),
    };
    let part = match PlaybookPart::build(inputs, components, &mut errors) {
        Some(part) if errors.is_empty() => part,
        _ => return Err(PreviewError::Refused { path: playbook.to_path_buf(), source: Problems(errors) }),
    };
    let recording = request.recording;
    let progress = Progress::file(recording, &format!("{which} {}", recording.display()));
    let budgets = local_budgets(request.config)?;
    let inputs = Inputs { part: &part, series, topology: Some(topology.clone()), budgets, components };
    let preview = simulate::run(recording, inputs, &progress)?;
    progress.finish();
    Ok((part, preview))
}

/// One playbook's decisions, then the summary.
fn one(request: &Request<'_>, part: &PlaybookPart, preview: &Preview, fleet: Option<&str>) -> String {
    let mut out = String::new();
    let t0 = preview.span.0;
    let seen = show::first_seen(preview);
    let at_of = |id: &str| seen.get(id).copied();
    let told: Vec<show::Told> = preview.lines.iter().map(|l| show::tell(l, t0, &at_of)).collect();
    let counts = show::counts(told.iter().map(|t| t.category));
    let groups = part.playbook.policy().map(|p| p.canary_groups.describe()).unwrap_or_default();
    let fleet_words = match fleet {
        Some(budgets) => format!("counted as if this daemon were the whole fleet: {budgets}"),
        None => "not previewed (give --config with a [fleet] table to count its budgets)".into(),
    };
    if request.json {
        for (line, t) in preview.lines.iter().zip(&told) {
            let _ = writeln!(out, "{}", show::json(line, t, t0));
        }
        let by: serde_json::Map<String, serde_json::Value> =
            counts.iter().map(|(c, n)| (c.to_string(), (*n).into())).collect();
        let _ = writeln!(
            out,
            "{}",
            serde_json::json!({"summary": {
                "playbook": part.playbook.name,
                "mode": part.playbook.mode.as_str(),
                "decisions": preview.lines.len(),
                "by_category": by,
                "waiting_at_end": preview.waiting_at_end,
                "samples": preview.samples,
                "start": t0,
                "span_s": (preview.span.1 - t0) as f64 / 1e9,
                "fleet_budgets": fleet_words,
                "canary_groups": groups,
                "text": show::summary(&counts),
            }})
        );
        return out;
    }
    let _ = writeln!(
        out,
        "playbook {} ({}, mode {}), rules {}, on {}",
        part.playbook.name,
        request.playbook.display(),
        part.playbook.mode.as_str(),
        part.rules_dir.display(),
        request.recording.display()
    );
    let _ = writeln!(
        out,
        "fleet budgets: {fleet_words}; silences: none (they are set on a running daemon, not in a playbook)"
    );
    if !groups.is_empty() {
        let _ = writeln!(out, "canary groups (rules enforced there, shadowed elsewhere): {}", groups.join("; "));
    }
    for (line, t) in preview.lines.iter().zip(&told) {
        let _ = writeln!(out, "{}", show::text(line, t, t0));
    }
    let waiting = match preview.waiting_at_end {
        0 => String::new(),
        n => {
            format!(
                "; {n} still waiting for approval when the recording ends ({})",
                offset(preview.span.1, t0).replace(' ', "")
            )
        }
    };
    let _ = writeln!(
        out,
        "{} samples over {:.1}s; {}{waiting}",
        preview.samples,
        (preview.span.1 - t0) as f64 / 1e9,
        show::summary(&counts)
    );
    out
}
