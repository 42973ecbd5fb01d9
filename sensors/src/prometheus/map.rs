//! From a page to engine samples: every sample line is mapped to its engine
//! series through a cache keyed by the series text as the exporter wrote it
//! (`name{labels}`), so a scrape of known series touches no string, takes
//! no lock and allocates nothing per sample.
//!
//! The cache remembers, per series text, what became of it: the engine
//! series id, "not on the allow-list", or "refused" (the sensor's
//! `max_series` cap, or a series the engine will not take). It also
//! remembers which series followed which on the last page: exporters print
//! their series in the same order every time, so the next line is first
//! compared with the series expected there, and only a line that is not it
//! is hashed and looked up. A series not seen for [`STALE_SCRAPES`] scrapes
//! is dropped at the next sweep, so a target whose label values churn cannot grow the cache
//! without end; nothing is ever dropped because a page is large.
//!
//! Registration happens only once the whole page has parsed: a page that
//! turns out to be garbage halfway registers nothing.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use engine::series::SeriesError;
use engine::{CounterSpec, Labels, Nanos, Sample, SampleKind, SensorContext, SeriesId, SeriesSpec, Value};
use hashbrown::HashTable;
use regex::Regex;

use super::parse::{Expected, ParseError, RawLabels, Reader, SampleRef};

/// A cached series not seen for this many scrapes is dropped: the cache is
/// swept once every `STALE_SCRAPES` scrapes (when it holds series the
/// current page did not have), so a series goes `STALE_SCRAPES` to
/// `2 × STALE_SCRAPES − 1` scrapes after it was last seen.
pub const STALE_SCRAPES: u32 = 3;

/// The most series texts the cache holds at once: twice what one page may
/// carry. Reached only by a target whose series all change from one scrape
/// to the next; the series not on the current page are then dropped.
pub const MAX_ENTRIES: usize = 2 * super::parse::MAX_SAMPLES;

/// How often a refused series is offered to the engine again (its cap may
/// have been raised).
pub const REFUSED_RETRY: Duration = Duration::from_secs(60);

/// No entry.
const NONE: u32 = u32::MAX;

/// A sample waiting for its series to be registered.
const PLACEHOLDER: SeriesId = SeriesId(u32::MAX);

/// A sample's value as the engine takes it: a counter (and a histogram's
/// or summary's `_bucket`/`_count`) as its nearest integer, anything else
/// as it is; `None` for a value that would poison the windows (a negative
/// or non-finite counter is not a count; a NaN or infinite level breaks
/// window arithmetic).
#[inline]
fn value_of(value: f64, cumulative: bool) -> Option<Value> {
    if !value.is_finite() {
        return None;
    }
    if cumulative {
        // Counters are exact integers in the engine.
        return (value >= 0.0).then(|| Value::Count(value.round().min(u64::MAX as f64) as u64));
    }
    Some(Value::Real(value))
}

/// What became of a series text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Seen, not registered yet (its page has not finished parsing).
    Unresolved,
    /// Its metric is not on the allow-list.
    Skip,
    /// Registered.
    Series(SeriesId),
    /// The engine refused it.
    Refused,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    hash: u64,
    /// The series text: `keys[key..key + len]`.
    key: u32,
    len: u32,
    name_len: u32,
    /// The entry that followed this one on the last page, or `NONE`.
    next: u32,
    /// The scrape that last saw it.
    seen: u32,
    /// The scrape that last registered it.
    tried: u32,
    state: State,
    /// Whether it was registered as a counter.
    cumulative: bool,
}

/// Series ids by series text (see the module's documentation).
#[derive(Debug, Default)]
struct Cache {
    entries: Vec<Entry>,
    /// The series texts, back to back.
    keys: Vec<u8>,
    index: HashTable<u32>,
    hasher: RandomState,
    /// The first entry of the last page.
    head: u32,
    /// The current scrape.
    generation: u32,
    /// Entries seen in the current scrape.
    touched: usize,
    /// Registered entries per series id: two series texts can become one
    /// series when `labels` drops what told them apart.
    ids: HashMap<SeriesId, u32>,
    /// Series ids with more than one entry.
    shared: usize,
}

impl Cache {
    fn new() -> Cache {
        Cache { head: NONE, ..Cache::default() }
    }

    fn key(&self, i: u32) -> &[u8] {
        let e = &self.entries[i as usize];
        &self.keys[e.key as usize..(e.key + e.len) as usize]
    }

    /// The entry expected after `prev` (`NONE`: at the start of the page).
    fn next_of(&self, prev: u32) -> u32 {
        if prev == NONE {
            self.head
        } else {
            self.entries[prev as usize].next
        }
    }

    fn expected(&self, i: u32) -> Expected<'_> {
        Expected { series: self.key(i), name_len: self.entries[i as usize].name_len as usize }
    }

    fn link(&mut self, prev: u32, i: u32) {
        if prev == NONE {
            self.head = i;
        } else {
            self.entries[prev as usize].next = i;
        }
    }

    fn touch(&mut self, i: u32) {
        let e = &mut self.entries[i as usize];
        if e.seen != self.generation {
            e.seen = self.generation;
            self.touched += 1;
        }
    }

    fn find(&self, series: &str) -> (u64, Option<u32>) {
        let hash = self.hasher.hash_one(series.as_bytes());
        let (entries, keys) = (&self.entries, &self.keys);
        let found = self.index.find(hash, |&i| {
            let e = &entries[i as usize];
            e.hash == hash && &keys[e.key as usize..(e.key + e.len) as usize] == series.as_bytes()
        });
        (hash, found.copied())
    }

    /// Adds a series text; `state` is what is known of it already.
    fn insert(&mut self, hash: u64, series: &str, name_len: usize, state: State) -> u32 {
        let i = self.entries.len() as u32;
        self.entries.push(Entry {
            hash,
            key: self.keys.len() as u32,
            len: series.len() as u32,
            name_len: name_len as u32,
            next: NONE,
            seen: NONE,
            tried: NONE,
            state,
            cumulative: false,
        });
        self.keys.extend_from_slice(series.as_bytes());
        let entries = &self.entries;
        self.index.insert_unique(hash, i, |&j| entries[j as usize].hash);
        i
    }

    fn set_state(&mut self, i: u32, state: State) {
        let old = std::mem::replace(&mut self.entries[i as usize].state, state);
        if let State::Series(id) = old {
            if let Some(n) = self.ids.get_mut(&id) {
                *n -= 1;
                if *n == 1 {
                    self.shared -= 1;
                }
                if *n == 0 {
                    self.ids.remove(&id);
                }
            }
        }
        if let State::Series(id) = state {
            let n = self.ids.entry(id).or_insert(0);
            *n += 1;
            if *n == 2 {
                self.shared += 1;
            }
        }
    }

    /// Keeps the entries `keep` says to, in their order; rebuilds the key
    /// store, the index, the links and the id counts. Returns where each
    /// entry went (`NONE`: dropped).
    fn compact(&mut self, keep: impl Fn(&Entry) -> bool) -> Vec<u32> {
        let mut remap = vec![NONE; self.entries.len()];
        let mut entries = Vec::with_capacity(self.entries.len());
        let mut keys = Vec::with_capacity(self.keys.len());
        for (i, e) in self.entries.iter().enumerate() {
            if keep(e) {
                remap[i] = entries.len() as u32;
                let mut e = *e;
                let start = keys.len() as u32;
                keys.extend_from_slice(&self.keys[e.key as usize..(e.key + e.len) as usize]);
                e.key = start;
                entries.push(e);
            }
        }
        let map = |i: u32| if i == NONE { NONE } else { remap[i as usize] };
        for e in &mut entries {
            e.next = map(e.next);
        }
        self.head = map(self.head);
        self.index.clear();
        for (i, e) in entries.iter().enumerate() {
            self.index.insert_unique(e.hash, i as u32, |&j| entries[j as usize].hash);
        }
        self.ids.clear();
        self.shared = 0;
        for e in &entries {
            if let State::Series(id) = e.state {
                let n = self.ids.entry(id).or_insert(0);
                *n += 1;
                if *n == 2 {
                    self.shared += 1;
                }
            }
        }
        self.touched = entries.iter().filter(|e| e.seen == self.generation).count();
        self.entries = entries;
        self.keys = keys;
        remap
    }

    /// After a page: drops the series not seen for `STALE_SCRAPES` scrapes,
    /// once every `STALE_SCRAPES` scrapes and only if there are any.
    fn end_scrape(&mut self) {
        let now = self.generation;
        if self.touched < self.entries.len() && now % STALE_SCRAPES == 0 {
            self.compact(|e| now.wrapping_sub(e.seen) < STALE_SCRAPES);
        }
    }
}

/// What the last page gave besides its samples.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageReport {
    /// Samples whose series the engine refused (the sensor's `max_series`
    /// cap, or a series it will not take); they were not sent.
    pub refused: usize,
    /// Why, for the first series the engine refused on this page or an
    /// earlier one.
    pub refusal: Option<String>,
}

/// Maps pages of one target to engine samples (what a scrape does once it
/// has the page).
#[derive(Debug)]
pub struct Mapper {
    ctx: SensorContext,
    prefix: String,
    labels: BTreeMap<String, String>,
    allow: Vec<Regex>,
    cache: Cache,
    /// Samples to patch once their series are registered: (index in the
    /// output, entry).
    pending: Vec<(u32, u32)>,
    seen: HashSet<SeriesId>,
    registrations: u64,
    last_len: usize,
    next_retry: Instant,
    report: PageReport,
}

impl Mapper {
    /// A mapper registering into `ctx`: metric names get `prefix`, labels
    /// are kept and renamed by `labels` (all kept when empty), and only
    /// names matching one of `allow` are kept (all when empty).
    pub fn new(ctx: SensorContext, prefix: &str, labels: BTreeMap<String, String>, allow: Vec<Regex>) -> Mapper {
        Mapper {
            ctx,
            prefix: prefix.to_string(),
            labels,
            allow,
            cache: Cache::new(),
            pending: Vec::new(),
            seen: HashSet::new(),
            registrations: 0,
            last_len: 0,
            next_retry: Instant::now() + REFUSED_RETRY,
            report: PageReport::default(),
        }
    }

    /// How many times a series was registered (`SensorContext::register`).
    pub fn registrations(&self) -> u64 {
        self.registrations
    }

    /// How many series texts the cache holds.
    pub fn cached(&self) -> usize {
        self.cache.entries.len()
    }

    /// What the last page gave besides its samples.
    pub fn report(&self) -> &PageReport {
        &self.report
    }

    /// Maps one page read at `ts` to samples. Counters (and histograms'
    /// and summaries' `_bucket`/`_count`) become `Value::Count` of the
    /// nearest integer; the rest `Value::Real`. Dropping labels can fold
    /// two exporter series into one: the first of them wins. A page that
    /// does not parse gives its first error and registers nothing.
    pub fn map(&mut self, text: &str, ts: Nanos) -> Result<Vec<Sample>, ParseError> {
        let retry = Instant::now() >= self.next_retry;
        if retry {
            self.next_retry = Instant::now() + REFUSED_RETRY;
        }
        self.map_page(text, ts, retry)
    }

    /// [`map`](Self::map), with whether refused series are offered again.
    ///
    /// The loop is the measured hot path (`prometheus_scrape_per_sample` in
    /// `scripts/instructions.sh`): its parts are functions of their own for
    /// reading, and inlined, so a known series still costs no call.
    fn map_page(&mut self, text: &str, ts: Nanos, retry_refused: bool) -> Result<Vec<Sample>, ParseError> {
        self.begin_page();
        let mut out = Vec::with_capacity(self.last_len);
        let mut reader = Reader::new(text);
        let mut prev = NONE;
        loop {
            let want = self.cache.next_of(prev);
            let expected = (want != NONE).then(|| self.cache.expected(want));
            let sample = match reader.next_sample(expected) {
                None => break,
                Some(Err(e)) => {
                    self.cache.end_scrape();
                    return Err(e);
                }
                Some(Ok(s)) => s,
            };
            let i = if sample.expected { want } else { self.entry_of(&sample, &mut prev) };
            self.cache.touch(i);
            prev = i;
            let cumulative = sample.is_cumulative();
            let Some(value) = value_of(sample.value, cumulative) else { continue };
            self.retype(i, cumulative);
            match self.cache.entries[i as usize].state {
                State::Series(series) => out.push(Sample { series, ts, value }),
                State::Skip => {}
                State::Refused if !retry_refused => self.report.refused += 1,
                State::Refused | State::Unresolved => {
                    self.pending.push((out.len() as u32, i));
                    out.push(Sample { series: PLACEHOLDER, ts, value });
                }
            }
        }
        self.resolve_pending(&mut out);
        self.cache.end_scrape();
        self.last_len = out.len();
        Ok(out)
    }

    /// A new scrape: the cache's generation moves on, nothing touched or
    /// pending yet.
    #[inline]
    fn begin_page(&mut self) {
        let cache = &mut self.cache;
        cache.generation = cache.generation.wrapping_add(1);
        if cache.generation == NONE {
            cache.generation = 0;
        }
        cache.touched = 0;
        self.pending.clear();
        self.report.refused = 0;
    }

    /// The entry of a sample that is not the one expected after `prev`:
    /// looked up, or added (allowed or skipped by the allow-list), and
    /// linked after `prev`. Adding to a full cache first drops the series
    /// of earlier pages, which renumbers the entries: `prev` and the
    /// pending samples follow.
    #[inline]
    fn entry_of(&mut self, sample: &SampleRef<'_>, prev: &mut u32) -> u32 {
        let cache = &mut self.cache;
        let (hash, found) = cache.find(sample.series);
        let i = match found {
            Some(i) => i,
            None => {
                if cache.entries.len() >= MAX_ENTRIES {
                    // Only series of earlier pages go: one page
                    // holds at most half of MAX_ENTRIES.
                    let now = cache.generation;
                    let remap = cache.compact(|e| e.seen == now);
                    *prev = if *prev == NONE { NONE } else { remap[*prev as usize] };
                    for p in &mut self.pending {
                        p.1 = remap[p.1 as usize];
                    }
                }
                let allowed = self.allow.is_empty() || self.allow.iter().any(|r| r.is_match(sample.name));
                let state = if allowed { State::Unresolved } else { State::Skip };
                cache.insert(hash, sample.series, sample.name.len(), state)
            }
        };
        cache.link(*prev, i);
        i
    }

    /// Entry `i`'s family is now `cumulative` or not: if that changed, it
    /// is registered again as what it is now.
    #[inline]
    fn retype(&mut self, i: u32, cumulative: bool) {
        let entry = self.cache.entries[i as usize];
        if entry.cumulative != cumulative {
            self.cache.entries[i as usize].cumulative = cumulative;
            if entry.state != State::Skip {
                self.cache.set_state(i, State::Unresolved);
            }
        }
    }

    /// Registers the series of the page's new samples, now that the whole
    /// page parsed, and drops the samples of refused series and the second
    /// of two series texts that became one series.
    fn resolve_pending(&mut self, out: &mut Vec<Sample>) {
        let mut dropped = false;
        for k in 0..self.pending.len() {
            let (slot, i) = self.pending[k];
            let id = match self.cache.entries[i as usize].state {
                // Registered for an earlier line of this page.
                State::Series(id) => Some(id),
                // Refused for an earlier line of this page.
                State::Refused if self.cache.entries[i as usize].tried == self.cache.generation => None,
                _ => self.register(i),
            };
            match id {
                Some(id) => out[slot as usize].series = id,
                None => {
                    self.report.refused += 1;
                    dropped = true;
                }
            }
        }
        if dropped || self.cache.shared > 0 {
            let seen = &mut self.seen;
            seen.clear();
            let shared = self.cache.shared > 0;
            out.retain(|s| s.series != PLACEHOLDER && (!shared || seen.insert(s.series)));
        }
    }

    /// Registers entry `i`'s series; `None` if the engine refused it.
    fn register(&mut self, i: u32) -> Option<SeriesId> {
        let entry = self.cache.entries[i as usize];
        let key = self.cache.key(i);
        // The key was read from a page as a series text: it is UTF-8.
        let series = std::str::from_utf8(key).unwrap_or_default();
        let name_len = entry.name_len as usize;
        let name = series.get(..name_len).unwrap_or_default();
        let mut labels = Labels::default();
        for (k, v) in RawLabels::of_series(series, name_len).unwrap_or_default().iter() {
            if self.labels.is_empty() {
                labels.insert(k, v);
            } else if let Some(to) = self.labels.get(k) {
                labels.insert(to.clone(), v);
            }
        }
        let kind = if entry.cumulative { SampleKind::Counter(CounterSpec::U64) } else { SampleKind::Gauge };
        let spec = SeriesSpec { metric: format!("{}{}", self.prefix, name), labels, kind };
        self.registrations += 1;
        self.cache.entries[i as usize].tried = self.cache.generation;
        match self.ctx.register(&spec) {
            Ok(id) => {
                self.cache.set_state(i, State::Series(id));
                Some(id)
            }
            Err(error) => {
                self.cache.set_state(i, State::Refused);
                if self.report.refusal.is_none() || matches!(error, SeriesError::Cardinality { .. }) {
                    self.report.refusal = Some(error.to_string());
                }
                None
            }
        }
    }
}

/// Rate-limits the log of refused series: at most one line per
/// `every`, carrying how many samples were refused since the last one.
#[derive(Debug)]
pub(super) struct RefusalLog {
    every: Duration,
    last: Option<Instant>,
    since: u64,
}

impl RefusalLog {
    pub(super) fn new(every: Duration) -> RefusalLog {
        RefusalLog { every, last: None, since: 0 }
    }

    /// `refused` samples were refused at `now`: the count to log, if a
    /// line is due.
    pub(super) fn note(&mut self, now: Instant, refused: usize) -> Option<u64> {
        self.since += refused as u64;
        if self.since == 0 || self.last.is_some_and(|t| now.duration_since(t) < self.every) {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing::SensorHarness;
    use std::fmt::Write as _;

    fn mapper(h: &SensorHarness) -> Mapper {
        Mapper::new(h.ctx.clone(), "", BTreeMap::new(), Vec::new())
    }

    /// A page of `n` counters, `m<i % 100>{node,dev}` reading `base + i`.
    /// A thousand stable series, then a thousand whose label values are
    /// new on every scrape (a `pid` label, say).
    fn churning_page(scrape: u64) -> String {
        let mut text = page(1_000, scrape);
        for i in 0..1_000 {
            let _ = writeln!(text, "job_step{{pid=\"{}\"}} {i}", scrape * 1_000 + i);
        }
        text
    }

    fn page(n: usize, base: u64) -> String {
        let mut text = String::with_capacity(n * 64);
        for i in 0..n {
            if i % (n / 100).max(1) == 0 {
                let _ = writeln!(text, "# TYPE m{} counter", i / (n / 100).max(1));
            }
            let _ = writeln!(
                text,
                "m{}{{node=\"node-{:05}\",dev=\"mlx5_{}\"}} {}",
                i / (n / 100).max(1),
                i / 8,
                i % 8,
                base + i as u64
            );
        }
        text
    }

    #[test]
    fn a_target_of_150k_stable_series_registers_them_once() {
        let h = SensorHarness::new("prom", 200_000);
        let mut m = mapper(&h);
        let first = m.map(&page(150_000, 0), 1).unwrap();
        assert_eq!((first.len(), m.registrations(), m.cached()), (150_000, 150_000, 150_000));
        for scrape in 1..5u64 {
            let samples = m.map(&page(150_000, scrape * 1_000), 1 + scrape as i64).unwrap();
            assert_eq!(m.registrations(), 150_000, "scrape {scrape} registered again");
            assert_eq!(m.cached(), 150_000);
            assert_eq!(samples.len(), 150_000);
            for (i, s) in samples.iter().enumerate().step_by(997) {
                assert_eq!((s.series, s.value), (first[i].series, Value::Count(scrape * 1_000 + i as u64)));
            }
        }
        assert_eq!(h.table.read().len(), 150_000);
        assert_eq!(m.report().refused, 0);
    }

    #[test]
    fn churning_label_values_cannot_grow_the_cache() {
        let h = SensorHarness::new("prom", 1 << 20);
        let mut m = mapper(&h);
        let mut largest = 0;
        for scrape in 0..40u64 {
            let samples = m.map(&churning_page(scrape), scrape as i64).unwrap();
            assert_eq!(samples.len(), 2_000);
            largest = largest.max(m.cached());
            if (scrape + 1) % u64::from(STALE_SCRAPES) == 0 {
                // Swept: the stable series and the last STALE_SCRAPES pages' churn.
                assert!(m.cached() <= 1_000 + STALE_SCRAPES as usize * 1_000, "after a sweep: {}", m.cached());
            }
        }
        // The stable thousand plus the churn of the pages since the last
        // sweep: at most 2 × STALE_SCRAPES − 1 of them.
        assert!(largest <= 1_000 + (2 * STALE_SCRAPES as usize - 1) * 1_000, "{largest}");
        assert_eq!(m.registrations(), 1_000 + 40 * 1_000, "the stable series registered once");
    }

    #[test]
    fn churn_past_the_cap_is_refused_counted_and_still_bounded() {
        let h = SensorHarness::new("prom", 1_500);
        let mut m = mapper(&h);
        let mut largest = 0;
        for scrape in 0..20u64 {
            let samples = m.map(&churning_page(scrape), scrape as i64).unwrap();
            let refused = m.report().refused;
            assert_eq!(samples.len() + refused, 2_000);
            if scrape == 0 {
                assert_eq!(refused, 500, "the cap is 1,500");
            } else {
                assert_eq!(refused, 1_000);
            }
            largest = largest.max(m.cached());
        }
        assert!(largest <= 1_000 + (2 * STALE_SCRAPES as usize - 1) * 1_000, "{largest}");
        let why = m.report().refusal.clone().unwrap();
        assert!(why.contains("reached its cap of 1500 series"), "{why}");
        assert_eq!(h.table.read().len(), 1_500);
    }

    #[test]
    fn a_refused_series_is_offered_again_only_when_a_retry_is_due() {
        let h = SensorHarness::new("prom", 2);
        let mut m = mapper(&h);
        let text = "a 1\nb 2\nc 3\nc 3\n";
        let samples = m.map_page(text, 1, false).unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!((m.report().refused, m.registrations()), (2, 3), "c twice, registered once");
        m.map_page(text, 2, false).unwrap();
        assert_eq!((m.report().refused, m.registrations()), (2, 3), "not offered again");
        m.map_page(text, 3, true).unwrap();
        assert_eq!((m.report().refused, m.registrations()), (2, 4), "offered again once");
    }

    #[test]
    fn a_page_that_fails_registers_nothing() {
        let h = SensorHarness::new("prom", 10);
        let mut m = mapper(&h);
        let err = m.map("a 1\nb 2\n<html>\n", 1).unwrap_err();
        assert_eq!(err.line, 3);
        assert_eq!((m.registrations(), h.table.read().len()), (0, 0));
        let samples = m.map("a 1\nb 2\n", 2).unwrap();
        assert_eq!((samples.len(), m.registrations()), (2, 2));
    }

    #[test]
    fn values_kinds_allow_list_and_labels_map_as_before() {
        let h = SensorHarness::new("prom", 100);
        let labels =
            BTreeMap::from([("gpu".to_string(), "gpu".to_string()), ("Hostname".to_string(), "node".to_string())]);
        let allow = vec![Regex::new("^(?:g_.*|c_total|h.*)$").unwrap()];
        let mut m = Mapper::new(h.ctx.clone(), "dcgm_", labels, allow);
        let text = "# TYPE g_temp gauge\ng_temp{gpu=\"0\",Hostname=\"n1\",UUID=\"u0\"} 61\ng_temp{gpu=\"0\",Hostname=\"n1\",UUID=\"u1\"} 62\ng_nan NaN\n# TYPE c counter\nc_total 2.6\nc_total{x=\"neg\"} -1\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_sum 1.5\nother 1\n";
        let samples = m.map(text, 7).unwrap();
        let reg = h.table.read();
        let got: Vec<String> = samples
            .iter()
            .map(|s| {
                let kind = if matches!(reg.info(s.series).kind, SampleKind::Counter(_)) { "counter" } else { "gauge" };
                format!("{}{} {kind} {:?}", reg.metric_name(s.series), reg.labels(s.series), s.value)
            })
            .collect();
        assert_eq!(
            got,
            [
                "dcgm_g_temp{gpu=\"0\",node=\"n1\"} gauge Real(61.0)",
                "dcgm_c_total{} counter Count(3)",
                "dcgm_h_bucket{} counter Count(3)",
                "dcgm_h_sum{} gauge Real(1.5)",
            ],
            "UUID dropped so the second g_temp folds into the first; NaN, negative counter and `other` skipped"
        );
        assert!(samples.iter().all(|s| s.ts == 7));
        // `other` is cached as not allowed, and nothing registers again.
        let before = m.registrations();
        assert_eq!(m.map(text, 8).unwrap().len(), 4);
        assert_eq!(m.registrations(), before);
    }

    #[test]
    fn reordered_pages_and_changed_types_map_to_the_same_series() {
        let h = SensorHarness::new("prom", 100);
        let mut m = mapper(&h);
        let a = m.map("x 1\ny 2\nz 3\n", 1).unwrap();
        let b = m.map("z 30\nw 5\ny 20\nx 10\n", 2).unwrap();
        let id = |v: &[Sample], k: usize| v[k].series;
        assert_eq!((id(&b, 0), id(&b, 2), id(&b, 3)), (id(&a, 2), id(&a, 1), id(&a, 0)));
        assert_eq!(m.registrations(), 4);
        // The family of `x` becomes a counter: the engine refuses the
        // same series as another kind, and that is counted.
        let c = m.map("# TYPE x counter\nx 11\ny 21\n", 3).unwrap();
        assert_eq!((c.len(), m.report().refused), (1, 1));
        assert!(m.report().refusal.as_deref().unwrap().contains("was registered as Gauge"), "{:?}", m.report());
    }

    #[test]
    fn refusal_lines_are_rate_limited_and_carry_the_count() {
        let mut log = RefusalLog::new(Duration::from_secs(60));
        let t0 = Instant::now();
        assert_eq!(log.note(t0, 0), None);
        assert_eq!(log.note(t0, 3), Some(3));
        assert_eq!(log.note(t0 + Duration::from_secs(10), 3), None);
        assert_eq!(log.note(t0 + Duration::from_secs(30), 0), None);
        assert_eq!(log.note(t0 + Duration::from_secs(59), 2), None);
        assert_eq!(log.note(t0 + Duration::from_secs(61), 1), Some(6));
        assert_eq!(log.note(t0 + Duration::from_secs(200), 0), None, "nothing refused since");
    }
}
