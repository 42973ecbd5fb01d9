//! Each rule's measured record, read from its decisions: how often it
//! proposed, how often that was carried out, and what the outcome checks
//! said of it (`rocemend rules`).
//!
//! The record covers what the ledger holds: decisions are kept for the
//! retention period ([`super::Retention`]), so an old rule's early years
//! are not in it. A decision is rewritten when its outcome is judged; the
//! `decisions` tree keeps one record per id, its latest, so each decision
//! counts once, as it stands now.

use std::collections::{BTreeMap, HashMap};

use super::{decode, Ledger, DECISIONS};
use crate::contracts::{Decision, OutcomeResult, Verdict, PAGE_PREFIX};
use crate::store::StoreError;
use crate::time::Nanos;

/// What one rule's decisions in the ledger add up to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleRecord {
    /// Its proposals decided (undos and pages are not its proposals).
    pub proposals: u64,
    /// Of those, the ones carried out.
    pub executed: u64,
    /// Outcome checks judged effective: the rule cleared in time.
    pub effective: u64,
    /// Judged ineffective: it did not clear in time.
    pub ineffective: u64,
    /// Judged harmful: a watched value rose, and the action was undone.
    pub harmful: u64,
    /// Judged unread: the rule could not be read at the deadline.
    pub unread: u64,
    /// The median time from an effective action to its effect.
    pub median_time_to_effect_ns: Option<Nanos>,
}

impl RuleRecord {
    /// Outcome checks judged, whatever they found.
    pub fn judged(&self) -> u64 {
        self.effective + self.ineffective + self.harmful + self.unread
    }

    /// The share of judged outcome checks found effective, in percent;
    /// `None` when none was judged (no measure, which is not 0 %).
    pub fn effective_percent(&self) -> Option<f64> {
        match self.judged() {
            0 => None,
            judged => Some(100.0 * self.effective as f64 / judged as f64),
        }
    }
}

/// A record being added up: the times to effect are kept until the median
/// is taken (one number a decision, bounded by the ledger's retention).
#[derive(Default)]
struct Tally {
    record: RuleRecord,
    to_effect: Vec<Nanos>,
}

impl Tally {
    fn add(&mut self, d: &Decision) {
        self.record.proposals += 1;
        if matches!(d.verdict, Verdict::Executed { .. }) {
            self.record.executed += 1;
        }
        let Some(judged) = d.outcome.as_ref().and_then(|o| o.judged.as_ref()) else { return };
        match judged.result {
            OutcomeResult::Effective => {
                self.record.effective += 1;
                self.to_effect.push(judged.after_ns);
            }
            OutcomeResult::Ineffective => self.record.ineffective += 1,
            OutcomeResult::Harmful => self.record.harmful += 1,
            OutcomeResult::Unread => self.record.unread += 1,
        }
    }

    fn finish(mut self) -> RuleRecord {
        self.record.median_time_to_effect_ns = median(&mut self.to_effect);
        self.record
    }
}

/// The median of `values` (of an even count, halfway between the middle two).
fn median(values: &mut [Nanos]) -> Option<Nanos> {
    values.sort_unstable();
    let mid = values.len() / 2;
    match values.len() {
        0 => None,
        n if n % 2 == 1 => Some(values[mid]),
        _ => Some(values[mid - 1] + (values[mid] - values[mid - 1]) / 2),
    }
}

/// Whether `d` is a proposal of its rule: not an undo, not a page.
fn is_proposal(d: &Decision) -> bool {
    d.undo_of.is_none() && !d.proposal.id.starts_with(PAGE_PREFIX)
}

impl Ledger {
    /// Each rule's record over the decisions the ledger holds (see the
    /// module's documentation), by rule name; a rule with no decision in
    /// the ledger has no entry. One scan of the decisions, with the
    /// versions kept in memory (refused by a full disk) read over the
    /// disk's, as [`Ledger::get`] reads them.
    pub fn rule_records(&self) -> Result<BTreeMap<String, RuleRecord>, StoreError> {
        // Empty unless the disk refused writes, and then bounded
        // (`journal::MAX_UNSAVED`): a copy frees the lock for the scan.
        let unsaved = self.journal().unsaved.clone();
        let mut tallies: HashMap<String, Tally> = HashMap::new();
        let mut add = |d: &Decision| {
            if is_proposal(d) {
                tallies.entry(d.proposal.rule.clone()).or_default().add(d);
            }
        };
        for item in self.tree(DECISIONS)?.iter() {
            let (k, v) = item?;
            if unsaved.contains_key(String::from_utf8_lossy(&k).as_ref()) {
                continue;
            }
            add(&decode::<Decision>(&k, &v)?);
        }
        unsaved.values().for_each(add);
        Ok(tallies.into_iter().map(|(rule, tally)| (rule, tally.finish())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contracts::{Outcome, OutcomeCheck, OutcomeJudgement, Phase, Step};
    use crate::labels::Labels;
    use crate::ledger::Retention;
    use crate::mode::Mode;
    use crate::store::Store;
    use crate::time::SECOND;

    fn executed() -> Verdict {
        Verdict::Executed { outcome: Outcome { summary: String::new(), requests: vec![], prior: None } }
    }

    /// A decision of `rule` on `node` with `verdict`.
    fn decision(ledger: &Ledger, rule: &str, node: &str, verdict: Verdict) -> Decision {
        let subject = Labels::from_pairs([("node", node)]);
        let proposal = crate::testing::proposal(rule, "node.cordon", node, subject, 0);
        let first = Step { at: 0, what: format!("proposed by {rule}") };
        let mut d = Decision::new(ledger.next_id().unwrap(), proposal, Mode::Enforce, first, 0);
        d.verdict = verdict;
        d.phase = Phase::Done;
        d
    }

    /// `d` with its outcome check judged `result`, `after` seconds after the action.
    fn judged(mut d: Decision, result: OutcomeResult, after: i64) -> Decision {
        let judgement =
            OutcomeJudgement { at: after * SECOND, result, after_ns: after * SECOND, detail: String::new() };
        d.outcome = Some(OutcomeCheck {
            since: 0,
            due: 300 * SECOND,
            worse: vec![],
            jobs_read_after: None,
            margin: 0.1,
            hold: 3600 * SECOND,
            judged: Some(judgement),
        });
        d
    }

    fn temporary() -> Ledger {
        Ledger::open(&Store::temporary().unwrap(), Retention::default()).unwrap()
    }

    #[test]
    fn a_rule_record_counts_proposals_executions_and_each_judgement() {
        let ledger = temporary();
        for (node, result, after) in [
            ("gpu-01", OutcomeResult::Effective, 4),
            ("gpu-02", OutcomeResult::Effective, 10),
            ("gpu-03", OutcomeResult::Effective, 6),
            ("gpu-04", OutcomeResult::Ineffective, 300),
            ("gpu-05", OutcomeResult::Harmful, 20),
            ("gpu-06", OutcomeResult::Unread, 300),
        ] {
            ledger.put(&judged(decision(&ledger, "slow-step", node, executed()), result, after)).unwrap();
        }
        let held = Verdict::Held { reason: "blast radius".into() };
        ledger.put(&decision(&ledger, "slow-step", "gpu-07", held)).unwrap();
        ledger.put(&decision(&ledger, "slow-step", "gpu-08", executed())).unwrap();
        ledger.put(&decision(&ledger, "pfc-storm", "gpu-01", Verdict::Shadowed)).unwrap();

        let records = ledger.rule_records().unwrap();
        let slow = &records["slow-step"];
        assert_eq!((slow.proposals, slow.executed), (8, 7), "the held one proposed and was not executed");
        assert_eq!((slow.effective, slow.ineffective, slow.harmful, slow.unread), (3, 1, 1, 1));
        assert_eq!(slow.judged(), 6, "gpu-08's check is still open");
        assert_eq!(slow.effective_percent(), Some(50.0));
        assert_eq!(slow.median_time_to_effect_ns, Some(6 * SECOND), "of 4, 6 and 10 s; not the 20 s harmful one");
        let storm = &records["pfc-storm"];
        assert_eq!((storm.proposals, storm.executed, storm.judged()), (1, 0, 0));
        assert_eq!((storm.effective_percent(), storm.median_time_to_effect_ns), (None, None), "nothing judged");
        assert_eq!(records.len(), 2);
    }

    #[test]
    fn a_decision_rewritten_when_judged_counts_once_as_it_was_judged() {
        let ledger = temporary();
        let action = decision(&ledger, "slow-step", "gpu-01", executed());
        ledger.put(&action).unwrap();
        let open = &ledger.rule_records().unwrap()["slow-step"];
        assert_eq!((open.proposals, open.executed, open.judged()), (1, 1, 0));
        ledger.put(&judged(action, OutcomeResult::Effective, 8)).unwrap();
        let closed = &ledger.rule_records().unwrap()["slow-step"];
        assert_eq!((closed.proposals, closed.executed, closed.effective), (1, 1, 1));
        assert_eq!(closed.median_time_to_effect_ns, Some(8 * SECOND));
    }

    #[test]
    fn undos_and_pages_are_not_proposals_of_the_rule() {
        let ledger = temporary();
        let action = decision(&ledger, "pfc-storm", "gpu-01", executed());
        ledger.put(&judged(action.clone(), OutcomeResult::Harmful, 30)).unwrap();
        let mut undo = decision(&ledger, "pfc-storm", "gpu-01", executed());
        undo.undo_of = Some(action.id.clone());
        ledger.put(&undo).unwrap();
        let mut page = decision(&ledger, "pfc-storm", "gpu-01", executed());
        page.proposal.id = format!("{PAGE_PREFIX}{:x}", 30 * SECOND);
        ledger.put(&page).unwrap();
        let storm = &ledger.rule_records().unwrap()["pfc-storm"];
        assert_eq!((storm.proposals, storm.executed, storm.harmful), (1, 1, 1), "{storm:?}");
        assert_eq!(storm.effective_percent(), Some(0.0), "judged, and not effective");
    }

    #[test]
    fn a_judgement_the_disk_refused_is_counted_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state")).unwrap();
        let ledger = Ledger::open(&store, Retention::default()).unwrap();
        let action = decision(&ledger, "slow-step", "gpu-01", executed());
        ledger.put_durable(&action).unwrap();
        store.inject_write_failure(Some(std::io::ErrorKind::StorageFull));
        assert!(ledger.put_durable(&judged(action, OutcomeResult::Ineffective, 300)).is_err());
        let slow = &ledger.rule_records().unwrap()["slow-step"];
        assert_eq!((slow.proposals, slow.ineffective), (1, 1), "once, read over the disk's record: {slow:?}");
    }

    #[test]
    fn the_median_of_an_even_count_is_halfway_between_the_middle_two() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [7]), Some(7));
        assert_eq!(median(&mut [9, 1, 4, 2]), Some(3));
        assert_eq!(median(&mut [i64::MAX - 2, i64::MAX]), Some(i64::MAX - 1), "no overflow");
    }
}
