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

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use engine::{Labels, SeriesTable, Topology};

use self::budget::LocalBudgets;
use self::simulate::{Inputs, Preview};
use crate::plan::{PlaybookInputs, PlaybookPart, Problems};
use crate::progress::Progress;
use crate::report::offset;
use crate::Exit;

/// What `rocemend preview` was asked.
pub struct PreviewArgs<'a> {
    /// The playbook previewed (NEW with `--diff`).
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

/// `rocemend preview`.
pub fn preview(args: &PreviewArgs<'_>) -> anyhow::Result<Exit> {
    let topology = Arc::new(match args.inventory {
        Some(p) => Topology::load(p)?,
        None => Topology::parse(engine::topology::EXAMPLE_INVENTORY, "example inventory")?,
    });
    let fleet = fleet_budgets(args.config)?;
    let new = run_one(args.playbook, args.recording, &topology, args.config, "NEW")?;
    let Some(old_path) = args.diff else {
        print_one(args, &new.0, &new.1, fleet.as_deref());
        return Ok(Exit::Ok);
    };
    let old = run_one(old_path, args.recording, &topology, args.config, "OLD")?;
    let changes = diff::changes(&old.1, &new.1);
    let t0 = new.1.span.0;
    if args.json {
        for change in &changes {
            println!("{}", diff::json(change, t0));
        }
        println!("{}", diff::summary_json(&changes));
    } else {
        println!("OLD = {}   NEW = {}   on {}", old_path.display(), args.playbook.display(), args.recording.display());
        for change in &changes {
            println!("{}", diff::text(change, t0));
        }
        println!("{}", diff::summary(&changes));
    }
    Ok(if changes.is_empty() { Exit::Ok } else { Exit::Findings })
}

/// The `[fleet]` budgets of `config`, if it has a `[fleet]` table, in
/// words for the header; `None` without one.
fn fleet_budgets(config: Option<&Path>) -> anyhow::Result<Option<String>> {
    Ok(local_budgets(config)?.map(|b| b.describe()))
}

fn local_budgets(config: Option<&Path>) -> anyhow::Result<Option<LocalBudgets>> {
    let Some(path) = config else { return Ok(None) };
    let config = crate::config::DaemonConfig::load(path)?;
    let Some(fleet) = &config.fleet else { return Ok(None) };
    let settings = fleet::FleetSettings::new(fleet).map_err(|e| anyhow::anyhow!("{}: [fleet]: {e}", path.display()))?;
    Ok(Some(LocalBudgets::new(settings.budgets)))
}

/// Loads `playbook` as `check` does and runs `recording` through it.
fn run_one(
    playbook: &Path,
    recording: &Path,
    topology: &Arc<Topology>,
    config: Option<&Path>,
    which: &str,
) -> anyhow::Result<(PlaybookPart, Preview)> {
    let series = SeriesTable::new(Some(topology.clone()), Labels::default());
    let mut errors = Vec::new();
    let inputs = PlaybookInputs {
        path: playbook.to_path_buf(),
        rules: None,
        node: None,
        topology: Some(topology.clone()),
        series: series.clone(),
    };
    let part = PlaybookPart::build(inputs, &mut errors);
    let part = match part {
        Some(part) if errors.is_empty() => part,
        _ => return Err(Problems(errors)).with_context(|| format!("the playbook {} is refused", playbook.display())),
    };
    let progress = Progress::file(recording, &format!("{which} {}", recording.display()));
    let inputs = Inputs { part: &part, series, topology: Some(topology.clone()), budgets: local_budgets(config)? };
    let preview = simulate::run(recording, inputs, &progress)?;
    progress.finish();
    Ok((part, preview))
}

/// One playbook's decisions, then the summary.
fn print_one(args: &PreviewArgs<'_>, part: &PlaybookPart, preview: &Preview, fleet: Option<&str>) {
    let t0 = preview.span.0;
    let seen = show::first_seen(preview);
    let at_of = |id: &str| seen.get(id).copied();
    let told: Vec<show::Told> = preview.lines.iter().map(|l| show::tell(l, t0, &at_of)).collect();
    let counts = show::counts(told.iter().map(|t| t.category));
    let fleet_words = match fleet {
        Some(budgets) => format!("counted as if this daemon were the whole fleet: {budgets}"),
        None => "not previewed (give --config with a [fleet] table to count its budgets)".into(),
    };
    if args.json {
        for (line, t) in preview.lines.iter().zip(&told) {
            println!("{}", show::json(line, t, t0));
        }
        let by: serde_json::Map<String, serde_json::Value> =
            counts.iter().map(|(c, n)| (c.to_string(), (*n).into())).collect();
        println!(
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
                "text": show::summary(&counts),
            }})
        );
        return;
    }
    println!(
        "playbook {} ({}, mode {}), rules {}, on {}",
        part.playbook.name,
        args.playbook.display(),
        part.playbook.mode.as_str(),
        part.rules_dir.display(),
        args.recording.display()
    );
    println!("fleet budgets: {fleet_words}; silences: none (they are set on a running daemon, not in a playbook)");
    for (line, t) in preview.lines.iter().zip(&told) {
        println!("{}", show::text(line, t, t0));
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
    println!(
        "{} samples over {:.1}s; {}{waiting}",
        preview.samples,
        (preview.span.1 - t0) as f64 / 1e9,
        show::summary(&counts)
    );
}
