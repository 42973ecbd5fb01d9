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

/// The longest line a recording may have. A series declaration with the
/// longest labels the engine accepts is a few KiB; a line past 1 MiB is
/// corrupt, and is skipped without being held in memory.
pub const MAX_LINE: usize = 1 << 20;

/// The note kind that starts a recording segment: a daemon appending to a
/// recording writes one when it starts, and series ids declared before it
/// no longer apply.
pub const SEGMENT_START: &str = "start";

/// Reads a recording line by line, checking that samples refer to declared
/// series and typing their values.
pub struct Reader<R> {
    input: R,
    origin: String,
    line: usize,
    /// Declared series of the current segment: kind and the line declaring it.
    declared: HashMap<u32, (SeriesSpec, usize)>,
    buf: Vec<u8>,
}

/// What reading one line found.
enum RawLine {
    /// The end of the input.
    End,
    /// A line (without its newline); `complete` when a newline ended it.
    Text { complete: bool },
    /// A line longer than [`MAX_LINE`], skipped; its length.
    TooLong(usize),
}

impl<R: BufRead> Reader<R> {
    /// Reads from `input`; `origin` names it in errors.
    pub fn new(input: R, origin: &str) -> Reader<R> {
        Reader { input, origin: origin.to_string(), line: 0, declared: HashMap::new(), buf: Vec::new() }
    }

    fn error(&self, message: impl Into<String>) -> RecordingError {
        RecordingError { origin: self.origin.clone(), line: self.line, message: message.into() }
    }

    /// Reads one line into `buf`, holding at most [`MAX_LINE`] bytes of it.
    fn read_line(&mut self) -> std::io::Result<RawLine> {
        self.buf.clear();
        let mut len = 0usize;
        loop {
            let chunk = self.input.fill_buf()?;
            if chunk.is_empty() {
                return Ok(match len {
                    0 => RawLine::End,
                    n if n > MAX_LINE => RawLine::TooLong(n),
                    _ => RawLine::Text { complete: false },
                });
            }
            let (take, newline) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if len + take <= MAX_LINE {
                self.buf.extend_from_slice(&chunk[..take]);
            }
            len += take;
            self.input.consume(take + newline as usize);
            if newline {
                return Ok(if len > MAX_LINE { RawLine::TooLong(len) } else { RawLine::Text { complete: true } });
            }
        }
    }

    /// The next event, `None` at the end. A last line cut off mid-way (the
    /// file of a daemon still writing it, or killed while writing it) is the
    /// end, not an error.
    pub fn next_event(&mut self) -> Result<Option<Event>, RecordingError> {
        loop {
            self.line += 1;
            let complete = match self.read_line().map_err(|e| self.error(e.to_string()))? {
                RawLine::End => return Ok(None),
                RawLine::TooLong(n) => {
                    return Err(self.error(format!("a line of {n} bytes; at most {MAX_LINE} are accepted")))
                }
                RawLine::Text { complete } => complete,
            };
            let text = String::from_utf8_lossy(&self.buf);
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let line: Line = match serde_json::from_str(text) {
                Ok(line) => line,
                Err(_) if !complete => return Ok(None),
                Err(e) => return Err(self.error(format!("not a recording line: {e}"))),
            };
            return self.event(line).map(Some);
        }
    }

    fn event(&mut self, line: Line) -> Result<Event, RecordingError> {
        Ok(match line {
            Line::Series { series, metric, labels, kind } => {
                let spec = SeriesSpec { metric, labels, kind };
                match self.declared.get(&series) {
                    Some((earlier, at)) if *earlier != spec => {
                        return Err(self.error(format!(
                            "series {series} is declared again as {}{} {:?}, but line {at} declared it as {}{} {:?}",
                            spec.metric, spec.labels, spec.kind, earlier.metric, earlier.labels, earlier.kind
                        )));
                    }
                    Some(_) => {}
                    None => {
                        self.declared.insert(series, (spec.clone(), self.line));
                    }
                }
                Event::Series(series, spec)
            }
            Line::Sample { s, t, v } => {
                let (spec, _) =
                    self.declared.get(&s).ok_or_else(|| self.error(format!("series {s} used before it is declared")))?;
                // Counters read exact integers; anything else reaches the
                // engine as a number, which refuses what no counter can hold.
                let value = match (spec.kind, v.as_u64()) {
                    (SampleKind::Counter(_), Some(n)) => Value::Count(n),
                    _ => Value::Real(v.as_f64().ok_or_else(|| self.error(format!("value {v} is not a number")))?),
                };
                Event::Sample { id: s, t, value }
            }
            Line::Note { note, t, text, labels } => {
                if note == SEGMENT_START {
                    self.declared.clear();
                }
                Event::Note(Note { ts: t, kind: note, text, labels })
            }
        })
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
    fn a_series_declared_again_with_other_labels_is_refused_unless_a_segment_starts() {
        let decl = |labels: &str| {
            format!("{{\"series\":0,\"metric\":\"m\",\"labels\":{{{labels}}},\"kind\":\"gauge\"}}\n")
        };
        let text = format!("{}{}{}", decl("\"port\":\"Ethernet4\""), decl("\"port\":\"Ethernet4\""), decl("\"port\":\"Ethernet12\""));
        let mut r = Reader::new(text.as_bytes(), "rec.jsonl");
        assert!(r.next_event().is_ok());
        assert!(r.next_event().is_ok(), "the same declaration again is harmless");
        let err = r.next_event().unwrap_err().to_string();
        assert!(err.starts_with("rec.jsonl:3: series 0 is declared again as m{port=\"Ethernet12\"}"), "{err}");
        assert!(err.contains("line 1 declared it as m{port=\"Ethernet4\"}"), "{err}");

        let start = "{\"note\":\"start\",\"t\":5}\n";
        let text = format!("{}{start}{}", decl("\"port\":\"Ethernet4\""), decl("\"port\":\"Ethernet12\""));
        let mut r = Reader::new(text.as_bytes(), "rec.jsonl");
        for _ in 0..3 {
            assert!(r.next_event().is_ok(), "a new segment declares its own ids");
        }
    }

    #[test]
    fn a_huge_line_is_skipped_without_being_held_and_reading_goes_on() {
        let mut text = String::from("{\"note\":\"x\",\"t\":1,\"text\":\"");
        text.push_str(&"a".repeat(MAX_LINE + 10));
        text.push_str("\"}\n{\"note\":\"y\",\"t\":2}\n");
        let mut r = Reader::new(std::io::BufReader::with_capacity(4096, text.as_bytes()), "rec.jsonl");
        let err = r.next_event().unwrap_err().to_string();
        assert!(err.starts_with("rec.jsonl:1: a line of 1048"), "{err}");
        assert!(r.buf.capacity() <= MAX_LINE + 4096, "held {} bytes", r.buf.capacity());
        assert!(matches!(r.next_event().unwrap(), Some(Event::Note(n)) if n.kind == "y"));
    }

    #[test]
    fn a_torn_last_line_ends_the_recording_quietly() {
        let text = "{\"note\":\"x\",\"t\":1}\n{\"s\":0,\"t\":2,\"v\":";
        let mut r = Reader::new(text.as_bytes(), "rec.jsonl");
        assert!(matches!(r.next_event().unwrap(), Some(Event::Note(_))));
        assert_eq!(r.next_event().unwrap(), None);
        // A complete line that is not JSON is an error, wherever it is.
        let mut r = Reader::new("garbage\n".as_bytes(), "rec.jsonl");
        assert!(r.next_event().is_err());
    }

    #[test]
    fn counter_values_that_are_not_whole_reach_the_engine_as_numbers() {
        let text = "{\"series\":0,\"metric\":\"m\",\"kind\":\"counter\",\"bits\":64,\"overflow\":\"wrap\"}\n{\"s\":0,\"t\":1,\"v\":1.5}\n";
        let mut r = Reader::new(text.as_bytes(), "rec.jsonl");
        r.next_event().unwrap();
        assert_eq!(r.next_event().unwrap(), Some(Event::Sample { id: 0, t: 1, value: Value::Real(1.5) }));
    }

    #[test]
    fn an_undeclared_series_is_an_error_with_its_line() {
        let text = "{\"s\":4,\"t\":1,\"v\":1}\n";
        let err = Reader::new(text.as_bytes(), "rec.jsonl").next_event().unwrap_err();
        assert_eq!(err.to_string(), "rec.jsonl:1: series 4 used before it is declared");
    }
}
