//! A rule subject, packed: what the evaluator keeps per (rule, group) is
//! the largest part of its memory, so a subject is 16 bytes and its lookup
//! entry 4.
//!
//! - Its labels are not copied: a subject points at a series whose labels
//!   are the subject's (the first series routed to it), or, once a second
//!   series with other labels joins it, at the label set they share, kept in
//!   the rule's side table of narrowed sets.
//! - Its times are 100 ms ticks since the evaluator's epoch (its first
//!   sample), in an `i32`: ±6.8 years around that epoch. They are rounded
//!   up, so staleness is declared at most one tick late and a warm-up lasts
//!   at most one tick longer, never earlier or shorter.
//! - Its flags and the hash of its cached script result share one word.
//! - Subjects are found by their group-by values through a hash table that
//!   stores only subject ids and recomputes keys from the labels when it
//!   needs them (routing a new series, growing the table).

use hashbrown::HashTable;

use crate::labels::{LabelSet, Sym};
use crate::rule::MAX_GROUP_BY;
use crate::series::{Registry, SeriesId};
use crate::time::{Nanos, MS};

/// A subject's group-by label values; `u32::MAX` where the label is absent.
pub(super) type SubjectKey = [u32; MAX_GROUP_BY];

/// The resolution of subject times.
pub(super) const TICK: Nanos = 100 * MS;

/// A subject time that was never set.
pub(super) const NEVER: i32 = i32::MIN;

/// Converts between sample times and subject ticks.
#[derive(Debug, Clone, Copy)]
pub(super) struct Epoch(pub(super) Nanos);

impl Epoch {
    /// `ts` as a tick, rounded up, saturating at the ends of the range.
    #[inline]
    pub(super) fn tick(self, ts: Nanos) -> i32 {
        let rel = ts.saturating_sub(self.0);
        let t = rel.div_euclid(TICK) + (rel.rem_euclid(TICK) != 0) as i64;
        t.clamp(NEVER as i64 + 1, i32::MAX as i64) as i32
    }

    /// The time of tick `t` (`Nanos::MIN` for [`NEVER`]).
    #[inline]
    pub(super) fn time(self, t: i32) -> Nanos {
        if t == NEVER {
            Nanos::MIN
        } else {
            self.0.saturating_add(t as i64 * TICK)
        }
    }
}

const DIRTY: u32 = 1;
const POLLED: u32 = 1 << 1;
const CACHE_VALID: u32 = 1 << 2;
const CACHE_CLEAR: u32 = 1 << 3;
const CACHE_RESULT: u32 = 1 << 4;
const FLAG_BITS: u32 = 5;

/// Set in [`Subject::labels`] when it indexes the narrowed label sets.
const NARROWED: u32 = 1 << 31;

/// The result of a script call remembered for a subject: skipped when the
/// same condition sees the same window values again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CachedResult {
    pub(super) clear: bool,
    pub(super) result: bool,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Subject {
    labels: u32,
    /// Flags in the low bits, the cached result's input hash above them.
    word: u32,
    /// Newest sample of a counter or gauge series, in ticks. Events do not
    /// count: they come when something happens, so silence is not staleness.
    pub(super) last_seen: i32,
    /// First sample of the subject in this rule runtime, in ticks. Until the
    /// longest window has been filled since then, a firing instance is not
    /// cleared: an empty window after a restart or an edit of the rule reads
    /// like a healthy one, and resolving (and undoing) on it acts on no data.
    pub(super) first_seen: i32,
}

impl Subject {
    /// A subject whose labels are those of `series`.
    pub(super) fn new(series: SeriesId) -> Subject {
        debug_assert!(series.0 & NARROWED == 0);
        Subject { labels: series.0, word: 0, last_seen: NEVER, first_seen: NEVER }
    }

    #[inline]
    fn flag(&self, f: u32) -> bool {
        self.word & f != 0
    }

    #[inline]
    fn set_flag(&mut self, f: u32, on: bool) {
        if on {
            self.word |= f;
        } else {
            self.word &= !f;
        }
    }

    /// Marked for evaluation.
    #[inline]
    pub(super) fn dirty(&self) -> bool {
        self.flag(DIRTY)
    }

    #[inline]
    pub(super) fn set_dirty(&mut self, on: bool) {
        self.set_flag(DIRTY, on)
    }

    /// Fed by at least one counter or gauge series (so it can go stale).
    #[inline]
    pub(super) fn polled(&self) -> bool {
        self.flag(POLLED)
    }

    pub(super) fn set_polled(&mut self) {
        self.set_flag(POLLED, true)
    }

    /// The cached result if it was computed from inputs hashing to `hash`.
    #[inline]
    pub(super) fn cached(&self, hash: u64) -> Option<CachedResult> {
        (self.flag(CACHE_VALID) && self.word >> FLAG_BITS == fold_hash(hash))
            .then(|| CachedResult { clear: self.flag(CACHE_CLEAR), result: self.flag(CACHE_RESULT) })
    }

    pub(super) fn set_cached(&mut self, hash: u64, cached: CachedResult) {
        let flags = self.word & (DIRTY | POLLED);
        self.word = flags | (fold_hash(hash) << FLAG_BITS) | CACHE_VALID;
        self.set_flag(CACHE_CLEAR, cached.clear);
        self.set_flag(CACHE_RESULT, cached.result);
    }

    /// The subject's labels: the labels every series of it shares.
    pub(super) fn labels<'a>(&self, reg: &'a Registry, narrowed: &'a [LabelSet]) -> &'a LabelSet {
        if self.labels & NARROWED != 0 {
            &narrowed[(self.labels & !NARROWED) as usize]
        } else {
            &reg.info(SeriesId(self.labels)).labels
        }
    }

    /// Keeps only the labels the subject shares with a series labelled
    /// `other`, adding a narrowed set to `narrowed` the first time they differ.
    pub(super) fn narrow(&mut self, other: &LabelSet, reg: &Registry, narrowed: &mut Vec<LabelSet>) {
        let current = self.labels(reg, narrowed);
        let shared: Vec<(Sym, Sym)> =
            current.pairs().iter().copied().filter(|(n, v)| other.get(*n) == Some(*v)).collect();
        if shared.len() == current.pairs().len() {
            return;
        }
        let set = LabelSet::new(shared);
        if self.labels & NARROWED != 0 {
            narrowed[(self.labels & !NARROWED) as usize] = set;
        } else {
            self.labels = NARROWED | narrowed.len() as u32;
            narrowed.push(set);
        }
    }
}

/// 27 bits of a 64-bit hash, mixed so every input bit reaches them. A
/// collision returns the previous result for inputs that changed, about
/// once in 2^27 changes of one subject's window values; the next change
/// evaluates again.
#[inline]
fn fold_hash(hash: u64) -> u32 {
    (hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (32 + FLAG_BITS)) as u32
}

/// The key of a subject with labels `labels` under `group_by`.
pub(super) fn key_of(labels: &LabelSet, group_by: &[Sym]) -> SubjectKey {
    let mut key: SubjectKey = [u32::MAX; MAX_GROUP_BY];
    for (slot, g) in key.iter_mut().zip(group_by) {
        *slot = labels.get(*g).map_or(u32::MAX, |v| v.0);
    }
    key
}

fn hash_key(key: &SubjectKey) -> u64 {
    // FNV's multiply over the symbols, a word at a time, then a
    // multiplicative finish: keys are small integers, so SipHash's
    // protection against chosen inputs buys nothing. Not the fnv crate: its
    // FNV-1a goes byte by byte, four rounds per symbol, which measured 7 %
    // more instructions per ingested sample (scripts/instructions.sh).
    let mut x: u64 = 0xcbf2_9ce4_8422_2325;
    for k in key {
        x = (x ^ *k as u64).wrapping_mul(0x0100_0000_01b3);
    }
    (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9)
}

/// Subject ids by key. Stores ids only; keys are recomputed from the
/// subjects' labels, which always carry the group-by labels.
#[derive(Debug, Default)]
pub(super) struct SubjectIndex {
    table: HashTable<u32>,
}

impl SubjectIndex {
    /// The subject with `key`, if any.
    pub(super) fn find(
        &self,
        key: &SubjectKey,
        subjects: &[Subject],
        group_by: &[Sym],
        reg: &Registry,
        narrowed: &[LabelSet],
    ) -> Option<u32> {
        self.table
            .find(hash_key(key), |&id| key_of(subjects[id as usize].labels(reg, narrowed), group_by) == *key)
            .copied()
    }

    /// Adds subject `id` with `key` (not present before).
    pub(super) fn insert(
        &mut self,
        key: &SubjectKey,
        id: u32,
        subjects: &[Subject],
        group_by: &[Sym],
        reg: &Registry,
        narrowed: &[LabelSet],
    ) {
        self.table.insert_unique(hash_key(key), id, |&other| {
            hash_key(&key_of(subjects[other as usize].labels(reg, narrowed), group_by))
        });
    }

    /// Bytes held (for the memory budget): an id and a control byte per bucket.
    pub(super) fn bytes(&self) -> usize {
        self.table.capacity() * (std::mem::size_of::<u32>() + 1)
    }
}

/// Grows `v` by a quarter (at least 16) when full, instead of doubling: the
/// vectors indexed per series and per subject are the evaluator's memory,
/// and routing, which pushes onto them, is off the hot path.
pub(super) fn reserve_for_push<T>(v: &mut Vec<T>) {
    if v.len() == v.capacity() {
        v.reserve_exact(v.capacity() / 4 + 16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_round_up_and_come_back_exact_on_tick_boundaries() {
        let e = Epoch(1_000 * MS);
        assert_eq!(e.tick(1_000 * MS), 0);
        assert_eq!(e.tick(1_001 * MS), 1, "rounded up");
        assert_eq!(e.tick(900 * MS), -1);
        assert_eq!(e.time(e.tick(3_000 * MS)), 3_000 * MS);
        assert!(e.time(e.tick(1_050 * MS)) >= 1_050 * MS);
        assert_eq!(e.time(NEVER), Nanos::MIN);
        assert_eq!(e.tick(Nanos::MIN), NEVER + 1, "saturates instead of wrapping");
    }

    #[test]
    fn flags_and_cache_share_a_word_without_disturbing_each_other() {
        let mut s = Subject::new(SeriesId(7));
        s.set_polled();
        s.set_dirty(true);
        assert_eq!(s.cached(42), None);
        s.set_cached(42, CachedResult { clear: true, result: false });
        assert!(s.dirty() && s.polled());
        assert_eq!(s.cached(42), Some(CachedResult { clear: true, result: false }));
        assert_eq!(s.cached(43), None);
        s.set_dirty(false);
        assert!(!s.dirty() && s.polled());
        assert_eq!(s.cached(42), Some(CachedResult { clear: true, result: false }));
        assert_eq!(std::mem::size_of::<Subject>(), 16);
    }
}
