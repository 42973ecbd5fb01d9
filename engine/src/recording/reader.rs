//! [`Reader`]: a recording in either format — blocks, or JSON lines — or a
//! stream of files in both (a recording rotated across an upgrade), as one
//! sequence of [`Event`]s, reading only what a [`Select`] wants.

use std::collections::HashSet;
use std::io::BufRead;

use super::blocks::{BlockReader, Samples, Step};
use super::lines::LineReader;
use super::{Event, RecordingError, Select, SEGMENT_START};

/// Reads a recording, whatever its format.
pub struct Reader<R> {
    mode: Mode<R>,
    origin: String,
    select: Select,
    /// Series of a recording of lines that the selection does not want.
    unwanted: HashSet<u32>,
}

enum Mode<R> {
    Lines(LineReader<R>),
    Blocks(Box<BlockReader<R>>),
    /// Between the two, for a moment.
    Switching,
}

/// What [`Reader::next_chunk`] gives: an event, or a block's samples whole.
pub enum Chunk<'a> {
    /// A declaration, a note, or a sample of a recording of lines.
    Event(Event),
    /// The wanted samples of a block; its notes follow as events.
    Samples(Samples<'a>),
}

/// What one step of the reader in its current mode gave.
enum Got {
    Event(Event),
    End,
    SwitchToBlocks,
    SwitchToLines,
}

impl<R: BufRead> Reader<R> {
    /// Reads from `input`; `origin` names it in errors.
    pub fn new(input: R, origin: &str) -> Reader<R> {
        Reader {
            mode: Mode::Lines(LineReader::new(input, origin)),
            origin: origin.to_string(),
            select: Select::all(),
            unwanted: HashSet::new(),
        }
    }

    /// Reads only what `select` wants (given before the first read).
    pub fn select(mut self, select: Select) -> Reader<R> {
        self.select = select;
        self
    }

    /// Bytes read so far: the end of the last line or frame read.
    pub fn offset(&self) -> u64 {
        match &self.mode {
            Mode::Lines(r) => r.offset(),
            Mode::Blocks(r) => r.offset,
            Mode::Switching => 0,
        }
    }

    /// The next event, `None` at the end. A last line or frame cut off
    /// mid-way (a file still being written, or cut by a crash) is the end,
    /// not an error. After an error, reading goes on past what was wrong.
    pub fn next_event(&mut self) -> Result<Option<Event>, RecordingError> {
        loop {
            let got = match &mut self.mode {
                Mode::Lines(r) => match r.next_event()? {
                    Some(event) => Got::Event(event),
                    None if r.at_blocks => Got::SwitchToBlocks,
                    None => Got::End,
                },
                Mode::Blocks(r) => match r.next_step()? {
                    Step::Event(event) => return Ok(Some(event)),
                    Step::End => Got::End,
                    Step::Lines => Got::SwitchToLines,
                    Step::Samples => unreachable!("only next_chunk asks for a block whole"),
                },
                Mode::Switching => unreachable!("a switch completes before the next read"),
            };
            match got {
                Got::Event(event) => {
                    if let Some(event) = self.filter_line_event(event) {
                        return Ok(Some(event));
                    }
                }
                Got::End => return Ok(None),
                Got::SwitchToBlocks => self.switch(true),
                Got::SwitchToLines => self.switch(false),
            }
        }
    }

    /// The next event or, in a recording of blocks, the next block's
    /// samples whole, `None` at the end: for a reader that folds samples
    /// (sums, rates) and need not see them one at a time in time order.
    /// Within a block, samples come series by series, and the block's
    /// notes after them.
    pub fn next_chunk(&mut self) -> Result<Option<Chunk<'_>>, RecordingError> {
        loop {
            let step = match &mut self.mode {
                Mode::Blocks(r) => r.next_chunk()?,
                Mode::Lines(_) => {
                    let event = self.next_event()?;
                    return Ok(event.map(Chunk::Event));
                }
                Mode::Switching => unreachable!("a switch completes before the next read"),
            };
            match step {
                Step::Event(event) => return Ok(Some(Chunk::Event(event))),
                Step::Samples => {
                    let Mode::Blocks(r) = &self.mode else { unreachable!("a block came from the reader of blocks") };
                    return Ok(Some(Chunk::Samples(r.samples())));
                }
                Step::End => return Ok(None),
                Step::Lines => self.switch(false),
            }
        }
    }

    fn switch(&mut self, to_blocks: bool) {
        self.mode = match std::mem::replace(&mut self.mode, Mode::Switching) {
            Mode::Lines(r) if to_blocks => {
                let (input, offset) = r.into_parts();
                Mode::Blocks(Box::new(BlockReader::new(input, &self.origin, offset, self.select.clone())))
            }
            Mode::Blocks(r) if !to_blocks => Mode::Lines(LineReader::resume(r.input, &self.origin, r.offset)),
            other => other,
        };
        self.unwanted.clear();
    }

    /// An event of a recording of lines, if the selection wants it (a
    /// recording of blocks selects as it decodes).
    fn filter_line_event(&mut self, event: Event) -> Option<Event> {
        if self.select.is_all() {
            return Some(event);
        }
        match &event {
            Event::Series(id, spec) => {
                if !self.select.series(spec) {
                    self.unwanted.insert(*id);
                    return None;
                }
                self.unwanted.remove(id);
            }
            Event::Sample { id, t, .. } => {
                if self.unwanted.contains(id) || !self.select.time(*t) {
                    return None;
                }
            }
            Event::Note(note) if note.kind == SEGMENT_START => self.unwanted.clear(),
            Event::Note(note) => {
                if !self.select.time(note.ts) {
                    return None;
                }
            }
        }
        Some(event)
    }
}
