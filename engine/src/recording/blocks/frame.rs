//! Frames: how blocks and declarations sit in the file, checksummed, so a
//! frame cut short by a crash or flipped by the disk is found.
//!
//! ```text
//! MARK (0xB5) | kind (1 byte) | payload length (u32 LE) | payload | CRC-32 of kind, length and payload (u32 LE)
//! ```

use std::io::{self, BufRead, Write};

/// The first byte of every frame: neither `{` (a JSON line) nor the first
/// byte of [`super::MAGIC`].
pub const MARK: u8 = 0xB5;

/// Bytes of a frame besides its payload.
pub const OVERHEAD: usize = 1 + 1 + 4 + 4;

/// The longest payload accepted: a block of a million series at a 100 ms
/// interval for its whole span compresses to far less; a longer length is
/// a corrupt one, refused before anything is allocated.
pub const MAX_PAYLOAD: u32 = 256 << 20;

/// What a frame holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A daemon started (or the file was rotated): series ids declared
    /// before no longer apply.
    Segment,
    /// Series declarations.
    Series,
    /// A block of samples and notes.
    Block,
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::Segment => b'S',
            Kind::Series => b'D',
            Kind::Block => b'B',
        }
    }

    fn of(byte: u8) -> Option<Kind> {
        match byte {
            b'S' => Some(Kind::Segment),
            b'D' => Some(Kind::Series),
            b'B' => Some(Kind::Block),
            _ => None,
        }
    }
}

/// Writes one frame; returns the bytes written.
pub fn write(out: &mut impl Write, kind: Kind, payload: &[u8]) -> io::Result<u64> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|n| *n <= MAX_PAYLOAD)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("a frame of {} bytes", payload.len())))?;
    let head = [MARK, kind.byte()];
    let len = len.to_le_bytes();
    let mut crc = crc32fast::Hasher::new();
    crc.update(&head[1..]);
    crc.update(&len);
    crc.update(payload);
    out.write_all(&head)?;
    out.write_all(&len)?;
    out.write_all(payload)?;
    out.write_all(&crc.finalize().to_le_bytes())?;
    Ok((OVERHEAD + payload.len()) as u64)
}

/// What reading a frame found.
#[derive(Debug)]
pub enum Read {
    /// A whole frame whose checksum holds: its kind; the payload is in the
    /// buffer given.
    Frame(Kind),
    /// The input ended, cleanly or in the middle of a frame (a file still
    /// being written, or cut by a crash): the end.
    End,
    /// A frame that is whole but wrong: what is wrong. Its bytes are consumed.
    Corrupt(String),
}

/// Reads the frame at the start of `input` (its first byte is [`MARK`])
/// into `payload`; `consumed` counts the bytes taken from `input`.
pub fn read(input: &mut impl BufRead, payload: &mut Vec<u8>, consumed: &mut u64) -> io::Result<Read> {
    let mut head = [0u8; 6];
    if !fill(input, &mut head, consumed)? {
        return Ok(Read::End);
    }
    debug_assert_eq!(head[0], MARK);
    let len = u32::from_le_bytes([head[2], head[3], head[4], head[5]]);
    if len > MAX_PAYLOAD {
        return Ok(Read::Corrupt(format!("a frame says it holds {len} bytes; at most {MAX_PAYLOAD} are written")));
    }
    payload.clear();
    payload.resize(len as usize, 0);
    let mut crc = [0u8; 4];
    if !fill(input, payload, consumed)? || !fill(input, &mut crc, consumed)? {
        return Ok(Read::End);
    }
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&head[1..]);
    hasher.update(payload);
    if hasher.finalize() != u32::from_le_bytes(crc) {
        return Ok(Read::Corrupt("a frame's checksum does not match its bytes".into()));
    }
    match Kind::of(head[1]) {
        Some(kind) => Ok(Read::Frame(kind)),
        None => Ok(Read::Corrupt(format!("a frame of kind {:#04x}, which this reader does not know", head[1]))),
    }
}

/// Fills `buf` from `input`; false when the input ends first.
pub(super) fn fill(input: &mut impl BufRead, buf: &mut [u8], consumed: &mut u64) -> io::Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(false);
        }
        let n = chunk.len().min(buf.len() - filled);
        buf[filled..filled + n].copy_from_slice(&chunk[..n]);
        input.consume(n);
        filled += n;
        *consumed += n as u64;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips_and_a_cut_or_flipped_one_is_told_apart() {
        let mut out = Vec::new();
        assert_eq!(write(&mut out, Kind::Block, b"payload").unwrap(), out.len() as u64);
        let (mut payload, mut consumed) = (Vec::new(), 0);
        assert!(matches!(read(&mut &out[..], &mut payload, &mut consumed).unwrap(), Read::Frame(Kind::Block)));
        assert_eq!((&payload[..], consumed), (&b"payload"[..], out.len() as u64));
        for cut in 1..out.len() {
            assert!(matches!(read(&mut &out[..cut], &mut payload, &mut 0).unwrap(), Read::End), "cut at {cut}");
        }
        let mut flipped = out.clone();
        flipped[8] ^= 1;
        assert!(matches!(read(&mut &flipped[..], &mut payload, &mut 0).unwrap(), Read::Corrupt(_)));
        let mut huge = out.clone();
        huge[2..6].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            matches!(read(&mut &huge[..], &mut payload, &mut 0).unwrap(), Read::Corrupt(m) if m.contains("4294967295"))
        );
    }
}
