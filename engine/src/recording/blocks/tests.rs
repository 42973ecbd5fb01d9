//! The block format end to end: what is written is read back, whole,
//! selected, across files of both formats, and past damage.

use super::*;
use crate::contracts::Note;
use crate::counter::CounterSpec;
use crate::labels::Labels;
use crate::recording::{Chunk, Event, Reader, Select, Writer, SEGMENT_START};
use crate::series::{SampleKind, SeriesSpec, Value};
use crate::time::SECOND;

fn spec(metric: &str, port: &str, kind: SampleKind) -> SeriesSpec {
    SeriesSpec { metric: metric.into(), labels: Labels::from_pairs([("port", port)]), kind }
}

fn events(bytes: &[u8], select: Select) -> Vec<Event> {
    let mut reader = Reader::new(bytes, "rec").select(select);
    let mut out = Vec::new();
    while let Some(e) = reader.next_event().unwrap() {
        out.push(e);
    }
    out
}

/// A recording of two series over `seconds` at 100 ms, a note at 1.5 s,
/// in blocks of `span`.
fn recording(seconds: i64, span: i64) -> (Vec<u8>, Vec<(u32, i64, Value)>) {
    let options = BlockOptions { span, ..BlockOptions::default() };
    let mut w = BlockWriter::new(Vec::new(), options).unwrap();
    w.segment(0, "started").unwrap();
    w.declare(0, &spec("pause", "Ethernet0", SampleKind::Counter(CounterSpec::U64))).unwrap();
    w.declare(7, &spec("temp", "Ethernet0", SampleKind::Gauge)).unwrap();
    let mut written = Vec::new();
    for k in 0..seconds * 10 {
        let t = 1_700_000_000 * SECOND + k * SECOND / 10 + (k % 3);
        for (id, value) in [
            (0, Value::Count((u64::MAX - 5).wrapping_add(4 * k as u64))),
            (7, Value::Real(40.0 + (k % 7) as f64 * 0.37)),
        ] {
            w.sample(id, t, value).unwrap();
            written.push((id, t, value));
        }
        if k == 15 {
            w.note(&Note {
                ts: t,
                kind: "fault".into(),
                text: "storm".into(),
                labels: Labels::from_pairs([("node", "n1")]),
            })
            .unwrap();
        }
    }
    w.finish().unwrap();
    (w.get_ref().clone(), written)
}

fn samples(events: &[Event]) -> Vec<(u32, i64, Value)> {
    events
        .iter()
        .filter_map(|e| if let Event::Sample { id, t, value } = e { Some((*id, *t, *value)) } else { None })
        .collect()
}

#[test]
fn what_is_written_is_read_back_in_time_order_with_its_declarations_and_notes() {
    let (bytes, written) = recording(30, 10 * SECOND);
    let events = events(&bytes, Select::all());
    assert!(matches!(&events[0], Event::Note(n) if n.kind == SEGMENT_START && n.text == "started"));
    assert!(matches!(&events[1], Event::Series(0, s) if s.metric == "pause"));
    assert!(matches!(&events[2], Event::Series(7, s) if s.metric == "temp"));
    assert_eq!(samples(&events), written, "every sample, bit for bit, in the order written");
    let note = events.iter().position(|e| matches!(e, Event::Note(n) if n.kind == "fault")).unwrap();
    let Event::Note(n) = &events[note] else { unreachable!() };
    assert_eq!(n.labels.get("node"), Some("n1"));
    let before = samples(&events[..note]);
    assert!(before.iter().all(|s| s.1 <= n.ts) && before.len() == 32, "the note follows its tick's samples");
    assert!(bytes.len() < written.len() * 3, "{} bytes for {} samples", bytes.len(), written.len());
}

#[test]
fn a_selection_skips_blocks_and_series_and_reads_the_same_as_the_lines_form() {
    let (bytes, written) = recording(60, 10 * SECOND);
    let from = 1_700_000_000 * SECOND + 25 * SECOND;
    let to = from + 10 * SECOND;
    let only_pause: crate::recording::SeriesFilter = std::sync::Arc::new(|s: &SeriesSpec| s.metric == "pause");
    let select = Select { from: Some(from), to: Some(to), series: Some(only_pause) };
    let got = samples(&events(&bytes, select.clone()));
    let want: Vec<_> = written.iter().copied().filter(|(id, t, _)| *id == 0 && (from..=to).contains(t)).collect();
    assert_eq!(got, want);
    // The same recording exported to JSON lines reads the same through the same selection.
    let mut lines = Writer::new(Vec::new());
    for e in events(&bytes, Select::all()) {
        match e {
            Event::Series(id, spec) => lines.declare(id, &spec).unwrap(),
            Event::Sample { id, t, value } => lines.write_raw_sample(id, t, value).unwrap(),
            Event::Note(n) => lines.note(&n).unwrap(),
        }
    }
    assert_eq!(samples(&events(lines.inner(), select)), want);
}

/// What reading block by block gives: the samples (sorted as events give
/// them, in time order and then by id) and the events, in order.
fn chunks(bytes: &[u8], select: Select) -> (Vec<(u32, i64, Value)>, Vec<Event>) {
    let mut reader = Reader::new(bytes, "rec").select(select);
    let (mut got, mut other) = (Vec::new(), Vec::new());
    while let Some(chunk) = reader.next_chunk().unwrap() {
        match chunk {
            Chunk::Samples(block) => {
                for run in block.runs() {
                    got.extend(run.samples().map(|(k, v)| (run.id, block.times()[k as usize], v)));
                }
            }
            Chunk::Event(Event::Sample { id, t, value }) => got.push((id, t, value)),
            Chunk::Event(e) => other.push(e),
        }
    }
    got.sort_by_key(|(id, t, _)| (*t, *id));
    (got, other)
}

#[test]
fn block_by_block_reads_the_samples_event_by_event_reads() {
    let (bytes, written) = recording(60, 10 * SECOND);
    let (got, other) = chunks(&bytes, Select::all());
    assert_eq!(got, written);
    assert!(matches!(&other[0], Event::Note(n) if n.kind == SEGMENT_START));
    assert!(matches!(&other[3], Event::Note(n) if n.kind == "fault"), "the block's note after its samples");
    // A range that cuts blocks in the middle, and one series.
    let from = 1_700_000_000 * SECOND + 25 * SECOND;
    let to = from + 10 * SECOND;
    let only_pause: crate::recording::SeriesFilter = std::sync::Arc::new(|s: &SeriesSpec| s.metric == "pause");
    let select = Select { from: Some(from), to: Some(to), series: Some(only_pause) };
    let (got, _) = chunks(&bytes, select.clone());
    assert_eq!(got, samples(&events(&bytes, select)));
    assert_eq!(got.len(), 100, "10 s at 100 ms, both ends included");
    // Lines, then blocks, then lines: each read its own way.
    let mut lines = Writer::new(Vec::new());
    lines.declare(0, &spec("pause", "Ethernet4", SampleKind::Gauge)).unwrap();
    lines.write_raw_sample(0, 2, Value::Real(1.0)).unwrap();
    let mut stream = lines.inner().clone();
    stream.extend_from_slice(&bytes);
    stream.extend_from_slice(lines.inner());
    let (got, _) = chunks(&stream, Select::all());
    let mut want = samples(&events(&stream, Select::all()));
    want.sort_by_key(|(id, t, _)| (*t, *id));
    assert_eq!(got, want);
}

#[test]
fn files_of_both_formats_in_one_stream_read_as_consecutive_segments() {
    let mut lines = Writer::new(Vec::new());
    lines
        .note(&Note { ts: 1, kind: SEGMENT_START.into(), text: "old daemon".into(), labels: Labels::default() })
        .unwrap();
    lines.declare(0, &spec("pause", "Ethernet4", SampleKind::Gauge)).unwrap();
    lines.write_raw_sample(0, 2, Value::Real(1.0)).unwrap();
    let (blocks, written) = recording(1, SECOND);
    let mut stream = lines.inner().clone();
    stream.extend_from_slice(&blocks);
    stream.extend_from_slice(lines.inner());
    let events = events(&stream, Select::all());
    let starts = events.iter().filter(|e| matches!(e, Event::Note(n) if n.kind == SEGMENT_START)).count();
    assert_eq!(starts, 3);
    assert_eq!(samples(&events).len(), 2 + written.len());
}

#[test]
fn a_cut_recording_ends_quietly_and_a_damaged_block_is_an_error_reading_goes_past() {
    let (bytes, written) = recording(30, 10 * SECOND);
    // Cut anywhere: what is whole reads, the rest is the end.
    for cut in [bytes.len() - 1, bytes.len() - 300, bytes.len() / 2] {
        let got = samples(&events(&bytes[..cut], Select::all()));
        assert!(got.len() < written.len() && got[..] == written[..got.len()], "cut at {cut}");
    }
    // A flipped byte inside the second block: one error naming it, then the third block.
    let second = nth_block_start(&bytes, 1);
    let mut damaged = bytes.clone();
    damaged[second + 40] ^= 0xff;
    let mut reader = Reader::new(&damaged[..], "rec");
    let (mut got, mut errors) = (0, Vec::new());
    loop {
        match reader.next_event() {
            Ok(Some(Event::Sample { .. })) => got += 1,
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(&format!("frame at byte {second}: a frame's checksum")), "{errors:?}");
    assert_eq!(got, written.len() - 200, "the two other blocks are read");
}

/// The byte offset of the `n`th block frame.
fn nth_block_start(bytes: &[u8], n: usize) -> usize {
    let mut at = MAGIC.len();
    let mut seen = 0;
    loop {
        let len = u32::from_le_bytes(bytes[at + 2..at + 6].try_into().unwrap()) as usize;
        if bytes[at + 1] == b'B' {
            if seen == n {
                return at;
            }
            seen += 1;
        }
        at += len + frame::OVERHEAD;
    }
}

#[test]
fn a_sample_of_an_undeclared_series_is_refused_by_the_writer_and_the_reader() {
    let mut w = BlockWriter::new(Vec::new(), BlockOptions::default()).unwrap();
    assert!(w.sample(3, 1, Value::Count(1)).is_err());
    w.declare(3, &spec("m", "p", SampleKind::Gauge)).unwrap();
    w.sample(3, 1, Value::Real(1.0)).unwrap();
    w.finish().unwrap();
    // The declaration frame dropped: the block names a series nobody declared.
    let bytes = w.get_ref().clone();
    let decl_len = u32::from_le_bytes(bytes[MAGIC.len() + 2..MAGIC.len() + 6].try_into().unwrap()) as usize;
    let mut without = bytes[..MAGIC.len()].to_vec();
    without.extend_from_slice(&bytes[MAGIC.len() + decl_len + frame::OVERHEAD..]);
    let err = Reader::new(&without[..], "rec").next_event().unwrap_err().to_string();
    assert!(err.contains("series 3 used before it is declared"), "{err}");
}

#[test]
fn whole_frames_len_finds_where_a_crash_cut_the_file() {
    let (bytes, _) = recording(30, 10 * SECOND);
    assert_eq!(whole_frames_len(&mut &bytes[..]).unwrap(), Some(bytes.len() as u64));
    let last = nth_block_start(&bytes, 2);
    assert_eq!(whole_frames_len(&mut &bytes[..bytes.len() - 3]).unwrap(), Some(last as u64));
    assert_eq!(whole_frames_len(&mut &b"{\"note\":\"x\"}\n"[..]).unwrap(), None);
}
