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
    // Kept until the verb is done: the file is removed when it drops.
    let _history = super::history::swap_in(
        args.prometheus.as_deref(),
        &args.selector,
        (args.from.as_deref(), args.to.as_deref()),
        true,
        now,
        &mut request.files,
    )?;
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
