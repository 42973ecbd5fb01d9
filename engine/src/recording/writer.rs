//! [`Writer`]: a recording, declaring each series the first time it appears.

use std::io::Write;

use super::Line;
use crate::contracts::Note;
use crate::series::{SeriesId, SeriesSpec, SeriesTable, Value};
use crate::time::Nanos;

/// Writes a recording, declaring each series the first time it appears.
pub struct Writer<W: Write> {
    pub(super) out: W,
    declared: Vec<bool>,
}

impl<W: Write> Writer<W> {
    /// Writes to `out`.
    pub fn new(out: W) -> Writer<W> {
        Writer { out, declared: Vec::new() }
    }

    fn write_line(&mut self, line: &Line) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, line)?;
        self.out.write_all(b"\n")
    }

    /// Writes a sample of `id`, declaring the series from `table` if new.
    pub fn sample(&mut self, table: &SeriesTable, id: SeriesId, t: Nanos, value: Value) -> std::io::Result<()> {
        let i = id.0 as usize;
        if self.declared.len() <= i {
            self.declared.resize(i + 1, false);
        }
        if !self.declared[i] {
            let line = {
                let reg = table.read();
                Line::Series {
                    series: id.0,
                    metric: reg.metric_name(id).to_string(),
                    labels: reg.labels(id),
                    kind: reg.info(id).kind,
                }
            };
            self.write_line(&line)?;
            self.declared[i] = true;
        }
        self.write_raw_sample(id.0, t, value)
    }

    /// Writes a series declaration (for generators that own their ids).
    pub fn declare(&mut self, id: u32, spec: &SeriesSpec) -> std::io::Result<()> {
        self.write_line(&Line::Series {
            series: id,
            metric: spec.metric.clone(),
            labels: spec.labels.clone(),
            kind: spec.kind,
        })
    }

    /// Writes a sample line for an already declared id.
    pub fn write_raw_sample(&mut self, id: u32, t: Nanos, value: Value) -> std::io::Result<()> {
        let v = match value {
            Value::Count(n) => serde_json::Number::from(n),
            Value::Real(x) => serde_json::Number::from_f64(x).unwrap_or_else(|| serde_json::Number::from(0)),
        };
        self.write_line(&Line::Sample { s: id, t, v })
    }

    /// Writes a note.
    pub fn note(&mut self, note: &Note) -> std::io::Result<()> {
        self.write_line(&Line::Note {
            note: note.kind.clone(),
            t: note.ts,
            text: note.text.clone(),
            labels: note.labels.clone(),
        })
    }

    /// The output.
    pub fn inner(&self) -> &W {
        &self.out
    }

    /// Flushes the output.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
