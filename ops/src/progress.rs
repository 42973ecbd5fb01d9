//! Progress bars on stderr for long local runs (`replay`, `preview`,
//! `timeline`, `chaos run --runs N`).
//!
//! A bar is drawn only when stderr is a terminal: in a pipe, a log or a
//! test, nothing extra is printed, so output that scripts read stays as it
//! was. One place decides that and the style, so every verb looks alike.

use std::io::{IsTerminal, Read};
use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

/// Recordings smaller than this are read in well under a second: no bar.
const LARGE_FILE: u64 = 4 << 20;

/// A progress bar, or nothing when stderr is not a terminal.
#[derive(Clone)]
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar over `total` units of what `style` counts, labelled `what`;
    /// hidden unless stderr is a terminal.
    fn new(total: u64, what: &str, template: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
            .with_style(style)
            .with_message(what.to_string())
            // Dropped early (an error), it goes: an error message must not
            // share its line with a half-drawn bar.
            .with_finish(ProgressFinish::AndClear);
        Progress(Some(bar))
    }

    /// No bar.
    pub fn hidden() -> Progress {
        Progress(None)
    }

    /// Runs completed out of `total`; the message tells the failed ones.
    pub fn runs(total: u64) -> Progress {
        Progress::new(total, "runs", "  [{bar:30}] {pos}/{len} {msg} ({elapsed})")
    }

    /// `total` bytes to read, when that is enough to be worth a bar.
    pub fn bytes(total: u64, what: &str) -> Progress {
        if total < LARGE_FILE {
            return Progress(None);
        }
        Progress::new(total, what, "  {msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)")
    }

    /// The bytes of `path` to read.
    pub fn file(path: &Path, what: &str) -> Progress {
        Progress::bytes(std::fs::metadata(path).map_or(0, |m| m.len()), what)
    }

    /// Sets where the bar stands (a callback that is told totals).
    pub fn set(&self, done: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(done);
        }
    }

    /// Advances by `n` units.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.0 {
            bar.inc(n);
        }
    }

    /// Replaces the bar's message.
    pub fn message(&self, text: String) {
        if let Some(bar) = &self.0 {
            bar.set_message(text);
        }
    }

    /// Removes the bar, so what is printed next starts on a clean line.
    pub fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }

    /// `input` read through this bar, advancing it by the bytes read: the
    /// bar follows the one pass over a file, no second pass counts it.
    pub fn reader<R: Read>(&self, input: R) -> Counted<R> {
        Counted { inner: input, progress: self.clone() }
    }
}

/// A reader that advances a [`Progress`] by what it reads.
pub struct Counted<R> {
    inner: R,
    progress: Progress,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress.inc(n as u64);
        Ok(n)
    }
}
