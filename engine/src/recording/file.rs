//! [`RecordingFile`]: the daemon's recording on disk, appended across
//! restarts, rotated by size and pruned by age.
//!
//! Each daemon start appends a segment to `PATH` (a recording of blocks,
//! [`super::blocks`]): a segment start, then the series it declares afresh
//! and blocks of their samples. A file past [`Rotation::max_bytes`] is
//! renamed `PATH.1` (the older ones to `.2`, `.3` …) and a new segment
//! starts in a fresh `PATH`. Rotated files are kept within a budget of
//! [`Rotation::keep`] files' worth of bytes, and for [`Rotation::keep_for`].
//! Once older than [`Thinning::after`], a rotated file is rewritten at one
//! sample per [`Thinning::to`] ([`super::thin`]) on a thread of its own, so
//! the same budget holds more days. A frame cut off
//! by a crash is removed when the file is opened again, so every frame of
//! the file is whole except, at worst, the last one of a file a running
//! daemon is still writing (which readers take as the end). A recording of
//! JSON lines left by an older daemon is rotated away whole, and read on
//! with the rest.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
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
    /// The budget of rotated files: `keep` × `max_bytes`. The newest
    /// `keep` files are kept whatever their size; older ones (thinned
    /// files are smaller) while the files up to them fit in the budget.
    pub keep: u32,
    /// Rotated files whose last write is older than this are dropped.
    pub keep_for: Option<Duration>,
    /// When rotated files are thinned, if at all.
    pub thin: Option<Thinning>,
}

/// When and how far rotated files are thinned ([`super::thin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thinning {
    /// A rotated file last written longer ago than this is thinned.
    pub after: Duration,
    /// To one sample of each series per this long.
    pub to: Nanos,
}

/// A day.
pub const DAY: Duration = Duration::from_secs(24 * 3600);
/// A week.
pub const WEEK: Duration = Duration::from_secs(7 * DAY.as_secs());

impl Default for Rotation {
    /// 128 MiB × (15 rotated + the current): 2 GiB at most, kept a week,
    /// thinned to a sample a second after a day. docs/config.md says how
    /// long that keeps at a given series count and interval
    /// (docs/performance.md, "Recording").
    fn default() -> Rotation {
        Rotation {
            max_bytes: 128 << 20,
            keep: 15,
            keep_for: Some(WEEK),
            thin: Some(Thinning { after: DAY, to: crate::time::SECOND }),
        }
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
    /// The thread thinning old rotated files, if one runs.
    thinner: Option<std::thread::JoinHandle<()>>,
    /// Held while rotated files are renamed, pruned or replaced by their
    /// thinned form: the thinner finds its file again by inode under it.
    renaming: Arc<Mutex<()>>,
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
        let (writer, base) = open_for_append(path, options)?;
        let mut file = RecordingFile {
            path: path.to_path_buf(),
            rotation,
            options,
            writer,
            base,
            last: now,
            failed: None,
            thinner: None,
            renaming: Arc::new(Mutex::new(())),
        };
        file.writer.segment(now, why)?;
        // What a thinner stopped mid-way left.
        let _ = std::fs::remove_file(thinning_path(path));
        prune(path, rotation)?;
        file.thin_old_files();
        Ok(file)
    }

    /// Waits for the thinning of old files in progress, if any.
    pub fn wait_for_thinning(&mut self) {
        if let Some(thread) = self.thinner.take() {
            let _ = thread.join();
        }
    }

    /// Starts a thread that thins the rotated files due for it, unless one
    /// still runs (the next rotation looks again).
    fn thin_old_files(&mut self) {
        let Some(thinning) = self.rotation.thin else { return };
        if self.thinner.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        let (path, renaming) = (self.path.clone(), Arc::clone(&self.renaming));
        let spawned = std::thread::Builder::new()
            .name("recording-thinner".into())
            .spawn(move || thin_rotated(&path, thinning, &renaming));
        match spawned {
            Ok(thread) => self.thinner = Some(thread),
            Err(error) => tracing::warn!(message = "Could not start thinning old recording files.", %error),
        }
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
            let (writer, base) = open_for_append(&self.path, self.options)?;
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
        {
            let _renaming = self.renaming.lock().unwrap_or_else(|p| p.into_inner());
            shift_rotated(&self.path)?;
            self.writer = BlockWriter::new(BufWriter::new(create(&self.path)?), self.options)?;
            self.base = 0;
            self.writer.segment(self.last, "rotated")?;
            prune(&self.path, self.rotation)?;
        }
        self.thin_old_files();
        Ok(())
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

/// Renames every `PATH.k` to `PATH.k+1`, and `PATH` to `PATH.1`.
fn shift_rotated(path: &Path) -> io::Result<()> {
    let mut last = 0;
    while rotated(path, last + 1).exists() {
        last += 1;
    }
    for k in (1..=last).rev() {
        std::fs::rename(rotated(path, k), rotated(path, k + 1))?;
    }
    std::fs::rename(path, rotated(path, 1))
}

/// Drops, newest first, the rotated files past the budget (see
/// [`Rotation::keep`]) and, from the first one last written more than
/// `keep_for` ago, that one and every older one.
fn prune(path: &Path, rotation: Rotation) -> io::Result<()> {
    let now = SystemTime::now();
    let budget = rotation.max_bytes.saturating_mul(u64::from(rotation.keep.max(1)));
    let (mut expired, mut used) = (false, 0u64);
    let mut k = 1;
    while let Ok(meta) = std::fs::metadata(rotated(path, k)) {
        used = used.saturating_add(meta.len());
        let age = meta.modified().ok().and_then(|m| now.duration_since(m).ok());
        expired |= (k > rotation.keep.max(1) && used > budget)
            || rotation.keep_for.zip(age).is_some_and(|(limit, age)| age > limit);
        if expired {
            std::fs::remove_file(rotated(path, k))?;
        }
        k += 1;
    }
    Ok(())
}

/// Where a rotated file is thinned before it replaces the original.
fn thinning_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".thinning");
    PathBuf::from(name)
}

/// Thins, oldest first, every rotated file of `path` last written more
/// than `thinning.after` ago and not thinned yet. The thinned file keeps
/// the original's time of last write (retention by age goes on as before)
/// and replaces it only if the original is still there: found by inode,
/// under `renaming`, since rotations rename it meanwhile.
fn thin_rotated(path: &Path, thinning: Thinning, renaming: &Mutex<()>) {
    use std::os::unix::fs::MetadataExt;
    let now = SystemTime::now();
    let mut due = Vec::new();
    let mut k = 1;
    while let Ok(meta) = std::fs::metadata(rotated(path, k)) {
        let age = meta.modified().ok().and_then(|m| now.duration_since(m).ok());
        if age.is_some_and(|age| age > thinning.after) && super::thin::is_thinned(&rotated(path, k)).ok() == Some(false)
        {
            due.push((k, meta));
        }
        k += 1;
    }
    let scratch = thinning_path(path);
    for (k, meta) in due.into_iter().rev() {
        let result = super::thin::thin(&rotated(path, k), &scratch, thinning.to).and_then(|done| {
            File::options().write(true).open(&scratch)?.set_modified(meta.modified()?)?;
            let _renaming = renaming.lock().unwrap_or_else(|p| p.into_inner());
            let mut j = 1;
            while let Ok(now) = std::fs::metadata(rotated(path, j)) {
                if (now.dev(), now.ino()) == (meta.dev(), meta.ino()) {
                    std::fs::rename(&scratch, rotated(path, j))?;
                    tracing::info!(
                        message = "Thinned an old recording file.",
                        file = %rotated(path, j).display(),
                        samples = done.read,
                        kept = done.kept,
                        bytes_before = meta.len(),
                    );
                    return Ok(());
                }
                j += 1;
            }
            Ok(())
        });
        let _ = std::fs::remove_file(&scratch);
        if let Err(error) = result {
            tracing::warn!(message = "Could not thin an old recording file; it stays as it was.", file = %rotated(path, k).display(), %error);
        }
    }
}

fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).truncate(true).write(true).open(path)
}

/// Opens `path` for appending, creating it (and its directory, as the
/// state directory is): a frame a crash cut off is removed, and a
/// recording of JSON lines is rotated away (its cut-off line removed).
/// Returns the writer and the file's size.
fn open_for_append(path: &Path, options: BlockOptions) -> io::Result<(BlockWriter<BufWriter<File>>, u64)> {
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
            shift_rotated(path)?;
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
    use crate::time::{MS, SECOND};

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

    /// Every event of the recording at `path` and its rotated files.
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
        let rotation = Rotation { max_bytes: 400, keep: 2, keep_for: None, thin: None };
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

    #[test]
    fn rotated_files_older_than_a_day_are_thinned_keep_their_age_and_leave_room_for_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rec");
        let (table, id) = table();
        let options = BlockOptions { span: 10 * MS, ..BlockOptions::default() };
        // A reading every 100 ms; files of ~8 KiB; a budget of 2 files.
        let rotation = Rotation { max_bytes: 8192, keep: 2, keep_for: None, thin: None };
        let mut file = RecordingFile::open_with(&path, rotation, options, 0, "started").unwrap();
        let mut t = 0;
        while !rotated(&path, 2).exists() {
            t += 100 * MS;
            file.sample(&table, id, t, Value::Count((t / MS) as u64 * 7919 % 100_003)).unwrap();
        }
        drop(file);
        let sizes = |k: u32| std::fs::metadata(rotated(&path, k)).map(|m| m.len()).ok();
        let two_days = SystemTime::now() - 2 * DAY;
        for k in [1, 2] {
            File::options().write(true).open(rotated(&path, k)).unwrap().set_modified(two_days).unwrap();
        }
        let before = (sizes(1).unwrap(), sizes(2).unwrap(), sample_times(&events(&rotated(&path, 2))).len());
        let thin = Some(Thinning { after: DAY, to: SECOND });
        let mut file = RecordingFile::open_with(&path, Rotation { thin, ..rotation }, options, t, "restarted").unwrap();
        file.wait_for_thinning();
        for k in [1, 2] {
            assert!(super::super::thin::is_thinned(&rotated(&path, k)).unwrap(), "PATH.{k}");
            let modified = std::fs::metadata(rotated(&path, k)).unwrap().modified().unwrap();
            assert_eq!(modified, two_days, "PATH.{k} keeps its age");
        }
        let after = (sizes(1).unwrap(), sizes(2).unwrap(), sample_times(&events(&rotated(&path, 2))).len());
        assert!(after.0 * 2 < before.0 && after.1 * 2 < before.1, "{before:?} → {after:?}");
        assert!(after.2 * 8 < before.2 && after.2 > 0, "a sample a second of ten: {before:?} → {after:?}");
        // The budget of 2 files' bytes now holds a third: rotate once more.
        let mut more = 0;
        while more < 1 {
            t += 100 * MS;
            let had = sizes(1);
            file.sample(&table, id, t, Value::Count((t / MS) as u64 * 7919 % 100_003)).unwrap();
            if sizes(1) != had {
                more += 1;
            }
        }
        file.wait_for_thinning();
        assert!(rotated(&path, 3).exists(), "a third file fits in the budget once the old ones are thinned");
        assert!(!rotated(&path, 4).exists());
        let times = sample_times(&events(&path));
        assert!(times.windows(2).all(|w| w[1] > w[0]), "the files read as one stretch, oldest first");
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
