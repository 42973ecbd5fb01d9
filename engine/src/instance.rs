//! The state machine of one rule instance (one rule, one subject).
//!
//! ```text
//!            fire                 fire held for `for`
//! inactive ───────▶ pending ─────────────────────────▶ firing
//!    ▲                 │ !fire                          │ clear held for
//!    │◀────────────────┘                                │ `keep_firing_for`
//!    │        cooldown over                             ▼
//!    └───────────────────────────────────────────── resolved
//! ```
//!
//! Prometheus-style `for` and `keep_firing_for`, with two additions: the
//! clear condition is separate from the fire condition (hysteresis), and a
//! resolved instance ignores its fire condition for `cooldown`, so a flapping
//! fault produces at most one firing per cooldown.
//!
//! Stale inputs freeze the instance: a pending instance drops back to
//! inactive (it may not fire on missing data), a firing one stays firing (it
//! may not resolve, and so undo, on missing data either).
//!
//! [`step`] is a pure function of the instance, the time and the condition's
//! value: tests drive it through a table of times.

use serde::{Deserialize, Serialize};

use crate::rule::Condition;
use crate::time::Nanos;

/// Where an instance is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Nothing wrong.
    Inactive,
    /// The fire condition holds, not yet for `for`.
    Pending,
    /// Firing: actions were proposed.
    Firing,
    /// Resolved; in cooldown until `cooldown_until`.
    Resolved,
}

impl State {
    /// Lower-case name, as in rule tests and records.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Inactive => "inactive",
            State::Pending => "pending",
            State::Firing => "firing",
            State::Resolved => "resolved",
        }
    }
}

/// A word that names no instance state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown state {0:?}: expected inactive, pending, firing or resolved")]
pub struct UnknownState(pub String);

impl std::str::FromStr for State {
    type Err = UnknownState;
    fn from_str(s: &str) -> Result<State, UnknownState> {
        match s {
            "inactive" => Ok(State::Inactive),
            "pending" => Ok(State::Pending),
            "firing" => Ok(State::Firing),
            "resolved" => Ok(State::Resolved),
            other => Err(UnknownState(other.to_string())),
        }
    }
}

/// The timing parameters of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// `for`.
    pub for_: Nanos,
    /// `keep_firing_for`.
    pub keep_firing_for: Nanos,
    /// `cooldown`.
    pub cooldown: Nanos,
}

/// One instance's state; what is persisted across restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instance {
    /// Current state.
    pub state: State,
    /// When it entered the current state.
    pub since: Nanos,
    /// When the fire condition first held in this episode (pending start).
    pub active_at: Nanos,
    /// While firing: since when the clear condition has held.
    pub clear_since: Option<Nanos>,
    /// While resolved: when the cooldown ends.
    pub cooldown_until: Nanos,
    /// Whether the inputs are stale.
    pub stale: bool,
    /// Since when they are (the scan that found them stale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_since: Option<Nanos>,
}

impl Instance {
    /// A new inactive instance.
    pub fn new(now: Nanos) -> Instance {
        Instance {
            state: State::Inactive,
            since: now,
            active_at: 0,
            clear_since: None,
            cooldown_until: 0,
            stale: false,
            stale_since: None,
        }
    }

    /// Which condition must be evaluated at `now`, if any. A resolved
    /// instance in cooldown needs none; once the cooldown is over it is
    /// treated as inactive.
    pub fn needs(&self, now: Nanos) -> Option<Condition> {
        match self.state {
            State::Inactive | State::Pending => Some(Condition::Fire),
            State::Firing => Some(Condition::Clear),
            State::Resolved if now >= self.cooldown_until => Some(Condition::Fire),
            State::Resolved => None,
        }
    }

    /// Whether the instance holds nothing worth keeping (inactive, not stale).
    pub fn is_idle(&self) -> bool {
        self.state == State::Inactive && !self.stale
    }
}

/// A change of state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// Old state.
    pub from: State,
    /// New state.
    pub to: State,
    /// When.
    pub at: Nanos,
}

/// Advances `inst` to `now` given the value of the condition [`Instance::needs`]
/// asked for (`None` when it asked for none). Returns the transitions taken,
/// at most two (resolved → inactive → pending can happen in one step).
pub fn step(inst: &mut Instance, timing: &Timing, now: Nanos, cond: Option<bool>) -> Vec<Transition> {
    let mut out = Vec::new();
    let mut go = |inst: &mut Instance, to: State| {
        out.push(Transition { from: inst.state, to, at: now });
        inst.state = to;
        inst.since = now;
    };
    if inst.state == State::Resolved && now >= inst.cooldown_until {
        go(inst, State::Inactive);
    }
    match (inst.state, cond) {
        (State::Inactive, Some(true)) => {
            inst.active_at = now;
            go(inst, State::Pending);
            if timing.for_ == 0 {
                go(inst, State::Firing);
                inst.clear_since = None;
            }
        }
        (State::Pending, Some(true)) if now - inst.active_at >= timing.for_ => {
            go(inst, State::Firing);
            inst.clear_since = None;
        }
        (State::Pending, Some(false)) => go(inst, State::Inactive),
        (State::Firing, Some(true)) => {
            let since = *inst.clear_since.get_or_insert(now);
            if now - since >= timing.keep_firing_for {
                inst.clear_since = None;
                inst.cooldown_until = now + timing.cooldown;
                go(inst, State::Resolved);
            }
        }
        (State::Firing, Some(false)) => inst.clear_since = None,
        _ => {}
    }
    out
}

/// Marks the inputs stale at `now`. A pending instance goes back to
/// inactive; a firing one is frozen. Returns whether the instance just
/// became stale (so the caller raises one `sensor-stale` incident).
pub fn mark_stale(inst: &mut Instance, now: Nanos) -> (bool, Option<Transition>) {
    let newly = !inst.stale;
    inst.stale = true;
    if newly {
        inst.stale_since = Some(now);
    }
    let transition = if inst.state == State::Pending {
        let t = Transition { from: State::Pending, to: State::Inactive, at: now };
        inst.state = State::Inactive;
        inst.since = now;
        Some(t)
    } else {
        None
    };
    if inst.state == State::Firing {
        // Whatever clear time had accumulated was measured on data that has
        // since gone missing; start over when data returns.
        inst.clear_since = None;
    }
    (newly, transition)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SECOND as S;

    /// Steps an instance once a second through `conds` and checks its
    /// state after each step against `states`, both read one character a
    /// second (spaces are for alignment only):
    ///
    /// - `conds`: the value of the condition the instance asks for, `T` or
    ///   `F`; `S` for stale inputs; `.` for no evaluation that second;
    /// - `states`: `i`nactive, `p`ending, `f`iring, `r`esolved; `.` where
    ///   `conds` has one.
    fn run(timing: Timing, conds: &str, states: &str) {
        let conds: Vec<char> = conds.chars().filter(|c| !c.is_whitespace()).collect();
        let states: Vec<char> = states.chars().filter(|c| !c.is_whitespace()).collect();
        assert_eq!(conds.len(), states.len(), "one state per second");
        let mut inst = Instance::new(0);
        for (second, (&cond, &state)) in conds.iter().zip(&states).enumerate() {
            let t = second as Nanos * S;
            match cond {
                '.' => continue,
                'S' => {
                    mark_stale(&mut inst, t);
                }
                'T' | 'F' => {
                    inst.stale = false;
                    inst.stale_since = None;
                    let asked = inst.needs(t);
                    step(&mut inst, &timing, t, asked.map(|_| cond == 'T'));
                }
                other => panic!("condition {other:?}"),
            }
            let expect = match state {
                'i' => Inactive,
                'p' => Pending,
                'f' => Firing,
                'r' => Resolved,
                other => panic!("state {other:?}"),
            };
            assert_eq!(inst.state, expect, "at t={second}s");
        }
    }

    use State::*;

    #[test]
    fn for_delays_firing_and_a_break_resets_it() {
        // The condition is the fire condition while inactive or pending and
        // the clear condition while firing.
        let timing = Timing { for_: 2 * S, keep_firing_for: 0, cooldown: 0 };
        run(timing, "F T T T F T T F T T T", "i p p f f r p i p p f");
    }

    #[test]
    fn keep_firing_for_holds_firing_after_clear() {
        // Clear holds from t=1, breaks at t=3, holds again from t=4 for 3 s.
        let timing = Timing { for_: 0, keep_firing_for: 3 * S, cooldown: 0 };
        run(timing, "T T T F T . T T", "f f f f f . f r");
    }

    #[test]
    fn cooldown_ignores_fire_then_lets_it_fire_again() {
        let timing = Timing { for_: 0, keep_firing_for: 0, cooldown: 10 * S };
        run(timing, "T T T . . . . . . . T T", "f r r . . . . . . . r f");
    }

    #[test]
    fn stale_inputs_never_fire_and_never_resolve() {
        let timing = Timing { for_: 2 * S, keep_firing_for: 0, cooldown: 0 };
        run(timing, "T S S T . T S S T", "p i i p . f f f r");
    }

    #[test]
    fn resolved_to_pending_in_one_step_reports_both_transitions() {
        let timing = Timing { for_: S, keep_firing_for: 0, cooldown: S };
        let mut inst = Instance::new(0);
        step(&mut inst, &timing, 0, Some(true));
        step(&mut inst, &timing, S, Some(true));
        assert_eq!(inst.state, Firing);
        step(&mut inst, &timing, 2 * S, Some(true));
        assert_eq!(inst.state, Resolved);
        let ts = step(&mut inst, &timing, 3 * S, Some(true));
        assert_eq!(ts.iter().map(|t| t.to).collect::<Vec<_>>(), vec![Inactive, Pending]);
    }

    #[test]
    fn becoming_stale_is_reported_once() {
        let mut inst = Instance::new(0);
        assert!(mark_stale(&mut inst, S).0);
        assert!(!mark_stale(&mut inst, 2 * S).0);
    }
}
