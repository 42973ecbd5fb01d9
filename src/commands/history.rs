//! `--prometheus URL` of `why` and `timeline`: the span asked about read
//! from the TSDB `[remote_write]` sent to, into a temporary recording the
//! verb reads instead of the daemon's (`ops::remote_write::history`).

use anyhow::Context;
use engine::time::Nanos;
use ops::time::parse_time;

/// How far back a verb without `--from` reads: the span `timeline` and
/// `why` look at when none is given is within it.
const DEFAULT_SPAN: Nanos = 3600 * engine::SECOND;

/// The recording of `[from, to]` (`--from`/`--to` as the verb takes
/// them, else the last hour) and, with `baseline`, the equal span before
/// it (`why` compares against it), read from `url`.
pub fn recording(
    url: &str,
    selector: &str,
    from: Option<&str>,
    to: Option<&str>,
    baseline: bool,
    now: Nanos,
) -> anyhow::Result<tempfile::NamedTempFile> {
    let to = to.map(|t| parse_time(t, now)).transpose().context("--to")?.unwrap_or(now);
    let from = from.map(|t| parse_time(t, now)).transpose().context("--from")?.unwrap_or(to - DEFAULT_SPAN);
    let from = if baseline { from - (to - from) } else { from };
    ops::remote_write::history::to_file(url, selector, from, to).with_context(|| format!("reading history from {url}"))
}
