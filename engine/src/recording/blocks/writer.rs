//! [`BlockWriter`]: gathers samples and notes into blocks and writes each
//! block, compressed, when its span of time is full.

use std::io::{self, Write};
use std::time::Instant;

use super::block::{self, Entry, Header};
use super::frame::{self, Kind};
use super::varint::put_u64;
use super::MAGIC;
use crate::contracts::Note;
use crate::recording::Line;
use crate::series::{SeriesSpec, Value};
use crate::time::{Nanos, SECOND};

/// How blocks are cut and compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockOptions {
    /// The span of sample time a block covers, and the most wall time its
    /// first sample waits before it reaches the file: what a crash can lose.
    pub span: Nanos,
    /// The most samples a block holds (its memory while it fills).
    pub max_samples: usize,
    /// zstd's level.
    pub level: i32,
}

impl Default for BlockOptions {
    /// 10 s blocks: a crash loses at most the last 10 s. zstd level 1:
    /// on both workloads of `cargo bench --bench recording` it compresses
    /// within 1 % of level 3 (the columns leave it little to find) for 10 %
    /// less CPU.
    fn default() -> BlockOptions {
        BlockOptions { span: 10 * SECOND, max_samples: 4 << 20, level: 1 }
    }
}

/// Series ids at or past this are not grouped with a counting sort.
const DENSE: u32 = 1 << 22;

/// The block being filled.
#[derive(Default)]
struct OpenBlock {
    /// Distinct times in arrival order.
    times: Vec<i64>,
    /// The index of each time in `times`.
    index: std::collections::HashMap<i64, u32>,
    /// The last time seen and its index: one poll stamps many samples alike.
    last: Option<(i64, u32)>,
    /// Samples in arrival order: appending is all a sample costs until the
    /// block is written, where they are grouped by series.
    entries: Vec<Entry>,
    /// The largest series id in `entries`.
    max_id: u32,
    notes: Vec<Note>,
    first: Nanos,
    last_t: Nanos,
    /// When its first sample or note came, on the monotonic clock.
    opened: Option<Instant>,
}

impl OpenBlock {
    fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.notes.is_empty()
    }

    fn time_index(&mut self, t: i64) -> u32 {
        if let Some((last, i)) = self.last {
            if last == t {
                return i;
            }
        }
        let next = self.times.len() as u32;
        let i = *self.index.entry(t).or_insert(next);
        if i == next {
            self.times.push(t);
        }
        self.last = Some((t, i));
        i
    }

    fn widen(&mut self, t: Nanos) {
        if self.opened.is_none() {
            (self.first, self.last_t, self.opened) = (t, t, Some(Instant::now()));
        }
        self.first = self.first.min(t);
        self.last_t = self.last_t.max(t);
    }

    #[inline]
    fn push(&mut self, id: u32, t: Nanos, value: Value) {
        self.widen(t);
        let at = self.time_index(t);
        self.max_id = self.max_id.max(id);
        self.entries.push(Entry { id, at, value });
    }

    /// Empties the block, keeping its buffers' capacity for the next one.
    fn clear(&mut self) {
        self.entries.clear();
        self.times.clear();
        self.index.clear();
        self.notes.clear();
        (self.last, self.max_id, self.opened) = (None, 0, None);
    }
}

/// Sorts `entries` by series id, keeping arrival order within a series,
/// into `out`: a counting sort when ids are dense (they are: the daemon's
/// series table numbers them from 0), else a stable sort.
fn group_by_series(entries: &[Entry], max_id: u32, counts: &mut Vec<u32>, out: &mut Vec<Entry>) {
    out.clear();
    if max_id >= DENSE {
        out.extend_from_slice(entries);
        out.sort_by_key(|e| e.id);
        return;
    }
    counts.clear();
    counts.resize(max_id as usize + 2, 0);
    for e in entries {
        counts[e.id as usize + 1] += 1;
    }
    for i in 1..counts.len() {
        counts[i] += counts[i - 1];
    }
    out.resize(entries.len(), Entry { id: 0, at: 0, value: Value::Count(0) });
    for e in entries {
        let slot = &mut counts[e.id as usize];
        out[*slot as usize] = *e;
        *slot += 1;
    }
}

/// Writes a recording of blocks (see the module doc of [`super`]).
pub struct BlockWriter<W: Write> {
    out: W,
    options: BlockOptions,
    /// Ids declared in this segment.
    declared: Vec<bool>,
    declared_sparse: std::collections::HashSet<u32>,
    /// Declarations not written yet: they go out as one frame before the
    /// block that first uses them.
    pending: Vec<u8>,
    pending_count: u64,
    block: OpenBlock,
    compressor: zstd::bulk::Compressor<'static>,
    body: Vec<u8>,
    payload: Vec<u8>,
    /// Scratch of [`group_by_series`].
    counts: Vec<u32>,
    grouped: Vec<Entry>,
    written: u64,
}

impl<W: Write> BlockWriter<W> {
    /// A new recording on `out`: writes the magic first.
    pub fn new(mut out: W, options: BlockOptions) -> io::Result<BlockWriter<W>> {
        out.write_all(MAGIC)?;
        let mut w = BlockWriter::appending(out, options)?;
        w.written = MAGIC.len() as u64;
        Ok(w)
    }

    /// Appends to a recording `out` already holds (its magic and whole frames).
    pub fn appending(out: W, options: BlockOptions) -> io::Result<BlockWriter<W>> {
        Ok(BlockWriter {
            out,
            options,
            declared: Vec::new(),
            declared_sparse: Default::default(),
            pending: Vec::new(),
            pending_count: 0,
            block: OpenBlock::default(),
            compressor: zstd::bulk::Compressor::new(options.level)?,
            body: Vec::new(),
            payload: Vec::new(),
            counts: Vec::new(),
            grouped: Vec::new(),
            written: 0,
        })
    }

    /// Bytes written to `out` (blocks still filling are not).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Starts a segment at `t`: what is gathered is written, and ids
    /// declared before no longer apply.
    pub fn segment(&mut self, t: Nanos, why: &str) -> io::Result<()> {
        self.close_block()?;
        let mut payload = t.to_le_bytes().to_vec();
        payload.extend_from_slice(why.as_bytes());
        self.written += frame::write(&mut self.out, Kind::Segment, &payload)?;
        self.declared.clear();
        self.declared_sparse.clear();
        Ok(())
    }

    /// Whether `id` is declared in this segment.
    pub fn is_declared(&self, id: u32) -> bool {
        if id < DENSE {
            self.declared.get(id as usize).copied().unwrap_or(false)
        } else {
            self.declared_sparse.contains(&id)
        }
    }

    /// Declares series `id`.
    pub fn declare(&mut self, id: u32, spec: &SeriesSpec) -> io::Result<()> {
        let line =
            Line::Series { series: id, metric: spec.metric.clone(), labels: spec.labels.clone(), kind: spec.kind };
        let json = serde_json::to_vec(&line)?;
        put_u64(&mut self.pending, json.len() as u64);
        self.pending.extend_from_slice(&json);
        self.pending_count += 1;
        if id < DENSE {
            if self.declared.len() <= id as usize {
                self.declared.resize(id as usize + 1, false);
            }
            self.declared[id as usize] = true;
        } else {
            self.declared_sparse.insert(id);
        }
        Ok(())
    }

    /// Adds a sample of the declared series `id`.
    pub fn sample(&mut self, id: u32, t: Nanos, value: Value) -> io::Result<()> {
        if !self.is_declared(id) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("series {id} is not declared")));
        }
        self.close_if_past(t)?;
        self.block.push(id, t, value);
        if self.block.entries.len() >= self.options.max_samples {
            self.close_block()?;
        }
        Ok(())
    }

    /// Adds a note.
    pub fn note(&mut self, note: &Note) -> io::Result<()> {
        self.close_if_past(note.ts)?;
        self.block.widen(note.ts);
        self.block.notes.push(note.clone());
        Ok(())
    }

    /// A sample or note at `t` past the block's span closes it first.
    fn close_if_past(&mut self, t: Nanos) -> io::Result<()> {
        if self.block.opened.is_some() && t.saturating_sub(self.block.first) >= self.options.span {
            self.close_block()?;
        }
        Ok(())
    }

    /// Writes the block being filled when its first sample came at least
    /// a span ago on the wall clock: a daemon whose sensors went quiet still
    /// gets what it saw to the file.
    pub fn close_block_if_old(&mut self) -> io::Result<()> {
        let span = std::time::Duration::from_nanos(self.options.span.max(0) as u64);
        if self.block.opened.is_some_and(|at| at.elapsed() >= span) {
            self.close_block()?;
        }
        Ok(())
    }

    /// Writes the declarations and the block gathered so far.
    pub fn close_block(&mut self) -> io::Result<()> {
        if self.pending_count > 0 {
            // Declarations compress about tenfold: 100,000 series declare in a few MB of JSON.
            let header = Header {
                first: 0,
                last: 0,
                samples: u32::try_from(self.pending_count).unwrap_or(u32::MAX),
                body: u32::try_from(self.pending.len())
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "declarations past 4 GiB"))?,
            };
            block::pack(&mut self.payload, header, &self.pending, &mut self.compressor)?;
            self.written += frame::write(&mut self.out, Kind::Series, &self.payload)?;
            self.pending.clear();
            self.pending_count = 0;
        }
        if self.block.is_empty() {
            self.block.clear();
            return Ok(());
        }
        let result = self.write_block();
        self.block.clear();
        result
    }

    fn write_block(&mut self) -> io::Result<()> {
        let open = &mut self.block;
        group_by_series(&open.entries, open.max_id, &mut self.counts, &mut self.grouped);
        block::encode_body(&mut self.body, &open.times, &mut self.grouped, &open.notes);
        let header = Header {
            first: open.first,
            last: open.last_t,
            samples: open.entries.len() as u32,
            body: u32::try_from(self.body.len())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a block's body past 4 GiB"))?,
        };
        block::pack(&mut self.payload, header, &self.body, &mut self.compressor)?;
        self.written += frame::write(&mut self.out, Kind::Block, &self.payload)?;
        Ok(())
    }

    /// Writes what is gathered and flushes the output.
    pub fn finish(&mut self) -> io::Result<()> {
        self.close_block()?;
        self.out.flush()
    }

    /// Flushes the output (a block still filling stays in memory).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The output.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The output, as it is: what is gathered and not written is dropped.
    pub fn into_output(self) -> W {
        self.out
    }
}
