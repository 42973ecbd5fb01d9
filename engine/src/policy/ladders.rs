//! Escalation ladders: the remedies of a rule tried one at a time, each
//! only when the one before it proved ineffective (the dispatcher's
//! `ladder` stage), and repeat offenders started at the rung that worked.
//!
//! ```toml
//! [[ladder]]
//! rules = ["pfc-storm"]                                    # rules whose actions climb it
//! rungs = ["pfcwd.escalate", "link.isolate", "rail.drain"] # their action kinds, mildest first
//! repeat = 3                                               # the 3rd firing of one subject…
//! repeat_within = "1h"                                     # …within an hour starts at the rung that worked
//! ```
//!
//! A rule on a ladder still proposes all its actions when it fires; the
//! dispatcher decides the current rung's and keeps the others, deciding the
//! next one when the current one is judged ineffective (or fails). Every
//! rung passes the whole safety policy. The rule's other action kinds (a
//! notification, say) are not on the ladder and are decided as always.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::duration::{self, nanos};
use crate::contracts::kind_matches;
use crate::time::Nanos;

use super::PolicyError;

/// One `[[ladder]]`, as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LadderRule {
    /// The rules whose actions climb this ladder.
    pub rules: Vec<String>,
    /// Action kinds (or `family.*` patterns), mildest first.
    pub rungs: Vec<String>,
    /// The firing of one subject, counted within `repeat_within`, from which
    /// it is a repeat offender (0: never).
    #[serde(default = "three")]
    pub repeat: u32,
    /// The window repeat firings are counted in.
    #[serde(default = "one_hour", with = "duration")]
    pub repeat_within: Duration,
    /// The canary group its rules are enforced on (shadowed elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforce_on: Option<String>,
}

/// A ladder, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Ladder {
    /// The rules that climb it.
    pub rules: Vec<String>,
    /// Its rungs' kind patterns, mildest first.
    pub rungs: Vec<String>,
    /// Repeat offenders from this firing on (0: none).
    pub repeat: u32,
    /// Counted within.
    pub repeat_within: Nanos,
}

impl Ladder {
    /// The rung an action of `kind` stands on.
    pub fn rung_of(&self, kind: &str) -> Option<usize> {
        self.rungs.iter().position(|p| kind_matches(p, kind))
    }

    /// `rung 2 of 3 (link.isolate)`.
    pub fn describe_rung(&self, rung: usize) -> String {
        format!("rung {} of {} ({})", rung + 1, self.rungs.len(), self.rungs[rung])
    }
}

/// The playbook's ladders.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LadderSettings {
    ladders: Vec<Ladder>,
}

impl LadderSettings {
    /// The ladders of the raw ones; errors name the field.
    pub fn new(raw: &[LadderRule]) -> Result<LadderSettings, PolicyError> {
        let mut ladders: Vec<Ladder> = Vec::new();
        for (i, l) in raw.iter().enumerate() {
            let ladder = Self::check_one(i, l, &ladders)?;
            ladders.push(ladder);
        }
        Ok(LadderSettings { ladders })
    }

    /// `ladder[i]`, checked against the ladders before it.
    pub fn check_one(i: usize, l: &LadderRule, earlier: &[Ladder]) -> Result<Ladder, PolicyError> {
        if l.rules.is_empty() {
            return Err(PolicyError(format!("ladder[{i}].rules is empty: name the rules that climb it")));
        }
        if l.rungs.len() < 2 {
            let n = l.rungs.len();
            return Err(PolicyError(format!("ladder[{i}].rungs has {n} rung(s): a ladder needs at least two")));
        }
        for (j, rung) in l.rungs.iter().enumerate() {
            if let Some(k) = l.rungs[..j].iter().position(|r| kind_matches(r, rung) || kind_matches(rung, r)) {
                return Err(PolicyError(format!("ladder[{i}].rungs[{j}] = {rung:?} overlaps rungs[{k}]")));
            }
        }
        if l.repeat == 1 {
            return Err(PolicyError(format!(
                "ladder[{i}].repeat = 1: every firing would be a repeat; expected 0 (never) or 2 or more"
            )));
        }
        if l.repeat > 1 && l.repeat_within.is_zero() {
            return Err(PolicyError(format!("ladder[{i}].repeat_within = 0: repeats need a window")));
        }
        for rule in &l.rules {
            if let Some(k) = earlier.iter().position(|o| o.rules.contains(rule)) {
                return Err(PolicyError(format!("ladder[{i}]: rule {rule:?} already climbs ladder[{k}]")));
            }
        }
        Ok(Ladder {
            rules: l.rules.clone(),
            rungs: l.rungs.clone(),
            repeat: l.repeat,
            repeat_within: nanos(l.repeat_within),
        })
    }

    /// The ladder `rule` climbs, with its index.
    pub fn of_rule(&self, rule: &str) -> Option<(usize, &Ladder)> {
        self.ladders.iter().enumerate().find(|(_, l)| l.rules.iter().any(|r| r == rule))
    }

    /// The ladder and rung an action of `kind` proposed by `rule` stands on.
    pub fn rung(&self, rule: &str, kind: &str) -> Option<(usize, &Ladder, usize)> {
        let (i, ladder) = self.of_rule(rule)?;
        Some((i, ladder, ladder.rung_of(kind)?))
    }

    /// All of them, in playbook order.
    pub fn all(&self) -> &[Ladder] {
        &self.ladders
    }
}

fn three() -> u32 {
    3
}
fn one_hour() -> Duration {
    Duration::from_secs(3600)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ladder(rules: &[&str], rungs: &[&str]) -> LadderRule {
        LadderRule {
            rules: rules.iter().map(|s| s.to_string()).collect(),
            rungs: rungs.iter().map(|s| s.to_string()).collect(),
            repeat: 3,
            repeat_within: Duration::from_secs(3600),
            enforce_on: None,
        }
    }

    #[test]
    fn a_rule_finds_its_ladder_and_an_action_its_rung() {
        let s = LadderSettings::new(&[ladder(&["pfc-storm"], &["pfcwd.escalate", "link.*", "rail.drain"])]).unwrap();
        let (i, l, rung) = s.rung("pfc-storm", "link.isolate").unwrap();
        assert_eq!((i, rung, l.describe_rung(rung).as_str()), (0, 1, "rung 2 of 3 (link.*)"));
        assert!(s.rung("pfc-storm", "webhook.notify").is_none(), "not on the ladder");
        assert!(s.rung("other", "link.isolate").is_none());
    }

    #[test]
    fn bad_ladders_are_refused_by_field() {
        let refused = |l: LadderRule| LadderSettings::new(&[l]).unwrap_err().to_string();
        assert!(refused(ladder(&[], &["a.b", "c.d"])).starts_with("ladder[0].rules is empty"));
        assert!(refused(ladder(&["r"], &["a.b"])).starts_with("ladder[0].rungs has 1 rung(s)"));
        assert!(refused(ladder(&["r"], &["a.*", "a.b"])).starts_with("ladder[0].rungs[1] = \"a.b\" overlaps rungs[0]"));
        assert!(
            refused(LadderRule { repeat: 1, ..ladder(&["r"], &["a.b", "c.d"]) }).starts_with("ladder[0].repeat = 1")
        );
        let zero = LadderRule { repeat_within: Duration::ZERO, ..ladder(&["r"], &["a.b", "c.d"]) };
        assert!(refused(zero).starts_with("ladder[0].repeat_within = 0"));
        let twice = LadderSettings::new(&[ladder(&["r"], &["a.b", "c.d"]), ladder(&["r"], &["e.f", "g.h"])]);
        assert!(twice.unwrap_err().to_string().starts_with("ladder[1]: rule \"r\" already climbs ladder[0]"));
    }
}
