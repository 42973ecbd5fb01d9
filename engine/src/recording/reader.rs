//! [`Reader`]: a recording, line by line, bounded, checked.

use std::collections::HashMap;
use std::io::BufRead;

use super::{Event, Line, RecordingError, MAX_LINE, SEGMENT_START};
use crate::contracts::Note;
use crate::series::{SampleKind, SeriesSpec, Value};

/// Reads a recording line by line, checking that samples refer to declared
/// series and typing their values.
pub struct Reader<R> {
    input: R,
    origin: String,
    line: usize,
    /// Declared series of the current segment: kind and the line declaring it.
    declared: HashMap<u32, (SeriesSpec, usize)>,
    pub(super) buf: Vec<u8>,
    /// Bytes consumed from the input.
    offset: u64,
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
        Reader { input, origin: origin.to_string(), line: 0, declared: HashMap::new(), buf: Vec::new(), offset: 0 }
    }

    /// Bytes read so far: the end of the last line returned.
    pub fn offset(&self) -> u64 {
        self.offset
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
            self.offset += (take + newline as usize) as u64;
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
                let (spec, _) = self
                    .declared
                    .get(&s)
                    .ok_or_else(|| self.error(format!("series {s} used before it is declared")))?;
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
