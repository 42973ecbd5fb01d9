//! [`LineReader`]: a recording of JSON lines, line by line, bounded, checked.

use std::collections::HashMap;
use std::io::BufRead;

use super::{Event, Line, RecordingError, MAX_LINE, MAX_SKIP, SEGMENT_START};
use crate::contracts::Note;
use crate::series::{SampleKind, SeriesSpec, Value};

/// Reads a recording line by line, checking that samples refer to declared
/// series and typing their values.
pub struct LineReader<R> {
    input: R,
    origin: String,
    line: usize,
    /// Declared series of the current segment: kind and the line declaring it.
    declared: HashMap<u32, (SeriesSpec, usize)>,
    /// The kinds of `declared`, by id, for ids below [`DENSE_IDS`]: what a
    /// sample line needs, without hashing its id (nine lines of ten).
    kinds: Vec<Option<SampleKind>>,
    pub(super) buf: Vec<u8>,
    /// Bytes consumed from the input.
    offset: u64,
    /// Reading stopped after [`MAX_SKIP`] bytes without a line: the input
    /// ends there, for a caller that reads on past the error.
    gave_up: bool,
    /// Reading stopped before the magic of a recording of blocks (a file
    /// of blocks follows one of lines in a stream).
    pub(super) at_blocks: bool,
}

/// What reading one line found.
enum RawLine {
    /// The end of the input.
    End,
    /// A line (without its newline); `complete` when a newline ended it.
    Text { complete: bool },
    /// A line longer than [`MAX_LINE`], skipped; its length.
    TooLong(usize),
    /// No newline within [`MAX_SKIP`] bytes: reading stopped there.
    Endless,
}

/// The most blank or comment lines in a row: a recording writes none, and
/// a million of them is an endless stream of newlines, not a recording.
const MAX_BLANK_LINES: usize = 1 << 20;

/// Why reading stopped after [`MAX_SKIP`] bytes without a line.
fn endless() -> String {
    format!(
        "no recording line in {} MiB or {MAX_BLANK_LINES} lines (no newline, or only blank lines): this is not a recording of JSON lines; \
         reading stopped there",
        MAX_SKIP >> 20
    )
}

impl<R: BufRead> LineReader<R> {
    /// Reads from `input`; `origin` names it in errors.
    pub fn new(input: R, origin: &str) -> LineReader<R> {
        LineReader {
            input,
            origin: origin.to_string(),
            line: 0,
            declared: HashMap::new(),
            kinds: Vec::new(),
            buf: Vec::new(),
            offset: 0,
            gave_up: false,
            at_blocks: false,
        }
    }

    /// The input, and the bytes consumed from it.
    pub(super) fn into_parts(self) -> (R, u64) {
        (self.input, self.offset)
    }

    /// Reads on from `input` after `offset` bytes (of another format: lines
    /// are counted from there).
    pub(super) fn resume(input: R, origin: &str, offset: u64) -> LineReader<R> {
        let mut reader = LineReader::new(input, origin);
        reader.offset = offset;
        reader
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
            let (take, newline) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if len + take <= MAX_LINE {
                self.buf.extend_from_slice(&chunk[..take]);
            }
            len += take;
            self.input.consume(take + newline as usize);
            self.offset += (take + newline as usize) as u64;
            if !newline && len as u64 > MAX_SKIP {
                return Ok(RawLine::Endless);
            }
            if newline {
                return Ok(if len > MAX_LINE { RawLine::TooLong(len) } else { RawLine::Text { complete: true } });
            }
        }
    }

    /// The next event, `None` at the end. A last line cut off mid-way (the
    /// file of a daemon still writing it, or killed while writing it) is the
    /// end, not an error.
    pub fn next_event(&mut self) -> Result<Option<Event>, RecordingError> {
        let (skipped_from, first_line) = (self.offset, self.line);
        if self.gave_up {
            return Ok(None);
        }
        loop {
            let next = match self.input.fill_buf() {
                Ok(chunk) => chunk.first().copied(),
                Err(e) => return Err(self.error(e.to_string())),
            };
            if next == Some(super::blocks::MAGIC[0]) {
                self.at_blocks = true;
                return Ok(None);
            }
            self.line += 1;
            let complete = match self.read_line().map_err(|e| self.error(e.to_string()))? {
                RawLine::End => return Ok(None),
                RawLine::TooLong(n) => {
                    return Err(self.error(format!("a line of {n} bytes; at most {MAX_LINE} are accepted")))
                }
                RawLine::Endless => {
                    self.gave_up = true;
                    return Err(self.error(endless()));
                }
                RawLine::Text { complete } => complete,
            };
            if let Some((s, t, v)) = fast_sample(&self.buf) {
                return self.sample(s, t, v).map(Some);
            }
            let text = String::from_utf8_lossy(&self.buf);
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') {
                if self.offset - skipped_from > MAX_SKIP || self.line - first_line > MAX_BLANK_LINES {
                    self.gave_up = true;
                    return Err(self.error(endless()));
                }
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

    /// A sample of series `s`: counters read exact integers; anything else
    /// reaches the engine as a number, which refuses what no counter can hold.
    fn sample(&self, s: u32, t: i64, v: Number) -> Result<Event, RecordingError> {
        let kind = if s < DENSE_IDS {
            self.kinds.get(s as usize).copied().flatten()
        } else {
            self.declared.get(&s).map(|(spec, _)| spec.kind)
        };
        let kind = kind.ok_or_else(|| self.error(format!("series {s} used before it is declared")))?;
        let value = match (kind, v) {
            (SampleKind::Counter(_), Number::Whole(n)) => Value::Count(n),
            (_, Number::Whole(n)) => Value::Real(n as f64),
            (_, Number::Real(x)) => Value::Real(x),
        };
        Ok(Event::Sample { id: s, t, value })
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
                        if series < DENSE_IDS {
                            let i = series as usize;
                            if self.kinds.len() <= i {
                                self.kinds.resize(i + 1, None);
                            }
                            self.kinds[i] = Some(spec.kind);
                        }
                    }
                }
                Event::Series(series, spec)
            }
            Line::Sample { s, t, v } => {
                let number = match v.as_u64() {
                    Some(n) => Number::Whole(n),
                    None => Number::Real(v.as_f64().ok_or_else(|| self.error(format!("value {v} is not a number")))?),
                };
                return self.sample(s, t, number);
            }
            Line::Note { note, t, text, labels } => {
                if note == SEGMENT_START {
                    self.declared.clear();
                    self.kinds.clear();
                }
                Event::Note(Note { ts: t, kind: note, text, labels })
            }
        })
    }
}

/// Series ids below this have their kind in a vector: writers number
/// their series from 0; an odd large id goes to the map only.
const DENSE_IDS: u32 = 1 << 20;

/// A sample's value as read: a whole number that fits a `u64` (what a
/// counter holds), or any other number.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Number {
    Whole(u64),
    Real(f64),
}

/// A sample line exactly as the writer writes it — `{"s":7,"t":1700000000000000000,"v":42}`
/// — read without building a JSON tree: nine lines of ten in a recording
/// are samples, and the general parser cost 0.7 µs each. Anything else
/// (other spacing or key order, a note, a declaration, a cut-off line)
/// returns `None` and takes the general path, so what this accepts, the
/// general path would read the same way: integers as serde_json reads
/// them, other numbers through serde_json's own float parser.
fn fast_sample(line: &[u8]) -> Option<(u32, i64, Number)> {
    let rest = line.strip_prefix(b"{\"s\":")?;
    let (s, rest) = digits(rest)?;
    let rest = rest.strip_prefix(b",\"t\":")?;
    let (negative, rest) = match rest.strip_prefix(b"-") {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let (t, rest) = digits(rest)?;
    let rest = rest.strip_prefix(b",\"v\":")?;
    let token = rest.strip_suffix(b"}")?;
    let s = u32::try_from(s).ok()?;
    let t = if negative { 0i64.checked_sub_unsigned(t)? } else { i64::try_from(t).ok()? };
    Some((s, t, number(token)?))
}

/// A run of ASCII digits as a `u64` (no sign, no leading zero but "0"),
/// and what follows it.
fn digits(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let end = bytes.iter().position(|b| !b.is_ascii_digit()).unwrap_or(bytes.len());
    if end == 0 || (end > 1 && bytes[0] == b'0') {
        return None;
    }
    let mut n: u64 = 0;
    for &b in &bytes[..end] {
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some((n, &bytes[end..]))
}

/// A JSON number token: a whole number that fits a `u64` as such, any
/// other valid number through serde_json (the general path's parser).
fn number(token: &[u8]) -> Option<Number> {
    if let Some((n, rest)) = digits(token) {
        if rest.is_empty() {
            return Some(Number::Whole(n));
        }
    }
    let text = std::str::from_utf8(token).ok()?;
    match serde_json::from_str::<serde_json::Number>(text).ok()? {
        n if n.as_u64().is_some() => n.as_u64().map(Number::Whole),
        n => n.as_f64().map(Number::Real),
    }
}

#[cfg(test)]
mod fast_tests {
    use super::*;

    /// The general path's reading of a sample line.
    fn general(line: &str) -> Option<(u32, i64, Number)> {
        match serde_json::from_str::<Line>(line).ok()? {
            Line::Sample { s, t, v } => Some((
                s,
                t,
                match v.as_u64() {
                    Some(n) => Number::Whole(n),
                    None => Number::Real(v.as_f64()?),
                },
            )),
            _ => None,
        }
    }

    #[test]
    fn the_fast_path_reads_what_the_general_path_reads_or_leaves_it() {
        let lines = [
            r#"{"s":0,"t":1700000000000000000,"v":397875035}"#,
            r#"{"s":4294967295,"t":-5,"v":18446744073709551615}"#,
            r#"{"s":3,"t":0,"v":18446744073709551616}"#,
            r#"{"s":3,"t":1,"v":-12}"#,
            r#"{"s":3,"t":1,"v":0.1}"#,
            r#"{"s":3,"t":1,"v":1.5e300}"#,
            r#"{"s":3,"t":1,"v":2.2250738585072014e-308}"#,
            r#"{"s":3,"t":1,"v":-0.0}"#,
            r#"{"s":3,"t":1,"v":0}"#,
            r#"{"s":3,"t":1,"v":007}"#,
            r#"{"s":03,"t":1,"v":7}"#,
            r#"{"s":4294967296,"t":1,"v":7}"#,
            r#"{"s":3,"t":9223372036854775808,"v":7}"#,
            r#"{"s":3,"t":-9223372036854775808,"v":7}"#,
            r#"{"s":3,"t":1,"v":7"#,
            r#"{"s":3,"t":1,"v":"7"}"#,
            r#"{"s":3,"t":1,"v":1e}"#,
            r#"{"s":3, "t":1,"v":7}"#,
            r#"{"t":1,"s":3,"v":7}"#,
            r#"{"s":3,"t":1,"v":7,"x":1}"#,
        ];
        for line in lines {
            let fast = fast_sample(line.as_bytes());
            if let Some(f) = fast {
                assert_eq!(Some(f), general(line), "{line}");
            }
        }
        // The writer's own lines all take the fast path.
        assert_eq!(fast_sample(lines[0].as_bytes()), Some((0, 1_700_000_000_000_000_000, Number::Whole(397_875_035))));
        assert_eq!(fast_sample(lines[4].as_bytes()), Some((3, 1, Number::Real(0.1))));
        assert!(fast_sample(lines[14].as_bytes()).is_none(), "a cut-off line is the general path's");
        assert!(fast_sample(lines[10].as_bytes()).is_none(), "a leading zero is not JSON");
    }

    #[test]
    fn a_recording_reads_the_same_with_and_without_the_fast_path() {
        let mut out = Vec::new();
        let mut w = crate::recording::Writer::new(&mut out);
        let spec = |kind| SeriesSpec { metric: "m".into(), labels: crate::Labels::default(), kind };
        w.declare(0, &spec(SampleKind::Counter(crate::counter::CounterSpec::U64))).unwrap();
        w.declare(1, &spec(SampleKind::Gauge)).unwrap();
        for (i, v) in
            [Value::Count(5), Value::Real(0.25), Value::Real(-3.0), Value::Count(u64::MAX)].into_iter().enumerate()
        {
            w.write_raw_sample((i % 2) as u32, i as i64, v).unwrap();
        }
        let text = String::from_utf8(out).unwrap();
        let mut reader = LineReader::new(text.as_bytes(), "test");
        let mut samples = Vec::new();
        while let Some(e) = reader.next_event().unwrap() {
            if let Event::Sample { id, t, value } = e {
                samples.push((id, t, value));
            }
        }
        assert_eq!(
            samples,
            [
                (0, 0, Value::Count(5)),
                (1, 1, Value::Real(0.25)),
                (0, 2, Value::Real(-3.0)),
                (1, 3, Value::Real(u64::MAX as f64))
            ]
        );
    }
}
