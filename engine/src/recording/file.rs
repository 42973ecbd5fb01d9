//! [`RecordingFile`]: the daemon's recording on disk, appended across
//! restarts and rotated by size.
//!
//! Each daemon start appends a segment: a `start` note, then the series it
//! declares afresh and their samples. A file past [`Rotation::max_bytes`]
//! is renamed `PATH.1` (the older ones to `.2` … up to [`Rotation::keep`],
//! the oldest dropped) and a new segment starts in a fresh `PATH`. A line
//! cut off by a crash is removed when the file is opened again, so every
//! line of the file is whole except, at worst, the last one of a file a
//! running daemon is still writing (which readers skip).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{Writer, SEGMENT_START};
use crate::contracts::Note;
use crate::labels::Labels;
use crate::series::{SeriesId, SeriesTable, Value};
use crate::time::Nanos;

/// How large a recording grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// The size at which the file is rotated.
    pub max_bytes: u64,
    /// Rotated files kept (`PATH.1` … `PATH.keep`).
    pub keep: u32,
}

impl Default for Rotation {
    /// 256 MiB × 4: about 20 hours of a busy node (200 series at 100 ms) in
    /// the current file, four days in all, 1.25 GiB at most.
    fn default() -> Rotation {
        Rotation { max_bytes: 256 << 20, keep: 4 }
    }
}

/// Counts what goes through to the file.
struct Counted {
    file: BufWriter<File>,
    bytes: u64,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// The recording a daemon writes (see the module doc).
pub struct RecordingFile {
    path: PathBuf,
    rotation: Rotation,
    writer: Writer<Counted>,
    /// The newest time written: the start of the next file's segment.
    last: Nanos,
}

impl RecordingFile {
    /// Opens `path` for appending (removing a line a crash cut off) and
    /// starts a segment at `now`, saying `why`.
    pub fn open(path: &Path, rotation: Rotation, now: Nanos, why: &str) -> io::Result<RecordingFile> {
        let writer = Writer::new(open_for_append(path)?);
        let mut file = RecordingFile { path: path.to_path_buf(), rotation, writer, last: now };
        file.start_segment(now, why)?;
        Ok(file)
    }

    fn start_segment(&mut self, at: Nanos, why: &str) -> io::Result<()> {
        let note = Note { ts: at, kind: SEGMENT_START.into(), text: why.into(), labels: Labels::default() };
        self.writer.note(&note)
    }

    /// Writes a sample of `id`, declaring its series first in this segment.
    pub fn sample(&mut self, table: &SeriesTable, id: SeriesId, t: Nanos, value: Value) -> io::Result<()> {
        self.writer.sample(table, id, t, value)?;
        self.last = self.last.max(t);
        self.rotate_if_full()
    }

    /// Writes a note.
    pub fn note(&mut self, note: &Note) -> io::Result<()> {
        self.writer.note(note)?;
        self.last = self.last.max(note.ts);
        self.rotate_if_full()
    }

    /// Writes what is buffered to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }

    fn rotate_if_full(&mut self) -> io::Result<()> {
        if self.writer.inner().bytes < self.rotation.max_bytes {
            return Ok(());
        }
        self.writer.flush()?;
        let keep = self.rotation.keep.max(1);
        for k in (1..keep).rev() {
            let from = rotated(&self.path, k);
            if from.exists() {
                std::fs::rename(&from, rotated(&self.path, k + 1))?;
            }
        }
        std::fs::rename(&self.path, rotated(&self.path, 1))?;
        self.writer = Writer::new(open_for_append(&self.path)?);
        self.start_segment(self.last, "rotated")
    }
}

/// The recording at `path` and its rotated files, oldest first, read as one
/// stream (each file starts a segment, so they concatenate); how many files.
pub fn open_with_rotated(path: &Path) -> io::Result<(Box<dyn io::BufRead + Send>, usize)> {
    let mut files = Vec::new();
    let mut k = 1;
    while rotated(path, k).exists() {
        files.push(rotated(path, k));
        k += 1;
    }
    files.reverse();
    files.push(path.to_path_buf());
    let mut stream: Box<dyn Read + Send> = Box::new(io::empty());
    let count = files.len();
    for f in files {
        stream = Box::new(stream.chain(File::open(&f)?));
    }
    Ok((Box::new(io::BufReader::with_capacity(super::READ_BUFFER, stream)), count))
}

/// `PATH.k`.
pub fn rotated(path: &Path, k: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{k}"));
    PathBuf::from(name)
}

/// Opens `path` for appending, creating it (and its directory, as the
/// state directory is), and cuts a last line without its newline (a crash
/// in the middle of writing it).
fn open_for_append(path: &Path) -> io::Result<Counted> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new().create(true).read(true).append(true).open(path)?;
    let len = file.metadata()?.len();
    if len > 0 {
        let keep = whole_lines_len(&mut file, len)?;
        if keep < len {
            file.set_len(keep)?;
        }
    }
    let bytes = file.metadata()?.len();
    Ok(Counted { file: BufWriter::new(file), bytes })
}

/// The length of `file` up to and including its last newline.
fn whole_lines_len(file: &mut File, len: u64) -> io::Result<u64> {
    let mut end = len;
    let mut chunk = vec![0u8; 64 << 10];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk[..n])?;
        if let Some(i) = chunk[..n].iter().rposition(|b| *b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counter::CounterSpec;
    use crate::recording::{Event, Reader};
    use crate::series::{SampleKind, SeriesSpec};

    fn table() -> (SeriesTable, SeriesId) {
        let table = SeriesTable::default();
        let sensor = table.add_sensor("t", 10);
        let spec = SeriesSpec {
            metric: "m".into(),
            labels: Labels::from_pairs([("netdev", "eth0")]),
            kind: SampleKind::Counter(CounterSpec::U64),
        };
        let id = table.register(sensor, &spec).unwrap();
        (table, id)
    }

    fn events(path: &Path) -> Vec<Event> {
        let text = std::fs::read(path).unwrap();
        let mut reader = Reader::new(&text[..], "rec");
        let mut out = Vec::new();
        while let Some(e) = reader.next_event().unwrap() {
            out.push(e);
        }
        out
    }

    #[test]
    fn restarts_append_segments_and_a_torn_line_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        let (table, id) = table();
        let mut file = RecordingFile::open(&path, Rotation::default(), 1, "started").unwrap();
        file.sample(&table, id, 2, Value::Count(5)).unwrap();
        file.flush().unwrap();
        drop(file);
        // A crash in the middle of a line.
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"s\":0,\"t\":3,").unwrap();
        let (table, id) = self::table();
        let mut file = RecordingFile::open(&path, Rotation::default(), 10, "started").unwrap();
        file.sample(&table, id, 11, Value::Count(6)).unwrap();
        file.flush().unwrap();
        let events = events(&path);
        let starts = events.iter().filter(|e| matches!(e, Event::Note(n) if n.kind == SEGMENT_START)).count();
        let samples: Vec<i64> =
            events.iter().filter_map(|e| if let Event::Sample { t, .. } = e { Some(*t) } else { None }).collect();
        assert_eq!((starts, samples), (2, vec![2, 11]), "both runs, the torn line gone: {events:?}");
    }

    #[test]
    fn a_full_file_is_rotated_and_the_oldest_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec.jsonl");
        let (table, id) = table();
        let rotation = Rotation { max_bytes: 300, keep: 2 };
        let mut file = RecordingFile::open(&path, rotation, 0, "started").unwrap();
        for t in 0..40 {
            file.sample(&table, id, t, Value::Count(t as u64)).unwrap();
        }
        file.flush().unwrap();
        assert!(rotated(&path, 1).exists() && rotated(&path, 2).exists());
        assert!(!rotated(&path, 3).exists(), "keep = 2");
        // Each file stands alone: it declares its series and starts a segment.
        for p in [path.clone(), rotated(&path, 1), rotated(&path, 2)] {
            let events = events(&p);
            assert!(matches!(&events[0], Event::Note(n) if n.kind == SEGMENT_START), "{p:?}: {events:?}");
            assert!(std::fs::metadata(&p).unwrap().len() < 400);
        }
    }
}
