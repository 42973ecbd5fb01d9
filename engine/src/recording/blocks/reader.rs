//! [`BlockReader`]: a recording of blocks, frame by frame, as the events
//! the JSON-lines reader yields, in time order within each block.

use std::collections::{HashMap, VecDeque};
use std::io::BufRead;

use super::block::{self, Header};
use super::frame::{self, Kind};
use super::samples::Samples;
use super::varint::{Cursor, Malformed};
use super::MAGIC;
use crate::contracts::Note;
use crate::labels::Labels;
use crate::recording::{Event, Line, RecordingError, Select, SEGMENT_START};
use crate::series::{SeriesSpec, Value};

/// What the next step of reading found.
#[derive(Debug)]
pub enum Step {
    /// An event.
    Event(Event),
    /// A block's samples, whole: [`BlockReader::samples`] (only from
    /// [`BlockReader::next_chunk`]).
    Samples,
    /// The end of the input.
    End,
    /// A JSON line starts here (a recording of lines follows one of blocks).
    Lines,
}

/// Reads a recording of blocks.
pub struct BlockReader<R> {
    pub(in crate::recording) input: R,
    origin: String,
    /// Bytes consumed.
    pub(in crate::recording) offset: u64,
    /// Frames read: errors name the frame.
    frames: usize,
    /// Series declared in this segment, and whether they are wanted.
    declared: HashMap<u32, (SeriesSpec, bool)>,
    select: Select,
    queue: VecDeque<Event>,
    payload: Vec<u8>,
    body: Vec<u8>,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
    /// The block being handed out event by event.
    decoded: Decoded,
    /// The last block decoded: its samples, times and notes, and the time
    /// indexes the selection wants.
    flat: block::Flat,
    times: Vec<i64>,
    notes: Vec<Note>,
    wanted: (u32, u32),
    /// A block was decoded and is not handed out yet.
    pending: bool,
    /// Reading stopped after [`crate::recording::MAX_SKIP`] bytes that are
    /// no frame: the input ends there.
    gave_up: bool,
}

impl<R: BufRead> BlockReader<R> {
    /// Reads from `input` (at a frame or the magic); `offset` bytes were
    /// consumed before.
    pub fn new(input: R, origin: &str, offset: u64, select: Select) -> BlockReader<R> {
        BlockReader {
            input,
            origin: origin.to_string(),
            offset,
            frames: 0,
            declared: HashMap::new(),
            select,
            queue: VecDeque::new(),
            payload: Vec::new(),
            body: Vec::new(),
            decompressor: None,
            gave_up: false,
            decoded: Decoded::default(),
            flat: block::Flat::default(),
            times: Vec::new(),
            notes: Vec::new(),
            wanted: (0, 0),
            pending: false,
        }
    }

    fn error(&self, at: u64, message: impl std::fmt::Display) -> RecordingError {
        RecordingError {
            origin: self.origin.clone(),
            line: self.frames.max(1),
            message: format!("frame at byte {at}: {message}"),
        }
    }

    /// The next event, the end, or the start of JSON lines.
    pub fn next_step(&mut self) -> Result<Step, RecordingError> {
        self.advance(false)
    }

    /// The next event, a block's samples whole ([`Step::Samples`]: read
    /// them with [`Self::samples`]; the block's notes follow as events),
    /// the end, or the start of JSON lines.
    pub fn next_chunk(&mut self) -> Result<Step, RecordingError> {
        self.advance(true)
    }

    /// The samples of the block [`Self::next_chunk`] just gave.
    pub fn samples(&self) -> Samples<'_> {
        Samples { times: &self.times, flat: &self.flat, wanted: self.wanted }
    }

    fn advance(&mut self, whole_blocks: bool) -> Result<Step, RecordingError> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Ok(Step::Event(event));
            }
            if let Some(event) = self.decoded.next(&self.select) {
                return Ok(Step::Event(event));
            }
            if self.pending {
                self.pending = false;
                let notes = std::mem::take(&mut self.notes);
                if whole_blocks {
                    let select = &self.select;
                    self.queue.extend(notes.into_iter().filter(|n| select.time(n.ts)).map(Event::Note));
                    return Ok(Step::Samples);
                }
                self.decoded.fill(&self.times, notes, &self.flat);
                continue;
            }
            if self.gave_up {
                return Ok(Step::End);
            }
            let at = self.offset;
            let first = match self.input.fill_buf() {
                Ok(chunk) => chunk.first().copied(),
                Err(e) => return Err(self.error(at, e)),
            };
            let Some(first) = first else { return Ok(Step::End) };
            match first {
                frame::MARK => self.frame(at)?,
                b if b == MAGIC[0] => self.magic(at)?,
                b'{' | b'#' | b'\n' | b' ' | b'\r' | b'\t' => return Ok(Step::Lines),
                _ => return Err(self.skip_garbage(at)),
            }
        }
    }

    /// The magic of a file that follows another in a stream.
    fn magic(&mut self, at: u64) -> Result<(), RecordingError> {
        let mut magic = [0u8; MAGIC.len()];
        let mut consumed = 0;
        let whole = frame::fill(&mut self.input, &mut magic, &mut consumed).map_err(|e| self.error(at, e))?;
        self.offset += consumed;
        if whole && &magic != MAGIC {
            return Err(self.skip_garbage(at));
        }
        Ok(())
    }

    /// Skips to the next frame mark: one error for a run of bytes that are
    /// no frame.
    fn skip_garbage(&mut self, at: u64) -> RecordingError {
        while let Ok(chunk) = self.input.fill_buf() {
            if chunk.is_empty() {
                break;
            }
            let n = memchr::memchr(frame::MARK, chunk).unwrap_or(chunk.len());
            let found = n < chunk.len();
            self.input.consume(n);
            self.offset += n as u64;
            if found {
                break;
            }
            if self.offset - at > crate::recording::MAX_SKIP {
                self.gave_up = true;
                let mib = crate::recording::MAX_SKIP >> 20;
                return self
                    .error(at, format!("no frame in {mib} MiB: this is not a recording; reading stopped there"));
            }
        }
        self.error(at, format!("{} bytes that are no frame, skipped", self.offset - at))
    }

    fn frame(&mut self, at: u64) -> Result<(), RecordingError> {
        self.frames += 1;
        let read = frame::read(&mut self.input, &mut self.payload, &mut self.offset).map_err(|e| self.error(at, e))?;
        let kind = match read {
            frame::Read::End => return Ok(()),
            frame::Read::Corrupt(why) => return Err(self.error(at, why)),
            frame::Read::Frame(kind) => kind,
        };
        let result = match kind {
            Kind::Segment => self.segment(),
            Kind::Series => self.series(),
            Kind::Block => self.block(),
        };
        result.map_err(|e| self.error(at, e))
    }

    fn segment(&mut self) -> Result<(), Malformed> {
        if self.payload.len() < 8 {
            return Err(Malformed("a segment start without its time".into()));
        }
        let ts = i64::from_le_bytes(self.payload[..8].try_into().expect("8 bytes"));
        let text = String::from_utf8_lossy(&self.payload[8..]).into_owned();
        self.declared.clear();
        self.queue.push_back(Event::Note(Note { ts, kind: SEGMENT_START.into(), text, labels: Labels::default() }));
        Ok(())
    }

    /// Decompresses the payload's body into `body`; its header.
    fn unpack(&mut self) -> Result<Header, Malformed> {
        let header = Header::read(&self.payload)?;
        if self.decompressor.is_none() {
            let d = zstd::bulk::Decompressor::new().map_err(|e| Malformed(format!("zstd: {e}")))?;
            self.decompressor = Some(d);
        }
        let decompressor = self.decompressor.as_mut().expect("made above");
        self.body.clear();
        self.body.resize(header.body as usize, 0);
        let n = decompressor
            .decompress_to_buffer(&self.payload[block::HEADER..], &mut self.body[..])
            .map_err(|e| Malformed(format!("its body does not decompress: {e}")))?;
        if n != header.body as usize {
            return Err(Malformed(format!("its body is {n} bytes; its header says {}", header.body)));
        }
        Ok(header)
    }

    fn series(&mut self) -> Result<(), Malformed> {
        let header = self.unpack()?;
        let body = std::mem::take(&mut self.body);
        let result = self.declare_all(&body, header.samples);
        self.body = body;
        result
    }

    fn declare_all(&mut self, body: &[u8], count: u32) -> Result<(), Malformed> {
        let mut c = Cursor::new(body);
        for _ in 0..count {
            let len = c.count(1, "declaration bytes")?;
            let line: Line = serde_json::from_slice(c.take(len)?)
                .map_err(|e| Malformed(format!("a series declaration is not JSON: {e}")))?;
            let Line::Series { series, metric, labels, kind } = line else {
                return Err(Malformed("a declaration that declares no series".into()));
            };
            let spec = SeriesSpec { metric, labels, kind };
            match self.declared.get(&series) {
                Some((earlier, _)) if *earlier != spec => {
                    return Err(Malformed(format!(
                        "series {series} is declared again as {}{}, but was declared as {}{}",
                        spec.metric, spec.labels, earlier.metric, earlier.labels
                    )))
                }
                Some(_) => continue,
                None => {}
            }
            let wanted = self.select.series(&spec);
            if wanted {
                self.queue.push_back(Event::Series(series, spec.clone()));
            }
            self.declared.insert(series, (spec, wanted));
        }
        Ok(())
    }

    fn block(&mut self) -> Result<(), Malformed> {
        let header = Header::read(&self.payload)?;
        if !self.select.overlaps(header.first, header.last) {
            return Ok(());
        }
        self.unpack()?;
        let declared = &self.declared;
        let flat = &mut self.flat;
        flat.runs.clear();
        flat.at.clear();
        flat.values.clear();
        let (times, notes) = block::decode_body(&self.body, flat, |id| match declared.get(&id) {
            Some((_, wanted)) => Ok(*wanted),
            None => Err(Malformed(format!("series {id} used before it is declared"))),
        })?;
        // The times are ascending: the selection's range is one stretch of them.
        let lo = self.select.from.map_or(0, |from| times.partition_point(|t| *t < from));
        let hi = self.select.to.map_or(times.len(), |to| times.partition_point(|t| *t <= to));
        (self.times, self.notes, self.wanted, self.pending) = (times, notes, (lo as u32, hi.max(lo) as u32), true);
        Ok(())
    }
}

/// A decoded block, handed out one event at a time in time order: the
/// samples at each time (ascending ids), each note before the samples
/// later than it.
#[derive(Default)]
struct Decoded {
    times: Vec<i64>,
    /// Where the samples of each time start in `slots` (one more entry
    /// than `times`).
    start: Vec<usize>,
    slots: Vec<(u32, Value)>,
    /// Notes, latest first (popped from the end).
    notes: Vec<Note>,
    /// The time and slot handed out next.
    k: usize,
    pos: usize,
}

impl Decoded {
    /// Sorts the flat samples of a block by time (a counting sort: the
    /// time indexes are dense).
    fn fill(&mut self, times: &[i64], mut notes: Vec<Note>, flat: &block::Flat) {
        self.start.clear();
        self.start.resize(times.len() + 1, 0);
        for &i in &flat.at {
            self.start[i as usize + 1] += 1;
        }
        for i in 1..self.start.len() {
            self.start[i] += self.start[i - 1];
        }
        self.slots.clear();
        self.slots.resize(flat.at.len(), (0, Value::Count(0)));
        let mut next = self.start.clone();
        let mut start = 0;
        for &(id, end) in &flat.runs {
            let end = end as usize;
            for (&i, &v) in flat.at[start..end].iter().zip(&flat.values[start..end]) {
                self.slots[next[i as usize]] = (id, v);
                next[i as usize] += 1;
            }
            start = end;
        }
        notes.sort_by_key(|n| std::cmp::Reverse(n.ts));
        self.times.clear();
        self.times.extend_from_slice(times);
        (self.notes, self.k, self.pos) = (notes, 0, 0);
    }

    fn next(&mut self, select: &Select) -> Option<Event> {
        loop {
            let Some(&t) = self.times.get(self.k) else {
                let note = self.notes.pop()?;
                if select.time(note.ts) {
                    return Some(Event::Note(note));
                }
                continue;
            };
            if self.notes.last().is_some_and(|n| n.ts < t) {
                let note = self.notes.pop().expect("checked");
                if select.time(note.ts) {
                    return Some(Event::Note(note));
                }
                continue;
            }
            let end = self.start[self.k + 1];
            if self.pos < end && select.time(t) {
                let (id, value) = self.slots[self.pos];
                self.pos += 1;
                return Some(Event::Sample { id, t, value });
            }
            (self.k, self.pos) = (self.k + 1, end);
        }
    }
}
