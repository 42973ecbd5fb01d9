//! Thinning: an old recording file rewritten at a coarser resolution, so a
//! week fits where a day at full resolution would.
//!
//! A node's ~2,000 series at 100 ms take about 0.37 bytes a sample: 640 MB
//! a day, 4.5 GB a week. What is asked of a recording a day later (`why`
//! over last night's run, a replay of an incident) needs seconds, not
//! 100 ms: `why` itself folds a day into 2,048 buckets of 42 s. So once a
//! rotated file is older than [`super::Thinning::after`] it is
//! rewritten keeping, per series, one sample per [`super::Thinning::to`]:
//!
//! - a counter keeps every reading at least that far from the previous one
//!   kept: its increases over the coarser steps are exact (a counter holds
//!   its own history), so rates, wraps and resets read as before;
//! - a gauge keeps a reading per step, as a slower poll would have read it;
//! - events (XIDs, carrier transitions), notes, segment starts and
//!   declarations are all kept.
//!
//! The thinned file starts with a segment start saying it was thinned
//! ([`THINNED`]): that is how a daemon knows not to thin it again.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::path::Path;

use super::blocks::{BlockOptions, BlockWriter};
use super::{Event, Reader, SEGMENT_START};
use crate::series::SampleKind;
use crate::time::{Nanos, SECOND};

/// The text that starts a thinned file's first segment.
pub const THINNED: &str = "thinned to one sample per";

/// A thinned file's blocks span more time: as many samples per series in a
/// block as a full-resolution block of 100 ms samples holds.
const THINNED_SPAN: Nanos = 100 * SECOND;

/// What thinning did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Thinned {
    /// Samples read.
    pub read: u64,
    /// Samples kept.
    pub kept: u64,
}

/// Whether the recording at `path` was thinned already (its first frame is
/// a segment start saying so).
pub fn is_thinned(path: &Path) -> io::Result<bool> {
    let mut reader = Reader::new(BufReader::new(File::open(path)?), &path.display().to_string());
    match reader.next_event() {
        Ok(Some(Event::Note(note))) => Ok(note.kind == SEGMENT_START && note.text.starts_with(THINNED)),
        Ok(_) => Ok(false),
        Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
    }
}

/// Writes `input` thinned to one sample per `step` of each series (see the
/// module doc) to `output`. A damaged frame of `input` is skipped (the
/// reader goes on past it) and counted in the error it returns only when
/// nothing at all could be read.
pub fn thin(input: &Path, output: &Path, step: Nanos) -> io::Result<Thinned> {
    let origin = input.display().to_string();
    let mut reader = Reader::new(BufReader::with_capacity(super::READ_BUFFER, File::open(input)?), &origin);
    let out = BufWriter::new(File::create(output)?);
    let options = BlockOptions { span: THINNED_SPAN, ..BlockOptions::default() };
    let mut w = BlockWriter::new(out, options)?;
    // Each series of the segment: whether it is an event, and the time of
    // its last sample kept.
    let mut series: HashMap<u32, (bool, Option<Nanos>)> = HashMap::new();
    let mut done = Thinned::default();
    // The marker goes first, stamped with the first time in the file:
    // declarations before it (a file of JSON lines) wait for it.
    let mut marked = false;
    let mut waiting = Vec::new();
    // A poll's time wanders by a few ms: a reading 95 % of a step after
    // the last one kept is a step after it.
    let min_gap = step - step / 20;
    loop {
        let event = match reader.next_event() {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(error) => {
                tracing::warn!(message = "A damaged frame of a recording being thinned is left out.", %error);
                continue;
            }
        };
        let ts = match &event {
            Event::Note(note) => note.ts,
            Event::Sample { t, .. } => *t,
            Event::Series(id, spec) => {
                series.insert(*id, (spec.kind == SampleKind::Event, None));
                if !marked {
                    waiting.push((*id, spec.clone()));
                    continue;
                }
                w.declare(*id, spec)?;
                continue;
            }
        };
        if !marked {
            w.segment(ts, &format!("{THINNED} {} ms", step / 1_000_000))?;
            for (id, spec) in waiting.drain(..) {
                w.declare(id, &spec)?;
            }
            marked = true;
        }
        match event {
            Event::Note(note) if note.kind == SEGMENT_START => {
                w.segment(note.ts, &note.text)?;
                series.clear();
            }
            Event::Note(note) => w.note(&note)?,
            Event::Sample { id, t, value } => {
                done.read += 1;
                let Some((event, last)) = series.get_mut(&id) else { continue };
                if *event || last.is_none_or(|l| t - l >= min_gap) {
                    *last = Some(t);
                    w.sample(id, t, value)?;
                    done.kept += 1;
                }
            }
            Event::Series(..) => unreachable!("declarations are written above"),
        }
    }
    w.finish()?;
    w.into_output().into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contracts::Note;
    use crate::counter::CounterSpec;
    use crate::labels::Labels;
    use crate::series::{SeriesSpec, Value};
    use crate::time::MS;

    fn spec(metric: &str, kind: SampleKind) -> SeriesSpec {
        SeriesSpec { metric: metric.into(), labels: Labels::from_pairs([("node", "n1")]), kind }
    }

    /// Ten minutes at 100 ms (jittered by a few ms) of a wrapping 32-bit
    /// counter, a gauge and a rare event, a note, and a restart half way.
    fn recording(path: &Path) -> Vec<(u32, Nanos, Value)> {
        let mut w = BlockWriter::new(BufWriter::new(File::create(path).unwrap()), BlockOptions::default()).unwrap();
        let mut written = Vec::new();
        for k in 0..6_000i64 {
            let t = 1_700_000_000 * SECOND + k * 100 * MS + (k * 7919 % 5) * MS;
            if k == 0 || k == 3_000 {
                w.segment(t - 1, if k == 0 { "started" } else { "restarted" }).unwrap();
                w.declare(0, &spec("pause_us", SampleKind::Counter(CounterSpec::U32_WRAP))).unwrap();
                w.declare(1, &spec("gpu_temperature", SampleKind::Gauge)).unwrap();
                w.declare(2, &spec("gpu_xid", SampleKind::Event)).unwrap();
            }
            let mut samples = vec![
                (0, Value::Count((4_294_000_000 + 50_000 * k as u64) % (1 << 32))),
                (1, Value::Real(60.0 + (k % 17) as f64)),
            ];
            if k % 101 == 0 {
                samples.push((2, Value::Real(79.0)));
            }
            for (id, v) in samples {
                w.sample(id, t, v).unwrap();
                written.push((id, t, v));
            }
            if k == 1234 {
                let note = Note { ts: t, kind: "fault".into(), text: "storm".into(), labels: Labels::default() };
                w.note(&note).unwrap();
            }
        }
        w.finish().unwrap();
        written
    }

    fn events(path: &Path) -> Vec<Event> {
        let mut reader = Reader::new(BufReader::new(File::open(path).unwrap()), "rec");
        let mut out = Vec::new();
        while let Some(e) = reader.next_event().unwrap() {
            out.push(e);
        }
        out
    }

    #[test]
    fn a_thinned_file_keeps_a_sample_a_second_every_event_note_and_segment() {
        let dir = tempfile::tempdir().unwrap();
        let (full, thinned) = (dir.path().join("rec.1"), dir.path().join("rec.1.thinning"));
        let written = recording(&full);
        assert!(!is_thinned(&full).unwrap());
        let done = thin(&full, &thinned, SECOND).unwrap();
        assert_eq!(done.read, written.len() as u64);
        assert!(is_thinned(&thinned).unwrap());
        let events = events(&thinned);
        let starts: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::Note(n) if n.kind == SEGMENT_START => Some(n.text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(starts, ["thinned to one sample per 1000 ms", "started", "restarted"]);
        assert!(events.iter().any(|e| matches!(e, Event::Note(n) if n.kind == "fault")));
        let kept = |id: u32| -> Vec<(Nanos, Value)> {
            events
                .iter()
                .filter_map(|e| match e {
                    Event::Sample { id: i, t, value } if *i == id => Some((*t, *value)),
                    _ => None,
                })
                .collect()
        };
        let xids = written.iter().filter(|s| s.0 == 2).count();
        assert_eq!(kept(2).len(), xids, "every event is kept");
        let counter = kept(0);
        assert!((595..=605).contains(&counter.len()), "a reading a second: {}", counter.len());
        assert!(counter.windows(2).all(|w| w[1].0 - w[0].0 >= 950 * MS), "no two readings closer than a step");
        // The counter's increase over the whole file, across its wraps, is
        // what the full file says: 50,000 a reading at 10 readings a second.
        let rate = CounterSpec::U32_WRAP;
        let mut total = 0u64;
        let mut prev: Option<(u64, Nanos)> = None;
        for (t, v) in &counter {
            let d = crate::counter::decode(rate, prev, *v, *t).unwrap();
            total += d.increase.and_then(|i| i.amount()).unwrap_or(0);
            prev = Some((d.raw, *t));
        }
        let (first, last) = (counter[0], counter[counter.len() - 1]);
        assert_eq!(total, 50_000 * ((last.0 - first.0 + 50 * MS) / (100 * MS)) as u64, "{first:?} {last:?}");
        assert_eq!(kept(1).len(), counter.len(), "the gauge: as often as the counter");
        assert!(done.kept * 9 < done.read, "{done:?}");
    }
}
