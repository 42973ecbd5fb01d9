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

use serde::{de::DeserializeOwned, Serialize};

use crate::dispatch::{Decision, Phase, Verdict};
use crate::policy::BreakerState;
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
    retention: Retention,
}

const BREAKER_KEY: &[u8] = b"breaker";

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
        Ok(Ledger {
            store: store.clone(),
            decisions: store.db().open_tree("decisions")?,
            meta: store.db().open_tree("meta")?,
            retention,
        })
    }

    /// A new decision id: monotonic across restarts (sled keeps the counter),
    /// so ids sort in the order decisions were made.
    pub fn next_id(&self) -> Result<String, StoreError> {
        Ok(format!("{:010x}", self.store.db().generate_id()?))
    }

    /// Writes a record (buffered: sled flushes within half a second).
    pub fn put(&self, d: &Decision) -> Result<(), StoreError> {
        self.decisions.insert(d.id.as_bytes(), encode(d))?;
        Ok(())
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

    /// Records whose actuator call was started and never finished.
    pub fn open_intents(&self) -> Result<Vec<Decision>, StoreError> {
        Ok(self.list(&Filter::default())?.into_iter().filter(|d| d.phase == Phase::Intent).collect())
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
            let live = matches!(d.verdict, Verdict::AwaitingApproval { .. })
                || (matches!(d.verdict, Verdict::Executed { .. }) && d.undo_of.is_none() && d.undone_by.is_none());
            if live {
                continue;
            }
            self.decisions.remove(&k)?;
            removed += 1;
            excess = excess.saturating_sub(1);
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::{Action, Proposal};
    use crate::contracts::Outcome;
    use crate::dispatch::Mode;
    use crate::labels::Labels;
    use crate::rule::Severity;

    fn decision(ledger: &Ledger, decided_at: Nanos, verdict: Verdict) -> Decision {
        Decision {
            id: ledger.next_id().unwrap(),
            undo_of: None,
            undone_by: None,
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
