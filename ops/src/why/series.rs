//! The recording, read once into every series on one shared time grid.
//!
//! `why` compares a baseline with a regression it does not know before the
//! whole file is read (the step time decides where it starts), and a
//! recording can be an hour of a few thousand series at 100 ms. Holding
//! every point would cost gigabytes, so each series keeps at most
//! [`BUCKETS`] time buckets (sum and count) on a grid shared by all series:
//! the grid starts at the first sample and doubles its bucket width when
//! the recording outgrows it, merging pairs of buckets. A minute of
//! recording keeps its native 100 ms resolution; an hour gets ~2 s buckets,
//! still fine enough to say which signal moved first.
//!
//! Counters are kept as rates ([`super::rates`]); events as counts per
//! bucket (a bucket without an event is a zero, not a gap).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::BufRead;

use engine::recording::{Chunk, Event, Reader, RecordingError, Samples, Select, SEGMENT_START};
use engine::{Labels, Nanos, SampleKind, Value, SECOND};

use super::rates::CounterRate;

/// Buckets per series at most.
pub const BUCKETS: usize = 2048;

/// The first bucket width: 25 ms, finer than any sensor's period.
const FIRST_WIDTH: Nanos = 25_000_000;

/// The metric that carries the job → nodes mapping.
pub const JOB_NODE_INFO: &str = "job_node_info";

/// How a series' values are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A counter, kept as its rate per second.
    Rate,
    /// A level.
    Gauge,
    /// Discrete occurrences, kept as counts.
    Event,
}

/// One series on the grid.
#[derive(Debug, Clone)]
pub struct Series {
    /// Metric name.
    pub metric: String,
    /// Labels as recorded.
    pub labels: Labels,
    /// How to read it.
    pub shape: Shape,
    sums: Vec<f64>,
    counts: Vec<u32>,
}

impl Series {
    fn add(&mut self, i: usize, v: f64) {
        if self.sums.len() <= i {
            self.sums.resize(i + 1, 0.0);
            self.counts.resize(i + 1, 0);
        }
        self.sums[i] += v;
        self.counts[i] += 1;
    }

    /// Halves the resolution: bucket `i` becomes the sum of `2i` and `2i+1`.
    fn merge_pairs(&mut self) {
        let n = self.sums.len().div_ceil(2);
        for i in 0..n {
            let (a, b) = (2 * i, 2 * i + 1);
            self.sums[i] = self.sums[a] + self.sums.get(b).copied().unwrap_or(0.0);
            self.counts[i] = self.counts[a] + self.counts.get(b).copied().unwrap_or(0);
        }
        self.sums.truncate(n);
        self.counts.truncate(n);
    }

    /// The series' points on `grid` between `from` and `to` (inclusive
    /// bucket starts): a bucket's mean for rates and gauges (empty buckets
    /// skipped), its count per second for events (empty buckets are zeros,
    /// up to the end of the recording).
    pub fn points(&self, grid: &Grid, from: Nanos, to: Nanos) -> Vec<(Nanos, f64)> {
        let (a, b) = (grid.index_floor(from), grid.index_floor(to));
        let width_s = grid.width as f64 / SECOND as f64;
        let mut out = Vec::with_capacity(b.saturating_sub(a) + 1);
        for i in a..=b.min(grid.len.saturating_sub(1)) {
            let (sum, n) = (self.sums.get(i).copied().unwrap_or(0.0), self.counts.get(i).copied().unwrap_or(0));
            let t = grid.start_of(i);
            match self.shape {
                Shape::Event => out.push((t, n as f64 / width_s)),
                _ if n > 0 => out.push((t, sum / n as f64)),
                _ => {}
            }
        }
        out
    }
}

/// The shared time grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Start of bucket 0: the first sample's time.
    pub origin: Nanos,
    /// Bucket width.
    pub width: Nanos,
    /// Buckets in use (up to the last sample).
    pub len: usize,
}

impl Grid {
    /// The bucket of `t`, clamped at 0 (a sample before the first one).
    pub fn index_floor(&self, t: Nanos) -> usize {
        ((t - self.origin).max(0) / self.width) as usize
    }

    /// When bucket `i` starts.
    pub fn start_of(&self, i: usize) -> Nanos {
        self.origin + i as Nanos * self.width
    }

    /// The last sample's bucket end.
    pub fn end(&self) -> Nanos {
        self.start_of(self.len)
    }
}

/// Everything `why` reads from a recording.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The grid all series share.
    pub grid: Grid,
    /// Every signal series (the job mapping excluded).
    pub series: Vec<Series>,
    /// Each job's nodes, from its `job_node_info` series.
    pub job_nodes: BTreeMap<String, BTreeSet<String>>,
}

/// A segment's series ids and what each stands for. Writers number their
/// series from 0, so a vector indexed by id holds them; an id past
/// [`DENSE_IDS`] (a recording written by something else) goes to a map, so
/// one odd id cannot make a huge vector.
#[derive(Default)]
struct SegmentIds {
    dense: Vec<Option<Option<usize>>>,
    sparse: HashMap<u32, Option<usize>>,
}

/// Ids below this are kept in the vector.
const DENSE_IDS: u32 = 1 << 20;

impl SegmentIds {
    fn insert(&mut self, id: u32, series: Option<usize>) {
        if id < DENSE_IDS {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            self.dense[i] = Some(series);
        } else {
            self.sparse.insert(id, series);
        }
    }

    /// The series index of a sample's id; `None` for an undeclared id or
    /// one that is not a signal.
    fn get(&self, id: u32) -> Option<usize> {
        if id < DENSE_IDS {
            self.dense.get(id as usize).copied().flatten().flatten()
        } else {
            self.sparse.get(&id).copied().flatten()
        }
    }
}

/// Reads a recording (`origin` names it in errors).
pub fn read(input: impl BufRead, origin: &str) -> Result<Recorded, RecordingError> {
    read_selected(input, origin, Select::all())
}

/// The series being read onto the grid.
struct Gathering {
    grid: Grid,
    series: Vec<Series>,
    /// Each series' counter state, by its index (`None` for levels and
    /// events).
    rates: Vec<Option<CounterRate>>,
}

impl Gathering {
    /// The bucket of a sample at `t`, after widening the grid until it
    /// holds `t` (the first sample sets the grid's origin).
    fn bucket(&mut self, t: Nanos) -> usize {
        if self.grid.origin == Nanos::MIN {
            self.grid.origin = t;
        }
        let mut i = self.grid.index_floor(t);
        while i >= BUCKETS {
            self.grid.width *= 2;
            self.grid.len = self.grid.len.div_ceil(2);
            self.series.iter_mut().for_each(Series::merge_pairs);
            i = self.grid.index_floor(t);
        }
        self.grid.len = self.grid.len.max(i + 1);
        i
    }

    /// One sample of series `at`, read at `t`.
    fn sample(&mut self, at: usize, t: Nanos, value: Value) {
        let v = match &mut self.rates[at] {
            Some(rate) => match rate.next(t, value) {
                Some(r) => r,
                None => return,
            },
            None => value.as_f64(),
        };
        let i = self.bucket(t);
        self.series[at].add(i, v);
    }

    /// A block's samples: the grid is widened once for the block's last
    /// time and each time's bucket found once, so a sample costs its
    /// counter's decoding and an addition.
    fn block(&mut self, block: Samples, ids: &SegmentIds, buckets: &mut Vec<usize>) {
        let times = block.times();
        let wanted = block.wanted();
        if wanted.is_empty() || !block.runs().any(|run| ids.get(run.id).is_some()) {
            return;
        }
        let (first, last) = (times[wanted.start as usize], times[wanted.end as usize - 1]);
        self.bucket(first);
        self.bucket(last);
        buckets.clear();
        buckets.extend(times.iter().map(|t| self.grid.index_floor(*t)));
        for run in block.runs() {
            let Some(index) = ids.get(run.id) else { continue };
            let series = &mut self.series[index];
            let (at, values) = run.wanted_slices();
            match &mut self.rates[index] {
                Some(rate) => {
                    for (&k, &value) in at.iter().zip(values) {
                        if let Some(r) = rate.next(times[k as usize], value) {
                            series.add(buckets[k as usize], r);
                        }
                    }
                }
                None => {
                    for (&k, value) in at.iter().zip(values) {
                        series.add(buckets[k as usize], value.as_f64());
                    }
                }
            }
        }
    }
}

/// Reads what `select` wants of a recording (`origin` names it in errors).
pub fn read_selected(input: impl BufRead, origin: &str, select: Select) -> Result<Recorded, RecordingError> {
    let mut reader = Reader::new(input, origin).select(select);
    let grid = Grid { origin: Nanos::MIN, width: FIRST_WIDTH, len: 0 };
    let mut g = Gathering { grid, series: Vec::new(), rates: Vec::new() };
    // Each series' key → its index. A sample costs one lookup of its id,
    // not a hash of its metric and labels.
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    // This segment's ids → the series' index (ids are only valid within a
    // segment); `None` for the job's node list.
    let mut ids = SegmentIds::default();
    let mut job_nodes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut buckets = Vec::new();
    while let Some(chunk) = reader.next_chunk()? {
        let event = match chunk {
            Chunk::Samples(block) => {
                g.block(block, &ids, &mut buckets);
                continue;
            }
            Chunk::Event(event) => event,
        };
        match event {
            Event::Series(id, spec) => {
                if spec.metric == JOB_NODE_INFO {
                    if let (Some(j), Some(n)) = (spec.labels.get("job"), spec.labels.get("node")) {
                        job_nodes.entry(j.to_string()).or_default().insert(n.to_string());
                    }
                    ids.insert(id, None);
                    continue;
                }
                let key = (spec.metric.clone(), spec.labels.to_string());
                let at = *index.entry(key).or_insert_with(|| {
                    let (shape, rate) = match spec.registered_kind() {
                        SampleKind::Counter(c) => (Shape::Rate, Some(CounterRate::new(c))),
                        SampleKind::Gauge => (Shape::Gauge, None),
                        SampleKind::Event => (Shape::Event, None),
                    };
                    g.rates.push(rate);
                    g.series.push(Series {
                        metric: spec.metric,
                        labels: spec.labels,
                        shape,
                        sums: Vec::new(),
                        counts: Vec::new(),
                    });
                    g.series.len() - 1
                });
                ids.insert(id, Some(at));
            }
            Event::Sample { id, t, value } => {
                if let Some(at) = ids.get(id) {
                    g.sample(at, t, value);
                }
            }
            Event::Note(note) if note.kind == SEGMENT_START => ids = SegmentIds::default(),
            Event::Note(_) => {}
        }
    }
    let Gathering { mut grid, series, .. } = g;
    if grid.origin == Nanos::MIN {
        grid.origin = 0;
    }
    Ok(Recorded { grid, series, job_nodes })
}

#[cfg(test)]
mod tests {
    use super::*;

    const REC: &str = r#"{"series":0,"metric":"ethtool_tx_prio_pause_duration_us","labels":{"node":"n1","netdev":"eth0"},"kind":"counter","bits":32,"overflow":"wrap"}
{"series":1,"metric":"job_node_info","labels":{"job":"j","node":"n1"},"kind":"gauge"}
{"series":2,"metric":"gpu_xid","labels":{"node":"n1","gpu":"0"},"kind":"event"}
{"s":0,"t":0,"v":4294967000}
{"s":1,"t":0,"v":1}
{"s":0,"t":1000000000,"v":200}
{"s":2,"t":1000000000,"v":79}
{"note":"start","t":1500000000}
{"series":7,"metric":"ethtool_tx_prio_pause_duration_us","labels":{"node":"n1","netdev":"eth0"},"kind":"counter","bits":32,"overflow":"wrap"}
{"s":7,"t":2000000000,"v":700}
"#;

    #[test]
    fn counters_are_rates_across_a_wrap_and_segments_and_events_are_counts() {
        let r = read(REC.as_bytes(), "mem").unwrap();
        assert_eq!(r.job_nodes["j"], ["n1".to_string()].into());
        assert_eq!(r.series.len(), 2, "the job mapping is not a signal");
        let pause = &r.series[0];
        let pts = pause.points(&r.grid, 0, 3 * SECOND);
        // 4294967000 → 200 wraps 32 bits: 496/s; the series continues across the segment start.
        assert_eq!(pts, [(SECOND, 496.0), (2 * SECOND, 500.0)]);
        let xid = r.series[1].points(&r.grid, SECOND, SECOND);
        assert_eq!(xid, [(SECOND, 1.0 / (r.grid.width as f64 / SECOND as f64))]);
    }

    #[test]
    fn a_recording_of_blocks_reads_as_its_json_lines_do() {
        use engine::recording::{BlockOptions, BlockWriter, Writer};
        use engine::{CounterSpec, SeriesSpec};
        let spec = |metric: &str, kind: SampleKind| SeriesSpec {
            metric: metric.into(),
            labels: Labels::from_pairs([("node", "n1")]),
            kind,
        };
        let declared = [
            (0, spec("ethtool_tx_prio_pause_duration_us", SampleKind::Counter(CounterSpec::U32_WRAP))),
            (1, spec("gpu_temperature", SampleKind::Gauge)),
            (2, spec("gpu_xid", SampleKind::Event)),
            (3, spec(JOB_NODE_INFO, SampleKind::Gauge)),
        ];
        let mut blocks = BlockWriter::new(Vec::new(), BlockOptions::default()).unwrap();
        let mut lines = Writer::new(Vec::new());
        // Twenty minutes at 100 ms: the grid widens several times, and a
        // daemon restart in the middle numbers the series anew.
        for k in 0..12_000i64 {
            let t = 1_000 * SECOND + k * 100_000_000;
            let restart = k == 6_000;
            if k == 0 || restart {
                let shift = if restart { 10 } else { 0 };
                if restart {
                    blocks.segment(t - 1, "restart").unwrap();
                    let note = engine::Note {
                        ts: t - 1,
                        kind: SEGMENT_START.into(),
                        text: "restart".into(),
                        labels: Labels::default(),
                    };
                    lines.note(&note).unwrap();
                }
                for (id, spec) in &declared {
                    blocks.declare(id + shift, spec).unwrap();
                    lines.declare(id + shift, spec).unwrap();
                }
            }
            let shift = if k >= 6_000 { 10 } else { 0 };
            let mut samples = vec![
                (shift, Value::Count((4_294_967_000u64 + 1_000 * k as u64) % (1 << 32))),
                (1 + shift, Value::Real(60.0 + (k % 13) as f64)),
            ];
            if k % 997 == 0 {
                samples.push((2 + shift, Value::Real(79.0)));
            }
            if k == 0 {
                samples.push((3, Value::Real(1.0)));
            }
            for (id, v) in samples {
                blocks.sample(id, t, v).unwrap();
                lines.write_raw_sample(id, t, v).unwrap();
            }
        }
        blocks.finish().unwrap();
        let (a, b) =
            (read(blocks.get_ref().as_slice(), "blocks").unwrap(), read(lines.inner().as_slice(), "lines").unwrap());
        assert_eq!(a.grid, b.grid);
        assert!(a.grid.width > FIRST_WIDTH, "the grid widened");
        assert_eq!(a.job_nodes, b.job_nodes);
        assert_eq!(a.series.len(), 3);
        for (x, y) in a.series.iter().zip(&b.series) {
            assert_eq!((&x.metric, &x.sums, &x.counts), (&y.metric, &y.sums, &y.counts));
        }
    }

    #[test]
    fn a_long_recording_doubles_the_bucket_width_and_keeps_its_sums() {
        let mut text = String::from("{\"series\":0,\"metric\":\"g\",\"labels\":{},\"kind\":\"gauge\"}\n");
        for k in 0..10_000i64 {
            text.push_str(&format!("{{\"s\":0,\"t\":{},\"v\":{}}}\n", k * 100_000_000, k % 2));
        }
        let r = read(text.as_bytes(), "mem").unwrap();
        assert!(r.grid.len <= BUCKETS);
        assert_eq!(r.grid.width, 800_000_000, "1000 s in at most 2048 buckets");
        assert_eq!(r.grid.len, 1250, "the grid ends at the last sample");
        let pts = r.series[0].points(&r.grid, 0, r.grid.end());
        assert!(pts.iter().all(|(_, v)| (*v - 0.5).abs() < 1e-9), "means of 0/1 pairs: {:?}", &pts[..3]);
    }
}
