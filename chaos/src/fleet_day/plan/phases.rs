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
    let mut started = BTreeSet::new();
    let mut settled = BTreeSet::new();
    let mut leader_kills = 0;
    let mut out = Vec::new();
    for p in specs {
        let action = p.action.get_ref().as_str();
        let Some(keys) = allowed(action) else {
            return Err(ctx.err(
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
        for (key, span) in given {
            if let Some(span) = span {
                if !keys.contains(&key) {
                    return Err(ctx.err(
                        span,
                        format!("{key} does not apply to do = {action:?} (it takes: {})", keys.join(", ")),
                    ));
                }
            }
        }
        let fault_list = |required: &str| -> Result<Vec<usize>, ScenarioError> {
            let Some(list) = &p.faults else {
                return Err(ctx.err(p.action.span(), format!("do = {action:?} needs faults = [...]: {required}")));
            };
            if list.get_ref().is_empty() {
                return Err(ctx.err(list.span(), "faults = []: name at least one"));
            }
            list.get_ref()
                .iter()
                .map(|n| {
                    faults.iter().position(|f| &f.name == n).ok_or_else(|| {
                        let known: Vec<&str> = faults.iter().map(|f| f.name.as_str()).collect();
                        ctx.err(list.span(), format!("no fault {n:?} (the faults: {})", known.join(", ")))
                    })
                })
                .collect()
        };
        let phase = match action {
            "start" => {
                let list = fault_list("the faults to start")?;
                for &i in &list {
                    if !started.insert(i) {
                        return Err(ctx.err(p.action.span(), format!("fault {:?} is started twice", faults[i].name)));
                    }
                }
                PhasePlan::Start(list)
            }
            "settle" => {
                let list = fault_list("the faults to wait for")?;
                for &i in &list {
                    if !started.contains(&i) {
                        return Err(ctx.err(
                            p.action.span(),
                            format!("fault {:?} is settled before a start phase starts it", faults[i].name),
                        ));
                    }
                    settled.insert(i);
                }
                PhasePlan::Settle { faults: list, within: ctx.positive_or(&p.within, "within", 20 * SECOND)? }
            }
            "pause" => match &p.for_ {
                Some(d) => PhasePlan::Pause(ctx.positive(d, "for")?),
                None => return Err(ctx.err(p.action.span(), "do = \"pause\" needs for = \"2s\"")),
            },
            "kill-etcd-leader" => {
                leader_kills += 1;
                // Past a minority, the cluster has no quorum: nothing could
                // be taken or freed, and the game would measure nothing.
                if leader_kills > (etcd.members - 1) / 2 {
                    return Err(ctx.err(
                        p.action.span(),
                        format!(
                            "kill-etcd-leader #{leader_kills}: {} member(s) keep a quorum through at most {} kill(s)",
                            etcd.members,
                            (etcd.members - 1) / 2
                        ),
                    ));
                }
                PhasePlan::KillEtcdLeader {
                    elect_within: ctx.positive_or(&p.elect_within, "elect_within", 5 * SECOND)?,
                }
            }
            _ => {
                let Some(name) = &p.fault else {
                    return Err(ctx.err(p.action.span(), "do = \"kill-token-holder\" needs fault = \"NAME\""));
                };
                let Some(i) = faults.iter().position(|f| &f.name == name.get_ref()) else {
                    return Err(ctx.err(name.span(), format!("no fault {:?}", name.get_ref())));
                };
                if !settled.contains(&i) {
                    return Err(ctx.err(
                        name.span(),
                        format!(
                            "fault {:?}: its token holder is known once a settle phase waited for it",
                            name.get_ref()
                        ),
                    ));
                }
                let return_within = ctx.positive_or(&p.return_within, "return_within", lease_ttl + 2 * SECOND)?;
                PhasePlan::KillTokenHolder { fault: i, return_within }
            }
        };
        out.push(phase);
    }
    if out.is_empty() {
        return Err(ctx.err(0..0, "no [[phase]]: the game has nothing to play"));
    }
    Ok(out)
}
