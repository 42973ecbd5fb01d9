//! The recording's own format: compressed blocks of time-series columns.
//!
//! ```text
//! file:  MAGIC ("\0rocemend-rec-1\n") | frame | frame | …
//! frame: segment start | series declarations | block (frame.rs)
//! ```
//!
//! A daemon writes a **segment** frame when it starts (and when it rotates
//! the file), then, as series first appear, **declarations** (once per file
//! and segment, each the JSON of a `series` line of the lines format), and
//! every span of time (10 s by default) a **block**: the samples and notes
//! of that span as columns (columns.rs), zstd-compressed (block.rs).
//!
//! | module | concern |
//! |---|---|
//! | `varint` | LEB128 and zigzag numbers, a bounds-checked cursor |
//! | `columns` | the time table, sample times and values of a block |
//! | `block` | a block's header, body and compression |
//! | `frame` | framing and checksums |
//! | [`BlockWriter`] | gathers samples into blocks and writes them |
//! | [`BlockReader`] | reads frames back as [`super::Event`]s, or a block's [`Samples`] whole |
//!
//! Every frame carries a CRC-32: a crash leaves at most a frame cut short
//! at the end (the block being written: at most its span of time), which
//! readers take as the end and a daemon cuts off when it opens the file
//! again (`super::file`).

mod block;
mod columns;
mod frame;
mod reader;
mod samples;
mod varint;
mod writer;

pub use reader::{BlockReader, Step};
pub use samples::{Run, Samples};
pub use writer::{BlockOptions, BlockWriter};

/// The first bytes of a recording of blocks. It starts with a byte no JSON
/// line starts with and ends with a newline, so a reader of lines stops
/// before it and a reader of frames knows it from a frame.
pub const MAGIC: &[u8; 16] = b"\0rocemend-rec-1\n";

/// Whether `bytes` (the start of a file) begin a recording of blocks.
pub fn is_blocks(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// The length of the whole frames of a recording of blocks: where a
/// daemon appending to it cuts what a crash left half-written. `None` when
/// `input` does not start with the magic.
pub fn whole_frames_len(input: &mut impl std::io::BufRead) -> std::io::Result<Option<u64>> {
    let mut magic = [0u8; MAGIC.len()];
    let mut len = 0;
    if !frame::fill(input, &mut magic, &mut len)? || &magic != MAGIC {
        return Ok(None);
    }
    let mut payload = Vec::new();
    loop {
        match input.fill_buf()?.first() {
            Some(&frame::MARK) => {}
            _ => return Ok(Some(len)),
        }
        let mut consumed = 0;
        match frame::read(input, &mut payload, &mut consumed)? {
            frame::Read::Frame(_) => len += consumed,
            frame::Read::End | frame::Read::Corrupt(_) => return Ok(Some(len)),
        }
    }
}

#[cfg(test)]
mod tests;
