//! The wall-clock faults, applied to real links, each fault from a thread
//! of its own: flaps as RTM_SETLINK requests on one netlink socket (what
//! `ip link set` sends, without starting a process), loss, delay and rate
//! limits as `tc` qdiscs. A flap's time is taken just before the request,
//! so the latencies measured are the kernel's, the sensor's, the engine's
//! and the actuator's.
//!
//! A thread per fault because a fault blocks its thread while it lasts (a
//! flap sleeps between down and up, a qdisc until it is removed): faults
//! on several links run at the same time, each on its own schedule.

use std::time::Duration;

use engine::time::wall_clock_now;
use engine::Nanos;
use net::link::BlockingLinks;
use net::netns::{enter, run_tool};
use net::NetError;

use crate::plan::FaultPlan;
use crate::report::FaultRecord;
use crate::scenario::{ScenarioPlan, Scheduled};
use crate::spec::FaultKind;
use crate::ChaosError;

/// The `node` label of the daemon under test in its namespace; the
/// playbook's `link` actuator must be configured for it.
pub const NODE: &str = "chaos-veth";

/// Where faults are applied: in a namespace, or the host's own.
#[derive(Debug, Clone)]
pub struct LinkNamespace {
    /// The namespace, or `None` for the host's.
    pub netns: Option<String>,
}

impl LinkNamespace {
    fn tool(&self, tool: &str, args: &[&str]) -> Result<(), NetError> {
        match &self.netns {
            Some(ns) => run_tool(tool, &[&["-n", ns.as_str()], args].concat()),
            None => run_tool(tool, args),
        }
    }
}

/// What `tc` says when the kernel has no module for a qdisc kind.
const UNKNOWN_QDISC: &[&str] = &["qdisc kind is unknown", "Unknown qdisc"];

/// Why the scenario cannot run here when `error` (of `tc qdisc add … kind`)
/// says the kernel lacks the qdisc: the module to load, and tc's words.
fn missing_qdisc(plan: &ScenarioPlan, kind: FaultKind, error: &NetError) -> Option<ChaosError> {
    let NetError::Tool { stderr, .. } = error else { return None };
    if !UNKNOWN_QDISC.iter().any(|text| stderr.contains(text)) {
        return None;
    }
    let module = if kind == FaultKind::Tbf { "sch_tbf" } else { "sch_netem" };
    Some(ChaosError::CannotRunHere {
        scenario: plan.name.clone(),
        reason: format!("this kernel has no {module} module (`modprobe {module}`); tc said: {stderr}"),
    })
}

/// Adds and removes each qdisc kind the scenario uses once, on its link in
/// `target`, before the run: a kernel without `sch_netem` or `sch_tbf`
/// skips the scenario with the reason ([`ChaosError::CannotRunHere`])
/// instead of failing it halfway.
pub fn probe_qdiscs(plan: &ScenarioPlan, target: &LinkNamespace) -> Result<(), ChaosError> {
    let mut probed = Vec::new();
    for f in plan.faults.iter().filter(|f| matches!(f.kind, FaultKind::Netem | FaultKind::Tbf)) {
        let Some(link) = f.link.as_deref() else { continue };
        if probed.contains(&f.kind) {
            continue;
        }
        probed.push(f.kind);
        let args = qdisc(f, link);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        if let Err(e) = target.tool("tc", &args) {
            return Err(missing_qdisc(plan, f.kind, &e).unwrap_or_else(|| e.into()));
        }
        target.tool("tc", &["qdisc", "del", "dev", link, "root"])?;
    }
    Ok(())
}

/// Applies the faults of `plan` from `start` on, each from a thread of
/// its own (in `target`'s namespace); returns what was done and when, in
/// start order.
pub async fn apply(
    plan: &ScenarioPlan,
    target: LinkNamespace,
    start: Nanos,
    seed: u64,
) -> Result<Vec<FaultRecord>, ChaosError> {
    // The load refuses them (at their line); a plan made in code may not
    // have been loaded. Not CannotRunHere: no machine could run it.
    if let Some(f) = plan.faults.iter().find(|f| !f.kind.needs_real_links()) {
        return Err(ChaosError::Scenario(crate::spec::ScenarioError {
            path: plan.name.clone(),
            line: 0,
            column: 0,
            message: format!("fault {:?} is a simulator fault; it cannot run on the wall clock", f.kind),
        }));
    }
    let plan = plan.clone();
    let driver = std::thread::spawn(move || drive(&plan, &target, start, seed));
    match tokio::task::spawn_blocking(move || driver.join()).await {
        Ok(Ok(result)) => result,
        _ => Err(ChaosError::Daemon("the fault thread panicked".into())),
    }
}

fn sleep_until(t: Nanos) {
    let now = wall_clock_now();
    if t > now {
        std::thread::sleep(Duration::from_nanos((t - now) as u64));
    }
}

/// Applies the faults of `plan` from `start` on, a thread per fault, and
/// waits for the run's end; returns what was done and when. The first
/// error of a fault is the run's, once every thread is done.
fn drive(plan: &ScenarioPlan, target: &LinkNamespace, start: Nanos, seed: u64) -> Result<Vec<FaultRecord>, ChaosError> {
    let end = start + plan.duration;
    let schedule = plan.schedule_real(seed);
    let results: Vec<Result<Vec<FaultRecord>, ChaosError>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..plan.faults.len())
            .map(|fault| {
                let mine: Vec<&Scheduled> = schedule.iter().filter(|s| s.fault == fault).collect();
                scope.spawn(move || {
                    // setns applies to the calling thread only: each enters.
                    if let Some(ns) = &target.netns {
                        enter(ns)?;
                    }
                    drive_fault(plan, target, &plan.faults[fault], &mine, start, end)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|_| Err(ChaosError::Daemon("a fault thread panicked".into()))))
            .collect()
    });
    sleep_until(end);
    let mut out = Vec::new();
    for result in results {
        out.extend(result?);
    }
    out.sort_by_key(|r| r.start);
    Ok(out)
}

/// The occurrences `mine` of fault `f`, one after the other, on this
/// thread.
fn drive_fault(
    plan: &ScenarioPlan,
    target: &LinkNamespace,
    f: &FaultPlan,
    mine: &[&Scheduled],
    start: Nanos,
    end: Nanos,
) -> Result<Vec<FaultRecord>, ChaosError> {
    let mut out = Vec::new();
    let (Some(link), Some(peer)) = (f.link.as_deref(), f.peer.as_deref()) else { return Ok(out) };
    for s in mine {
        let stop = s.end.map(|e| start + e).unwrap_or(end).min(end);
        sleep_until(start + s.start);
        match f.kind {
            FaultKind::VethFlap => flaps(f, &s.label, peer, stop, &mut out)?,
            _ => {
                let args = qdisc(f, link);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                target.tool("tc", &args).map_err(|e| missing_qdisc(plan, f.kind, &e).unwrap_or_else(|| e.into()))?;
                let at = wall_clock_now();
                sleep_until(stop);
                target.tool("tc", &["qdisc", "del", "dev", link, "root"])?;
                out.push(FaultRecord {
                    label: s.label.clone(),
                    nodes: vec![NODE.into()],
                    start: at,
                    end: Some(wall_clock_now()),
                });
            }
        }
    }
    Ok(out)
}

/// Flaps `peer` until `stop`: the watched end of the pair loses carrier,
/// as a NIC does when the switch port or the cable goes. Each flap is a
/// record labelled `label`.
fn flaps(f: &FaultPlan, label: &str, peer: &str, stop: Nanos, out: &mut Vec<FaultRecord>) -> Result<(), ChaosError> {
    let links = BlockingLinks::open()?;
    let peer = links.index(peer)?;
    while wall_clock_now() + f.down < stop {
        // Stamped before the request: the kernel's event (and the daemon's
        // reaction) can come before it returns.
        let down_at = wall_clock_now();
        links.set(peer, false)?;
        std::thread::sleep(Duration::from_nanos(f.down.max(0) as u64));
        links.set(peer, true)?;
        let up_at = wall_clock_now();
        out.push(FaultRecord { label: label.to_string(), nodes: vec![NODE.into()], start: down_at, end: Some(up_at) });
        sleep_until(down_at + f.period);
    }
    Ok(())
}

/// The `tc qdisc add` arguments of a netem or tbf fault on `link`.
fn qdisc(f: &FaultPlan, link: &str) -> Vec<String> {
    let mut args: Vec<String> = ["qdisc", "add", "dev", link, "root"].map(String::from).to_vec();
    if f.kind == FaultKind::Netem {
        args.push("netem".into());
        if f.loss > 0.0 {
            args.extend(["loss".into(), format!("{}%", f.loss * 100.0)]);
        }
        if f.delay > 0 {
            args.extend(["delay".into(), format!("{}us", f.delay / 1_000)]);
        }
    } else {
        args.extend(["tbf".into(), "rate".into(), format!("{}mbit", f.rate_mbit)]);
        args.extend(["burst", "32kbit", "latency", "50ms"].map(String::from));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn netem() -> FaultPlan {
        let text = "name = \"q\"\nclock = \"wall\"\nduration = \"1s\"\n\
                    [[fault]]\nkind = \"netem\"\nlink = \"v0\"\nat = \"0s\"\nloss = 0.05\ndelay = \"2ms\"\n";
        let loaded = crate::scenario::parse(text, std::path::Path::new("q.toml")).unwrap();
        loaded.plan.faults[0].clone()
    }

    #[test]
    fn qdisc_arguments_follow_tc_syntax() {
        let mut f = netem();
        assert_eq!(qdisc(&f, "v0").join(" "), "qdisc add dev v0 root netem loss 5% delay 2000us");
        f.kind = FaultKind::Tbf;
        f.rate_mbit = 100;
        assert_eq!(qdisc(&f, "v0").join(" "), "qdisc add dev v0 root tbf rate 100mbit burst 32kbit latency 50ms");
    }
}
