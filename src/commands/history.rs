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

/// With `--prometheus URL`, the history `request` asks about read into a
/// temporary recording that `files` then name instead of the daemon's;
/// the file is removed when the returned value drops, so it is kept until
/// the verb is done.
pub fn swap_in(
    prometheus: Option<&str>,
    selector: &str,
    (from, to): (Option<&str>, Option<&str>),
    baseline: bool,
    now: Nanos,
    files: &mut ops::recorded::Files,
) -> anyhow::Result<Option<tempfile::NamedTempFile>> {
    let Some(url) = prometheus else { return Ok(None) };
    let file = recording(url, selector, from, to, baseline, now)?;
    files.recording = Some(file.path().to_path_buf());
    Ok(Some(file))
}
