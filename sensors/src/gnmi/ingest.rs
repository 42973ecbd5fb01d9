//! What one target's notifications become: samples of registered series,
//! the memory of ON_CHANGE values the heartbeat re-sends, and parse errors,
//! counted in the sensor's health and logged at most once per target every
//! [`WARN_EVERY`].

use std::collections::HashMap;
use std::time::Duration;

use engine::{Sample, SensorContext, SeriesId, Value};
use fnv::FnvBuildHasher;
use gnmi_proto::gnmi::{Notification, Path, TypedValue};
use gnmi_proto::path::{join, join_into, path_to_string};
use gnmi_proto::value;
use tokio::time::Instant;

use super::mapping::{map_update_with, MapError, OidNames, Reading, ReadingKind};
use super::plan::StreamPlan;

/// The shortest time between two parse-error warnings of one target: a
/// switch whose every update is malformed would otherwise write a log line
/// per update per second. The errors are all counted in the sensor's health.
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// How much of a value a warning shows: enough to recognise it, bounded so a
/// wildcard answer of 64 ports does not end up in one log line.
const VALUE_SAMPLE_CHARS: usize = 120;

/// One series: its engine id, its last sample's time and value, and, for a
/// value of an ON_CHANGE subscription, the update path the heartbeat keeps
/// it for.
#[derive(Debug)]
struct Known {
    id: SeriesId,
    ts: i64,
    value: Option<Value>,
    /// It came from an ON_CHANGE subscription.
    on_change: bool,
    /// The update path, while the heartbeat re-sends the value; `None` once
    /// the target deleted it or the stream was renewed.
    beat: Option<String>,
}

/// A port's series by (metric, queue, prio).
///
/// Hashed with FNV-1a: the keys here are short port and metric names this
/// sensor maps itself, looked up once per sample (a million a second on a
/// large aggregator), where SipHash's resistance to chosen keys buys nothing
/// and costs a fifth of the sensor's time.
type PortSeries = HashMap<(&'static str, Option<u8>, Option<u8>), Known, FnvBuildHasher>;

/// A parse error, with the path and a sample of the value.
#[derive(Debug)]
pub struct Problem {
    /// What was wrong.
    pub error: MapError,
    /// The update's value, shortened.
    pub value: String,
}

/// The series of one target.
#[derive(Debug, Default)]
pub struct Memory {
    /// port → (metric, queue, prio) → series. Keyed by port first so a
    /// lookup borrows the port name instead of allocating.
    series: hashbrown::HashMap<String, PortSeries, FnvBuildHasher>,
    /// The update being mapped, joined to its prefix: kept so that joining
    /// reuses its allocations from one update to the next.
    path: Path,
}

/// A path's elements as text, without origin or target (a target's delete
/// may name either differently from its updates).
fn elements(path: &Path) -> String {
    path_to_string(&Path { elem: path.elem.clone(), ..Path::default() })
}

fn sample_of(val: &TypedValue) -> String {
    let mut text = value::describe(val);
    if text.chars().count() > VALUE_SAMPLE_CHARS {
        text = text.chars().take(VALUE_SAMPLE_CHARS).collect::<String>() + "…";
    }
    text
}

impl Memory {
    fn known(
        &mut self,
        ctx: &SensorContext,
        switch: &str,
        r: &Reading,
    ) -> Result<&mut Known, engine::series::SeriesError> {
        let key = (r.metric, r.queue, r.prio);
        // One lookup each; the port's name is copied only when it is new.
        let port = self.series.entry_ref(r.port.as_str()).or_default();
        match port.entry(key) {
            std::collections::hash_map::Entry::Occupied(known) => Ok(known.into_mut()),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let id = ctx.register(&r.spec(switch))?;
                Ok(slot.insert(Known { id, ts: i64::MIN, value: None, on_change: false, beat: None }))
            }
        }
    }

    /// The samples of `notification` from `stream` (`COUNTERS/<oid>` named
    /// by `oids`), and what could not be mapped. A sample whose timestamp is not after its series' last one
    /// is dropped (a target replaying its state), unless it is an ON_CHANGE
    /// value that differs from the last: then it is stamped just after it,
    /// so a change is never lost behind a heartbeat stamped with our clock.
    pub fn ingest(
        &mut self,
        ctx: &SensorContext,
        switch: &str,
        stream: &StreamPlan,
        oids: &OidNames,
        notification: &Notification,
    ) -> (Vec<Sample>, Vec<Problem>) {
        let ts = if notification.timestamp > 0 { notification.timestamp } else { engine::time::wall_clock_now() };
        let prefix = notification.prefix.as_ref();
        self.forget(notification);
        let mut problems = Vec::new();
        let mut samples = Vec::with_capacity(notification.update.len() * 8);
        let mut readings = Vec::with_capacity(8);
        let mut series_errors = 0usize;
        let no_path = Path::default();
        let mut path = std::mem::take(&mut self.path);
        for update in &notification.update {
            join_into(prefix, update.path.as_ref().unwrap_or(&no_path), &mut path);
            let Some(val) = &update.val else {
                let error = MapError::BadValue { path: path_to_string(&path), problem: "no value".into() };
                problems.push(Problem { error, value: "none".into() });
                continue;
            };
            readings.clear();
            // A bad field costs only itself: the update's other fields (mapped into
            // `readings` all the same) and the other updates still count.
            if let Err(error) = map_update_with(&path, val, oids, &mut readings) {
                problems.push(Problem { error, value: sample_of(val) });
            }
            let beat = (!readings.is_empty() && stream.is_on_change(&path)).then(|| elements(&path));
            for r in &readings {
                let known = match self.known(ctx, switch, r) {
                    Ok(known) => known,
                    Err(e) => {
                        series_errors += 1;
                        if series_errors == 1 {
                            ctx.read_failed("series", &e.to_string());
                        }
                        continue;
                    }
                };
                let value = match r.kind {
                    ReadingKind::Counter => Value::Count(r.count),
                    ReadingKind::Gauge => Value::Real(r.level),
                };
                if beat.is_some() {
                    known.on_change = true;
                    known.beat.clone_from(&beat);
                }
                let stamp = if ts > known.ts {
                    ts
                } else if let (true, true, Some(next)) =
                    (known.on_change, known.value != Some(value), known.ts.checked_add(1))
                {
                    next
                } else {
                    // Already seen (a replayed or duplicated update), or a
                    // change after a stamp at the end of time, which no later
                    // stamp can follow.
                    continue;
                };
                known.ts = stamp;
                known.value = Some(value);
                samples.push(Sample { series: known.id, ts: stamp, value });
            }
        }
        self.path = path;
        (samples, problems)
    }

    /// Stops re-sending what `notification` deletes.
    fn forget(&mut self, notification: &Notification) {
        for deleted in &notification.delete {
            let gone = elements(&join(notification.prefix.as_ref(), deleted));
            let below = |p: &str| {
                p.strip_prefix(gone.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '[']))
            };
            for known in self.series.values_mut().flat_map(|m| m.values_mut()) {
                if known.beat.as_deref().is_some_and(below) {
                    known.beat = None;
                }
            }
        }
    }

    /// A new stream sends every value again: the heartbeat forgets the old
    /// ones, so a value that vanished meanwhile is not kept alive.
    pub fn forget_beats(&mut self) {
        for known in self.series.values_mut().flat_map(|m| m.values_mut()) {
            known.beat = None;
        }
    }

    /// The last value of every ON_CHANGE series, stamped `now` (or just
    /// after its last sample, if that is later).
    pub fn beat(&mut self, now: i64) -> Vec<Sample> {
        let mut samples = Vec::new();
        for known in self.series.values_mut().flat_map(|m| m.values_mut()) {
            let (Some(_), Some(value)) = (&known.beat, known.value) else { continue };
            known.ts = now.max(known.ts.saturating_add(1));
            samples.push(Sample { series: known.id, ts: known.ts, value });
        }
        samples
    }
}

/// Warnings of parse errors, at most one per [`WARN_EVERY`].
#[derive(Debug, Default)]
pub struct WarnLimit {
    last: Option<Instant>,
    /// Errors not logged since the last warning.
    suppressed: u64,
}

impl WarnLimit {
    /// Logs `problem` unless a warning went out less than [`WARN_EVERY`]
    /// ago; then only counts it, and the next warning says how many.
    pub fn warn(&mut self, sensor: &str, target: &str, problem: &Problem) {
        let now = Instant::now();
        if self.last.is_some_and(|t| now.duration_since(t) < WARN_EVERY) {
            self.suppressed += 1;
            return;
        }
        let kind = kind_of(&problem.error);
        tracing::warn!(
            message = "gNMI update not understood.",
            sensor = %sensor,
            target = %target,
            kind,
            path = %problem.error.path(),
            value = %problem.value,
            error = %problem.error,
            suppressed = self.suppressed,
        );
        self.last = Some(now);
        self.suppressed = 0;
    }
}

/// The health error kind of a mapping error.
pub fn kind_of(error: &MapError) -> &'static str {
    match error {
        MapError::UnknownPath(_) => "unknown_path",
        MapError::BadValue { .. } => "parse",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::SeriesTable;
    use gnmi_proto::gnmi::{SubscriptionList, Update};
    use gnmi_proto::parse_path;

    fn ctx() -> SensorContext {
        let (tx, _rx) = tokio::sync::mpsc::channel(1);
        let (_stop, shutdown) = tokio::sync::watch::channel(false);
        SensorContext::new(SeriesTable::default(), "gnmi", 1000, tx, shutdown)
    }

    fn oper(ts: i64, status: &str) -> Notification {
        Notification {
            timestamp: ts,
            update: vec![Update {
                path: Some(parse_path("openconfig:/interfaces/interface[name=Ethernet0]/state/oper-status").unwrap()),
                val: Some(value::string(status)),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_change_behind_a_heartbeat_is_stamped_after_it_and_a_repeat_is_dropped() {
        let ctx = ctx();
        let stream = StreamPlan {
            list: SubscriptionList::default(),
            on_change: vec![parse_path("/interfaces/interface[name=*]/state/oper-status").unwrap()],
        };
        let mut memory = Memory::default();
        let (samples, problems) = memory.ingest(&ctx, "leaf01", &stream, &OidNames::default(), &oper(100, "UP"));
        assert!(problems.is_empty());
        assert_eq!(samples.len(), 1);
        let beats = memory.beat(200);
        assert_eq!((beats[0].ts, beats[0].value), (200, Value::Real(1.0)));
        // The switch's clock is behind ours: its change still counts.
        let (samples, _) = memory.ingest(&ctx, "leaf01", &stream, &OidNames::default(), &oper(150, "DOWN"));
        assert_eq!((samples[0].ts, samples[0].value), (201, Value::Real(0.0)));
        let (samples, _) = memory.ingest(&ctx, "leaf01", &stream, &OidNames::default(), &oper(180, "DOWN"));
        assert!(samples.is_empty(), "the same value, not newer: a replay");
        // A delete stops the beat.
        let mut delete = oper(300, "DOWN");
        delete.update.clear();
        delete.delete = vec![parse_path("/interfaces/interface[name=Ethernet0]").unwrap()];
        memory.ingest(&ctx, "leaf01", &stream, &OidNames::default(), &delete);
        assert!(memory.beat(400).is_empty());
    }

    #[test]
    fn a_change_after_a_stamp_at_the_end_of_time_is_dropped_not_wrapped() {
        let ctx = ctx();
        let stream = StreamPlan {
            list: SubscriptionList::default(),
            on_change: vec![parse_path("/interfaces/interface[name=*]/state/oper-status").unwrap()],
        };
        let mut memory = Memory::default();
        let (samples, _) = memory.ingest(&ctx, "leaf01", &stream, &OidNames::default(), &oper(i64::MAX, "UP"));
        assert_eq!(samples[0].ts, i64::MAX);
        let (samples, _) = memory.ingest(&ctx, "leaf01", &stream, &OidNames::default(), &oper(5, "DOWN"));
        assert!(samples.is_empty(), "no stamp follows i64::MAX: {samples:?}");
    }

    #[test]
    fn sample_values_are_not_beaten_and_bad_ones_are_problems() {
        let ctx = ctx();
        let stream = StreamPlan { list: SubscriptionList::default(), on_change: vec![] };
        let mut memory = Memory::default();
        let (samples, _) = memory.ingest(&ctx, "leaf01", &stream, &OidNames::default(), &oper(100, "UP"));
        assert_eq!(samples.len(), 1);
        assert!(memory.beat(200).is_empty());
        let mut bad = oper(300, "UP");
        bad.update[0].path = Some(parse_path("/COUNTERS/Ethernet0").unwrap());
        bad.update[0].val = Some(value::string("x".repeat(500)));
        let (_, problems) = memory.ingest(&ctx, "leaf01", &stream, &OidNames::default(), &bad);
        assert_eq!(kind_of(&problems[0].error), "parse");
        assert_eq!(problems[0].value.chars().count(), VALUE_SAMPLE_CHARS + 1);
    }
}
