//! Silences: an operator's "not now" for a rule or a target.
//!
//! A silence is set through the control API (`rocemend silence`) for a
//! duration. While it lasts, proposals it matches are still decided and
//! recorded in the ledger, but with the verdict `suppressed` and the reason
//! naming the silence, so nothing is sent and nothing is hidden. Silences
//! are kept in the ledger (its `silences` tree) as they are set and lifted,
//! and loaded again when the dispatcher starts: an operator who silenced a
//! node for maintenance must not see it acted on because the daemon was
//! restarted (an upgrade) in the meantime. Silences that ended while the
//! daemon was down are dropped at load.

use serde::{Deserialize, Serialize};

use crate::contracts::Proposal;
use crate::time::Nanos;

/// One silence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Silence {
    /// Its id (`s1`, `s2`, …), to lift it early.
    pub id: String,
    /// Only proposals of this rule; `None` for any rule.
    pub rule: Option<String>,
    /// Only proposals whose action target contains this text (`node-03`,
    /// `leaf-rail2`); `None` for any target.
    pub target: Option<String>,
    /// When it ends (ns since the epoch, the dispatcher's clock).
    pub until: Nanos,
    /// Who set it.
    pub by: String,
    /// Why, for the record.
    pub reason: String,
}

impl Silence {
    /// Whether this silence covers `p` at `now`.
    pub fn matches(&self, p: &Proposal, now: Nanos) -> bool {
        now < self.until
            && self.rule.as_ref().is_none_or(|r| *r == p.rule)
            && self.target.as_ref().is_none_or(|t| p.action.target.to_string().contains(t.as_str()))
    }

    /// The reason recorded in a decision it suppressed.
    pub fn describe(&self) -> String {
        let what = match (&self.rule, &self.target) {
            (Some(r), Some(t)) => format!("rule {r} on {t}"),
            (Some(r), None) => format!("rule {r}"),
            (None, Some(t)) => format!("target {t}"),
            (None, None) => "everything".to_string(),
        };
        let why = if self.reason.is_empty() { String::new() } else { format!(": {}", self.reason) };
        format!("silenced ({}, {what}, by {} until {}){why}", self.id, self.by, crate::time::rfc3339(self.until))
    }
}

/// The silences in force.
#[derive(Debug, Clone, Default)]
pub struct Silences {
    list: Vec<Silence>,
    seq: u64,
}

/// A silence was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SilenceError {
    /// It names neither a rule nor a target.
    #[error("a silence needs a rule or a target (to silence everything, switch to shadow mode)")]
    Unscoped,
}

impl Silences {
    /// Adds a silence; its `id` is assigned here and returned in the copy.
    /// A silence with neither rule nor target is refused: silencing
    /// everything is what shadow mode is for.
    pub fn add(&mut self, mut silence: Silence) -> Result<Silence, SilenceError> {
        if silence.rule.is_none() && silence.target.is_none() {
            return Err(SilenceError::Unscoped);
        }
        self.seq += 1;
        silence.id = format!("s{}", self.seq);
        self.list.push(silence.clone());
        Ok(silence)
    }

    /// Silences kept from before a restart, the last of them numbered
    /// `seq`; those ended at `now` are left out (their ids are returned, to
    /// be dropped from the ledger too). Ids go on from `seq`: a new silence
    /// never takes the id of one that decisions already quote.
    pub fn restore(list: Vec<Silence>, seq: u64, now: Nanos) -> (Silences, Vec<String>) {
        let (live, ended): (Vec<Silence>, Vec<Silence>) = list.into_iter().partition(|s| now < s.until);
        let numbered = live.iter().filter_map(|s| s.id.strip_prefix('s')?.parse::<u64>().ok()).max().unwrap_or(0);
        let silences = Silences { list: live, seq: seq.max(numbered) };
        (silences, ended.into_iter().map(|s| s.id).collect())
    }

    /// The number of the last silence set.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Lifts the silence `id`; false if there is none.
    pub fn remove(&mut self, id: &str) -> bool {
        let before = self.list.len();
        self.list.retain(|s| s.id != id);
        self.list.len() != before
    }

    /// The first silence covering `p` at `now`.
    pub fn matching(&self, p: &Proposal, now: Nanos) -> Option<&Silence> {
        self.list.iter().find(|s| s.matches(p, now))
    }

    /// Drops the silences that ended before `now`; returns their ids.
    pub fn expire(&mut self, now: Nanos) -> Vec<String> {
        let mut ended = Vec::new();
        self.list.retain(|s| {
            let live = now < s.until;
            if !live {
                ended.push(s.id.clone());
            }
            live
        });
        ended
    }

    /// The silences not yet ended at `now`.
    pub fn active(&self, now: Nanos) -> Vec<Silence> {
        self.list.iter().filter(|s| now < s.until).cloned().collect()
    }
}
