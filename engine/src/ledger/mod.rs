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
//! approval. With the defaults (100,000 records, 30 days) and records of
//! about 2 KiB, the ledger stays under about 200 MiB.
//!
//! Two indexes keep a restart from reading the whole history: `live` holds
//! the ids of the records a restart needs (intents, actions in effect,
//! requests awaiting approval), and `by_subject` the ids of every record
//! by rule, subject and action, so a proposal made again after a crash
//! finds its earlier decision without a scan. Each put updates the record
//! and both indexes in one transaction.
//!
//! Format: the trees of the sled database, each record a JSON document.
//!
//! | tree | key | value |
//! |---|---|---|
//! | `decisions` | decision id | [`Decision`] |
//! | `decisions-live`, `decisions-by-subject` | indexes (version `index-version` in `meta`) | empty |
//! | `meta` | `breaker`, `mode`, `silence-seq`, `index-version` | [`BreakerState`] (with its trip history), [`ModeSet`], the last silence number |
//! | `silences` | silence id | [`Silence`]: operators' silences, kept across restarts |
//! | `resolutions` | rule, subject, first-seen time | [`Resolution`]: incidents ended by hand |
//!
//! `silences`, `resolutions`, `silence-seq` and the breaker's `trips` were
//! added without a version change: an older version ignores them (and so
//! forgets silences and trips), a newer one reads a ledger without them as
//! empty. Decisions are unchanged.

use serde::{de::DeserializeOwned, Serialize};
use sled::Transactional;

use crate::contracts::{Decision, Phase, Proposal, Resolution, Verdict};
use crate::labels::Labels;
use crate::policy::BreakerState;
use crate::silence::Silence;
use crate::store::{Store, StoreError};
use crate::time::{Nanos, SECOND};

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
    fn matches(&self, d: &Decision) -> bool {
        self.since.is_none_or(|t| d.proposal.decided_at >= t)
            && self.rule.as_ref().is_none_or(|r| &d.proposal.rule == r)
            && self.target.as_ref().is_none_or(|t| d.proposal.action.target.to_string().contains(t.as_str()))
    }
}

/// Handle to the ledger; cheap to clone, safe to share.
#[derive(Debug, Clone)]
pub struct Ledger {
    store: Store,
    decisions: sled::Tree,
    meta: sled::Tree,
    live: sled::Tree,
    by_subject: sled::Tree,
    silences: sled::Tree,
    resolutions: sled::Tree,
    retention: Retention,
}

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
/// The version of the indexes in `meta`; a ledger without it (written by an
/// older version) has its indexes built once when it is opened.
const INDEX_KEY: &[u8] = b"index-version";
const INDEX_VERSION: &[u8] = b"1";

/// Whether a restart needs the record: an intent, an action in effect, or a
/// request awaiting approval.
pub fn is_live(d: &Decision) -> bool {
    d.phase == Phase::Intent
        || matches!(d.verdict, Verdict::AwaitingApproval { .. })
        || (matches!(d.verdict, Verdict::Executed { .. })
            && d.undo_of.is_none()
            && d.undone_by.is_none()
            && d.drift.is_none())
}

/// The `by_subject` prefix of a proposal's decisions: rule, subject, action.
fn subject_prefix(p: &Proposal) -> Vec<u8> {
    let mut key = Vec::new();
    for part in [p.rule.as_str(), &p.subject.to_string(), &p.action.dedup_key()] {
        key.extend_from_slice(part.as_bytes());
        key.push(0);
    }
    key
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

fn decode<T: DeserializeOwned>(key: &[u8], value: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(value)
        .map_err(|e| StoreError::Corrupt { key: String::from_utf8_lossy(key).into_owned(), message: e.to_string() })
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("ledger records serialize")
}

impl Ledger {
    /// The ledger inside `store`.
    pub fn open(store: &Store, retention: Retention) -> Result<Ledger, StoreError> {
        let ledger = Ledger {
            store: store.clone(),
            decisions: store.db().open_tree("decisions")?,
            meta: store.db().open_tree("meta")?,
            live: store.db().open_tree("decisions-live")?,
            by_subject: store.db().open_tree("decisions-by-subject")?,
            silences: store.db().open_tree("silences")?,
            resolutions: store.db().open_tree("resolutions")?,
            retention,
        };
        if ledger.meta.get(INDEX_KEY)?.as_deref() != Some(INDEX_VERSION) {
            ledger.rebuild_indexes()?;
        }
        Ok(ledger)
    }

    /// Builds both indexes from the records (a ledger of an older version).
    fn rebuild_indexes(&self) -> Result<(), StoreError> {
        self.live.clear()?;
        self.by_subject.clear()?;
        for item in self.decisions.iter() {
            let (k, v) = item?;
            let d: Decision = decode(&k, &v)?;
            if is_live(&d) {
                self.live.insert(d.id.as_bytes(), &[])?;
            }
            self.by_subject.insert(subject_key(&d), &[])?;
        }
        self.meta.insert(INDEX_KEY, INDEX_VERSION)?;
        self.store.flush()
    }

    /// A new decision id: monotonic across restarts (sled keeps the counter),
    /// so ids sort in the order decisions were made.
    pub fn next_id(&self) -> Result<String, StoreError> {
        Ok(format!("{:010x}", self.store.db().generate_id()?))
    }

    /// Writes a record (buffered: sled flushes within half a second), with
    /// its index entries, atomically.
    pub fn put(&self, d: &Decision) -> Result<(), StoreError> {
        use sled::transaction::{ConflictableTransactionError, TransactionError};
        let (id, value, live, by_subject) = (d.id.as_bytes(), encode(d), is_live(d), subject_key(d));
        let result = (&self.decisions, &self.live, &self.by_subject).transaction(|(decisions, index, subjects)| {
            decisions.insert(id, value.as_slice())?;
            if live {
                index.insert(id, &[])?;
            } else {
                index.remove(id)?;
            }
            subjects.insert(by_subject.as_slice(), &[])?;
            Ok::<(), ConflictableTransactionError<()>>(())
        });
        match result {
            Ok(()) => Ok(()),
            Err(TransactionError::Storage(e)) => Err(e.into()),
            Err(TransactionError::Abort(())) => unreachable!("the transaction never aborts"),
        }
    }

    /// Writes a record and waits until it is on disk.
    pub fn put_durable(&self, d: &Decision) -> Result<(), StoreError> {
        self.put(d)?;
        self.store.flush()
    }

    /// One record.
    pub fn get(&self, id: &str) -> Result<Option<Decision>, StoreError> {
        match self.decisions.get(id.as_bytes())? {
            Some(v) => Ok(Some(decode(id.as_bytes(), &v)?)),
            None => Ok(None),
        }
    }

    /// Records matching `filter`, oldest first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<Decision>, StoreError> {
        let mut out = Vec::new();
        for item in self.decisions.iter() {
            let (k, v) = item?;
            let d: Decision = decode(&k, &v)?;
            if filter.matches(&d) {
                out.push(d);
            }
        }
        Ok(out)
    }

    /// The records a restart needs: intents, actions in effect and requests
    /// awaiting approval, oldest first (from the index, not a scan).
    pub fn live(&self) -> Result<Vec<Decision>, StoreError> {
        let mut out = Vec::new();
        for item in self.live.iter() {
            let (id, _) = item?;
            if let Some(v) = self.decisions.get(&id)? {
                let d: Decision = decode(&id, &v)?;
                if is_live(&d) {
                    out.push(d);
                }
            }
        }
        Ok(out)
    }

    /// Records whose actuator call was started and never finished.
    pub fn open_intents(&self) -> Result<Vec<Decision>, StoreError> {
        Ok(self.live()?.into_iter().filter(|d| d.phase == Phase::Intent).collect())
    }

    /// The latest decision about the same rule, subject and action as `p`,
    /// decided at or after `since`, if any (from the index, not a scan).
    pub fn latest_for(&self, p: &Proposal, since: Nanos) -> Result<Option<Decision>, StoreError> {
        let prefix = subject_prefix(p);
        for item in self.by_subject.scan_prefix(&prefix).rev() {
            let (key, _) = item?;
            let id = &key[prefix.len()..];
            let Some(v) = self.decisions.get(id)? else { continue };
            let d: Decision = decode(id, &v)?;
            if d.undo_of.is_some() {
                continue;
            }
            return Ok((d.proposal.decided_at >= since).then_some(d));
        }
        Ok(None)
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.decisions.len()
    }

    /// Whether the ledger is empty.
    pub fn is_empty(&self) -> bool {
        self.decisions.is_empty()
    }

    /// The persisted breaker state.
    pub fn breaker(&self) -> Result<BreakerState, StoreError> {
        match self.meta.get(BREAKER_KEY)? {
            Some(v) => decode(BREAKER_KEY, &v),
            None => Ok(BreakerState::default()),
        }
    }

    /// Persists the breaker state, durably: a tripped breaker must survive a crash.
    pub fn set_breaker(&self, state: &BreakerState) -> Result<(), StoreError> {
        self.meta.insert(BREAKER_KEY, encode(state))?;
        self.store.flush()
    }

    /// The mode an operator set, if any.
    pub fn mode(&self) -> Result<Option<ModeSet>, StoreError> {
        match self.meta.get(MODE_KEY)? {
            Some(v) => Ok(Some(decode(MODE_KEY, &v)?)),
            None => Ok(None),
        }
    }

    /// Records the mode an operator set, durably.
    pub fn set_mode(&self, set: &ModeSet) -> Result<(), StoreError> {
        self.meta.insert(MODE_KEY, encode(set))?;
        self.store.flush()
    }

    /// The silences kept, in id order, and the number of the last silence
    /// ever set.
    pub fn silences(&self) -> Result<(Vec<Silence>, u64), StoreError> {
        let mut list = Vec::new();
        for item in self.silences.iter() {
            let (k, v) = item?;
            list.push(decode::<Silence>(&k, &v)?);
        }
        let seq = match self.meta.get(SILENCE_SEQ_KEY)? {
            Some(v) => decode(SILENCE_SEQ_KEY, &v)?,
            None => 0,
        };
        Ok((list, seq))
    }

    /// Keeps `silence`, numbered `seq`, durably: a silence an operator was
    /// told is set must still hold after a crash.
    pub fn put_silence(&self, silence: &Silence, seq: u64) -> Result<(), StoreError> {
        self.silences.insert(silence.id.as_bytes(), encode(silence))?;
        self.meta.insert(SILENCE_SEQ_KEY, encode(&seq))?;
        self.store.flush()
    }

    /// Drops the silence `id` (lifted or ended), durably.
    pub fn remove_silence(&self, id: &str) -> Result<(), StoreError> {
        self.silences.remove(id.as_bytes())?;
        self.store.flush()
    }

    /// Records that an operator ended an incident, durably.
    pub fn put_resolution(&self, r: &Resolution) -> Result<(), StoreError> {
        self.resolutions.insert(resolution_key(&r.rule, &r.subject, r.started), encode(r))?;
        self.store.flush()
    }

    /// The resolution of the incident of `rule` on `subject` first seen at `started`, if an operator ended it.
    pub fn resolution(&self, rule: &str, subject: &Labels, started: Nanos) -> Result<Option<Resolution>, StoreError> {
        let key = resolution_key(rule, subject, started);
        match self.resolutions.get(&key)? {
            Some(v) => Ok(Some(decode(&key, &v)?)),
            None => Ok(None),
        }
    }

    /// Every incident an operator ended, kept as long as decisions are.
    pub fn resolutions(&self) -> Result<Vec<Resolution>, StoreError> {
        let mut out = Vec::new();
        for item in self.resolutions.iter() {
            let (k, v) = item?;
            out.push(decode(&k, &v)?);
        }
        Ok(out)
    }

    /// Drops resolutions older than the retention age.
    fn compact_resolutions(&self, now: Nanos) -> Result<(), StoreError> {
        for item in self.resolutions.iter() {
            let (k, v) = item?;
            let r: Resolution = decode(&k, &v)?;
            if now - r.at > self.retention.max_age {
                self.resolutions.remove(&k)?;
            }
        }
        Ok(())
    }

    /// Drops records beyond the retention bounds; returns how many. Records
    /// still in effect (executed and not undone) or awaiting approval are kept.
    pub fn compact(&self, now: Nanos) -> Result<usize, StoreError> {
        let total = self.decisions.len();
        let mut excess = total.saturating_sub(self.retention.max_records);
        let mut removed = 0;
        for item in self.decisions.iter() {
            let (k, v) = item?;
            let d: Decision = decode(&k, &v)?;
            let old = now - d.proposal.decided_at > self.retention.max_age;
            if !(old || excess > 0) {
                break;
            }
            if is_live(&d) {
                continue;
            }
            self.decisions.remove(&k)?;
            self.live.remove(&k)?;
            self.by_subject.remove(subject_key(&d))?;
            removed += 1;
            excess = excess.saturating_sub(1);
        }
        self.compact_resolutions(now)?;
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contracts::Action;
    use crate::contracts::Outcome;
    use crate::contracts::Severity;
    use crate::labels::Labels;
    use crate::mode::Mode;

    fn decision(ledger: &Ledger, decided_at: Nanos, verdict: Verdict) -> Decision {
        Decision {
            id: ledger.next_id().unwrap(),
            undo_of: None,
            undone_by: None,
            prior: None,
            drift: None,
            proposal: Proposal {
                id: "p".into(),
                rule: "r".into(),
                rule_hash: String::new(),
                rule_mode: Mode::Enforce,
                severity: Severity::Info,
                subject: Labels::default(),
                action: Action { kind: "a.b".into(), target: Labels::default(), params: Default::default() },
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
}
