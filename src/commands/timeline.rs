//! `rocemend timeline`: one HTML page of what the daemon saw and did
//! (`ops::timeline`), written to `--out`.

use anyhow::Context;
use engine::time::wall_clock_now;

use super::Exit;
use crate::cli::TimelineArgs;

/// `rocemend timeline`.
pub fn run(args: &TimelineArgs) -> anyhow::Result<Exit> {
    let drawn = ops::timeline::render(&args.request(), wall_clock_now(), true)?;
    std::fs::write(&args.out, drawn.html).with_context(|| format!("writing {}", args.out.display()))?;
    println!("wrote {}: {}", args.out.display(), drawn.summary);
    Ok(Exit::Ok)
}
