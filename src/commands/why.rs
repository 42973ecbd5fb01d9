//! `rocemend why --job J`: why a job is slow, in fabric terms (`ops::why`).
//!
//! Inputs are the timeline's: the daemon's recording and ledger, from its
//! config or given one by one. The ledger is optional: without a state
//! directory the answer has no decisions, and says so. A running daemon's
//! ledger is asked of it over its control socket. With `--prometheus`, the
//! signals come from the TSDB instead of the recording.

use engine::time::wall_clock_now;
use ops::why::render;

use super::Exit;
use crate::cli::WhyArgs;

/// `rocemend why`.
pub fn run(args: &WhyArgs) -> anyhow::Result<Exit> {
    let now = wall_clock_now();
    let mut request = args.request();
    // Kept until the answer is made: the file is removed when it drops.
    let history = match &args.prometheus {
        Some(url) => {
            Some(super::history::recording(url, &args.selector, args.from.as_deref(), args.to.as_deref(), true, now)?)
        }
        None => None,
    };
    if let Some(file) = &history {
        request.files.recording = Some(file.path().to_path_buf());
    }
    let (report, with_ledger) = ops::why::answer(&request, now)?;
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
