//! The wall-clock faults, applied to real links from a thread of their own:
//! flaps as RTM_SETLINK requests on one netlink socket (what `ip link set`
//! sends, without starting a process), loss, delay and rate limits as `tc`
//! qdiscs. A flap's time is taken just before the request, so the latencies
//! measured are the kernel's, the sensor's, the engine's and the
//! actuator's.

use std::time::Duration;

use engine::time::wall_clock_now;
use engine::Nanos;
use net::link::BlockingLinks;
use net::netns::{enter, run_tool};
use net::NetError;

use crate::report::FaultRecord;
use crate::scenario::{FaultKind, FaultPlan, ScenarioPlan};
use crate::ChaosError;

/// The `node` label of the daemon under test in its namespace; the
/// playbook's `link` actuator must be configured for it.
pub const NODE: &str = "chaos-veth";

/// The peer of a faulted link `link` in a scenario's namespace: the end
/// that is flapped, so the watched end loses carrier.
pub fn peer_of(link: &str) -> String {
    format!("{link}p")
}

/// Where faults are applied: in a namespace, or the host's own.
#[derive(Debug, Clone)]
pub struct Target {
    /// The namespace, or `None` for the host's.
    pub netns: Option<String>,
}

impl Target {
    fn tool(&self, tool: &str, args: &[&str]) -> Result<(), NetError> {
        match &self.netns {
            Some(ns) => run_tool(tool, &[&["-n", ns.as_str()], args].concat()),
            None => run_tool(tool, args),
        }
    }
}

/// Applies the faults of `plan` from `start` on, from a thread of its own
/// (in `target`'s namespace); returns what was done and when.
pub async fn apply(
    plan: &ScenarioPlan,
    target: Target,
    start: Nanos,
    seed: u64,
) -> Result<Vec<FaultRecord>, ChaosError> {
    let plan = plan.clone();
    let thread = std::thread::spawn(move || {
        if let Some(ns) = &target.netns {
            enter(ns)?;
        }
        drive(&plan, &target, start, seed)
    });
    match tokio::task::spawn_blocking(move || thread.join()).await {
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

/// Applies the faults of `plan` from `start` on; returns what was done and
/// when. Blocks: `tc` is a process, and flaps are timed on this thread.
fn drive(plan: &ScenarioPlan, target: &Target, start: Nanos, seed: u64) -> Result<Vec<FaultRecord>, ChaosError> {
    let end = start + plan.duration;
    let mut out = Vec::new();
    for s in plan.schedule_real(seed) {
        let f = &plan.faults[s.fault];
        let link = f.link.clone().unwrap_or_default();
        let stop = s.end.map(|e| start + e).unwrap_or(end).min(end);
        sleep_until(start + s.start);
        match f.kind {
            FaultKind::VethFlap => flaps(f, &link, stop, &mut out)?,
            FaultKind::Netem | FaultKind::Tbf => {
                let args = qdisc(f, &link);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                target.tool("tc", &args)?;
                let at = wall_clock_now();
                sleep_until(stop);
                target.tool("tc", &["qdisc", "del", "dev", &link, "root"])?;
                out.push(FaultRecord {
                    label: s.label.clone(),
                    nodes: vec![NODE.into()],
                    start: at,
                    end: Some(wall_clock_now()),
                });
            }
            other => {
                return Err(ChaosError::CannotRunHere {
                    scenario: plan.name.clone(),
                    reason: format!("fault {other:?} is a simulator fault; it cannot run on the wall clock"),
                })
            }
        }
    }
    sleep_until(end);
    Ok(out)
}

/// Flaps the peer of `link` until `stop`: the watched end loses carrier, as
/// a NIC does when the switch port or the cable goes.
fn flaps(f: &FaultPlan, link: &str, stop: Nanos, out: &mut Vec<FaultRecord>) -> Result<(), ChaosError> {
    let links = BlockingLinks::open()?;
    let peer = links.index(&peer_of(link))?;
    while wall_clock_now() + f.down < stop {
        // Stamped before the request: the kernel's event (and the daemon's
        // reaction) can come before it returns.
        let down_at = wall_clock_now();
        links.set(peer, false)?;
        std::thread::sleep(Duration::from_nanos(f.down.max(0) as u64));
        links.set(peer, true)?;
        let up_at = wall_clock_now();
        out.push(FaultRecord {
            label: format!("veth_flap {link}"),
            nodes: vec![NODE.into()],
            start: down_at,
            end: Some(up_at),
        });
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
