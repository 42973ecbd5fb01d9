//! `rocemend why --job J`: why a job is slow, in fabric terms
//! (the analysis is `src/why/`).
//!
//! Inputs are the timeline's: the daemon's recording and ledger, from its
//! config or given one by one. The ledger is optional: without a state
//! directory the answer has no decisions, and says so. A running daemon's
//! ledger is asked of it over its control socket.

use anyhow::Context;
use engine::time::wall_clock_now;

use crate::cli::WhyArgs;
use crate::config::DaemonConfig;
use crate::timeline::{history, window::parse_time};
use crate::why::{self, render, series, Query};
use crate::{wiring, Exit};

/// Runs the verb.
pub fn run(args: &WhyArgs) -> anyhow::Result<Exit> {
    let (report, with_ledger) = answer(args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&render::json(&report))?);
    } else {
        print!("{}", render::text(&report));
        if !with_ledger {
            println!("(no ledger read: pass --state DIR or --config for the decisions)");
        }
    }
    Ok(Exit::Ok)
}

/// The analysis `args` ask for, and whether a ledger was read. Blocks: it
/// reads the recording, and a live daemon's ledger over its socket (the web
/// console runs it on a thread of its own).
pub fn answer(args: &WhyArgs) -> anyhow::Result<(why::Report, bool)> {
    if !(args.threshold > 0.0 && args.threshold.is_finite()) {
        anyhow::bail!("--threshold must be a positive fraction, e.g. 0.15 for 15 %");
    }
    let config = args.config.as_deref().map(DaemonConfig::load).transpose()?;
    let recording = args
        .recording
        .clone()
        .or_else(|| config.as_ref().and_then(|c| c.record.clone()))
        .context("no recording: pass --recording FILE, or --config with a config that sets `record = ...`")?;
    let state = args.state.clone().or_else(|| config.as_ref().map(|c| c.state_dir.clone()));
    let socket = config.as_ref().map(|c| c.control.socket.clone().unwrap_or_else(|| c.state_dir.join("control.sock")));
    let inventory = args.inventory.clone().or_else(|| config.as_ref().and_then(|c| c.inventory.clone()));
    let topology = wiring::topology(inventory.as_deref())?;
    let now = wall_clock_now();
    let time = |flag: &str, t: &Option<String>| {
        t.as_deref().map(|t| parse_time(t, now)).transpose().map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
    };
    let span = match (time("from", &args.from)?, time("to", &args.to)?) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    let decisions = match &state {
        Some(dir) => history::decisions(dir, socket.as_deref())?,
        None => Vec::new(),
    };
    let (input, _) = engine::recording::open_with_rotated(&recording)
        .with_context(|| format!("cannot read the recording {}", recording.display()))?;
    let recorded = series::read(input, &recording.display().to_string())?;
    let query = Query { job: &args.job, span, threshold: args.threshold, topology: topology.as_deref() };
    let report = why::analyze(&recorded, &query, &decisions, |d| {
        let p = &d.proposal;
        crate::control::incidents::incident_id(&p.rule, &p.subject, p.active_at)
    })
    .map_err(anyhow::Error::msg)?;
    Ok((report, state.is_some()))
}
