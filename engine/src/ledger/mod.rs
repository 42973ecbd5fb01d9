//! The ledger: every decision, durably, in sled.
//!
//! One record per decision, keyed by its id (ids are monotonic, so key order
//! is time order). The dispatcher writes the **intent** (phase
//! [`Phase::Intent`]) and flushes it to disk *before* an actuator runs, and
//! the outcome after. A record left in the intent phase is an action a crash
//! interrupted: at start the dispatcher asks the actuator to verify the
//! target and records what it found; it never repeats the action blindly.
//!
//! Retention: at most [`Retention::max_records`] records and none older than
//! [`Retention::max_age`], except records still in effect or awaiting
//! approval, kept while the daemon runs: the dispatcher's tick removes what
//! is beyond the bounds a step at a time ([`Ledger::compact_some`]), as soon
//! as there is more than the bound.
//!
//! Two indexes keep a restart from reading the whole history: `live` holds
//! the ids of the records a restart needs (intents, actions in effect,
//! requests awaiting approval), and `by_subject` the ids of every record
//! by rule, subject and action, so a proposal made again after a crash
//! finds its earlier decision without a scan. Each put updates the record
//! and both indexes in one transaction.
//!
//! **Nothing is acted on without its record on disk.** A record sled
//! refuses (the disk is full) is kept in memory and read over the disk's,
//! and written again when the store recovers ([`journal`]); the store says
//! meanwhile that it cannot be written ([`Ledger::write_health`]), and the
//! dispatcher calls no actuator until it can.
//!
//! Format: the trees of the sled database; each decision compressed JSON
//! ([`codec`]: about 150 bytes a record instead of 1.6 KiB), the rest JSON.
//!
//! | tree | key | value |
//! |---|---|---|
//! | `decisions` | decision id | [`Decision`] ([`codec`]; plain JSON in ledgers of earlier versions, still read) |
//! | `decisions-live` | decision id | empty |
//! | `decisions-by-subject` | 16 bytes of SHA-256 of rule, subject and action, then the decision id (index version 2; version 1 keyed by the text itself, rebuilt when opened) | empty |
//! | `meta` | `breaker`, `mode`, `silence-seq`, `index-version` | [`BreakerState`] (with its trip history), [`ModeSet`], the last silence number |
//! | `silences` | silence id | [`Silence`]: operators' silences, kept across restarts |
//! | `resolutions` | rule, subject, first-seen time | [`Resolution`]: incidents ended by hand |
//! | `offenders` | rule, subject | [`Offender`]: firings on an escalation ladder and the rung that worked ([`offenders`]) |
//!
//! `silences`, `resolutions`, `silence-seq` and the breaker's `trips` were
//! added without a version change: an older version ignores them (and so
//! forgets silences and trips), a newer one reads a ledger without them as
//! empty. A version before the compressed records cannot read a ledger
//! this one wrote.

pub mod codec;
pub mod journal;
mod offenders;
mod rule_records;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::de::DeserializeOwned;
use sha2::Digest;
use sled::Transactional;

use crate::contracts::{Decision, Phase, Proposal, Resolution, Verdict};
use crate::labels::Labels;
use crate::policy::BreakerState;
use crate::silence::Silence;
use crate::store::{Store, StoreError, WriteHealth};
use crate::time::{Nanos, SECOND};

pub use codec::{decode, encode};
use journal::Journal;
pub use offenders::{Offender, Standing, Worked};
pub use rule_records::RuleRecord;

/// How much history the ledger keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Most records kept.
    pub max_records: usize,
    /// Oldest record kept.
    pub max_age: Nanos,
}

impl Default for Retention {
    fn default() -> Retention {
        Retention { max_records: 100_000, max_age: 30 * 24 * 3600 * SECOND }
    }
}

/// Which records to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Decided at or after this time.
    pub since: Option<Nanos>,
    /// Of this rule.
    pub rule: Option<String>,
    /// Whose action target contains this text (`node-03`, `leaf-rail2`).
    pub target: Option<String>,
}

impl Filter {
    /// Whether `d` is one of the records asked for.
    pub fn matches(&self, d: &Decision) -> bool {
        self.since.is_none_or(|t| d.proposal.decided_at >= t)
            && self.rule.as_ref().is_none_or(|r| &d.proposal.rule == r)
            && self.target.as_ref().is_none_or(|t| d.proposal.action.target.to_string().contains(t.as_str()))
    }
}

/// One page of records ([`Ledger::page`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// The records, oldest first.
    pub decisions: Vec<Decision>,
    /// The id to ask the next page after; `None` when this was the last.
    pub next_after: Option<String>,
}

/// The most records one page holds: a decision is about 2 KiB, so 1,000 of
/// them are 2 MiB, half of gRPC's default message limit.
pub const MAX_PAGE: usize = 1_000;

/// Handle to the ledger; cheap to clone, safe to share.
#[derive(Debug, Clone)]
pub struct Ledger {
    store: Store,
    retention: Retention,
    journal: Arc<Mutex<Journal>>,
    /// Records in `decisions`, counted once at the first compaction and
    /// kept since (`None` before): the cap is checked on every tick, and
    /// counting sled's records is a scan.
    count: Arc<Mutex<Option<usize>>>,
}

const DECISIONS: &str = "decisions";
const LIVE: &str = "decisions-live";
const BY_SUBJECT: &str = "decisions-by-subject";
const META: &str = "meta";
const SILENCES: &str = "silences";
const RESOLUTIONS: &str = "resolutions";

const BREAKER_KEY: &[u8] = b"breaker";
const MODE_KEY: &[u8] = b"mode";
/// The number of the last silence set: ids are never reused, even after
/// the silences they named ended and were dropped, since decisions quote them.
const SILENCE_SEQ_KEY: &[u8] = b"silence-seq";

/// The global mode an operator set (`rocemend mode`), kept across restarts.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ModeSet {
    /// The mode.
    pub mode: crate::mode::Mode,
    /// Who set it.
    pub by: String,
    /// When (the dispatcher's clock).
    pub at: Nanos,
}
/// The version of the indexes in `meta`; a ledger with another (written by
/// an older version) has its indexes built once when it is opened.
const INDEX_KEY: &[u8] = b"index-version";
const INDEX_VERSION: &[u8] = b"2";

/// Whether a restart needs the record: an intent, an action in effect, a
/// request awaiting approval, or one waiting for a canary.
pub fn is_live(d: &Decision) -> bool {
    d.phase == Phase::Intent
        || matches!(d.verdict, Verdict::AwaitingApproval { .. })
        || (matches!(d.verdict, Verdict::Held { .. }) && d.waits_for.is_some())
        || (matches!(d.verdict, Verdict::Executed { .. })
            && d.undo_of.is_none()
            && d.undone_by.is_none()
            && d.drift.is_none())
}

/// The `by_subject` prefix of a proposal's decisions: 16 bytes of the
/// SHA-256 of rule, subject and action (a fixed 16 bytes a record instead
/// of their text; a collision only makes `latest_for` read one more record,
/// which it checks).
fn subject_prefix(p: &Proposal) -> Vec<u8> {
    let mut hash = sha2::Sha256::new();
    for part in [p.rule.as_str(), &p.subject.to_string(), &p.action.dedup_key()] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hash.finalize()[..16].to_vec()
}

fn same_subject(a: &Proposal, b: &Proposal) -> bool {
    a.rule == b.rule && a.subject == b.subject && a.action.dedup_key() == b.action.dedup_key()
}

/// The `resolutions` key of the incident of `rule` on `subject` first seen at `started`.
fn resolution_key(rule: &str, subject: &Labels, started: Nanos) -> Vec<u8> {
    format!("{rule}\0{subject}\0{started}").into_bytes()
}

fn subject_key(d: &Decision) -> Vec<u8> {
    let mut key = subject_prefix(&d.proposal);
    key.extend_from_slice(d.id.as_bytes());
    key
}

fn json<T: DeserializeOwned>(key: &[u8], value: &[u8]) -> Result<T, StoreError> {
    decode(key, value)
}

impl Ledger {
    /// The ledger inside `store`.
    pub fn open(store: &Store, retention: Retention) -> Result<Ledger, StoreError> {
        let ledger = Ledger { store: store.clone(), retention, journal: Arc::default(), count: Arc::default() };
        for name in [DECISIONS, LIVE, BY_SUBJECT, META, SILENCES, RESOLUTIONS, offenders::OFFENDERS] {
            store.tree(name)?;
        }
        if ledger.tree(META)?.get(INDEX_KEY)?.as_deref() != Some(INDEX_VERSION) {
            ledger.rebuild_indexes()?;
        }
        Ok(ledger)
    }

    fn tree(&self, name: &'static str) -> Result<sled::Tree, StoreError> {
        self.store.tree(name)
    }

    fn journal(&self) -> MutexGuard<'_, Journal> {
        // Every critical section is a few map operations: a panic in one
        // cannot leave the maps half-changed.
        self.journal.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn count(&self) -> MutexGuard<'_, Option<usize>> {
        self.count.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Builds both indexes from the records (a ledger of an older version).
    fn rebuild_indexes(&self) -> Result<(), StoreError> {
        let (decisions, live, by_subject) = (self.tree(DECISIONS)?, self.tree(LIVE)?, self.tree(BY_SUBJECT)?);
        self.store.write(|_| {
            live.clear()?;
            by_subject.clear()?;
            for item in decisions.iter() {
                let (k, v) = item?;
                let d: Decision = decode(&k, &v)?;
                if is_live(&d) {
                    live.insert(d.id.as_bytes(), &[])?;
                }
                by_subject.insert(subject_key(&d), &[])?;
            }
            self.tree(META)?.insert(INDEX_KEY, INDEX_VERSION)?;
            Ok(())
        })?;
        self.store.flush()
    }

    /// A new decision id: monotonic across restarts (sled keeps the counter),
    /// so ids sort in the order decisions were made.
    pub fn next_id(&self) -> Result<String, StoreError> {
        Ok(format!("{:010x}", self.store.generate_id()?))
    }

    /// Writes a record (buffered: sled flushes within half a second), with
    /// its index entries, atomically. A record refused is kept in memory
    /// (read over the disk's) and written again when the store recovers.
    pub fn put(&self, d: &Decision) -> Result<(), StoreError> {
        let result = self.store.write(|_| self.insert(d));
        match &result {
            Ok(new) => {
                self.journal().written(d);
                if *new {
                    if let Some(n) = self.count().as_mut() {
                        *n += 1;
                    }
                }
            }
            Err(_) => self.journal().refused(d),
        }
        let too_many = self.journal().unflushed.len() >= journal::MAX_UNSAVED;
        if too_many && result.is_ok() {
            // Bounds what a later failure could make it keep in memory.
            self.flush()?;
        }
        result.map(|_| ())
    }

    /// Inserts `d` and its index entries in one transaction; whether it is new.
    fn insert(&self, d: &Decision) -> Result<bool, StoreError> {
        use sled::transaction::{ConflictableTransactionError, TransactionError};
        let (id, value, live, by_subject) = (d.id.as_bytes(), encode(d), is_live(d), subject_key(d));
        let trees = (self.tree(DECISIONS)?, self.tree(LIVE)?, self.tree(BY_SUBJECT)?);
        let result = (&trees.0, &trees.1, &trees.2).transaction(|(decisions, index, subjects)| {
            let new = decisions.insert(id, value.as_slice())?.is_none();
            if live {
                index.insert(id, &[])?;
            } else {
                index.remove(id)?;
            }
            subjects.insert(by_subject.as_slice(), &[])?;
            Ok::<bool, ConflictableTransactionError<()>>(new)
        });
        match result {
            Ok(new) => Ok(new),
            Err(TransactionError::Storage(e)) => Err(e.into()),
            Err(TransactionError::Abort(())) => unreachable!("the transaction never aborts"),
        }
    }

    /// Writes a record and waits until it is on disk.
    pub fn put_durable(&self, d: &Decision) -> Result<(), StoreError> {
        self.put(d)?;
        self.flush()
    }

    /// Waits until every record written is on disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        match self.store.flush() {
            Ok(()) => {
                self.journal().flushed();
                Ok(())
            }
            Err(e) => {
                self.journal().flush_failed();
                Err(e)
            }
        }
    }

    /// Why the ledger cannot be written now, if it cannot.
    pub fn unwritable(&self) -> Option<String> {
        self.store.unwritable()
    }

    /// Whether the ledger can be written now, and since when not.
    pub fn write_health(&self) -> WriteHealth {
        self.store.write_health()
    }

    /// Records kept in memory because the disk refused them, and records
    /// forgotten past [`journal::MAX_UNSAVED`] since the daemon started.
    pub fn unsaved(&self) -> (usize, u64) {
        let journal = self.journal();
        (journal.unsaved.len(), journal.lost)
    }

    /// If the store cannot be written: opens it again when space is back
    /// and writes again what it refused. Whether it can be written now.
    pub fn recover(&self) -> Result<bool, StoreError> {
        if self.store.unwritable().is_none() {
            return Ok(true);
        }
        let replay = || {
            let records = self.journal().replay();
            records.iter().try_for_each(|d| self.put(d))
        };
        let recovered = self.store.recover(replay)?;
        if recovered {
            self.journal().flushed();
        }
        Ok(recovered)
    }

    /// One record.
    pub fn get(&self, id: &str) -> Result<Option<Decision>, StoreError> {
        if let Some(d) = self.journal().unsaved.get(id) {
            return Ok(Some(d.clone()));
        }
        match self.tree(DECISIONS)?.get(id.as_bytes())? {
            Some(v) => Ok(Some(decode(id.as_bytes(), &v)?)),
            None => Ok(None),
        }
    }

    /// `records` with the versions kept in memory read over them, and the
    /// records only in memory that `keep` accepts added, in id order.
    fn overlay(&self, records: Vec<Decision>, keep: impl Fn(&Decision) -> bool) -> Vec<Decision> {
        let journal = self.journal();
        if journal.unsaved.is_empty() {
            return records;
        }
        let mut all: std::collections::BTreeMap<String, Decision> =
            records.into_iter().map(|d| (d.id.clone(), d)).collect();
        for (id, d) in &journal.unsaved {
            all.remove(id);
            if keep(d) {
                all.insert(id.clone(), d.clone());
            }
        }
        all.into_values().collect()
    }

    /// Records matching `filter`, oldest first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<Decision>, StoreError> {
        let mut out = Vec::new();
        for item in self.tree(DECISIONS)?.iter() {
            let (k, v) = item?;
            let d: Decision = decode(&k, &v)?;
            if filter.matches(&d) {
                out.push(d);
            }
        }
        Ok(self.overlay(out, |d| filter.matches(d)))
    }

    /// Up to `limit` (at most [`MAX_PAGE`]) records matching `filter` whose
    /// ids come after `after`, oldest first: a listing in bounded pieces.
    pub fn page(&self, filter: &Filter, after: Option<&str>, limit: usize) -> Result<Page, StoreError> {
        let limit = limit.clamp(1, MAX_PAGE);
        let decisions = self.tree(DECISIONS)?;
        let range = match after {
            Some(after) => {
                decisions.range::<&[u8], _>((std::ops::Bound::Excluded(after.as_bytes()), std::ops::Bound::Unbounded))
            }
            None => decisions.iter(),
        };
        let mut out = Vec::new();
        let mut more = false;
        for item in range {
            let (k, v) = item?;
            let d: Decision = decode(&k, &v)?;
            if !filter.matches(&d) {
                continue;
            }
            if out.len() == limit {
                more = true;
                break;
            }
            out.push(d);
        }
        // Records only in memory join the page they fall in: after `after`,
        // and not past the page's last record when more follow.
        let last = if more { out.last().map(|d| d.id.clone()) } else { None };
        let in_page = |d: &Decision| {
            filter.matches(d) && after.is_none_or(|a| d.id.as_str() > a) && last.as_ref().is_none_or(|l| &d.id <= l)
        };
        let mut out = self.overlay(out, in_page);
        more |= out.len() > limit;
        out.truncate(limit);
        let next_after = if more { out.last().map(|d| d.id.clone()) } else { None };
        Ok(Page { decisions: out, next_after })
    }

    /// The records a restart needs: intents, actions in effect and requests
    /// awaiting approval, oldest first (from the index, not a scan).
    pub fn live(&self) -> Result<Vec<Decision>, StoreError> {
        let (index, decisions) = (self.tree(LIVE)?, self.tree(DECISIONS)?);
        let mut out = Vec::new();
        for item in index.iter() {
            let (id, _) = item?;
            if let Some(v) = decisions.get(&id)? {
                let d: Decision = decode(&id, &v)?;
                if is_live(&d) {
                    out.push(d);
                }
            }
        }
        Ok(self.overlay(out, is_live))
    }

    /// Records whose actuator call was started and never finished.
    pub fn open_intents(&self) -> Result<Vec<Decision>, StoreError> {
        Ok(self.live()?.into_iter().filter(|d| d.phase == Phase::Intent).collect())
    }

    /// The latest decision about the same rule, subject and action as `p`,
    /// decided at or after `since`, if any (from the index, not a scan).
    pub fn latest_for(&self, p: &Proposal, since: Nanos) -> Result<Option<Decision>, StoreError> {
        let prefix = subject_prefix(p);
        let mut latest = None;
        for item in self.tree(BY_SUBJECT)?.scan_prefix(&prefix).rev() {
            let (key, _) = item?;
            let id = String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
            let Some(d) = self.get(&id)? else { continue };
            if d.undo_of.is_some() || !same_subject(&d.proposal, p) {
                continue;
            }
            latest = Some(d);
            break;
        }
        let journal = self.journal();
        let in_memory =
            journal.unsaved.values().rev().find(|d| d.undo_of.is_none() && same_subject(&d.proposal, p)).cloned();
        drop(journal);
        if let Some(d) = in_memory {
            if latest.as_ref().is_none_or(|l: &Decision| l.id < d.id) {
                latest = Some(d);
            }
        }
        Ok(latest.filter(|d| d.proposal.decided_at >= since))
    }

    /// Number of records: kept since the first compaction, a scan of
    /// sled's keys before.
    pub fn len(&self) -> usize {
        if let Some(n) = *self.count() {
            return n;
        }
        self.tree(DECISIONS).map(|t| t.len()).unwrap_or(0)
    }

    /// Whether the ledger is empty.
    pub fn is_empty(&self) -> bool {
        self.tree(DECISIONS).map(|t| t.is_empty()).unwrap_or(true)
    }

    fn meta<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, StoreError> {
        match self.tree(META)?.get(key)? {
            Some(v) => Ok(Some(json(key, &v)?)),
            None => Ok(None),
        }
    }

    fn set_meta<T: serde::Serialize>(&self, key: &'static [u8], value: &T) -> Result<(), StoreError> {
        let meta = self.tree(META)?;
        self.store.write(|_| Ok(meta.insert(key, encode(value)).map(|_| ())?))?;
        self.store.flush()
    }

    /// The persisted breaker state.
    pub fn breaker(&self) -> Result<BreakerState, StoreError> {
        Ok(self.meta(BREAKER_KEY)?.unwrap_or_default())
    }

    /// Persists the breaker state, durably: a tripped breaker must survive a crash.
    pub fn set_breaker(&self, state: &BreakerState) -> Result<(), StoreError> {
        self.set_meta(BREAKER_KEY, state)
    }

    /// The mode an operator set, if any.
    pub fn mode(&self) -> Result<Option<ModeSet>, StoreError> {
        self.meta(MODE_KEY)
    }

    /// Records the mode an operator set, durably.
    pub fn set_mode(&self, set: &ModeSet) -> Result<(), StoreError> {
        self.set_meta(MODE_KEY, set)
    }

    /// The silences kept, in id order, and the number of the last silence
    /// ever set.
    pub fn silences(&self) -> Result<(Vec<Silence>, u64), StoreError> {
        let mut list = Vec::new();
        for item in self.tree(SILENCES)?.iter() {
            let (k, v) = item?;
            list.push(json::<Silence>(&k, &v)?);
        }
        Ok((list, self.meta(SILENCE_SEQ_KEY)?.unwrap_or(0)))
    }

    /// Keeps `silence`, numbered `seq`, durably: a silence an operator was
    /// told is set must still hold after a crash.
    pub fn put_silence(&self, silence: &Silence, seq: u64) -> Result<(), StoreError> {
        let silences = self.tree(SILENCES)?;
        self.store.write(|_| Ok(silences.insert(silence.id.as_bytes(), encode(silence)).map(|_| ())?))?;
        self.set_meta(SILENCE_SEQ_KEY, &seq)
    }

    /// Drops the silence `id` (lifted or ended), durably.
    pub fn remove_silence(&self, id: &str) -> Result<(), StoreError> {
        let silences = self.tree(SILENCES)?;
        self.store.write(|_| Ok(silences.remove(id.as_bytes()).map(|_| ())?))?;
        self.store.flush()
    }

    /// Records that an operator ended an incident, durably.
    pub fn put_resolution(&self, r: &Resolution) -> Result<(), StoreError> {
        let resolutions = self.tree(RESOLUTIONS)?;
        let key = resolution_key(&r.rule, &r.subject, r.started);
        self.store.write(|_| Ok(resolutions.insert(key, encode(r)).map(|_| ())?))?;
        self.store.flush()
    }

    /// The resolution of the incident of `rule` on `subject` first seen at `started`, if an operator ended it.
    pub fn resolution(&self, rule: &str, subject: &Labels, started: Nanos) -> Result<Option<Resolution>, StoreError> {
        let key = resolution_key(rule, subject, started);
        match self.tree(RESOLUTIONS)?.get(&key)? {
            Some(v) => Ok(Some(json(&key, &v)?)),
            None => Ok(None),
        }
    }

    /// Every incident an operator ended, kept as long as decisions are.
    pub fn resolutions(&self) -> Result<Vec<Resolution>, StoreError> {
        let mut out = Vec::new();
        for item in self.tree(RESOLUTIONS)?.iter() {
            let (k, v) = item?;
            out.push(json(&k, &v)?);
        }
        Ok(out)
    }

    /// Drops resolutions older than the retention age.
    fn compact_resolutions(&self, now: Nanos) -> Result<(), StoreError> {
        let resolutions = self.tree(RESOLUTIONS)?;
        for item in resolutions.iter() {
            let (k, v) = item?;
            let r: Resolution = json(&k, &v)?;
            if now - r.at > self.retention.max_age {
                self.store.write(|_| Ok(resolutions.remove(&k).map(|_| ())?))?;
            }
        }
        Ok(())
    }

    /// Drops records beyond the retention bounds; returns how many. Records
    /// still in effect (executed and not undone) or awaiting approval are kept.
    pub fn compact(&self, now: Nanos) -> Result<usize, StoreError> {
        let total = self.len();
        *self.count() = Some(total);
        let removed = self.remove_oldest(now, total.saturating_sub(self.retention.max_records), usize::MAX)?;
        self.compact_resolutions(now)?;
        Ok(removed)
    }

    /// Drops at most `budget` of the records over the record cap, oldest
    /// first; returns how many. Cheap when there are none (the count is
    /// kept): the dispatcher calls it on every tick, so the cap holds while
    /// the daemon runs, not only after a restart.
    pub fn compact_some(&self, budget: usize) -> Result<usize, StoreError> {
        let count = *self.count();
        let total = match count {
            Some(n) => n,
            None => {
                let n = self.len();
                *self.count() = Some(n);
                n
            }
        };
        let excess = total.saturating_sub(self.retention.max_records);
        if excess == 0 {
            return Ok(0);
        }
        self.remove_oldest(Nanos::MIN, excess, budget)
    }

    /// Removes the oldest records that are not live: all older than the
    /// retention age at `now`, and `excess` more; at most `budget`.
    fn remove_oldest(&self, now: Nanos, mut excess: usize, budget: usize) -> Result<usize, StoreError> {
        let (decisions, live, by_subject) = (self.tree(DECISIONS)?, self.tree(LIVE)?, self.tree(BY_SUBJECT)?);
        let mut removed = 0;
        for item in decisions.iter() {
            let (k, v) = item?;
            let d: Decision = decode(&k, &v)?;
            let old = now != Nanos::MIN && now - d.proposal.decided_at > self.retention.max_age;
            if !(old || excess > 0) || removed >= budget {
                break;
            }
            if is_live(&d) {
                continue;
            }
            self.store.write(|_| {
                decisions.remove(&k)?;
                live.remove(&k)?;
                by_subject.remove(subject_key(&d))?;
                Ok(())
            })?;
            if let Some(n) = self.count().as_mut() {
                *n = n.saturating_sub(1);
            }
            removed += 1;
            excess = excess.saturating_sub(1);
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contracts::{Action, Outcome, Severity};
    use crate::labels::Labels;
    use crate::mode::Mode;

    fn decision(ledger: &Ledger, decided_at: Nanos, verdict: Verdict) -> Decision {
        Decision {
            id: ledger.next_id().unwrap(),
            undo_of: None,
            undone_by: None,
            prior: None,
            drift: None,
            canary: None,
            outcome: None,
            waits_for: None,
            proposal: Proposal {
                id: "p".into(),
                rule: "r".into(),
                rule_hash: String::new(),
                rule_mode: Mode::Enforce,
                severity: Severity::Info,
                subject: Labels::default(),
                action: Action { kind: "a.b".into(), target: Labels::default(), params: Default::default() },
                jobs: Vec::new(),
                values: vec![],
                active_at: decided_at,
                sample_at: decided_at,
                decided_at,
                restored: false,
            },
            mode: Mode::Enforce,
            actuator: None,
            destructive: true,
            verdict,
            phase: Phase::Done,
            attempts: 0,
            steps: vec![],
            dispatched_at: decided_at,
            finished_at: decided_at,
        }
    }

    #[test]
    fn compaction_keeps_the_bounds_and_what_is_still_in_effect() {
        let store = Store::temporary().unwrap();
        let ledger = Ledger::open(&store, Retention { max_records: 3, max_age: 100 * SECOND }).unwrap();
        let executed = Verdict::Executed { outcome: Outcome { summary: String::new(), requests: vec![], prior: None } };
        let live = decision(&ledger, 0, executed);
        ledger.put(&live).unwrap();
        for t in 1..=5 {
            ledger.put(&decision(&ledger, t * SECOND, Verdict::Shadowed)).unwrap();
        }
        assert_eq!(ledger.len(), 6);
        assert_eq!(ledger.compact(10 * SECOND).unwrap(), 3, "down to 3 records");
        assert!(ledger.get(&live.id).unwrap().is_some(), "an action in effect is kept");
        // Much later, everything old goes except what is still in effect.
        assert_eq!(ledger.compact(1000 * SECOND).unwrap(), 2);
        assert_eq!(ledger.len(), 1);
    }

    #[test]
    fn an_outcome_the_disk_refused_is_read_from_memory_and_written_when_space_is_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state")).unwrap();
        let ledger = Ledger::open(&store, Retention::default()).unwrap();
        let mut d = decision(&ledger, 0, Verdict::Shadowed);
        d.phase = Phase::Intent;
        ledger.put_durable(&d).unwrap();
        // The disk fills between the intent and the outcome.
        store.inject_write_failure(Some(std::io::ErrorKind::StorageFull));
        d.phase = Phase::Done;
        d.verdict = Verdict::Executed { outcome: Outcome { summary: "done".into(), requests: vec![], prior: None } };
        assert!(matches!(ledger.put_durable(&d), Err(StoreError::Unwritable { .. })));
        assert!(ledger.unwritable().is_some());
        assert_eq!(ledger.get(&d.id).unwrap().unwrap(), d, "read over the disk's intent");
        assert_eq!(ledger.live().unwrap(), vec![d.clone()]);
        assert_eq!(ledger.open_intents().unwrap(), vec![]);
        assert_eq!(ledger.unsaved(), (1, 0));
        assert!(!ledger.recover().unwrap(), "still full");
        store.inject_write_failure(None);
        assert!(ledger.recover().unwrap());
        assert_eq!(ledger.unsaved(), (0, 0));
        drop((ledger, store));
        // On disk: a restart reads the outcome.
        let store = Store::open(&dir.path().join("state")).unwrap();
        let ledger = Ledger::open(&store, Retention::default()).unwrap();
        assert_eq!(ledger.get(&d.id).unwrap().unwrap(), d);
    }

    #[test]
    fn a_hundred_thousand_records_are_listed_in_bounded_pages() {
        let store = Store::temporary().unwrap();
        let ledger = Ledger::open(&store, Retention::default()).unwrap();
        for t in 0..100_000 {
            ledger.put(&decision(&ledger, t, Verdict::Shadowed)).unwrap();
        }
        let (mut after, mut seen, mut pages) = (None::<String>, 0, 0);
        loop {
            let page = ledger.page(&Filter::default(), after.as_deref(), usize::MAX).unwrap();
            assert!(page.decisions.len() <= MAX_PAGE);
            assert!(page.decisions.windows(2).all(|w| w[0].id < w[1].id));
            if let (Some(a), Some(first)) = (&after, page.decisions.first()) {
                assert!(&first.id > a, "no record twice");
            }
            seen += page.decisions.len();
            pages += 1;
            match page.next_after {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!((seen, pages), (100_000, 100));
        // A filter applies across pages: decided at or after 99,500 ns.
        let filter = Filter { since: Some(99_500), ..Filter::default() };
        let page = ledger.page(&filter, None, 300).unwrap();
        assert_eq!(page.decisions.len(), 300);
        let rest = ledger.page(&filter, page.next_after.as_deref(), 300).unwrap();
        assert_eq!((rest.decisions.len(), rest.next_after), (200, None));
    }

    #[test]
    fn the_cap_is_kept_while_running_a_step_at_a_time() {
        let store = Store::temporary().unwrap();
        let ledger = Ledger::open(&store, Retention { max_records: 10, max_age: 1000 * SECOND }).unwrap();
        for t in 0..25 {
            ledger.put(&decision(&ledger, t * SECOND, Verdict::Shadowed)).unwrap();
        }
        assert_eq!(ledger.compact_some(5).unwrap(), 5);
        assert_eq!(ledger.len(), 20);
        assert_eq!(ledger.compact_some(100).unwrap(), 10);
        assert_eq!(ledger.compact_some(100).unwrap(), 0);
        // New records are counted as they come, without a scan.
        for t in 25..30 {
            ledger.put(&decision(&ledger, t * SECOND, Verdict::Shadowed)).unwrap();
        }
        assert_eq!(ledger.compact_some(100).unwrap(), 5);
        assert_eq!(ledger.len(), 10);
    }
}
