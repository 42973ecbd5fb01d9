//! How a ledger record is stored: its JSON, compressed with zstd against a
//! dictionary of typical records.
//!
//! A decision's JSON is about 1.6 KiB, and most of it repeats from record
//! to record: the field names, the rule's hash, the step texts, the
//! actuator's request and the prior written twice. Compressed alone it
//! shrinks to 40 %; compressed against [`DICTIONARY_V1`] (raw content: a
//! few records of every common shape, as the daemon writes them) to about a
//! tenth. sled stores each record inline in its leaf pages and rewrites a
//! page every few updates, so what a record costs on disk is a small
//! multiple of its value: the value is what has to be small.
//!
//! | first byte | format |
//! |---|---|
//! | `{` | JSON (every record of a ledger written before this format) |
//! | [`ZSTD_V1`] | a zstd frame of the JSON, compressed against [`DICTIONARY_V1`] |
//!
//! Both are read; only the second is written. A dictionary is part of the
//! format: [`DICTIONARY_V1`] never changes, and a better one would be
//! `ZSTD_V2` with a dictionary of its own, both kept for reading. A version
//! before this format cannot read the records this one writes.

use std::cell::RefCell;
use std::sync::OnceLock;

use serde::{de::DeserializeOwned, Serialize};

use crate::store::StoreError;

/// The first byte of a record compressed against [`DICTIONARY_V1`].
pub const ZSTD_V1: u8 = 0x01;

/// The dictionary of [`ZSTD_V1`]: typical records, one a line. Frozen.
pub const DICTIONARY_V1: &[u8] = include_bytes!("dictionary-v1.jsonl");

/// zstd's level: 3 (its default) compresses a record in a few microseconds;
/// higher levels gain 1 or 2 % on records this small.
const LEVEL: i32 = 3;

/// The largest record read back (a bound on what a corrupt frame header can
/// make the reader allocate). Records are kilobytes; a decision with a
/// thousand steps is still far below.
const MAX_RECORD: u64 = 16 << 20;

fn corrupt(key: &[u8], message: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt { key: String::from_utf8_lossy(key).into_owned(), message: message.to_string() }
}

fn dictionaries() -> &'static (zstd::dict::EncoderDictionary<'static>, zstd::dict::DecoderDictionary<'static>) {
    static DICTIONARIES: OnceLock<(zstd::dict::EncoderDictionary<'static>, zstd::dict::DecoderDictionary<'static>)> =
        OnceLock::new();
    DICTIONARIES.get_or_init(|| {
        (zstd::dict::EncoderDictionary::copy(DICTIONARY_V1, LEVEL), zstd::dict::DecoderDictionary::copy(DICTIONARY_V1))
    })
}

thread_local! {
    // One context per thread, made once: a context is a few hundred KiB of
    // tables, too much to make for every record of a listing.
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `value` as the ledger stores it.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let json = serde_json::to_vec(value).expect("ledger records serialize");
    let compressed = COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = Some(zstd::bulk::Compressor::with_prepared_dictionary(&dictionaries().0).ok()?);
        }
        cell.as_mut()?.compress(&json).ok()
    });
    match compressed {
        Some(frame) => {
            let mut out = Vec::with_capacity(frame.len() + 1);
            out.push(ZSTD_V1);
            out.extend_from_slice(&frame);
            out
        }
        // zstd refusing (it cannot allocate its context) leaves the record
        // as plain JSON, which every version reads.
        None => json,
    }
}

/// The record stored under `key`, in either format.
pub fn decode<T: DeserializeOwned>(key: &[u8], value: &[u8]) -> Result<T, StoreError> {
    match value.first() {
        Some(&ZSTD_V1) => {
            let frame = &value[1..];
            let size = match zstd::zstd_safe::get_frame_content_size(frame) {
                Ok(Some(size)) if size <= MAX_RECORD => size as usize,
                Ok(Some(size)) => return Err(corrupt(key, format!("a record of {size} bytes (at most {MAX_RECORD})"))),
                _ => return Err(corrupt(key, "not a zstd frame with its size")),
            };
            let json = DECOMPRESSOR.with(|cell| {
                let mut cell = cell.borrow_mut();
                if cell.is_none() {
                    *cell = Some(zstd::bulk::Decompressor::with_prepared_dictionary(&dictionaries().1)?);
                }
                cell.as_mut().expect("made above").decompress(frame, size)
            });
            let json = json.map_err(|e| corrupt(key, format!("zstd: {e}")))?;
            serde_json::from_slice(&json).map_err(|e| corrupt(key, e))
        }
        _ => serde_json::from_slice(value).map_err(|e| corrupt(key, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_of_the_dictionary_is_a_record_this_version_reads() {
        let text = std::str::from_utf8(DICTIONARY_V1).unwrap();
        let mut n = 0;
        for line in text.lines() {
            let d: crate::contracts::Decision = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(decode::<crate::contracts::Decision>(b"k", &encode(&d)).unwrap(), d);
            n += 1;
        }
        assert!(n >= 8, "{n} records");
    }

    #[test]
    fn json_written_by_an_older_version_is_read_and_anything_else_is_corrupt() {
        let json = br#"{"a":1}"#;
        assert_eq!(decode::<serde_json::Value>(b"k", json).unwrap(), serde_json::json!({"a": 1}));
        let encoded = encode(&serde_json::json!({"a": 1}));
        assert_eq!(encoded[0], ZSTD_V1);
        assert_eq!(decode::<serde_json::Value>(b"k", &encoded).unwrap(), serde_json::json!({"a": 1}));
        let mut cut = encoded.clone();
        cut.truncate(encoded.len() - 2);
        assert!(
            matches!(decode::<serde_json::Value>(b"id7", &cut), Err(StoreError::Corrupt { key, .. }) if key == "id7")
        );
        assert!(decode::<serde_json::Value>(b"k", &[ZSTD_V1, 1, 2, 3]).is_err());
    }
}
