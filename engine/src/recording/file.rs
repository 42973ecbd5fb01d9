//! [`RecordingFile`]: the daemon's recording on disk, appended across
//! restarts, rotated by size and pruned by age.
//!
//! Each daemon start appends a segment to `PATH` (a recording of blocks,
//! [`super::blocks`]): a segment start, then the series it declares afresh
//! and blocks of their samples. A file past [`Rotation::max_bytes`] is
//! renamed `PATH.1` (the older ones to `.2` … up to [`Rotation::keep`], the
//! oldest dropped) and a new segment starts in a fresh `PATH`; rotated
//! files older than [`Rotation::keep_for`] are dropped too. A frame cut off
//! by a crash is removed when the file is opened again, so every frame of
//! the file is whole except, at worst, the last one of a file a running
//! daemon is still writing (which readers take as the end). A recording of
//! JSON lines left by an older daemon is rotated away whole, and read on
//! with the rest.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::blocks::{self, BlockOptions, BlockWriter};
use crate::contracts::Note;
use crate::series::{SeriesId, SeriesTable, Value};
use crate::time::Nanos;

/// How large a recording grows and how long it is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// The size at which the file is rotated.
    pub max_bytes: u64,
    /// Rotated files kept (`PATH.1` … `PATH.keep`).
    pub keep: u32,
    /// Rotated files whose last write is older than this are dropped.
    pub keep_for: Option<Duration>,
}

/// A week.
pub const WEEK: Duration = Duration::from_secs(7 * 24 * 3600);

impl Default for Rotation {
    /// 128 MiB × (15 rotated + the current): 2 GiB at most, kept a week.
    /// docs/config.md says how long that keeps at a given series count
    /// and interval (docs/performance.md, "Recording").
    fn default() -> Rotation {
        Rotation { max_bytes: 128 << 20, keep: 15, keep_for: Some(WEEK) }
    }
}

/// The recording a daemon writes (see the module doc).
pub struct RecordingFile {
    path: PathBuf,
    rotation: Rotation,
    options: BlockOptions,
    writer: BlockWriter<BufWriter<File>>,
    /// The file's size when it was opened.
    base: u64,
    /// The newest time written: the start of the next file's segment.
    last: Nanos,
    /// A write failed (a full disk): when. What the file holds may end in
    /// a frame cut short; nothing more is written until the file is opened
    /// again, cut back to its whole frames, at most once a second.
    failed: Option<std::time::Instant>,
}

impl RecordingFile {
    /// Opens `path` for appending (removing a frame a crash cut off) and
    /// starts a segment at `now`, saying `why`.
    pub fn open(path: &Path, rotation: Rotation, now: Nanos, why: &str) -> io::Result<RecordingFile> {
        RecordingFile::open_with(path, rotation, BlockOptions::default(), now, why)
    }

    /// [`RecordingFile::open`] with blocks cut as `options` say.
    pub fn open_with(
        path: &Path,
        rotation: Rotation,
        options: BlockOptions,
        now: Nanos,
        why: &str,
    ) -> io::Result<RecordingFile> {
        let (writer, base) = open_for_append(path, rotation, options)?;
        let mut file =
            RecordingFile { path: path.to_path_buf(), rotation, options, writer, base, last: now, failed: None };
        file.writer.segment(now, why)?;
        prune(path, rotation)?;
        Ok(file)
    }

    /// Writes a sample of `id`, declaring its series first in this segment.
    pub fn sample(&mut self, table: &SeriesTable, id: SeriesId, t: Nanos, value: Value) -> io::Result<()> {
        self.last = self.last.max(t);
        self.guarded(|file| {
            if !file.writer.is_declared(id.0) {
                let spec = {
                    let reg = table.read();
                    crate::series::SeriesSpec {
                        metric: reg.metric_name(id).to_string(),
                        labels: reg.labels(id),
                        kind: reg.info(id).kind,
                    }
                };
                file.writer.declare(id.0, &spec)?;
            }
            file.writer.sample(id.0, t, value)?;
            file.rotate_if_full()
        })
    }

    /// Writes a note.
    pub fn note(&mut self, note: &Note) -> io::Result<()> {
        self.last = self.last.max(note.ts);
        self.guarded(|file| {
            file.writer.note(note)?;
            file.rotate_if_full()
        })
    }

    /// Writes the block being filled if its first sample waited a span of
    /// wall time, and flushes to the file: called every second.
    pub fn flush(&mut self) -> io::Result<()> {
        self.guarded(|file| {
            file.writer.close_block_if_old()?;
            file.writer.flush()?;
            file.rotate_if_full()
        })
    }

    /// Writes everything gathered: at shutdown.
    pub fn finish(&mut self) -> io::Result<()> {
        self.guarded(|file| file.writer.finish())
    }

    /// Runs a write unless one failed less than a second ago; after a
    /// failure, first opens the file again, cutting what the failure left
    /// half-written, and starts a segment. What was gathered when the write
    /// failed is lost (the disk had no room for it); nothing written before
    /// is, and nothing after the frame cut short is unreadable.
    fn guarded(&mut self, write: impl FnOnce(&mut RecordingFile) -> io::Result<()>) -> io::Result<()> {
        if let Some(at) = self.failed {
            if at.elapsed() < std::time::Duration::from_secs(1) {
                return Ok(());
            }
            self.failed = Some(std::time::Instant::now());
            let (writer, base) = open_for_append(&self.path, self.rotation, self.options)?;
            let broken = std::mem::replace(&mut self.writer, writer);
            // Its buffer holds the bytes that did not fit: dropped unwritten
            // (a flush would append them after the cut).
            drop(broken.into_output().into_parts());
            self.base = base;
            let last = self.last;
            self.writer.segment(last, "resumed after a failed write")?;
            self.failed = None;
        }
        let result = write(self);
        if result.is_err() {
            self.failed = Some(std::time::Instant::now());
        }
        result
    }

    fn rotate_if_full(&mut self) -> io::Result<()> {
        if self.base + self.writer.written() < self.rotation.max_bytes {
            return Ok(());
        }
        self.writer.finish()?;
        shift_rotated(&self.path, self.rotation.keep)?;
        self.writer = BlockWriter::new(BufWriter::new(create(&self.path)?), self.options)?;
        self.base = 0;
        self.writer.segment(self.last, "rotated")?;
        prune(&self.path, self.rotation)
    }
}

impl Drop for RecordingFile {
    /// What is gathered reaches the file however the daemon stops.
    fn drop(&mut self) {
        if self.failed.is_some() {
            return;
        }
        if let Err(error) = self.writer.finish() {
            tracing::error!(message = "Could not write the end of the recording.", %error);
        }
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

/// Renames `PATH.k` to `PATH.k+1` (the last one kept is overwritten) and
/// `PATH` to `PATH.1`.
fn shift_rotated(path: &Path, keep: u32) -> io::Result<()> {
    let keep = keep.max(1);
    for k in (1..keep).rev() {
        let from = rotated(path, k);
        if from.exists() {
            std::fs::rename(&from, rotated(path, k + 1))?;
        }
    }
    std::fs::rename(path, rotated(path, 1))
}

/// Drops rotated files past `keep` and, from the first one last written
/// more than `keep_for` ago, that one and every older one.
fn prune(path: &Path, rotation: Rotation) -> io::Result<()> {
    let now = SystemTime::now();
    let mut expired = false;
    let mut k = 1;
    while let Ok(meta) = std::fs::metadata(rotated(path, k)) {
        let age = meta.modified().ok().and_then(|m| now.duration_since(m).ok());
        expired |= k > rotation.keep.max(1) || rotation.keep_for.zip(age).is_some_and(|(limit, age)| age > limit);
        if expired {
            std::fs::remove_file(rotated(path, k))?;
        }
        k += 1;
    }
    Ok(())
}

fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).truncate(true).write(true).open(path)
}

/// Opens `path` for appending, creating it (and its directory, as the
/// state directory is): a frame a crash cut off is removed, and a
/// recording of JSON lines is rotated away (its cut-off line removed).
/// Returns the writer and the file's size.
fn open_for_append(
    path: &Path,
    rotation: Rotation,
    options: BlockOptions,
) -> io::Result<(BlockWriter<BufWriter<File>>, u64)> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new().create(true).read(true).append(true).open(path)?;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok((BlockWriter::new(BufWriter::new(file), options)?, 0));
    }
    file.seek(SeekFrom::Start(0))?;
    let whole = blocks::whole_frames_len(&mut BufReader::with_capacity(1 << 20, &mut file))?;
    match whole {
        Some(whole) => {
            if whole < len {
                file.set_len(whole)?;
            }
            Ok((BlockWriter::appending(BufWriter::new(file), options)?, whole))
        }
        None => {
            let keep = whole_lines_len(&mut file, len)?;
            if keep < len {
                file.set_len(keep)?;
            }
            drop(file);
            shift_rotated(path, rotation.keep)?;
            Ok((BlockWriter::new(BufWriter::new(create(path)?), options)?, 0))
        }
    }
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
    use std::io::Write;

    use super::*;
    use crate::counter::CounterSpec;
    use crate::labels::Labels;
    use crate::recording::{Event, Reader, SEGMENT_START};
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
        let (input, _) = open_with_rotated(path).unwrap();
        let mut reader = Reader::new(input, "rec");
        let mut out = Vec::new();
        while let Some(e) = reader.next_event().unwrap() {
            out.push(e);
        }
        out
    }

    fn sample_times(events: &[Event]) -> Vec<i64> {
        events.iter().filter_map(|e| if let Event::Sample { t, .. } = e { Some(*t) } else { None }).collect()
    }

    fn starts(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Note(n) if n.kind == SEGMENT_START => Some(n.text.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn restarts_append_segments_and_a_frame_cut_by_a_crash_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec");
        let (table, id) = table();
        let mut file = RecordingFile::open(&path, Rotation::default(), 1, "started").unwrap();
        file.sample(&table, id, 2, Value::Count(5)).unwrap();
        drop(file);
        // A crash in the middle of writing a frame.
        let whole = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&[0xB5, b'B', 200, 0, 0]).unwrap();
        let (table, id) = self::table();
        let mut file = RecordingFile::open(&path, Rotation::default(), 10, "restarted").unwrap();
        file.sample(&table, id, 11, Value::Count(6)).unwrap();
        file.finish().unwrap();
        let events = events(&path);
        assert_eq!((starts(&events), sample_times(&events)), (vec!["started".into(), "restarted".into()], vec![2, 11]));
        assert!(std::fs::metadata(&path).unwrap().len() > whole, "appended after the cut");
    }

    #[test]
    fn a_recording_of_lines_from_an_older_daemon_is_rotated_away_and_read_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec");
        let old = "{\"note\":\"start\",\"t\":1,\"text\":\"old\"}\n{\"series\":0,\"metric\":\"m\",\"kind\":\"gauge\"}\n{\"s\":0,\"t\":2,\"v\":1.5}\n{\"s\":0,";
        std::fs::write(&path, old).unwrap();
        let (table, id) = table();
        let mut file = RecordingFile::open(&path, Rotation::default(), 5, "new").unwrap();
        file.sample(&table, id, 6, Value::Count(1)).unwrap();
        file.finish().unwrap();
        assert!(std::fs::read(rotated(&path, 1)).unwrap().ends_with(b"1.5}\n"), "the cut line is removed");
        let events = events(&path);
        assert_eq!((starts(&events), sample_times(&events)), (vec!["old".into(), "new".into()], vec![2, 6]));
    }

    #[test]
    fn a_full_file_is_rotated_the_oldest_dropped_and_old_ones_pruned_by_age() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec");
        let (table, id) = table();
        let rotation = Rotation { max_bytes: 400, keep: 2, keep_for: None };
        let options = BlockOptions { span: 10, ..BlockOptions::default() };
        let mut file = RecordingFile::open_with(&path, rotation, options, 0, "started").unwrap();
        for t in 0..400 {
            file.sample(&table, id, t, Value::Count(t as u64 * 7919 % 1000)).unwrap();
        }
        file.finish().unwrap();
        assert!(rotated(&path, 1).exists() && rotated(&path, 2).exists());
        assert!(!rotated(&path, 3).exists(), "keep = 2");
        for p in [path.clone(), rotated(&path, 1), rotated(&path, 2)] {
            let events = events(&p);
            assert!(matches!(&events[0], Event::Note(n) if n.kind == SEGMENT_START), "{p:?}: {events:?}");
            assert!(std::fs::metadata(&p).unwrap().len() < 600, "{p:?}");
        }
        // What the files hold is the newest stretch, without a gap.
        let times = sample_times(&events(&path));
        assert_eq!(times.last(), Some(&399));
        assert!(times.windows(2).all(|w| w[1] == w[0] + 1), "{times:?}");
        // A rotated file last written two weeks ago is dropped with every older one.
        let two_weeks = SystemTime::now() - 2 * WEEK;
        File::options().write(true).open(rotated(&path, 1)).unwrap().set_modified(two_weeks).unwrap();
        drop(file);
        let rotation = Rotation { keep_for: Some(WEEK), ..rotation };
        let _file = RecordingFile::open_with(&path, rotation, options, 500, "restarted").unwrap();
        assert!(!rotated(&path, 1).exists() && !rotated(&path, 2).exists());
    }
}

#[cfg(test)]
mod live_tests {
    use super::*;
    use crate::recording::{Event, Reader};

    #[test]
    fn a_block_reaches_the_file_a_span_of_wall_time_after_its_first_sample() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec");
        let table = SeriesTable::default();
        let sensor = table.add_sensor("t", 10);
        let spec = crate::series::SeriesSpec {
            metric: "m".into(),
            labels: Default::default(),
            kind: crate::series::SampleKind::Gauge,
        };
        let id = table.register(sensor, &spec).unwrap();
        let options = BlockOptions { span: 50 * crate::time::MS, ..BlockOptions::default() };
        let mut file = RecordingFile::open_with(&path, Rotation::default(), options, 1, "started").unwrap();
        file.sample(&table, id, 2, Value::Real(5.0)).unwrap();
        file.flush().unwrap();
        let samples = |path: &Path| {
            let bytes = std::fs::read(path).unwrap();
            let mut reader = Reader::new(&bytes[..], "rec");
            let mut n = 0;
            while let Some(e) = reader.next_event().unwrap() {
                n += matches!(e, Event::Sample { .. }) as usize;
            }
            n
        };
        assert_eq!(samples(&path), 0, "the block is still filling");
        std::thread::sleep(std::time::Duration::from_millis(80));
        file.flush().unwrap();
        assert_eq!(samples(&path), 1, "written once its span of wall time passed");
    }
}
