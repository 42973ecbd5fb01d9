//! Outcome checks: every enforced change is asked afterwards whether it
//! helped (`contracts::outcome`, `[outcomes]` and `[[expect]]` in the
//! playbook).
//!
//! - **Opened** when an enforced, destructive action executes: its decision
//!   carries an [`OutcomeCheck`] (deadline, the watched window values with
//!   their values when the rule fired), saved to the ledger before anything
//!   else happens, so a restart finds it among the actions in effect.
//! - **Watched** by the run loop, which can read the rules: each open check
//!   is on the [`OutcomeBoard`], read at most once a second.
//! - **Judged**: *effective* when the rule's instance resolves or its clear
//!   condition holds on the subject (the time it took is recorded);
//!   *harmful* when a watched value rose by more than the margin: undone
//!   through the undo path, and the rule silenced on that target for `hold`
//!   (a silence by `rocemend`, kept in the ledger across restarts, listed by
//!   `status`, lifted early with `unsilence`);
//!   *ineffective* at the deadline otherwise; *unread* when the rule could
//!   not be read then (nothing is judged on stale data).

use std::sync::Mutex;

use super::*;
use crate::contracts::{OutcomeCheck, OutcomeJudgement, OutcomeResult, Watched};
use crate::evaluator::{Observation, ObserveRequest};

/// How often the loop reads an open check's rule.
pub const POLL: Nanos = crate::time::SECOND;

/// An open check, as the run loop reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeWatch {
    /// The action's decision.
    pub id: String,
    /// The rule that asked for it.
    pub rule: String,
    /// Its subject.
    pub subject: Labels,
    /// The values watched: the rule's window values, job signals.
    pub values: Vec<String>,
    /// The running jobs the action touched, whose signals are watched.
    pub jobs: Vec<String>,
    /// Job signals read before this do not count (`Nanos::MAX`: none are watched).
    pub jobs_read_after: Nanos,
    /// When it was last read.
    read_at: Nanos,
}

impl OutcomeWatch {
    /// What the evaluator is asked for this check.
    pub fn request(&self) -> ObserveRequest<'_> {
        ObserveRequest {
            rule: &self.rule,
            subject: &self.subject,
            names: &self.values,
            jobs: &self.jobs,
            jobs_read_after: self.jobs_read_after,
        }
    }

    /// Whether it waits on a job signal, which the resolution of its rule
    /// alone does not judge.
    fn watches_jobs(&self) -> bool {
        self.jobs_read_after != Nanos::MAX
    }
}

/// The open checks, shared with the run loop: the dispatcher's task cannot
/// read the evaluator, the loop can.
#[derive(Debug, Clone, Default)]
pub struct OutcomeBoard(Arc<Mutex<BTreeMap<String, OutcomeWatch>>>);

impl OutcomeBoard {
    /// The checks to read at `now` (each at most once per [`POLL`]).
    pub fn due(&self, now: Nanos) -> Vec<OutcomeWatch> {
        let mut board = self.0.lock().unwrap_or_else(|e| e.into_inner());
        board
            .values_mut()
            .filter(|w| now - w.read_at >= POLL)
            .map(|w| {
                w.read_at = now;
                w.clone()
            })
            .collect()
    }

    fn open(&self, watch: OutcomeWatch) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(watch.id.clone(), watch);
    }

    fn close(&self, id: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
    }

    /// The checks of `rule` on `subject`: (id, whether it watches job signals).
    fn ids_of(&self, rule: &str, subject: &Labels) -> Vec<(String, bool)> {
        let board = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let of = |w: &&OutcomeWatch| w.rule == rule && &w.subject == subject;
        board.values().filter(of).map(|w| (w.id.clone(), w.watches_jobs())).collect()
    }
}

/// The outcome state of the dispatcher.
#[derive(Debug, Default)]
pub(super) struct Outcomes {
    board: OutcomeBoard,
}

impl Outcomes {
    /// Reopens the check of an action found in effect in the ledger at start.
    pub(super) fn restore(&mut self, d: &Decision) {
        if d.outcome.as_ref().is_some_and(OutcomeCheck::is_open) {
            self.board.open(watch_of(d));
        }
    }
}

fn watch_of(d: &Decision) -> OutcomeWatch {
    let values = d.outcome.as_ref().map(|o| o.worse.iter().map(|w| w.name.clone()).collect()).unwrap_or_default();
    OutcomeWatch {
        id: d.id.clone(),
        rule: d.proposal.rule.clone(),
        subject: d.proposal.subject.clone(),
        values,
        jobs: d.proposal.jobs.clone(),
        jobs_read_after: d.outcome.as_ref().and_then(|o| o.jobs_read_after).unwrap_or(Nanos::MAX),
        read_at: Nanos::MIN / 2,
    }
}

impl Dispatcher {
    /// The open outcome checks, for the run loop to read.
    pub fn outcome_board(&self) -> OutcomeBoard {
        self.outcomes.board.clone()
    }

    /// After `d` was decided: an enforced change that executed gets its check.
    pub(super) fn maybe_outcome(&mut self, mut d: Decision, now: Nanos) -> Decision {
        if d.mode != Mode::Enforce || !d.destructive || d.undo_of.is_some() || d.outcome.is_some() {
            return d;
        }
        if !matches!(d.verdict, Verdict::Executed { .. }) {
            return d;
        }
        let outcomes = &self.policy.settings().outcomes;
        if outcomes.page() == Some(d.proposal.action.kind.as_str()) {
            // A page tells a human; it is no remedy to judge.
            return d;
        }
        let Some(x) = outcomes.for_kind(&d.proposal.action.kind).cloned() else { return d };
        let before = |name: &str| d.proposal.values.iter().find(|(n, _)| n == name).map_or(f64::NAN, |(_, v)| *v);
        let worse = x.worse.iter().map(|name| Watched { name: name.clone(), before: before(name) }).collect();
        // Job signals count from a step run after the action; with no job touched there is none to wait for.
        let jobs_read_after = (x.watches_jobs() && !d.proposal.jobs.is_empty())
            .then(|| now + x.settle_after(before(crate::evaluator::STEP_TIME)));
        let check = OutcomeCheck {
            since: now,
            due: now + x.within,
            worse,
            jobs_read_after,
            margin: x.margin,
            hold: x.hold,
            judged: None,
        };
        d.steps.push(Step { at: now, what: check.describe() });
        d.outcome = Some(check);
        self.save(&d, false);
        self.outcomes.board.open(watch_of(&d));
        d
    }

    /// The instance of `rule` on `subject` resolved by itself: its open
    /// checks are effective. (An operator's resolution judges nothing: the
    /// check closes when its action is undone.)
    pub(super) fn outcomes_on_resolve(&mut self, rule: &str, subject: &Labels, now: Nanos) -> Vec<Decision> {
        let mut out = Vec::new();
        for (id, watches_jobs) in self.outcomes.board.ids_of(rule, subject) {
            if watches_jobs {
                // Judged when the jobs are read (`judge_outcome`): a remedy that clears its
                // rule may still have slowed the job.
                continue;
            }
            if self.policy.in_effect().any(|e| e.id == id) {
                out.extend(self.judged(&id, OutcomeResult::Effective, format!("{rule} resolved"), now));
            } else {
                self.outcomes.board.close(&id);
            }
        }
        out
    }

    /// Stops watching the checks of `rule` on `subject` without judging them.
    pub(super) fn unwatch_outcomes_of(&mut self, rule: &str, subject: &Labels) {
        for (id, _) in self.outcomes.board.ids_of(rule, subject) {
            self.outcomes.board.close(&id);
        }
    }

    /// Judges the open check `id` on what its rule reads now (`None`: the
    /// rule could not be read on its subject); returns the decisions this
    /// makes (the action's, judged; an undo).
    pub async fn judge_outcome(&mut self, id: &str, seen: Option<Observation>, now: Nanos) -> Vec<Decision> {
        let original = self.ledger.as_ref().and_then(|l| l.get(id).ok().flatten());
        let effect = self.policy.in_effect().find(|e| e.id == id).cloned();
        let (Some(d), Some(effect)) = (original, effect) else {
            // Undone or gone since: nothing left to judge.
            self.outcomes.board.close(id);
            return Vec::new();
        };
        let Some(check) = d.outcome.clone().filter(OutcomeCheck::is_open) else {
            self.outcomes.board.close(id);
            return Vec::new();
        };
        let Some(seen) = seen else {
            if now < check.due {
                return Vec::new();
            }
            return self.judged(id, OutcomeResult::Unread, "its rule could not be read on its subject".into(), now);
        };
        if let Some(rose) = rose(&check, &seen) {
            let mut out = self.judged(id, OutcomeResult::Harmful, rose.clone(), now);
            let rule = d.proposal.rule.clone();
            tracing::warn!(message = "An action made things worse; undoing it.", %id, %rule, target = %effect.action.target, %rose);
            if check.hold > 0 {
                let silence = crate::silence::Silence {
                    id: String::new(),
                    rule: Some(rule),
                    target: Some(effect.action.target.to_string()),
                    until: now + check.hold,
                    by: "rocemend".into(),
                    reason: format!("its action {id} made it worse ({rose})"),
                };
                if let Err(error) = self.silence(silence) {
                    tracing::error!(message = "Could not hold the rule after a harmful action.", %id, %error);
                }
            }
            let first = format!("{id} made it worse ({rose}): undo {}", effect.action);
            out.push(self.undo(effect, now, first).await);
            let held = match check.hold {
                0 => String::new(),
                hold => format!(
                    "; {} held on it for {}",
                    d.proposal.rule,
                    crate::config::duration::show(std::time::Duration::from_nanos(hold.max(0) as u64))
                ),
            };
            let reason = format!("{id} ({}) made it worse ({rose}); undone{held}", d.proposal.action);
            out.extend(self.page(&d.proposal.rule, &d.proposal.subject, &reason, now).await);
            return out;
        }
        let jobs_unread = check.jobs_read_after.is_some() && !jobs_read(&check, &seen);
        if seen.cleared && !(jobs_unread && now < check.due) {
            let jobs = if jobs_unread { ", the jobs not read" } else { "" };
            return self.judged(id, OutcomeResult::Effective, format!("{} clears{jobs}", d.proposal.rule), now);
        }
        if now >= check.due {
            let detail = format!("{} still fires", d.proposal.rule);
            let mut out = self.judged(id, OutcomeResult::Ineffective, detail, now);
            out.extend(self.climb_due(now).await);
            return out;
        }
        Vec::new()
    }

    /// Judges every check due at `now` on what `observe` reads of its rule,
    /// then climbs the ladders whose rung failed: the tick of a run loop
    /// that holds the evaluator itself (the chaos harness, `preview`).
    pub async fn judge_due(
        &mut self,
        now: Nanos,
        mut observe: impl FnMut(&OutcomeWatch) -> Option<Observation>,
    ) -> Vec<Decision> {
        let mut out = Vec::new();
        for open in self.outcomes.board.due(now) {
            let seen = observe(&open);
            out.extend(self.judge_outcome(&open.id, seen, now).await);
        }
        out.extend(self.climb_due(now).await);
        out
    }

    /// Records `result` on the check of `id` and closes it.
    /// A judgement that cannot be written stays open: judged again at the next reading.
    fn judged(&mut self, id: &str, result: OutcomeResult, detail: String, now: Nanos) -> Vec<Decision> {
        let Some(mut d) = self.ledger.as_ref().and_then(|l| l.get(id).ok().flatten()) else {
            self.outcomes.board.close(id);
            return Vec::new();
        };
        let Some(check) = d.outcome.as_mut().filter(|c| c.is_open()) else {
            self.outcomes.board.close(id);
            return Vec::new();
        };
        check.judged = Some(OutcomeJudgement { at: now, result, after_ns: now - check.since, detail });
        let line = check.describe();
        d.steps.push(Step { at: now, what: line.clone() });
        if !self.save(&d, true) {
            return Vec::new();
        }
        self.outcomes.board.close(id);
        tracing::info!(message = "Outcome judged.", %id, outcome = result.name(), judgement = %line);
        self.ladder_judged(&d, result, now);
        vec![d]
    }
}

/// Whether a job signal the check watches was read (after its settling time).
fn jobs_read(check: &OutcomeCheck, seen: &Observation) -> bool {
    check.worse.iter().zip(&seen.values).any(|(w, v)| crate::evaluator::is_job_signal(&w.name) && v.is_finite())
}

/// The first watched value that rose by more than the margin, described.
fn rose(check: &OutcomeCheck, seen: &Observation) -> Option<String> {
    check.worse.iter().zip(&seen.values).find_map(|(w, &now)| {
        let limit = if w.before > 0.0 { w.before * (1.0 + check.margin) } else { w.before + check.margin };
        (w.before.is_finite() && now.is_finite() && now > limit)
            .then(|| format!("{} {:.3} \u{2192} {:.3}", w.name, w.before, now))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(before: f64) -> OutcomeCheck {
        OutcomeCheck {
            since: 0,
            due: 10,
            worse: vec![Watched { name: "paused".into(), before }],
            jobs_read_after: None,
            margin: 0.1,
            hold: 0,
            judged: None,
        }
    }

    #[test]
    fn a_rise_beyond_the_margin_is_worse_and_an_unknown_value_is_not() {
        let seen = |v: f64| Observation { cleared: false, values: vec![v] };
        assert!(rose(&check(0.5), &seen(0.56)).is_some_and(|r| r.starts_with("paused 0.500")));
        assert!(rose(&check(0.5), &seen(0.54)).is_none(), "within the margin");
        assert!(rose(&check(f64::NAN), &seen(9.0)).is_none(), "no value when it fired");
        assert!(rose(&check(0.5), &seen(f64::NAN)).is_none(), "no value now");
        assert!(rose(&check(0.0), &seen(0.2)).is_some(), "from nothing, by more than the margin");
    }
}
