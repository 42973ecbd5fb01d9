//! [`BlockWriter`]: gathers samples and notes into blocks and writes each
//! block, compressed, when its span of time is full.

use std::io::{self, Write};
use std::time::Instant;

use super::block::{self, Header, SeriesSamples};
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
    /// 10 s blocks: a crash loses at most the last 10 s; zstd level 3 (its
    /// default).
    fn default() -> BlockOptions {
        BlockOptions { span: 10 * SECOND, max_samples: 4 << 20, level: 3 }
    }
}

/// Series ids at or past this are kept in a map rather than a vector.
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
    /// Samples by series id (below [`DENSE`]).
    dense: Vec<SeriesSamples>,
    /// Samples of larger ids.
    sparse: std::collections::HashMap<u32, SeriesSamples>,
    /// Ids with samples in this block.
    touched: Vec<u32>,
    notes: Vec<Note>,
    samples: usize,
    first: Nanos,
    last_t: Nanos,
    /// When its first sample or note came, on the monotonic clock.
    opened: Option<Instant>,
}

impl OpenBlock {
    fn is_empty(&self) -> bool {
        self.samples == 0 && self.notes.is_empty()
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

    fn push(&mut self, id: u32, t: Nanos, value: Value) {
        self.widen(t);
        let at = self.time_index(t);
        let samples = if id < DENSE {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize_with(i + 1, SeriesSamples::default);
            }
            &mut self.dense[i]
        } else {
            self.sparse.entry(id).or_default()
        };
        if samples.at.is_empty() {
            self.touched.push(id);
        }
        samples.at.push(at);
        samples.values.push(value);
        self.samples += 1;
    }

    /// Empties the block, keeping its buffers' capacity for the next one.
    fn clear(&mut self) {
        for &id in &self.touched {
            if id < DENSE {
                let s = &mut self.dense[id as usize];
                s.at.clear();
                s.values.clear();
            }
        }
        self.sparse.clear();
        self.touched.clear();
        self.times.clear();
        self.index.clear();
        self.notes.clear();
        (self.last, self.samples, self.opened) = (None, 0, None);
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
        if self.block.samples >= self.options.max_samples {
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
        open.touched.sort_unstable();
        let mut sparse = std::mem::take(&mut open.sparse);
        let mut series: Vec<(u32, &mut SeriesSamples)> = Vec::with_capacity(open.touched.len());
        let mut dense = open.dense.iter_mut().enumerate();
        let mut sparse_sorted: Vec<(&u32, &mut SeriesSamples)> = sparse.iter_mut().collect();
        sparse_sorted.sort_unstable_by_key(|(id, _)| **id);
        for &id in open.touched.iter().filter(|id| **id < DENSE) {
            let s = dense.find(|(i, _)| *i == id as usize).map(|(_, s)| s).expect("a touched series has samples");
            series.push((id, s));
        }
        series.extend(sparse_sorted.into_iter().map(|(id, s)| (*id, s)));
        block::encode_body(&mut self.body, &open.times, &mut series, &open.notes);
        let header = Header {
            first: open.first,
            last: open.last_t,
            samples: open.samples as u32,
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
}
