//! The running `replay` sensor.

use std::io::{BufRead, BufReader, Cursor};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine::recording::{Event, Reader};
use engine::{Batch, Nanos, Sample, Sensor, SensorContext, SensorError, SeriesId};
use tokio::time::Instant;

use crate::SensorConfigError;

/// How many timestamp groups one trip to the blocking pool reads ahead.
/// Reading happens off the async runtime (file I/O blocks); a few dozen
/// groups amortise the hop while keeping memory to a few batches' worth.
const READ_AHEAD_GROUPS: usize = 32;

/// The most samples in one batch. A batch is one message on the engine's
/// bounded channel; capping it bounds what one message can hold. A larger
/// group of same-timestamp lines continues in the next batch, with the same
/// timestamp.
pub(crate) const MAX_BATCH_SAMPLES: usize = 16_384;

/// The highest recording-local series id accepted. Ids index a vector, so
/// an absurd id in a corrupt file must not allocate gigabytes; a million is
/// far above any per-sensor series cap.
const MAX_RECORDING_ID: u32 = 1 << 20;

/// Where the recording comes from.
#[derive(Debug, Clone)]
enum Source {
    File(PathBuf),
    Bytes(Arc<[u8]>),
}

/// Plays a recording into the engine at recorded or accelerated speed.
///
/// Stops at the end of the recording (`Ok`), on shutdown (`Ok`), or at the
/// first malformed line ([`SensorError::Malformed`], naming file and line).
#[derive(Debug, Clone)]
pub struct ReplaySensor {
    name: String,
    source: Source,
    speed: f64,
    rebase: bool,
}

impl ReplaySensor {
    /// Plays the recording in the file at `path`; `speed` as in
    /// [`ReplayConfig::speed`](super::ReplayConfig::speed). The file is
    /// opened when the sensor runs.
    pub fn from_path(name: &str, path: impl Into<PathBuf>, speed: f64) -> Result<ReplaySensor, SensorConfigError> {
        Ok(ReplaySensor {
            name: name.to_string(),
            source: Source::File(path.into()),
            speed: check_speed(speed)?,
            rebase: false,
        })
    }

    /// Plays a recording held in memory (the embedded demo, a test); errors
    /// name it `name`.
    pub fn from_bytes(name: &str, bytes: impl Into<Arc<[u8]>>, speed: f64) -> Result<ReplaySensor, SensorConfigError> {
        Ok(ReplaySensor {
            name: name.to_string(),
            source: Source::Bytes(bytes.into()),
            speed: check_speed(speed)?,
            rebase: false,
        })
    }

    /// Shifts every timestamp so the recording starts now: a daemon on the
    /// wall clock then sees the samples as fresh (a game day replaying an
    /// incident into a live daemon).
    pub fn rebased(mut self, rebase: bool) -> ReplaySensor {
        self.rebase = rebase;
        self
    }

    /// The playback speed.
    pub fn speed(&self) -> f64 {
        self.speed
    }

    async fn open(&self) -> Result<(Box<dyn BufRead + Send>, String), SensorError> {
        match &self.source {
            Source::File(path) => {
                let origin = path.display().to_string();
                let file = tokio::fs::File::open(path)
                    .await
                    .map_err(|source| SensorError::Io { context: format!("opening recording {origin}"), source })?;
                Ok((Box::new(BufReader::new(file.into_std().await)), origin))
            }
            Source::Bytes(bytes) => Ok((Box::new(Cursor::new(bytes.clone())), self.name.clone())),
        }
    }
}

fn check_speed(speed: f64) -> Result<f64, SensorConfigError> {
    if speed.is_finite() && speed >= 0.0 {
        Ok(speed)
    } else {
        Err(SensorConfigError::OutOfRange {
            setting: "speed".into(),
            value: speed.to_string(),
            reason: "is not a finite, non-negative number (1 = real time, 10 = ten times faster, 0 = as fast as \
                     possible)"
                .into(),
        })
    }
}

/// One timestamp's worth of a recording.
#[derive(Debug)]
struct Group {
    t: Nanos,
    batch: Batch,
}

/// Turns reader events into timestamp groups, registering series on the way.
struct Groups {
    reader: Reader<Box<dyn BufRead + Send>>,
    origin: String,
    ctx: SensorContext,
    /// Recording-local id → engine id.
    ids: Vec<Option<SeriesId>>,
    /// An event read past the end of the previous group.
    pending: Option<Event>,
    /// An error met after the start of a group: the lines before it are
    /// played first, then the run ends with it.
    failed: Option<SensorError>,
    done: bool,
}

impl Groups {
    fn declare(&mut self, id: u32, spec: &engine::SeriesSpec) -> Result<(), SensorError> {
        if id > MAX_RECORDING_ID {
            return Err(SensorError::Malformed(format!(
                "{}: series id {id} is above the limit of {MAX_RECORDING_ID}",
                self.origin
            )));
        }
        let series = self.ctx.register(spec)?;
        let i = id as usize;
        if self.ids.len() <= i {
            self.ids.resize(i + 1, None);
        }
        self.ids[i] = Some(series);
        Ok(())
    }

    fn next_event(&mut self) -> Result<Option<Event>, SensorError> {
        if let Some(event) = self.pending.take() {
            return Ok(Some(event));
        }
        self.reader.next_event().map_err(|e| SensorError::Malformed(e.to_string()))
    }

    /// The next group, `None` at the end of the recording.
    fn next_group(&mut self) -> Result<Option<Group>, SensorError> {
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        let mut group = None;
        match self.fill(&mut group) {
            Err(error) if group.is_some() => {
                self.failed = Some(error);
                Ok(group)
            }
            Err(error) => Err(error),
            Ok(()) => Ok(group),
        }
    }

    /// Reads events into `group` until the timestamp changes, the batch is
    /// full or the recording ends.
    fn fill(&mut self, group: &mut Option<Group>) -> Result<(), SensorError> {
        while !self.done {
            let Some(event) = self.next_event()? else {
                self.done = true;
                break;
            };
            let t = match &event {
                Event::Series(id, spec) => {
                    self.declare(*id, spec)?;
                    continue;
                }
                Event::Sample { t, .. } => *t,
                Event::Note(note) => note.ts,
            };
            let current = group.get_or_insert_with(|| Group { t, batch: Batch::default() });
            if current.t != t || current.batch.samples.len() >= MAX_BATCH_SAMPLES {
                self.pending = Some(event);
                break;
            }
            match event {
                Event::Sample { id, t, value } => {
                    let series = self.ids.get(id as usize).copied().flatten().ok_or_else(|| {
                        SensorError::Malformed(format!("{}: series {id} used before it is declared", self.origin))
                    })?;
                    current.batch.samples.push(Sample { series, ts: t, value });
                }
                Event::Note(note) => current.batch.notes.push(note),
                Event::Series(..) => {}
            }
        }
        Ok(())
    }

    /// Up to [`READ_AHEAD_GROUPS`] groups; empty at the end. An error after
    /// some groups were read is kept for the next call, so everything before
    /// the bad line is played.
    fn read_ahead(&mut self) -> Result<Vec<Group>, SensorError> {
        let mut groups = Vec::new();
        let mut samples = 0;
        while groups.len() < READ_AHEAD_GROUPS && samples < MAX_BATCH_SAMPLES {
            match self.next_group() {
                Ok(Some(group)) => {
                    samples += group.batch.samples.len();
                    groups.push(group);
                }
                Ok(None) => break,
                Err(error) if groups.is_empty() => return Err(error),
                Err(error) => {
                    self.failed = Some(error);
                    break;
                }
            }
        }
        Ok(groups)
    }
}

/// Reads the next groups on the blocking pool and gives the reader back.
async fn read_ahead(mut groups: Groups) -> Result<(Groups, Vec<Group>), SensorError> {
    let task = tokio::task::spawn_blocking(move || {
        let result = groups.read_ahead();
        (groups, result)
    });
    let (groups, result) = task.await.map_err(|e| SensorError::Io {
        context: "the replay reader task ended".into(),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok((groups, result?))
}

/// The longest stretch of recorded time the pacer waits through. A gap in
/// a recording (a sensor or the daemon was down) plays at once: a replay
/// shows what happened, not hours of silence.
const MAX_PACED_GAP: Nanos = 10 * engine::SECOND;

/// Maps recorded time to the runtime's clock: the first batch goes out at
/// once, each later one when its recorded offset divided by the speed has
/// passed. Deadlines are absolute, so sleeping late never accumulates drift.
///
/// A step more than [`MAX_PACED_GAP`] ahead plays at once without moving
/// the pacing: if the next group carries on from it, it was a gap and the
/// pacing restarts there; if the next group is back where it was, it was
/// one bad timestamp (the engine refuses it), and the pacing goes on.
struct Pacer {
    speed: f64,
    origin: Option<(Nanos, Instant)>,
    /// The latest time paced.
    last: Nanos,
    /// A group far ahead, and when it went out: a gap, if the next carries on.
    ahead: Option<(Nanos, Instant)>,
}

impl Pacer {
    fn new(speed: f64) -> Pacer {
        Pacer { speed, origin: None, last: Nanos::MIN, ahead: None }
    }

    fn deadline(&mut self, t: Nanos) -> Option<Instant> {
        if self.speed == 0.0 {
            return None;
        }
        if let Some((far, at)) = self.ahead.take() {
            if t >= far && t - far <= MAX_PACED_GAP {
                // The recording carries on after the gap: pace from there.
                self.origin = Some((far, at));
                self.last = far;
            }
        }
        let (t0, start) = *self.origin.get_or_insert_with(|| (t, Instant::now()));
        if self.last != Nanos::MIN && t.saturating_sub(self.last) > MAX_PACED_GAP {
            self.ahead = Some((t, Instant::now()));
            return None;
        }
        self.last = self.last.max(t);
        // A recording that steps back in time plays the step at once.
        let offset = t.saturating_sub(t0).max(0) as f64 / self.speed;
        Some(start + Duration::from_nanos(offset.min(u64::MAX as f64) as u64))
    }
}

#[async_trait]
impl Sensor for ReplaySensor {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let (input, origin) = self.open().await?;
        tracing::info!(message = "Replay started.", sensor = %self.name, recording = %origin, speed = self.speed);
        let mut groups = Groups {
            reader: Reader::new(input, &origin),
            origin: origin.clone(),
            ctx: ctx.clone(),
            ids: Vec::new(),
            pending: None,
            failed: None,
            done: false,
        };
        let mut pacer = Pacer::new(self.speed);
        let (mut batches, mut samples) = (0u64, 0u64);
        let mut shift: Option<Nanos> = None;
        'run: loop {
            let (back, chunk) = tokio::select! {
                biased;
                _ = ctx.shutdown() => break 'run,
                read = read_ahead(groups) => read?,
            };
            groups = back;
            if chunk.is_empty() {
                tracing::info!(message = "Replay finished.", sensor = %self.name, recording = %origin, batches, samples);
                return Ok(());
            }
            for group in chunk {
                if let Some(deadline) = pacer.deadline(group.t) {
                    tokio::select! {
                        biased;
                        _ = ctx.shutdown() => break 'run,
                        _ = tokio::time::sleep_until(deadline) => {}
                    }
                }
                let n = group.batch.samples.len() as u64;
                let mut batch = group.batch;
                if self.rebase {
                    let by = *shift.get_or_insert_with(|| engine::time::wall_clock_now() - group.t);
                    batch.samples.iter_mut().for_each(|s| s.ts += by);
                    batch.notes.iter_mut().for_each(|n| n.ts += by);
                }
                tokio::select! {
                    biased;
                    _ = ctx.shutdown() => break 'run,
                    sent = ctx.send(batch) => sent?,
                }
                batches += 1;
                samples += n;
            }
        }
        tracing::info!(message = "Replay stopped by shutdown.", sensor = %self.name, recording = %origin, batches, samples);
        Ok(())
    }
}

#[cfg(test)]
mod pacer_tests {
    use super::*;
    use engine::SECOND;

    #[tokio::test(start_paused = true)]
    async fn one_group_far_ahead_does_not_stall_or_skip_the_rest() {
        let mut pacer = Pacer::new(1.0);
        let start = Instant::now();
        assert_eq!(pacer.deadline(0), Some(start));
        assert_eq!(pacer.deadline(SECOND), Some(start + Duration::from_secs(1)));
        assert_eq!(pacer.deadline(i64::MAX), None, "a bad timestamp plays at once");
        assert_eq!(pacer.deadline(2 * SECOND), Some(start + Duration::from_secs(2)), "pacing goes on");
    }

    #[tokio::test(start_paused = true)]
    async fn a_gap_plays_at_once_and_pacing_restarts_after_it() {
        let mut pacer = Pacer::new(1.0);
        let start = Instant::now();
        pacer.deadline(0);
        let hour = 3600 * SECOND;
        assert_eq!(pacer.deadline(hour), None);
        tokio::time::advance(Duration::from_millis(5)).await;
        let next = pacer.deadline(hour + SECOND).unwrap();
        assert_eq!(next, start + Duration::from_secs(1), "paced from the group after the gap");
    }
}
