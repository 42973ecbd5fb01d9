//! `rocemend recording export | import | stats`: the recording between its
//! own format and JSON lines, and what it holds. Unusable input exits 2,
//! naming the file and where in it.

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use engine::recording::{self, BlockOptions, BlockWriter, Event, Reader, Writer, SEGMENT_START};

use super::Exit;
use crate::cli::RecordingCommand;

/// Runs the verb.
pub fn run(command: RecordingCommand) -> anyhow::Result<Exit> {
    match command {
        RecordingCommand::Export { recording, out } => {
            let sink: Box<dyn Write> = match &out {
                Some(path) => {
                    Box::new(std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?)
                }
                None => Box::new(std::io::stdout().lock()),
            };
            export(&recording, BufWriter::new(sink))?;
        }
        RecordingCommand::Import { input, out } => import(&input, &out)?,
        RecordingCommand::Stats { recording } => print!("{}", stats(&recording)?),
    }
    Ok(Exit::Ok)
}

/// Every event of the recording at `path` (with its rotated files).
fn each_event(path: &Path, mut each: impl FnMut(Event) -> anyhow::Result<()>) -> anyhow::Result<usize> {
    let (input, files) =
        recording::open_with_rotated(path).with_context(|| format!("cannot read the recording {}", path.display()))?;
    let mut reader = Reader::new(input, &path.display().to_string());
    while let Some(event) = reader.next_event()? {
        each(event)?;
    }
    Ok(files)
}

fn export(path: &Path, out: impl Write) -> anyhow::Result<()> {
    let mut w = Writer::new(out);
    each_event(path, |event| {
        match event {
            Event::Series(id, spec) => w.declare(id, &spec)?,
            Event::Sample { id, t, value } => w.write_raw_sample(id, t, value)?,
            Event::Note(note) => w.note(&note)?,
        }
        Ok(())
    })?;
    w.flush().context("cannot write the export")
}

fn import(input: &Path, out: &Path) -> anyhow::Result<()> {
    let file = std::fs::File::create(out).with_context(|| format!("cannot write {}", out.display()))?;
    let mut w = BlockWriter::new(BufWriter::new(file), BlockOptions::default())?;
    each_event(input, |event| {
        match event {
            Event::Series(id, spec) => w.declare(id, &spec)?,
            Event::Sample { id, t, value } => w.sample(id, t, value)?,
            Event::Note(note) if note.kind == SEGMENT_START => w.segment(note.ts, &note.text)?,
            Event::Note(note) => w.note(&note)?,
        }
        Ok(())
    })?;
    w.finish().with_context(|| format!("cannot write {}", out.display()))
}

/// What a recording holds, as text.
fn stats(path: &Path) -> anyhow::Result<String> {
    let (mut segments, mut series, mut samples, mut notes) = (0u64, 0u64, 0u64, 0u64);
    let mut span: Option<(i64, i64)> = None;
    let files = each_event(path, |event| {
        let t = match event {
            Event::Series(..) => {
                series += 1;
                return Ok(());
            }
            Event::Sample { t, .. } => {
                samples += 1;
                t
            }
            Event::Note(note) => {
                if note.kind == SEGMENT_START {
                    segments += 1;
                } else {
                    notes += 1;
                }
                note.ts
            }
        };
        span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        Ok(())
    })?;
    let bytes = ops::timeline::signals::recorded_bytes(path);
    let seconds = span.map_or(0.0, |(a, b)| (b - a) as f64 / 1e9);
    let per_sample = if samples == 0 { 0.0 } else { bytes as f64 / samples as f64 };
    Ok(format!(
        "files {files}\nbytes {bytes}\nsegments {segments}\nseries declared {series}\nsamples {samples}\nnotes {notes}\n\
         spans {seconds:.1} s\nbytes a sample {per_sample:.3}\n"
    ))
}
