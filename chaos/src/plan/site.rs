//! Where a fault lands, in the labels the daemon's rules and actions use
//! (`node`, `netdev`, `switch`, `port`, `rail`, …): what a run's detections
//! and mitigations are attributed to faults by, for each fault's own time
//! to detect, to mitigate and to recover.
//!
//! A subject or target is *at* a location when it shares at least one of
//! [`KEYS`] with it and agrees on every one it shares: `{switch, port,
//! prio}` of a PFC-storm rule is at the storming NIC's `{node, netdev, …,
//! switch, port}`; `{node}` of a cordon is at every NIC of that node;
//! `{node, rail}` of a drain at the node's NIC on that rail.

use std::collections::BTreeMap;

use sim::fabric::{Fabric, Nic, Selector};

use crate::spec::FaultKind;

/// The labels that say where: a subject's or target's other labels
/// (`prio`, `queue`, the inventory's `rack` or `zone`) say what or say too
/// little, and are not compared. `job` is where only for a fault on a job
/// (`job_relaunch`), whose locations carry it. A leaf port is `port` in the
/// switch rules' subjects and the actions' targets, `switch_port` in the
/// host series the inventory enriches.
pub const KEYS: &[&str] = &["node", "netdev", "rdma_dev", "rail", "plane", "switch", "port", "switch_port", "job"];

/// A place in the fabric as labels, a subset of [`KEYS`].
pub type Location = BTreeMap<String, String>;

/// Whether `labels` (a rule instance's subject, an action's target) is at
/// `location`: at least one of [`KEYS`] in common, and no disagreement.
pub fn at(labels: &BTreeMap<String, String>, location: &Location) -> bool {
    let mut shared = 0;
    for (key, want) in location {
        match labels.get(key) {
            Some(have) if have == want => shared += 1,
            Some(_) => return false,
            None => {}
        }
    }
    shared > 0
}

/// Whether `labels` is at any of `locations`.
pub fn at_any(labels: &BTreeMap<String, String>, locations: &[Location]) -> bool {
    locations.iter().any(|l| at(labels, l))
}

/// A NIC's place: everything the daemon can label it by.
fn nic(n: &Nic) -> Location {
    [
        ("node", n.node.clone()),
        ("netdev", n.netdev.clone()),
        ("rdma_dev", n.rdma_dev.clone()),
        ("rail", n.rail.to_string()),
        ("plane", n.plane.to_string()),
        ("switch", n.switch.clone()),
        ("port", n.switch_port.clone()),
        ("switch_port", n.switch_port.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Where a fault of `kind` on `select` (or on the veth `link`, or on `job`) lands in
/// `fabric`: the selected NICs, except where the fault reaches further —
/// congestion loads whole rails (every port of their leaves), a silent
/// gNMI server is its switch, a congested uplink is the leaf's uplink
/// port, a relaunched job is its nodes' NICs, each with the job's name (so
/// an action on the job, `nccl.qps {job}`, and a rule on one of its leaves
/// are both at the fault), and a real-link fault is its link, whatever
/// node the daemon calls itself.
pub fn locations(
    kind: FaultKind,
    select: &Selector,
    link: Option<&str>,
    job: Option<&str>,
    fabric: &Fabric,
) -> Vec<Location> {
    let one =
        |pairs: &[(&str, String)]| -> Location { pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect() };
    if kind.needs_real_links() {
        return link.map(|l| vec![one(&[("netdev", l.to_string())])]).unwrap_or_default();
    }
    let nics = fabric.select(select).unwrap_or_default();
    let mut out: Vec<Location> = match kind {
        FaultKind::GnmiSilent => select.switch.iter().map(|s| one(&[("switch", s.clone())])).collect(),
        FaultKind::HashChange if select.switch.is_none() => {
            fabric.leaves.keys().map(|s| one(&[("switch", s.clone())])).collect()
        }
        FaultKind::HashChange => select.switch.iter().map(|s| one(&[("switch", s.clone())])).collect(),
        FaultKind::UplinkCongestion => select
            .switch
            .iter()
            .filter_map(|s| Some(one(&[("switch", s.clone()), ("port", fabric.leaf(s)?.uplink()?.to_string())])))
            .collect(),
        FaultKind::JobRelaunch => fabric
            .jobs
            .iter()
            .filter(|j| job.is_none_or(|name| j.spec.name == name))
            .flat_map(|j| {
                let on = |i: &&usize| j.nodes.iter().any(|&n| fabric.nodes[n] == fabric.nics[**i].node);
                nics.iter().filter(on).map(|&i| {
                    let mut at = nic(&fabric.nics[i]);
                    at.insert("job".into(), j.spec.name.clone());
                    at
                })
            })
            .collect(),
        FaultKind::Congestion => nics
            .iter()
            .map(|&i| one(&[("rail", fabric.nics[i].rail.to_string()), ("switch", fabric.nics[i].switch.clone())]))
            .collect(),
        _ => nics.iter().map(|&i| nic(&fabric.nics[i])).collect(),
    };
    // In the fabric's NIC order, each place once: a game day lists its
    // sites in that order.
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|l| seen.insert(l.clone()));
    out
}

/// What and where, for people: `pfc_storm {node=node-04, netdev=eth3}`,
/// `veth_flap rcv0`, `job_relaunch {job=train-a}`.
pub fn label(kind: FaultKind, select: &Selector, link: Option<&str>, job: Option<&str>) -> String {
    match (link, job) {
        (Some(link), _) if kind.needs_real_links() => format!("{} {link}", kind.name()),
        (_, Some(job)) if kind == FaultKind::JobRelaunch => format!("{} {{job={job}}}", kind.name()),
        _ => format!("{} {select}", kind.name()),
    }
}

/// Makes `labels` unique, in place: a label that an earlier one already
/// has gets ` (2)`, ` (3)`, … A run's fault records carry only the label,
/// so it is what ties an occurrence to its `[[fault]]`; the first of a
/// kind keeps its plain label, so reports read as before.
pub fn unique(labels: &mut [String]) {
    for i in 1..labels.len() {
        let same = labels[..i].iter().filter(|l| **l == labels[i]).count();
        if same > 0 {
            let base = labels[i].clone();
            let mut n = same + 1;
            while labels[..i].iter().any(|l| *l == format!("{base} ({n})")) {
                n += 1;
            }
            labels[i] = format!("{base} ({n})");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_subject_is_at_a_location_when_it_shares_a_place_label_and_disagrees_on_none() {
        let nic = labels(&[("node", "node-04"), ("netdev", "eth3"), ("switch", "leaf-rail3"), ("port", "Ethernet12")]);
        assert!(at(&labels(&[("switch", "leaf-rail3"), ("port", "Ethernet12"), ("prio", "3")]), &nic));
        assert!(at(&labels(&[("node", "node-04")]), &nic), "a cordon of its node");
        assert!(!at(&labels(&[("switch", "leaf-rail3"), ("port", "Ethernet8")]), &nic), "another port");
        assert!(!at(&labels(&[("node", "node-04"), ("netdev", "eth2")]), &nic), "another NIC of the node");
        assert!(!at(&labels(&[("job", "train-a")]), &nic), "no place label in common");
    }

    #[test]
    fn a_repeated_label_is_numbered_and_the_first_keeps_its_own() {
        let mut l = vec!["a".to_string(), "b".into(), "a".into(), "a".into()];
        unique(&mut l);
        assert_eq!(l, ["a", "b", "a (2)", "a (3)"]);
    }
}
