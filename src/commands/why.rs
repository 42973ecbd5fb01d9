//! `rocemend why --job J`: why a job is slow, in fabric terms (`ops::why`).
//!
//! Inputs are the timeline's: the daemon's recording and ledger, from its
//! config or given one by one. The ledger is optional: without a state
//! directory the answer has no decisions, and says so. A running daemon's
//! ledger is asked of it over its control socket.

use engine::time::wall_clock_now;
use ops::why::render;

use super::Exit;
use crate::cli::WhyArgs;

/// `rocemend why`.
pub fn run(args: &WhyArgs) -> anyhow::Result<Exit> {
    let (report, with_ledger) = ops::why::answer(&args.request(), wall_clock_now())?;
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
