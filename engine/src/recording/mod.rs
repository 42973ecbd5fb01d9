//! Recordings: everything a daemon saw, for replay, `why` and `timeline`.
//!
//! A daemon records in its own format of compressed blocks ([`blocks`]:
//! about a byte a sample or less, a week on a node). The JSON-lines form
//! below stays for hand-made test files and as the export
//! (`rocemend recording export`); [`Reader`] reads either, and a stream of
//! files in both.
//!
//! | module | concern |
//! |---|---|
//! | [`blocks`] | the block format: writer, reader, framing |
//! | `lines` | [`LineReader`]: JSON lines, bounded and checked |
//! | `writer` | [`Writer`]: JSON lines |
//! | `reader` | [`Reader`]: either format, with a [`Select`] |
//! | `file` | [`RecordingFile`]: the daemon's file, crash-safe appends, rotation and retention |
//! | [`thin`] | old files rewritten at one sample a second, so a week fits |
//!
//! The JSON-lines form:
//!
//! ```text
//! {"series":0,"metric":"link_carrier_down_count","labels":{"node":"n1","netdev":"eth0"},"kind":"counter","bits":32,"overflow":"wrap"}
//! {"s":0,"t":1700000000000000000,"v":3}
//! {"note":"fault","t":1700000000100000000,"text":"link flap on n1 eth0","labels":{"node":"n1"}}
//! ```
//!
//! A `series` line declares an id once; sample lines refer to it. Counter
//! values are exact integers; gauge and event values are numbers.

use serde::{Deserialize, Serialize};

use crate::contracts::Note;
use crate::labels::Labels;
use crate::series::{SampleKind, SeriesSpec, Value};
use crate::time::Nanos;

pub mod blocks;
mod file;
mod lines;
mod reader;
mod select;
pub mod thin;
mod writer;

pub use blocks::{BlockOptions, BlockWriter, Run, Samples};
pub use file::{open_with_rotated, rotated, RecordingFile, Rotation, Thinning, DAY, WEEK};
pub use lines::LineReader;
pub use reader::{Chunk, Reader};
pub use select::{Select, SeriesFilter};
pub use writer::Writer;

/// One line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Line {
    /// Declares a series id.
    Series {
        /// The id used by sample lines of this recording.
        series: u32,
        /// Metric name.
        metric: String,
        /// Labels.
        #[serde(default)]
        labels: Labels,
        /// Kind (and counter width).
        #[serde(flatten)]
        kind: SampleKind,
    },
    /// A sample.
    Sample {
        /// Series id (as declared).
        s: u32,
        /// Time, ns since the epoch.
        t: Nanos,
        /// Value.
        v: serde_json::Number,
    },
    /// A note.
    Note {
        /// Note kind.
        note: String,
        /// Time.
        t: Nanos,
        /// Text.
        #[serde(default)]
        text: String,
        /// Labels.
        #[serde(default)]
        labels: Labels,
    },
}

/// A recording line could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{origin}:{line}: {message}")]
pub struct RecordingError {
    /// The file.
    pub origin: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// What reading a recording yields, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A series declaration.
    Series(u32, SeriesSpec),
    /// A sample of a declared series.
    Sample {
        /// Recording-local id.
        id: u32,
        /// Time.
        t: Nanos,
        /// Value, typed by the series' kind.
        value: Value,
    },
    /// A note.
    Note(Note),
}

/// The longest line a recording may have. A series declaration with the
/// longest labels the engine accepts is a few KiB; a line past 1 MiB is
/// corrupt, and is skipped without being held in memory.
pub const MAX_LINE: usize = 1 << 20;

/// The most bytes read in search of a line's end, or of a line that is not
/// blank: past it the input is no recording of JSON lines (`/dev/zero`, a
/// disk image, an endless stream of blank lines), and reading it to its end
/// would never end. A corrupt line of tens of MiB is still skipped whole.
pub const MAX_SKIP: u64 = 256 << 20;

/// The read buffer of a recording: a whole recording is read at once
/// (`replay`, `timeline`, `why`), and 8 KiB reads cost a system call per
/// hundred lines.
pub const READ_BUFFER: usize = 1 << 20;

/// The note kind that starts a recording segment: a daemon appending to a
/// recording writes one when it starts, and series ids declared before it
/// no longer apply.
pub const SEGMENT_START: &str = "start";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counter::CounterSpec;
    use crate::series::SeriesTable;

    #[test]
    fn a_recording_round_trips() {
        let table = SeriesTable::default();
        let sensor = table.add_sensor("t", 10);
        let spec = SeriesSpec {
            metric: "link_carrier_down_count".into(),
            labels: Labels::from_pairs([("netdev", "eth0")]),
            kind: SampleKind::Counter(CounterSpec::U32_WRAP),
        };
        let id = table.register(sensor, &spec).unwrap();
        let mut w = Writer::new(Vec::new());
        w.sample(&table, id, 10, Value::Count(u64::MAX - 1)).unwrap();
        w.sample(&table, id, 20, Value::Count(3)).unwrap();
        w.note(&Note { ts: 15, kind: "fault".into(), text: "flap".into(), labels: Labels::default() }).unwrap();
        let bytes = w.out.clone();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(text.lines().count(), 4, "one declaration, two samples, one note:\n{text}");
        let mut r = Reader::new(&bytes[..], "mem");
        assert_eq!(r.next_event().unwrap(), Some(Event::Series(0, spec)));
        assert_eq!(r.next_event().unwrap(), Some(Event::Sample { id: 0, t: 10, value: Value::Count(u64::MAX - 1) }));
        assert_eq!(r.next_event().unwrap(), Some(Event::Sample { id: 0, t: 20, value: Value::Count(3) }));
        assert!(matches!(r.next_event().unwrap(), Some(Event::Note(n)) if n.text == "flap"));
        assert_eq!(r.next_event().unwrap(), None);
    }

    #[test]
    fn a_series_declared_again_with_other_labels_is_refused_unless_a_segment_starts() {
        let decl =
            |labels: &str| format!("{{\"series\":0,\"metric\":\"m\",\"labels\":{{{labels}}},\"kind\":\"gauge\"}}\n");
        let text = format!(
            "{}{}{}",
            decl("\"port\":\"Ethernet4\""),
            decl("\"port\":\"Ethernet4\""),
            decl("\"port\":\"Ethernet12\"")
        );
        let mut r = Reader::new(text.as_bytes(), "rec.jsonl");
        assert!(r.next_event().is_ok());
        assert!(r.next_event().is_ok(), "the same declaration again is harmless");
        let err = r.next_event().unwrap_err().to_string();
        assert!(err.starts_with("rec.jsonl:3: series 0 is declared again as m{port=\"Ethernet12\"}"), "{err}");
        assert!(err.contains("line 1 declared it as m{port=\"Ethernet4\"}"), "{err}");

        let start = "{\"note\":\"start\",\"t\":5}\n";
        let text = format!("{}{start}{}", decl("\"port\":\"Ethernet4\""), decl("\"port\":\"Ethernet12\""));
        let mut r = Reader::new(text.as_bytes(), "rec.jsonl");
        for _ in 0..3 {
            assert!(r.next_event().is_ok(), "a new segment declares its own ids");
        }
    }

    #[test]
    fn a_huge_line_is_skipped_without_being_held_and_reading_goes_on() {
        let mut text = String::from("{\"note\":\"x\",\"t\":1,\"text\":\"");
        text.push_str(&"a".repeat(MAX_LINE + 10));
        text.push_str("\"}\n{\"note\":\"y\",\"t\":2}\n");
        let mut r = LineReader::new(std::io::BufReader::with_capacity(4096, text.as_bytes()), "rec.jsonl");
        let err = r.next_event().unwrap_err().to_string();
        assert!(err.starts_with("rec.jsonl:1: a line of 1048"), "{err}");
        assert!(r.buf.capacity() <= MAX_LINE + 4096, "held {} bytes", r.buf.capacity());
        assert!(matches!(r.next_event().unwrap(), Some(Event::Note(n)) if n.kind == "y"));
    }

    #[test]
    fn an_input_without_lines_is_refused_after_a_bounded_read() {
        use std::io::Read;
        // `/dev/zero`: no newline ever; read to its end, it never ends.
        let zeros = std::io::repeat(0).take(MAX_SKIP + (1 << 20));
        let mut r = Reader::new(std::io::BufReader::with_capacity(1 << 16, zeros), "zero");
        let err = r.next_event().unwrap_err().to_string();
        // A zero byte starts the magic of a recording of blocks: read as one, it holds no frame.
        assert!(err.contains("no frame in 256 MiB"), "{err}");
        assert!(r.offset() <= MAX_SKIP + (1 << 16), "read {} bytes", r.offset());
        assert_eq!(r.next_event().unwrap(), None, "the input ends where reading stopped");
        // Endless blank lines are no recording either.
        let blanks = std::io::repeat(b'\n').take(2 << 20);
        let mut r = Reader::new(std::io::BufReader::with_capacity(1 << 16, blanks), "blank");
        assert!(r.next_event().unwrap_err().to_string().contains("no recording line"));
    }

    #[test]
    fn a_torn_last_line_ends_the_recording_quietly() {
        let text = "{\"note\":\"x\",\"t\":1}\n{\"s\":0,\"t\":2,\"v\":";
        let mut r = Reader::new(text.as_bytes(), "rec.jsonl");
        assert!(matches!(r.next_event().unwrap(), Some(Event::Note(_))));
        assert_eq!(r.next_event().unwrap(), None);
        // A complete line that is not JSON is an error, wherever it is.
        let mut r = Reader::new("garbage\n".as_bytes(), "rec.jsonl");
        assert!(r.next_event().is_err());
    }

    #[test]
    fn counter_values_that_are_not_whole_reach_the_engine_as_numbers() {
        let text = "{\"series\":0,\"metric\":\"m\",\"kind\":\"counter\",\"bits\":64,\"overflow\":\"wrap\"}\n{\"s\":0,\"t\":1,\"v\":1.5}\n";
        let mut r = Reader::new(text.as_bytes(), "rec.jsonl");
        r.next_event().unwrap();
        assert_eq!(r.next_event().unwrap(), Some(Event::Sample { id: 0, t: 1, value: Value::Real(1.5) }));
    }

    #[test]
    fn an_undeclared_series_is_an_error_with_its_line() {
        let text = "{\"s\":4,\"t\":1,\"v\":1}\n";
        let err = Reader::new(text.as_bytes(), "rec.jsonl").next_event().unwrap_err();
        assert_eq!(err.to_string(), "rec.jsonl:1: series 4 used before it is declared");
    }
}
