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

    /// Where it stands at `now` on a ladder counting `repeat` incidents
    /// within `within`, if that is worth showing: two incidents or more
    /// within the window (a single incident is every subject's first), or
    /// a rung that worked within it. A rung that worked longer ago is not
    /// shown: the subject's next incident starts at the first rung anyway,
    /// and every subject a rung ever worked on would pile up in `status`.
    pub fn standing(&self, now: Nanos, within: Nanos, repeat: u32) -> Option<Standing> {
        let incidents = self.recent(now, within);
        let worked_lately = self.worked.as_ref().is_some_and(|w| w.at > now.saturating_sub(within));
        if incidents < 2 && !worked_lately {
            return None;
        }
        Some(Standing {
            rule: self.rule.clone(),
            subject: self.subject.clone(),
            incidents,
            within,
            repeat,
            // `repeat = 0` is a ladder that counts no repeats.
            repeat_offender: repeat > 0 && incidents >= repeat as usize,
            latest: self.firings.last().copied(),
            worked: self.worked.clone(),
        })
    }
}

/// A subject on a ladder as `status` shows it: its incidents counted at
/// one time against its ladder's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standing {
    /// The rule.
    pub rule: String,
    /// The subject.
    pub subject: Labels,
    /// Its incidents that began within `within`.
    pub incidents: usize,
    /// The ladder's `repeat_within`, in ns.
    pub within: Nanos,
    /// The ladder's `repeat` (0: repeats are not counted).
    pub repeat: u32,
    /// Whether its next incident within the window starts at the rung that
    /// worked: `incidents` has reached `repeat`.
    pub repeat_offender: bool,
    /// When its latest incident began.
    pub latest: Option<Nanos>,
    /// The rung that last proved effective on it.
    pub worked: Option<Worked>,
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

    #[test]
    fn a_subject_is_shown_from_its_second_incident_or_once_a_rung_worked() {
        let mut o = Offender::new("pfc-storm", &Labels::default());
        o.fired(10, 100);
        assert_eq!(o.standing(20, 100, 3), None, "one incident is not worth a line");
        o.fired(30, 100);
        let two = o.standing(40, 100, 3).unwrap();
        assert_eq!((two.incidents, two.repeat_offender, two.latest), (2, false, Some(30)));
        o.fired(50, 100);
        assert!(o.standing(60, 100, 3).unwrap().repeat_offender, "the third within the window");
        assert!(!o.standing(60, 100, 0).unwrap().repeat_offender, "repeat = 0 counts no repeats");
        assert_eq!(o.standing(500, 100, 3), None, "all of them out of the window");
        o.worked = Some(Worked { rung: 1, kind: "link.isolate".into(), id: "0000000009".into(), at: 450 });
        let worked = o.standing(500, 100, 3).unwrap();
        assert_eq!((worked.incidents, worked.repeat_offender), (0, false), "shown for the rung that worked");
        assert_eq!(o.standing(551, 100, 3), None, "the rung worked longer ago than the window");
    }
}
