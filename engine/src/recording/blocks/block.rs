//! One block: every sample and note of a stretch of time, compressed.
//!
//! ```text
//! payload: first time (i64 LE) | last time (i64 LE) | samples (u32 LE) | body length (u32 LE) | zstd(body)
//! body:    times | notes | series: count, then per series (ascending id):
//!          id − previous id − 1 | section length | section (columns::put_series)
//! ```
//!
//! The header's times let a reader skip a block outside the range it wants
//! without decompressing it; each series' section length lets it skip the
//! series it does not want without decoding them.

use super::columns;
use super::varint::{put_i64, put_str, put_u64, Cursor, Malformed};
use crate::contracts::Note;
use crate::labels::Labels;
use crate::series::Value;
use crate::time::Nanos;

/// Bytes of the uncompressed header of a block's payload.
pub const HEADER: usize = 8 + 8 + 4 + 4;

/// The longest body a block may decompress to: a corrupt length is refused
/// before anything is allocated.
pub const MAX_BODY: u32 = 1 << 30;

/// A block's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The earliest time of a sample or note in it.
    pub first: Nanos,
    /// The latest.
    pub last: Nanos,
    /// Samples in it.
    pub samples: u32,
    /// Bytes of its body, decompressed.
    pub body: u32,
}

impl Header {
    /// Reads the header at the start of a block's payload.
    pub fn read(payload: &[u8]) -> Result<Header, Malformed> {
        if payload.len() < HEADER {
            return Err(Malformed(format!("a block of {} bytes has no header", payload.len())));
        }
        let i64_at = |i: usize| i64::from_le_bytes(payload[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(payload[i..i + 4].try_into().expect("4 bytes"));
        let header = Header { first: i64_at(0), last: i64_at(8), samples: u32_at(16), body: u32_at(20) };
        if header.body > MAX_BODY {
            return Err(Malformed(format!("a block says its body is {} bytes; at most {MAX_BODY}", header.body)));
        }
        Ok(header)
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.first.to_le_bytes());
        out.extend_from_slice(&self.last.to_le_bytes());
        out.extend_from_slice(&self.samples.to_le_bytes());
        out.extend_from_slice(&self.body.to_le_bytes());
    }
}

/// One sample of a block, as the writer gathers it.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Its series.
    pub id: u32,
    /// The index of its time in the block's time table (arrival order).
    pub at: u32,
    /// Its value.
    pub value: Value,
}

/// Encodes a block's body into `body`: `times` in arrival order (distinct),
/// `entries` grouped by ascending series id (arrival order within one),
/// `notes` in any order.
pub fn encode_body(body: &mut Vec<u8>, times: &[i64], entries: &mut [Entry], notes: &[Note]) {
    body.clear();
    let mut order: Vec<u32> = (0..times.len() as u32).collect();
    order.sort_unstable_by_key(|&i| times[i as usize]);
    let mut rank = vec![0u32; times.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i as usize] = r as u32;
    }
    let sorted: Vec<i64> = order.iter().map(|&i| times[i as usize]).collect();
    columns::put_times(body, &sorted);
    put_u64(body, notes.len() as u64);
    let base = sorted.first().copied().unwrap_or(0);
    for note in notes {
        put_i64(body, note.ts.wrapping_sub(base));
        put_str(body, &note.kind);
        put_str(body, &note.text);
        put_u64(body, note.labels.0.len() as u64);
        for (name, value) in &note.labels.0 {
            put_str(body, name);
            put_str(body, value);
        }
    }
    for e in entries.iter_mut() {
        e.at = rank[e.at as usize];
    }
    put_u64(body, entries.chunk_by(|a, b| a.id == b.id).count() as u64);
    let mut prev: Option<u32> = None;
    let (mut section, mut at, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for group in entries.chunk_by_mut(|a, b| a.id == b.id) {
        if !group.is_sorted_by_key(|e| e.at) {
            group.sort_by_key(|e| e.at);
        }
        let id = group[0].id;
        at.clear();
        values.clear();
        at.extend(group.iter().map(|e| e.at));
        values.extend(group.iter().map(|e| e.value));
        section.clear();
        columns::put_series(&mut section, &at, &values);
        put_u64(body, u64::from(prev.map_or(id, |p| id - p - 1)));
        put_u64(body, section.len() as u64);
        body.extend_from_slice(&section);
        prev = Some(id);
    }
}

/// Compresses `body` into a block's payload, after its header.
pub fn pack(
    out: &mut Vec<u8>,
    header: Header,
    body: &[u8],
    compressor: &mut zstd::bulk::Compressor<'static>,
) -> std::io::Result<()> {
    out.clear();
    header.write(out);
    out.resize(HEADER + zstd::zstd_safe::compress_bound(body.len()), 0);
    let n = compressor.compress_to_buffer(body, &mut out[HEADER..])?;
    out.truncate(HEADER + n);
    Ok(())
}

/// The samples of the wanted series of a block, decoded, flat: buffers
/// kept from block to block.
#[derive(Debug, Default)]
pub struct Flat {
    /// Each series' id and the end of its samples in `at` and `values`
    /// (its start is the previous run's end).
    pub runs: Vec<(u32, u32)>,
    /// Each sample's index in the time table.
    pub at: Vec<u32>,
    /// Each sample's value.
    pub values: Vec<Value>,
}

/// Decodes a block's body: its times and notes are returned, the samples
/// of the series `wanted` accepts appended to `flat`, ascending by series
/// and then time.
pub fn decode_body(
    body: &[u8],
    flat: &mut Flat,
    mut wanted: impl FnMut(u32) -> Result<bool, Malformed>,
) -> Result<(Vec<i64>, Vec<Note>), Malformed> {
    let mut c = Cursor::new(body);
    let times = columns::times(&mut c)?;
    let base = times.first().copied().unwrap_or(0);
    let n_notes = c.count(4, "notes")?;
    let mut notes = Vec::with_capacity(n_notes);
    for _ in 0..n_notes {
        let ts = base.wrapping_add(c.i64()?);
        let kind = c.str()?.to_string();
        let text = c.str()?.to_string();
        let mut labels = Labels::default();
        for _ in 0..c.count(2, "labels")? {
            let name = c.str()?.to_string();
            labels.insert(name, c.str()?);
        }
        notes.push(Note { ts, kind, text, labels });
    }
    let n_series = c.count(2, "series")?;
    let mut prev: Option<u32> = None;
    for _ in 0..n_series {
        let gap = c.u64()?;
        let id = prev.map_or(Some(gap), |p| u64::from(p).checked_add(gap + 1)).filter(|id| *id <= u64::from(u32::MAX));
        let id = id.ok_or_else(|| Malformed("a series id past 2^32".into()))? as u32;
        prev = Some(id);
        let len = c.count(1, "section bytes")?;
        let section = c.take(len)?;
        if !wanted(id)? {
            continue;
        }
        let mut s = Cursor::new(section);
        columns::series(&mut s, times.len(), &mut flat.at, &mut flat.values)?;
        if s.remaining() != 0 {
            return Err(Malformed(format!("series {id}'s section has {} bytes after its values", s.remaining())));
        }
        let end = u32::try_from(flat.at.len()).map_err(|_| Malformed("a block of 2^32 samples".into()))?;
        flat.runs.push((id, end));
    }
    if c.remaining() != 0 {
        return Err(Malformed(format!("{} bytes after the last series", c.remaining())));
    }
    Ok((times, notes))
}
