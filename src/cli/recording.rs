//! `rocemend recording export | import | stats`: the recording's flags.

use std::path::PathBuf;

use clap::Subcommand;

/// What to do with a recording.
#[derive(Debug, Subcommand)]
pub enum RecordingCommand {
    /// A recording and its rotated files (`PATH.1`, …), oldest first, as JSON lines: one
    /// `series` line per series and segment, one line per sample and note.
    Export {
        /// The recording (the daemon's `record`).
        recording: PathBuf,
        /// Write here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// A recording of JSON lines (a hand-made test file, an export) as a recording of
    /// compressed blocks, the daemon's own format.
    Import {
        /// The JSON lines.
        input: PathBuf,
        /// The recording to write (replaced if it exists).
        #[arg(long)]
        out: PathBuf,
    },
    /// What a recording holds: files, bytes, segments, series, samples, notes, the time it
    /// spans and its bytes a sample.
    Stats {
        /// The recording (with its rotated files).
        recording: PathBuf,
    },
}
