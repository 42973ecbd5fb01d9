//! Repeat offenders: per rule and subject on an escalation ladder, when it
//! fired lately and which rung last proved effective there
//! (`policy::ladders`), kept across restarts and incidents so the third
//! storm of a NIC within the hour starts at the remedy that worked.
//!
//! Tree `offenders`: key `rule \0 subject`, value [`Offender`] (JSON).
//! Added without a version change: an older version ignores the tree.

use serde::{Deserialize, Serialize};

use super::{decode, encode, Ledger};
use crate::labels::Labels;
use crate::store::StoreError;
use crate::time::Nanos;

/// The tree of offenders.
pub(super) const OFFENDERS: &str = "offenders";

/// The most firings kept per subject: the window is what counts, the cap
/// bounds a subject that fires all day.
const KEPT_FIRINGS: usize = 64;

/// What the ledger remembers of one subject of a rule on a ladder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Offender {
    /// The rule.
    pub rule: String,
    /// The subject.
    pub subject: Labels,
    /// When each of its incidents began, oldest first.
    pub firings: Vec<Nanos>,
    /// The rung that last proved effective on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worked: Option<Worked>,
}

/// A rung that proved effective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worked {
    /// Its place on the ladder, from 0.
    pub rung: usize,
    /// The action kind.
    pub kind: String,
    /// The decision judged effective.
    pub id: String,
    /// When it was judged.
    pub at: Nanos,
}

impl Offender {
    /// A subject never seen firing.
    pub fn new(rule: &str, subject: &Labels) -> Offender {
        Offender { rule: rule.to_string(), subject: subject.clone(), firings: Vec::new(), worked: None }
    }

    /// Counts an incident that began at `at` (once, however often its
    /// proposals come); firings older than `within` before it are dropped.
    /// Returns whether it was new.
    pub fn fired(&mut self, at: Nanos, within: Nanos) -> bool {
        if self.firings.contains(&at) {
            return false;
        }
        self.firings.push(at);
        self.firings.sort_unstable();
        self.firings.retain(|&t| t > at.saturating_sub(within.max(1)));
        let excess = self.firings.len().saturating_sub(KEPT_FIRINGS);
        self.firings.drain(..excess);
        true
    }

    /// How many of its incidents began within `within` up to `now`.
    pub fn recent(&self, now: Nanos, within: Nanos) -> usize {
        self.firings.iter().filter(|&&t| t > now.saturating_sub(within) && t <= now).count()
    }
}

fn key(rule: &str, subject: &Labels) -> Vec<u8> {
    format!("{rule}\0{subject}").into_bytes()
}

impl Ledger {
    /// What is remembered of `subject` of `rule`.
    pub fn offender(&self, rule: &str, subject: &Labels) -> Result<Option<Offender>, StoreError> {
        let k = key(rule, subject);
        match self.tree(OFFENDERS)?.get(&k)? {
            Some(v) => Ok(Some(decode(&k, &v)?)),
            None => Ok(None),
        }
    }

    /// Keeps `o`, durably: the next incident's first rung depends on it.
    pub fn put_offender(&self, o: &Offender) -> Result<(), StoreError> {
        let tree = self.tree(OFFENDERS)?;
        let k = key(&o.rule, &o.subject);
        self.store.write(|_| Ok(tree.insert(k, encode(o)).map(|_| ())?))?;
        self.store.flush()
    }

    /// Every subject remembered, by rule and subject.
    pub fn offenders(&self) -> Result<Vec<Offender>, StoreError> {
        let mut out = Vec::new();
        for item in self.tree(OFFENDERS)?.iter() {
            let (k, v) = item?;
            out.push(decode(&k, &v)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incident_counts_once_and_old_ones_fall_out_of_the_window() {
        let mut o = Offender::new("pfc-storm", &Labels::default());
        assert!(o.fired(10, 100));
        assert!(!o.fired(10, 100), "the same incident's next proposal");
        assert!(o.fired(50, 100));
        assert!(o.fired(140, 100));
        assert_eq!(o.firings, vec![50, 140], "10 is more than 100 before 140");
        assert_eq!(o.recent(140, 100), 2);
        assert_eq!(o.recent(200, 100), 1);
    }
}
