//! Recordings: everything a daemon saw, as JSON lines, for replay.
//!
//! ```text
//! {"series":0,"metric":"link_carrier_down_count","labels":{"node":"n1","netdev":"eth0"},"kind":"counter","bits":32,"overflow":"wrap"}
//! {"s":0,"t":1700000000000000000,"v":3}
//! {"note":"fault","t":1700000000100000000,"text":"link flap on n1 eth0","labels":{"node":"n1"}}
//! ```
//!
//! A `series` line declares an id once; sample lines refer to it. Counter
//! values are exact integers; gauge and event values are numbers.

use std::collections::HashMap;
use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

use crate::contracts::Note;
use crate::labels::Labels;
use crate::series::{SampleKind, SeriesId, SeriesSpec, SeriesTable, Value};
use crate::time::Nanos;

/// One line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Line {
    /// Declares a series id.
    Series {
        /// The id used by sample lines of this recording.
        series: u32,
        /// Metric name.
        metric: String,
        /// Labels.
        #[serde(default)]
        labels: Labels,
        /// Kind (and counter width).
        #[serde(flatten)]
        kind: SampleKind,
    },
    /// A sample.
    Sample {
        /// Series id (as declared).
        s: u32,
        /// Time, ns since the epoch.
        t: Nanos,
        /// Value.
        v: serde_json::Number,
    },
    /// A note.
    Note {
        /// Note kind.
        note: String,
        /// Time.
        t: Nanos,
        /// Text.
        #[serde(default)]
        text: String,
        /// Labels.
        #[serde(default)]
        labels: Labels,
    },
}

/// A recording line could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{origin}:{line}: {message}")]
pub struct RecordingError {
    /// The file.
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// What reading a recording yields, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A series declaration.
    Series(u32, SeriesSpec),
    /// A sample of a declared series.
    Sample {
        /// Recording-local id.
        id: u32,
        /// Time.
        t: Nanos,
        /// Value, typed by the series' kind.
        value: Value,
    },
    /// A note.
    Note(Note),
}

/// Reads a recording line by line, checking that samples refer to declared
/// series and typing their values.
pub struct Reader<R> {
    input: R,
    origin: String,
    line: usize,
    kinds: HashMap<u32, SampleKind>,
    buf: String,
}

impl<R: BufRead> Reader<R> {
    /// Reads from `input`; `origin` names it in errors.
    pub fn new(input: R, origin: &str) -> Reader<R> {
        Reader { input, origin: origin.to_string(), line: 0, kinds: HashMap::new(), buf: String::new() }
    }

    fn error(&self, message: impl Into<String>) -> RecordingError {
        RecordingError { origin: self.origin.clone(), line: self.line, message: message.into() }
    }

    /// The next event, `None` at the end.
    pub fn next_event(&mut self) -> Result<Option<Event>, RecordingError> {
        loop {
            self.buf.clear();
            self.line += 1;
            let n = self.input.read_line(&mut self.buf).map_err(|e| self.error(e.to_string()))?;
            if n == 0 {
                return Ok(None);
            }
            let text = self.buf.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let line: Line =
                serde_json::from_str(text).map_err(|e| self.error(format!("not a recording line: {e}")))?;
            return Ok(Some(match line {
                Line::Series { series, metric, labels, kind } => {
                    self.kinds.insert(series, kind);
                    Event::Series(series, SeriesSpec { metric, labels, kind })
                }
                Line::Sample { s, t, v } => {
                    let kind = *self
                        .kinds
                        .get(&s)
                        .ok_or_else(|| self.error(format!("series {s} used before it is declared")))?;
                    let value = match kind {
                        SampleKind::Counter(_) => Value::Count(
                            v.as_u64().or_else(|| v.as_f64().filter(|x| *x >= 0.0).map(|x| x as u64)).ok_or_else(
                                || self.error(format!("counter value {v} is not a non-negative integer")),
                            )?,
                        ),
                        _ => Value::Real(v.as_f64().ok_or_else(|| self.error(format!("value {v} is not a number")))?),
                    };
                    Event::Sample { id: s, t, value }
                }
                Line::Note { note, t, text, labels } => Event::Note(Note { ts: t, kind: note, text, labels }),
            }));
        }
    }
}

/// Writes a recording, declaring each series the first time it appears.
pub struct Writer<W: Write> {
    out: W,
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

    /// Flushes the output.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counter::CounterSpec;

    #[test]
    fn a_recording_round_trips() {
        let table = SeriesTable::default();
        let sensor = table.add_sensor("t", 10);
        let spec = SeriesSpec {
            metric: "link_carrier_down_count".into(),
            labels: Labels::from_pairs([("netdev", "eth0")]),
            kind: SampleKind::Counter(CounterSpec::U32_WRAP),
        };
        let id = table.register(sensor, &spec).unwrap();
        let mut w = Writer::new(Vec::new());
        w.sample(&table, id, 10, Value::Count(u64::MAX - 1)).unwrap();
        w.sample(&table, id, 20, Value::Count(3)).unwrap();
        w.note(&Note { ts: 15, kind: "fault".into(), text: "flap".into(), labels: Labels::default() }).unwrap();
        let bytes = w.out.clone();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(text.lines().count(), 4, "one declaration, two samples, one note:\n{text}");
        let mut r = Reader::new(&bytes[..], "mem");
        assert_eq!(r.next_event().unwrap(), Some(Event::Series(0, spec)));
        assert_eq!(r.next_event().unwrap(), Some(Event::Sample { id: 0, t: 10, value: Value::Count(u64::MAX - 1) }));
        assert_eq!(r.next_event().unwrap(), Some(Event::Sample { id: 0, t: 20, value: Value::Count(3) }));
        assert!(matches!(r.next_event().unwrap(), Some(Event::Note(n)) if n.text == "flap"));
        assert_eq!(r.next_event().unwrap(), None);
    }

    #[test]
    fn an_undeclared_series_is_an_error_with_its_line() {
        let text = "{\"s\":4,\"t\":1,\"v\":1}\n";
        let err = Reader::new(text.as_bytes(), "rec.jsonl").next_event().unwrap_err();
        assert_eq!(err.to_string(), "rec.jsonl:1: series 4 used before it is declared");
    }
}
