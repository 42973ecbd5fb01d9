//! The veth names of the wall-clock faults, checked at load as the kernel
//! checks an interface name (`dev_valid_name`): a name it refuses would
//! otherwise fail the run when the namespace is made, far from the line
//! that wrote it. Each faulted `link` is one end of a veth pair; its
//! `peer` is the other end, the one `veth_flap` sets down and up so that
//! `link`, the end the daemon watches, loses carrier. Without `peer` it is
//! `<link>p` ([`default_peer`]).

use std::collections::BTreeMap;

use engine::time::Nanos;
use toml::Spanned;

use crate::plan::{Ctx, FaultPlan};
use crate::spec::{FaultKind, FaultSpec, Keyed, ScenarioError};

/// The longest interface name, in bytes: `IFNAMSIZ` (16) less its NUL.
pub const MAX_IFNAME: usize = 15;

/// The peer of `link` when the fault names none.
pub fn default_peer(link: &str) -> String {
    format!("{link}p")
}

/// Why `name` cannot name a Linux interface, if it cannot.
pub fn invalid_ifname(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is empty".into());
    }
    if name.len() > MAX_IFNAME {
        return Some(format!("is {} bytes long; an interface name has at most {MAX_IFNAME}", name.len()));
    }
    if name == "." || name == ".." {
        return Some("is not a name the kernel accepts".into());
    }
    // '/' would be a path in sysfs; ':' names an alias; whitespace splits
    // the `ip` and `tc` command lines.
    name.chars()
        .find(|c| *c == '/' || *c == ':' || c.is_whitespace())
        .map(|c| format!("contains {c:?}; an interface name has no '/', ':' or whitespace"))
}

/// `name` checked, the error at `span`; `what` says which name it is.
fn check(name: &Spanned<String>, what: &str, ctx: &Ctx) -> Result<String, ScenarioError> {
    match invalid_ifname(name.get_ref()) {
        Some(why) => Err(ctx.err(name.span(), format!("{what} {:?} {why}", name.get_ref()))),
        None => Ok(name.get_ref().clone()),
    }
}

/// The link and peer of `spec`, checked: `(None, None)` for a simulator
/// fault, which may not name a peer.
pub(super) fn pair(spec: &FaultSpec, ctx: &Ctx) -> Result<(Option<String>, Option<String>), ScenarioError> {
    if !spec.kind.get_ref().needs_real_links() {
        if let Some(peer) = &spec.peer {
            return Err(ctx.err(peer.span(), "`peer` is for the real-link faults (veth_flap, netem, tbf)"));
        }
        return Ok((spec.link.as_ref().map(|l| l.get_ref().clone()), None));
    }
    let Some(link) = &spec.link else { return Ok((None, None)) };
    let name = check(link, "link", ctx)?;
    let peer = match &spec.peer {
        Some(peer) => check(peer, "peer", ctx)?,
        None => {
            let peer = default_peer(&name);
            if let Some(why) = invalid_ifname(&peer) {
                return Err(ctx.err(
                    link.span(),
                    format!("the default peer {peer:?} of link {name:?} {why}: name the peer with `peer = \"…\"`"),
                ));
            }
            peer
        }
    };
    if peer == name {
        return Err(ctx.err(span_of_peer(spec), format!("peer {peer:?} is the link itself; a veth has two ends")));
    }
    Ok((Some(name), Some(peer)))
}

/// Where the peer was written, or the link when it was not.
fn span_of_peer(spec: &FaultSpec) -> std::ops::Range<usize> {
    spec.peer.as_ref().or(spec.link.as_ref()).map(|s| s.span()).unwrap_or(spec.place())
}

/// Across the faults: each link has one peer (faults on one link agree), no
/// name is both a link and a peer or the peer of two links, and the qdisc
/// faults of one link never overlap (a link has one root qdisc) in a run
/// of `duration`.
pub(super) fn check_all(
    specs: &[Keyed<FaultSpec>],
    plans: &[FaultPlan],
    duration: Nanos,
    ctx: &Ctx,
) -> Result<(), ScenarioError> {
    let mut peers: BTreeMap<&str, (&str, usize)> = BTreeMap::new();
    for (i, (spec, plan)) in specs.iter().map(|k| &k.value).zip(plans).enumerate() {
        let (Some(link), Some(peer)) = (plan.link.as_deref(), plan.peer.as_deref()) else { continue };
        if let Some((other, j)) = peers.get(link).copied() {
            if other != peer {
                return Err(ctx.err(
                    span_of_peer(spec),
                    format!("link {link:?} has peer {other:?} in fault {j} but {peer:?} here; one veth, one peer"),
                ));
            }
        }
        peers.insert(link, (peer, i));
    }
    let mut ends: BTreeMap<&str, &str> = BTreeMap::new();
    for link in peers.keys() {
        ends.insert(link, link);
    }
    for (i, spec) in specs.iter().map(|k| &k.value).enumerate() {
        let (Some(link), Some(peer)) = (plans[i].link.as_deref(), plans[i].peer.as_deref()) else { continue };
        if let Some(owner) = ends.get(peer).filter(|owner| **owner != link) {
            return Err(ctx.err(
                span_of_peer(spec),
                format!("peer {peer:?} of link {link:?} is already {}", end_name(peer, owner)),
            ));
        }
        ends.insert(peer, link);
    }
    overlapping_qdiscs(specs, plans, duration, ctx)
}

/// How the name `end`, owned by the link `owner`, is taken: the link
/// itself or its peer.
fn end_name(end: &str, owner: &str) -> String {
    if end == owner {
        "a faulted link".into()
    } else {
        format!("the peer of link {owner:?}")
    }
}

/// The first pair of qdisc faults (netem, tbf) on one link that may be in
/// force at once, including a fault's own repeats.
fn overlapping_qdiscs(
    specs: &[Keyed<FaultSpec>],
    plans: &[FaultPlan],
    duration: Nanos,
    ctx: &Ctx,
) -> Result<(), ScenarioError> {
    let qdisc = |p: &FaultPlan| matches!(p.kind, FaultKind::Netem | FaultKind::Tbf);
    // The latest each fault can still be in force: jitter delays every
    // repeat, and a fault without a duration lasts to the run's end.
    let window = |p: &FaultPlan| {
        let last_start = p.at + p.jitter + (p.repeats as i64 - 1) * p.every;
        (p.at, p.duration.map(|d| last_start + d).unwrap_or(duration).min(duration))
    };
    for (i, b) in plans.iter().enumerate().filter(|(_, p)| qdisc(p)) {
        // The jitter is drawn once per fault: its repeats keep their spacing.
        if b.repeats > 1 && b.duration.is_none_or(|d| d > b.every) {
            return Err(ctx.err(
                specs[i].value.place(),
                "its repeats may overlap (`every` shorter than `duration`): a link has one root qdisc",
            ));
        }
        let (b_start, b_end) = window(b);
        for (j, a) in plans[..i].iter().enumerate().filter(|(_, p)| qdisc(p) && p.link == b.link) {
            let (a_start, a_end) = window(a);
            if a_start < b_end && b_start < a_end {
                return Err(ctx.err(
                    specs[i].value.place(),
                    format!(
                        "this fault may be in force with fault {j} on link {:?}: a link has one root qdisc; start it after the other ends",
                        b.link.as_deref().unwrap_or("?")
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_checked_as_the_kernel_checks_them() {
        assert_eq!(invalid_ifname("rcv0p"), None);
        assert_eq!(invalid_ifname("fifteen-bytes-x"), None);
        assert!(invalid_ifname("sixteen-bytes-xx").unwrap().contains("16 bytes long"));
        assert!(invalid_ifname("a/b").unwrap().contains("'/'"));
        assert!(invalid_ifname("a b").unwrap().contains("' '"));
        assert!(invalid_ifname("").is_some() && invalid_ifname("..").is_some() && invalid_ifname("a:1").is_some());
    }
}
