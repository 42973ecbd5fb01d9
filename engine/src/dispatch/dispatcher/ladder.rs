//! Escalation ladders (`[[ladder]]`, `policy::ladders`): a rule's remedies
//! one at a time, mildest first.
//!
//! - **One rung at a time.** When a rule on a ladder fires, it proposes all
//!   its actions; the current rung's is decided, the others are kept (their
//!   decisions say so, suppressed by the ladder).
//! - **Climbing.** When the current rung's outcome check says
//!   *ineffective*, or its action failed, the next rung's kept proposal is
//!   decided, at that time and through the whole safety policy. An
//!   *effective* rung ends the climb and is remembered; a *harmful* one ends
//!   it (the outcome check undoes and holds it, and pages); a rung the
//!   policy holds ends it too: the policy's no is not a reason to do more.
//!   After the last rung, a human is paged.
//! - **Repeat offenders.** Each subject's incidents are counted in the
//!   ledger ([`crate::ledger::Offender`]), across restarts and incidents;
//!   from the ladder's `repeat`-th within `repeat_within`, an incident
//!   starts at the rung that last worked on that subject.

use super::*;
use crate::ledger::{Offender, Standing, Worked};
use crate::policy::Ladder;

/// One incident's climb.
#[derive(Debug, Clone)]
pub(super) struct Climb {
    /// When the incident began (its proposals' `active_at`).
    active_at: Nanos,
    /// The rung decided now.
    rung: usize,
    /// Its decision, once made.
    current: Option<String>,
    /// The proposals of the other rungs, by rung.
    kept: BTreeMap<usize, Proposal>,
    /// Why the climb goes on at the next tick (the current rung failed, or
    /// was ineffective), when it does.
    due: Option<String>,
}

/// The climbs under way, by rule and subject.
#[derive(Debug, Default)]
pub(super) struct Climbs(BTreeMap<(String, Labels), Climb>);

/// What the ladder makes of a proposal.
pub(super) enum OnLadder {
    /// Not on a ladder: decided as always.
    Off,
    /// The current rung: decided as always, then followed.
    Current,
    /// Kept for a later rung, or below where this incident starts.
    Kept(Box<Decision>),
}

impl Dispatcher {
    /// Where `p` stands on its rule's ladder, the incident's climb started
    /// if it is new.
    pub(super) fn onto_ladder(&mut self, p: &Proposal) -> OnLadder {
        let Some((_, ladder, rung)) = self.policy.settings().ladders.rung(&p.rule, &p.action.kind) else {
            return OnLadder::Off;
        };
        let ladder = ladder.clone();
        let key = (p.rule.clone(), p.subject.clone());
        if self.climbs.0.get(&key).is_none_or(|c| c.active_at != p.active_at) {
            let (start, why) = self.first_rung(&ladder, p);
            if let Some(why) = why {
                tracing::warn!(message = "A repeat offender starts up the ladder.", rule = %p.rule, subject = %p.subject, %why);
            }
            let climb = Climb { active_at: p.active_at, rung: start, current: None, kept: BTreeMap::new(), due: None };
            self.climbs.0.insert(key.clone(), climb);
        }
        let restored_here = p.restored
            && self
                .decided_before(p)
                .is_some_and(|d| matches!(d.verdict, Verdict::Executed { .. }) && d.undone_by.is_none());
        let climb = self.climbs.0.get_mut(&key).expect("inserted above");
        if restored_here && rung > climb.rung {
            // Climbed this far before a restart: the climb goes on from here.
            climb.rung = rung;
        }
        if rung == climb.rung {
            return OnLadder::Current;
        }
        let at = climb.rung;
        if rung > at {
            climb.kept.insert(rung, p.clone());
        }
        let reason = if rung > at {
            format!("ladder: {} is tried only if {} proves ineffective", ladder.describe_rung(rung), ladder.rungs[at])
        } else {
            format!("ladder: this incident starts at {}", ladder.describe_rung(at))
        };
        OnLadder::Kept(Box::new(self.kept_on_ladder(p.clone(), reason)))
    }

    /// The rung a new incident of `p`'s rule on its subject starts at, and
    /// why when it is not the first; the incident counted in the ledger.
    fn first_rung(&mut self, ladder: &Ladder, p: &Proposal) -> (usize, Option<String>) {
        let (Some(ledger), Some(mut o)) = (&self.ledger, self.record_of(&p.rule, &p.subject)) else {
            return (0, None);
        };
        let window = ladder.repeat_within.max(1);
        if o.fired(p.active_at, window) {
            if let Err(error) = ledger.put_offender(&o) {
                tracing::error!(message = "Could not keep a repeat offender in the ledger.", %error);
            }
        }
        let count = o.recent(p.active_at, window);
        match &o.worked {
            Some(w) if ladder.repeat >= 2 && count >= ladder.repeat as usize && w.rung < ladder.rungs.len() => {
                let why = format!(
                    "repeat offender: incident {count} within {}; starts at {}, which worked at {} ({})",
                    Span(ladder.repeat_within),
                    ladder.describe_rung(w.rung),
                    crate::time::rfc3339(w.at),
                    w.id
                );
                (w.rung, Some(why))
            }
            _ => (0, None),
        }
    }

    /// The decision of a proposal the ladder keeps: suppressed, saying why.
    fn kept_on_ladder(&mut self, proposal: Proposal, reason: String) -> Decision {
        let now = proposal.decided_at;
        let mode = self.effective_mode(&proposal.rule, proposal.rule_mode);
        let first = Step { at: now, what: format!("proposed by {} for {}", proposal.rule, proposal.subject) };
        let mut d = Decision::new(self.next_id(), proposal, mode, first, self.now());
        self.route_decision(&mut d);
        d.steps.push(Step { at: now, what: reason.clone() });
        d.verdict = Verdict::Suppressed { reason };
        self.finish(d, false)
    }

    /// The current rung of a climb was decided as `d`.
    pub(super) fn rung_decided(&mut self, d: &Decision) {
        let key = (d.proposal.rule.clone(), d.proposal.subject.clone());
        let Some(climb) = self.climbs.0.get_mut(&key) else { return };
        match &d.verdict {
            Verdict::Executed { .. } | Verdict::AwaitingApproval { .. } => climb.current = Some(d.id.clone()),
            Verdict::Duplicate { of } => {
                // Already in effect: wait for its check if it is open; else
                // it is in effect and the fault is back, so it is not enough.
                let open = self.ledger.as_ref().and_then(|l| l.get(of).ok().flatten()).and_then(|o| o.outcome);
                if !open.as_ref().is_some_and(crate::contracts::OutcomeCheck::is_open) {
                    climb.due = Some(format!("{of} is in effect and the fault is back"));
                }
                climb.current = Some(of.clone());
            }
            Verdict::Failed { .. } | Verdict::NoActuator => {
                climb.current = Some(d.id.clone());
                climb.due = Some(format!("{} {}", d.id, d.verdict.name()));
            }
            // Dry-run, shadow, held, suppressed: nothing to judge, no reason to do more.
            _ => {
                self.climbs.0.remove(&key);
            }
        }
    }

    /// Climbs where the current rung failed; the run loop calls it on every tick.
    pub async fn climb_due(&mut self, now: Nanos) -> Vec<Decision> {
        let due: Vec<((String, Labels), String)> =
            self.climbs.0.iter().filter_map(|(k, c)| Some((k.clone(), c.due.clone()?))).collect();
        let mut out = Vec::new();
        for (key, why) in due {
            out.extend(self.climb(&key, why, now).await);
        }
        out
    }

    /// The judgement of `d`'s outcome, for the climb it is the current rung
    /// of: effective ends it (remembered), harmful or unread ends it,
    /// ineffective makes it due ([`Dispatcher::climb_due`] climbs).
    pub(super) fn ladder_judged(&mut self, d: &Decision, result: OutcomeResult, now: Nanos) {
        let key = (d.proposal.rule.clone(), d.proposal.subject.clone());
        let Some(climb) = self.climbs.0.get_mut(&key) else { return };
        if climb.current.as_deref() != Some(d.id.as_str()) {
            return;
        }
        match result {
            OutcomeResult::Ineffective => climb.due = Some(format!("{} was ineffective", d.id)),
            OutcomeResult::Effective => {
                self.climbs.0.remove(&key);
                self.remember_worked(d, now);
            }
            OutcomeResult::Harmful | OutcomeResult::Unread => {
                self.climbs.0.remove(&key);
            }
        }
    }

    /// The incident of `rule` on `subject` is over: so is its climb.
    pub(super) fn climb_ends(&mut self, rule: &str, subject: &Labels) {
        self.climbs.0.remove(&(rule.to_string(), subject.clone()));
    }

    /// Pages a human about `rule` on `subject` through the playbook's
    /// `[outcomes] page` kind (none set: the log says it, nothing more).
    pub(super) async fn page(&mut self, rule: &str, subject: &Labels, reason: &str, now: Nanos) -> Option<Decision> {
        let kind = self.policy.settings().outcomes.page()?.to_string();
        let mut target = subject.clone();
        target.0.insert("rule".into(), rule.to_string());
        let params =
            BTreeMap::from([("rule".to_string(), rule.to_string()), ("reason".to_string(), reason.to_string())]);
        let p = Proposal {
            id: format!("{}{now:x}", crate::contracts::PAGE_PREFIX),
            rule: rule.to_string(),
            rule_hash: String::new(),
            rule_mode: Mode::Enforce,
            severity: crate::contracts::Severity::Critical,
            subject: subject.clone(),
            action: crate::contracts::Action { kind, target, params },
            values: Vec::new(),
            active_at: now,
            sample_at: now,
            decided_at: now,
            restored: false,
            jobs: Vec::new(),
        };
        Some(self.dispatch_noted(p, Some(format!("page: {reason}"))).await)
    }

    /// The ladder's next rung for the climb at `key`, decided now; a page
    /// when there is none.
    async fn climb(&mut self, key: &(String, Labels), why: String, now: Nanos) -> Vec<Decision> {
        let Some(ladder) = self.policy.settings().ladders.of_rule(&key.0).map(|(_, l)| l.clone()) else {
            self.climbs.0.remove(key);
            return Vec::new();
        };
        let Some(climb) = self.climbs.0.get_mut(key) else { return Vec::new() };
        climb.due = None;
        let from = climb.rung;
        let Some((&rung, _)) = climb.kept.range(from + 1..).next() else {
            self.climbs.0.remove(key);
            let reason = format!("ladder exhausted: {} ({why}) was its last rung", ladder.describe_rung(from));
            tracing::warn!(message = "An escalation ladder ran out; a human is needed.", rule = %key.0, subject = %key.1, %reason);
            return self.page(&key.0, &key.1, &reason, now).await.into_iter().collect();
        };
        climb.rung = rung;
        let mut p = climb.kept.remove(&rung).expect("found above");
        p.decided_at = now;
        p.restored = false;
        let note = format!("ladder: {} after {} ({why})", ladder.describe_rung(rung), ladder.rungs[from]);
        tracing::warn!(message = "Escalating to the ladder's next rung.", rule = %key.0, subject = %key.1, %note);
        let d = self.dispatch_noted(p, Some(note)).await;
        self.rung_decided(&d);
        vec![d]
    }

    /// Remembers in the ledger that `d`'s rung worked on its subject.
    fn remember_worked(&mut self, d: &Decision, now: Nanos) {
        let Some(ledger) = &self.ledger else { return };
        let Some((_, _, rung)) = self.policy.settings().ladders.rung(&d.proposal.rule, &d.proposal.action.kind) else {
            return;
        };
        let Some(mut o) = self.record_of(&d.proposal.rule, &d.proposal.subject) else { return };
        o.worked = Some(Worked { rung, kind: d.proposal.action.kind.clone(), id: d.id.clone(), at: now });
        if let Err(error) = ledger.put_offender(&o) {
            tracing::error!(message = "Could not remember the rung that worked.", %error);
        }
    }

    /// What the ledger remembers of `subject` of `rule` (a fresh record if
    /// nothing); `None` without a ledger, or when it cannot be read (logged).
    fn record_of(&self, rule: &str, subject: &Labels) -> Option<Offender> {
        match self.ledger.as_ref()?.offender(rule, subject) {
            Ok(found) => Some(found.unwrap_or_else(|| Offender::new(rule, subject))),
            Err(error) => {
                tracing::error!(message = "Could not read a repeat offender from the ledger.", %error);
                None
            }
        }
    }

    /// The subjects on ladders the ledger remembers.
    pub fn offenders(&self) -> Vec<Offender> {
        let Some(ledger) = &self.ledger else { return Vec::new() };
        ledger.offenders().unwrap_or_else(|error| {
            tracing::error!(message = "Could not read the repeat offenders.", %error);
            Vec::new()
        })
    }

    /// The subjects worth showing in `status` at `now`
    /// ([`Offender::standing`]), repeat offenders first, then by most
    /// incidents. A subject whose rule climbs no ladder any more (the
    /// playbook changed) has no window to count in and is left out; its
    /// record stays, and counts again if the rule is put back on a ladder.
    pub fn standings(&self, now: Nanos) -> Vec<Standing> {
        let ladders = &self.policy.settings().ladders;
        let mut out: Vec<Standing> = self
            .offenders()
            .iter()
            .filter_map(|o| {
                let (_, ladder) = ladders.of_rule(&o.rule)?;
                o.standing(now, ladder.repeat_within, ladder.repeat)
            })
            .collect();
        out.sort_by_key(|s| std::cmp::Reverse((s.repeat_offender, s.incidents, s.latest)));
        out
    }
}
