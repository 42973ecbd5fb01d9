//! The signals of a timeline, read from the daemon's recording (`record =`
//! in its config; the file `rocemend replay` reads).
//!
//! The file (with its rotated predecessors, oldest first) is read through
//! the engine's recording reader: lines are bounded, a last line cut off
//! by a daemon still writing is skipped, and each segment (a daemon start)
//! declares its series afresh. It is streamed once, never held: only the series the focus keeps
//! are accumulated, and each into at most [`BUCKETS`] time buckets keeping
//! the lowest and the highest point, so a dip in NCCL bandwidth and a spike
//! in pause time both survive however long the window. Counters are drawn
//! as rates (increase per second, wraps and resets handled as the engine
//! handles them): a raw counter is a ramp that hides everything.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use engine::recording::{Event, Reader, SEGMENT_START};
use engine::{Labels, Nanos, Note, SampleKind, SeriesSpec, Topology, Value};

use super::focus::Focus;
use super::window::Window;
use crate::progress::Progress;
use crate::recorded::{self, ReadError};
use crate::why::rank;
use crate::why::rates::CounterRate;
use crate::why::series::JOB_NODE_INFO;

/// Time buckets per series: about one per pixel of a page 1100 pixels wide.
pub const BUCKETS: usize = 1000;

/// Series drawn at most. Past a few hundred rows a page is no longer read
/// by a person, and each kept series costs up to [`BUCKETS`] × 2 points;
/// `--node` or `--job` narrow a fleet-wide recording below it.
pub const MAX_SERIES: usize = 400;

/// The groups of signal tracks, in page order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// NVML / DCGM: `gpu_*`.
    Gpu,
    /// NCCL bus and algorithm bandwidth: `nccl_*`.
    Nccl,
    /// NIC counters: ethtool, RDMA, netlink.
    Nic,
    /// Switch counters (gNMI): series with `switch` and `port`.
    Switch,
    /// Job step time.
    Job,
    /// Anything else that was recorded.
    Other,
}

impl Group {
    /// Section title.
    pub fn title(self) -> &'static str {
        match self {
            Group::Gpu => "GPU",
            Group::Nccl => "NCCL busbw / algbw",
            Group::Nic => "NIC counters",
            Group::Switch => "Switch counters",
            Group::Job => "Job step time",
            Group::Other => "Other signals",
        }
    }

    /// Class and `data-kind` in the page.
    pub fn name(self) -> &'static str {
        match self {
            Group::Gpu => "gpu",
            Group::Nccl => "nccl",
            Group::Nic => "nic",
            Group::Switch => "switch",
            Group::Job => "job",
            Group::Other => "other",
        }
    }

    /// The group of a series; `None` for the job mapping, which is not a signal.
    pub fn of(metric: &str, labels: &Labels) -> Option<Group> {
        if metric == JOB_NODE_INFO {
            return None;
        }
        Some(if metric.starts_with("gpu_") || metric.starts_with("dcgm_") {
            Group::Gpu
        } else if metric.starts_with("nccl_") {
            Group::Nccl
        } else if metric.starts_with("job_") {
            Group::Job
        } else if metric.starts_with("switch_") || (labels.get("switch").is_some() && labels.get("port").is_some()) {
            Group::Switch
        } else if ["ethtool_", "rdma_", "link_"].iter().any(|p| metric.starts_with(p))
            || labels.get("netdev").is_some()
            || labels.get("rdma_dev").is_some()
        {
            Group::Nic
        } else {
            Group::Other
        })
    }
}

/// One series as drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesTrack {
    /// Its group.
    pub group: Group,
    /// Metric name.
    pub metric: String,
    /// Labels as recorded.
    pub labels: Labels,
    /// Drawn as a rate per second.
    pub rate: bool,
    /// Points, in time order, inside the window.
    pub points: Vec<(Nanos, f64)>,
    /// How much it moved around the page's point of interest
    /// ([`rank_tracks`]); 0 until ranked.
    pub relevance: f64,
    /// It never moved beyond its metric's noise floor: drawn as one line
    /// with the other unchanged series of its group.
    pub flat: bool,
}

/// Orders `tracks` the way `rocemend why` ranks signals: within each group,
/// the series that moved most around `split` (an incident's start, a job's
/// rise) first, and the flat ones last, marked to be collapsed.
pub fn rank_tracks(tracks: &mut [SeriesTrack], split: Nanos) {
    for t in tracks.iter_mut() {
        t.flat = rank::is_flat(&t.metric, &t.points);
        t.relevance = if t.flat { 0.0 } else { rank::relevance(&t.metric, &t.points, split) };
    }
    tracks.sort_by(|a, b| {
        (a.group, a.flat)
            .cmp(&(b.group, b.flat))
            .then(b.relevance.total_cmp(&a.relevance))
            .then_with(|| (&a.metric, a.labels.to_string()).cmp(&(&b.metric, b.labels.to_string())))
    });
}

/// Where the job whose step-time tracks are among `tracks` got slow, by
/// `why`'s detection; `None` when it did not (or has no step time).
pub fn job_rise(tracks: &[SeriesTrack]) -> Option<Nanos> {
    let steps: Vec<Vec<(Nanos, f64)>> =
        tracks.iter().filter(|t| t.metric == crate::why::STEP_TIME).map(|t| t.points.clone()).collect();
    let signal = crate::why::window::worst_of(&steps);
    let end = tracks.iter().filter_map(|t| t.points.last().map(|p| p.0)).max()?;
    let pushes = crate::why::window::Pushes { step_ends: true, recording_end: end };
    crate::why::window::detect(&signal, crate::why::window::DEFAULT_THRESHOLD, pushes).ok().map(|w| w.rise_at)
}

/// What the recording holds for the window and focus.
#[derive(Debug, Default)]
pub struct Signals {
    /// Series with points in the window, by group, then metric, then labels.
    pub tracks: Vec<SeriesTrack>,
    /// Series the focus kept beyond [`MAX_SERIES`].
    pub left_out: usize,
    /// Notes (fault markers) in the window and focus.
    pub notes: Vec<Note>,
    /// Bytes of the file up to the last line at or before the window's end:
    /// what replaying the rules needs.
    pub until_end: u64,
    /// First and last timestamp of the whole recording.
    pub span: Option<(Nanos, Nanos)>,
}

/// A point: time and value.
type Point = (Nanos, f64);

struct Acc {
    group: Group,
    spec: SeriesSpec,
    /// A counter's rate, from the previous reading inside the window or not.
    rate: Option<CounterRate>,
    /// Lowest and highest point per bucket.
    buckets: Vec<Option<(Point, Point)>>,
}

impl Acc {
    fn add(&mut self, window: &Window, t: Nanos, v: f64) {
        if !window.contains(t) {
            return;
        }
        if self.buckets.is_empty() {
            self.buckets = vec![None; BUCKETS];
        }
        let span = (window.to - window.from) as i128;
        let i = (((t - window.from) as i128 * BUCKETS as i128) / span).clamp(0, BUCKETS as i128 - 1) as usize;
        let b = &mut self.buckets[i];
        *b = Some(match *b {
            None => ((t, v), (t, v)),
            Some((lo, hi)) => (if v < lo.1 { (t, v) } else { lo }, if v > hi.1 { (t, v) } else { hi }),
        });
    }

    /// A sample at `t`: counters drawn as the rate since the previous
    /// reading (decoded as the engine decodes them: a reading it would
    /// refuse is left out), the rest as read.
    fn sample(&mut self, window: &Window, t: Nanos, value: Value) {
        match &mut self.rate {
            Some(rate) => {
                if let Some(r) = rate.next(t, value) {
                    self.add(window, t, r);
                }
            }
            None => self.add(window, t, value.as_f64()),
        }
    }

    fn points(&self) -> Vec<(Nanos, f64)> {
        let mut out = Vec::new();
        for (lo, hi) in self.buckets.iter().flatten() {
            let (a, b) = if lo.0 <= hi.0 { (lo, hi) } else { (hi, lo) };
            out.push(*a);
            if b != a {
                out.push(*b);
            }
        }
        out
    }
}

/// The recording at `path` with its rotated files, oldest first, as one
/// stream of events (each file starts a segment).
fn reader(path: &Path, progress: &Progress) -> Result<Reader<Box<dyn std::io::BufRead + Send>>, ReadError> {
    let input = recorded::open(path)?;
    let input: Box<dyn std::io::BufRead + Send> = Box::new(std::io::BufReader::new(progress.reader(input)));
    Ok(Reader::new(input, &path.display().to_string()))
}

/// The bytes of the recording at `path` with its rotated files: what
/// [`read`] reads.
pub fn recorded_bytes(path: &Path) -> u64 {
    let mut total = std::fs::metadata(path).map_or(0, |m| m.len());
    let mut k = 1;
    while let Ok(m) = std::fs::metadata(engine::recording::rotated(path, k)) {
        total += m.len();
        k += 1;
    }
    total
}

/// The nodes of each job, from its `job_node_info` series.
pub fn job_nodes(path: &Path) -> Result<BTreeMap<String, BTreeSet<String>>, ReadError> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut input = reader(path, &Progress::hidden())?;
    while let Some(event) = input.next_event()? {
        if let Event::Series(_, spec) = event {
            let labels = &spec.labels;
            if let (true, Some(job), Some(node)) = (spec.metric == JOB_NODE_INFO, labels.get("job"), labels.get("node"))
            {
                out.entry(job.to_string()).or_default().insert(node.to_string());
            }
        }
    }
    Ok(out)
}

/// A series across the recording's segments: its metric and labels (ids
/// are only valid within a segment).
type SeriesKey = (String, String);

/// Reads the signals of `window` that `focus` keeps.
/// `progress` follows the bytes read.
pub fn read(
    path: &Path,
    window: &Window,
    focus: &Focus,
    topology: Option<&Topology>,
    progress: &Progress,
) -> Result<Signals, ReadError> {
    let mut kept: HashMap<SeriesKey, Acc> = HashMap::new();
    // This segment's ids → the series they declare.
    let mut ids: HashMap<u32, SeriesKey> = HashMap::new();
    let mut out = Signals::default();
    let mut input = reader(path, progress)?;
    while let Some(event) = input.next_event()? {
        let at = match event {
            Event::Series(id, spec) => {
                let key = (spec.metric.clone(), spec.labels.to_string());
                let keep = focus.keeps(&spec.labels, topology);
                match Group::of(&spec.metric, &spec.labels) {
                    Some(_) if kept.contains_key(&key) => {}
                    Some(group) if keep && kept.len() < MAX_SERIES => {
                        let rate = match spec.registered_kind() {
                            SampleKind::Counter(c) => Some(CounterRate::new(c)),
                            _ => None,
                        };
                        kept.insert(key.clone(), Acc { group, spec, rate, buckets: Vec::new() });
                    }
                    Some(_) if keep => out.left_out += 1,
                    _ => {}
                }
                ids.insert(id, key);
                None
            }
            Event::Sample { id, t, value } => {
                if let Some(acc) = ids.get(&id).and_then(|key| kept.get_mut(key)) {
                    acc.sample(window, t, value);
                }
                Some(t)
            }
            Event::Note(note) if note.kind == SEGMENT_START => {
                ids.clear();
                Some(note.ts)
            }
            Event::Note(note) => {
                let t = note.ts;
                if window.contains(t) && (note.labels.0.is_empty() || focus.keeps(&note.labels, topology)) {
                    out.notes.push(note);
                }
                Some(t)
            }
        };
        if let Some(t) = at {
            out.span = Some(out.span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        }
        if at.is_none_or(|t| t <= window.to) {
            out.until_end = input.offset();
        }
    }
    let mut tracks: Vec<SeriesTrack> = kept
        .into_values()
        .filter(|a| a.buckets.iter().any(Option::is_some))
        .map(|a| SeriesTrack {
            group: a.group,
            rate: matches!(a.spec.kind, SampleKind::Counter(_)),
            points: a.points(),
            metric: a.spec.metric,
            labels: a.spec.labels,
            relevance: 0.0,
            flat: false,
        })
        .collect();
    tracks.sort_by(|a, b| (a.group, &a.metric, a.labels.to_string()).cmp(&(b.group, &b.metric, b.labels.to_string())));
    out.tracks = tracks;
    out.notes.sort_by_key(|n| n.ts);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::SECOND;

    const REC: &str = r#"{"series":0,"metric":"ethtool_tx_prio_pause_duration_us","labels":{"node":"n1","netdev":"eth0"},"kind":"counter","bits":32,"overflow":"wrap"}
{"series":1,"metric":"gpu_utilization_percent","labels":{"node":"n2","gpu":"0"},"kind":"gauge"}
{"series":2,"metric":"job_node_info","labels":{"job":"j","node":"n2"},"kind":"gauge"}
{"s":0,"t":0,"v":4294967000}
{"s":1,"t":0,"v":90}
{"s":0,"t":1000000000,"v":200}
{"s":1,"t":1000000000,"v":10}
{"note":"fault","t":1000000000,"text":"storm","labels":{"node":"n1"}}
{"s":0,"t":2000000000,"v":700}
{"s":2,"t":2000000000,"v":1}
{"s":0,"t":9000000000,"v":800}
"#;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    #[test]
    fn counters_become_rates_across_a_wrap_and_gauges_stay_values() {
        let f = file(REC);
        let w = Window::new(0, 3 * SECOND).unwrap();
        let s = read(f.path(), &w, &Focus::All, None, &Progress::hidden()).unwrap();
        let groups: Vec<(Group, &str)> = s.tracks.iter().map(|t| (t.group, t.metric.as_str())).collect();
        assert_eq!(
            groups,
            [(Group::Gpu, "gpu_utilization_percent"), (Group::Nic, "ethtool_tx_prio_pause_duration_us")]
        );
        // 4294967000 → 200 wraps a 32-bit counter: 296 + 200 = 496 per second.
        assert_eq!(s.tracks[1].points, [(SECOND, 496.0), (2 * SECOND, 500.0)]);
        assert!(s.tracks[1].rate && !s.tracks[0].rate);
        assert_eq!(s.tracks[0].points, [(0, 90.0), (SECOND, 10.0)]);
        assert_eq!(s.notes.len(), 1);
        // The sample at 9 s is after the window: replaying the rules stops before it.
        assert_eq!(s.until_end as usize, REC.len() - REC.lines().last().unwrap().len() - 1);
    }

    #[test]
    fn moved_tracks_come_first_and_flat_ones_are_marked() {
        let track = |metric: &str, node: &str, points: Vec<(Nanos, f64)>| SeriesTrack {
            group: Group::Nic,
            metric: metric.into(),
            labels: engine::Labels::from_pairs([("node", node)]),
            rate: true,
            points,
            relevance: 0.0,
            flat: false,
        };
        let flat: Vec<(Nanos, f64)> = (0..20).map(|i| (i * SECOND, 100.0)).collect();
        let small: Vec<(Nanos, f64)> = (0..20).map(|i| (i * SECOND, if i < 10 { 0.0 } else { 5e4 })).collect();
        let big: Vec<(Nanos, f64)> = (0..20).map(|i| (i * SECOND, if i < 10 { 0.0 } else { 9e5 })).collect();
        let m = "ethtool_tx_prio_pause_duration_us";
        let mut tracks = vec![track(m, "a", flat), track(m, "b", small), track(m, "c", big)];
        rank_tracks(&mut tracks, 10 * SECOND);
        let order: Vec<(&str, bool)> = tracks.iter().map(|t| (t.labels.get("node").unwrap(), t.flat)).collect();
        assert_eq!(order, [("c", false), ("b", false), ("a", true)]);
    }

    #[test]
    fn the_focus_filters_series_and_notes() {
        let f = file(REC);
        let w = Window::new(0, 3 * SECOND).unwrap();
        let s = read(f.path(), &w, &Focus::Node("n2".into()), None, &Progress::hidden()).unwrap();
        assert_eq!(s.tracks.len(), 1);
        assert_eq!(s.tracks[0].labels.get("node"), Some("n2"));
        assert!(s.notes.is_empty(), "the note is about n1");
        assert_eq!(job_nodes(f.path()).unwrap()["j"], ["n2".to_string()].into());
    }

    #[test]
    fn a_bad_line_names_the_file_and_line() {
        let f = file("{\"series\":0,\"metric\":\"m\",\"kind\":\"gauge\"}\n{\"s\":3,\"t\":0,\"v\":1}\n");
        let err = read(f.path(), &Window::new(0, 1).unwrap(), &Focus::All, None, &Progress::hidden())
            .unwrap_err()
            .to_string();
        assert!(err.ends_with(":2: series 3 used before it is declared"), "{err}");
        let f = file("not json\n");
        let err = read(f.path(), &Window::new(0, 1).unwrap(), &Focus::All, None, &Progress::hidden())
            .unwrap_err()
            .to_string();
        assert!(err.contains(":1: not a recording line"), "{err}");
    }
}
