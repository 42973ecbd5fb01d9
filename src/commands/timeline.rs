//! `rocemend timeline`: one HTML page of what the daemon saw and did
//! (`ops::timeline`), written to `--out`; with `--prometheus`, the signals
//! read from the TSDB instead of the recording.

use anyhow::Context;
use engine::time::wall_clock_now;

use super::Exit;
use crate::cli::TimelineArgs;

/// `rocemend timeline`.
pub fn run(args: &TimelineArgs) -> anyhow::Result<Exit> {
    let now = wall_clock_now();
    let mut request = args.request();
    // Kept until the verb is done: the file is removed when it drops.
    let _history = super::history::swap_in(
        args.prometheus.as_deref(),
        &args.selector,
        (args.from.as_deref(), args.to.as_deref()),
        false,
        now,
        &mut request.files,
    )?;
    let drawn = ops::timeline::render(&request, now, true)?;
    std::fs::write(&args.out, drawn.html).with_context(|| format!("writing {}", args.out.display()))?;
    println!("wrote {}: {}", args.out.display(), drawn.summary);
    Ok(Exit::Ok)
}
