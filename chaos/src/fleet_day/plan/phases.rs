//! The script's `[[phase]]` tables, checked in order and typed: each `do`
//! with the keys it takes, faults started before they are settled, a
//! token holder killed only once its fault settled, and no more etcd
//! leader kills than the cluster keeps a quorum through.

use std::collections::BTreeSet;
use std::ops::Range;

use engine::Nanos;

use super::{EtcdPlan, GameFault, PhasePlan, SECOND};
use crate::fleet_day::spec::PhaseSpec;
use crate::plan::Ctx;
use crate::spec::ScenarioError;

/// The keys each `do` takes, besides `do`.
fn allowed(action: &str) -> Option<&'static [&'static str]> {
    Some(match action {
        "start" => &["faults"],
        "settle" => &["faults", "within"],
        "pause" => &["for"],
        "kill-etcd-leader" => &["elect_within"],
        "kill-token-holder" => &["fault", "return_within"],
        _ => return None,
    })
}

pub(super) fn resolve(
    ctx: &Ctx,
    specs: &[PhaseSpec],
    faults: &[GameFault],
    etcd: &EtcdPlan,
    lease_ttl: Nanos,
) -> Result<Vec<PhasePlan>, ScenarioError> {
    let mut script =
        Script { ctx, faults, etcd, lease_ttl, started: BTreeSet::new(), settled: BTreeSet::new(), leader_kills: 0 };
    let out = specs.iter().map(|p| script.phase(p)).collect::<Result<Vec<_>, _>>()?;
    if out.is_empty() {
        return Err(ctx.err(0..0, "no [[phase]]: the game has nothing to play"));
    }
    Ok(out)
}

/// The script so far, as its phases are read in order: what a phase may
/// do depends on those before it.
struct Script<'a> {
    ctx: &'a Ctx<'a>,
    faults: &'a [GameFault],
    etcd: &'a EtcdPlan,
    lease_ttl: Nanos,
    /// Faults a `start` phase started.
    started: BTreeSet<usize>,
    /// Faults a `settle` phase waited for.
    settled: BTreeSet<usize>,
    /// `kill-etcd-leader` phases so far.
    leader_kills: usize,
}

impl Script<'_> {
    /// Phase `p`, typed, after the ones before it.
    fn phase(&mut self, p: &PhaseSpec) -> Result<PhasePlan, ScenarioError> {
        let action = p.action.get_ref().as_str();
        self.check_keys(p, action)?;
        match action {
            "start" => self.start(p, action),
            "settle" => self.settle(p, action),
            "pause" => match &p.for_ {
                Some(d) => Ok(PhasePlan::Pause(self.ctx.positive(d, "for")?)),
                None => Err(self.ctx.err(p.action.span(), "do = \"pause\" needs for = \"2s\"")),
            },
            "kill-etcd-leader" => self.kill_etcd_leader(p),
            _ => self.kill_token_holder(p),
        }
    }

    /// `do` is one the game knows, and every other key written is one it
    /// takes.
    fn check_keys(&self, p: &PhaseSpec, action: &str) -> Result<(), ScenarioError> {
        let Some(keys) = allowed(action) else {
            return Err(self.ctx.err(
                p.action.span(),
                format!("do = {action:?}: expected start, settle, pause, kill-etcd-leader or kill-token-holder"),
            ));
        };
        let given: [(&str, Option<Range<usize>>); 6] = [
            ("faults", p.faults.as_ref().map(|f| f.span())),
            ("within", p.within.as_ref().map(|f| f.span())),
            ("for", p.for_.as_ref().map(|f| f.span())),
            ("elect_within", p.elect_within.as_ref().map(|f| f.span())),
            ("fault", p.fault.as_ref().map(|f| f.span())),
            ("return_within", p.return_within.as_ref().map(|f| f.span())),
        ];
        match given.into_iter().find(|(key, span)| span.is_some() && !keys.contains(key)) {
            Some((key, Some(span))) => Err(self
                .ctx
                .err(span, format!("{key} does not apply to do = {action:?} (it takes: {})", keys.join(", ")))),
            _ => Ok(()),
        }
    }

    /// The faults a `start` or `settle` names, by index; `required` says
    /// what they are for when there are none.
    fn fault_list(&self, p: &PhaseSpec, action: &str, required: &str) -> Result<Vec<usize>, ScenarioError> {
        let Some(list) = &p.faults else {
            return Err(self.ctx.err(p.action.span(), format!("do = {action:?} needs faults = [...]: {required}")));
        };
        if list.get_ref().is_empty() {
            return Err(self.ctx.err(list.span(), "faults = []: name at least one"));
        }
        list.get_ref()
            .iter()
            .map(|n| {
                self.faults.iter().position(|f| &f.name == n).ok_or_else(|| {
                    let known: Vec<&str> = self.faults.iter().map(|f| f.name.as_str()).collect();
                    self.ctx.err(list.span(), format!("no fault {n:?} (the faults: {})", known.join(", ")))
                })
            })
            .collect()
    }

    /// `start`: each fault once.
    fn start(&mut self, p: &PhaseSpec, action: &str) -> Result<PhasePlan, ScenarioError> {
        let list = self.fault_list(p, action, "the faults to start")?;
        for &i in &list {
            if !self.started.insert(i) {
                return Err(self.ctx.err(p.action.span(), format!("fault {:?} is started twice", self.faults[i].name)));
            }
        }
        Ok(PhasePlan::Start(list))
    }

    /// `settle`: faults a phase before started.
    fn settle(&mut self, p: &PhaseSpec, action: &str) -> Result<PhasePlan, ScenarioError> {
        let list = self.fault_list(p, action, "the faults to wait for")?;
        for &i in &list {
            if !self.started.contains(&i) {
                return Err(self.ctx.err(
                    p.action.span(),
                    format!("fault {:?} is settled before a start phase starts it", self.faults[i].name),
                ));
            }
            self.settled.insert(i);
        }
        Ok(PhasePlan::Settle { faults: list, within: self.ctx.positive_or(&p.within, "within", 20 * SECOND)? })
    }

    /// `kill-etcd-leader`: while the cluster keeps a quorum.
    fn kill_etcd_leader(&mut self, p: &PhaseSpec) -> Result<PhasePlan, ScenarioError> {
        self.leader_kills += 1;
        // Past a minority, the cluster has no quorum: nothing could be
        // taken or freed, and the game would measure nothing.
        let most = (self.etcd.members - 1) / 2;
        if self.leader_kills > most {
            return Err(self.ctx.err(
                p.action.span(),
                format!(
                    "kill-etcd-leader #{}: {} member(s) keep a quorum through at most {most} kill(s)",
                    self.leader_kills, self.etcd.members
                ),
            ));
        }
        Ok(PhasePlan::KillEtcdLeader {
            elect_within: self.ctx.positive_or(&p.elect_within, "elect_within", 5 * SECOND)?,
        })
    }

    /// `kill-token-holder`: of a fault a phase before settled.
    fn kill_token_holder(&mut self, p: &PhaseSpec) -> Result<PhasePlan, ScenarioError> {
        let Some(name) = &p.fault else {
            return Err(self.ctx.err(p.action.span(), "do = \"kill-token-holder\" needs fault = \"NAME\""));
        };
        let Some(i) = self.faults.iter().position(|f| &f.name == name.get_ref()) else {
            return Err(self.ctx.err(name.span(), format!("no fault {:?}", name.get_ref())));
        };
        if !self.settled.contains(&i) {
            return Err(self.ctx.err(
                name.span(),
                format!("fault {:?}: its token holder is known once a settle phase waited for it", name.get_ref()),
            ));
        }
        let return_within = self.ctx.positive_or(&p.return_within, "return_within", self.lease_ttl + 2 * SECOND)?;
        Ok(PhasePlan::KillTokenHolder { fault: i, return_within })
    }
}
