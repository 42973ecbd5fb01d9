//! Which decisions are about a game's fault: its action, on one of its
//! NICs, proposed once it started. The script waits on them, the figures
//! count them.

use std::collections::BTreeMap;

use engine::dispatch::Decision;
use engine::policy::kind_matches;
use engine::Nanos;

use super::plan::GameFault;
use crate::plan::site::Location;

/// Whether a decision's target is at `nic` (a NIC's location): its node
/// and netdev (a host action), or its switch and port (a switch action).
pub fn at_site(nic: &Location, target: &BTreeMap<String, String>) -> bool {
    let is = |k: &str| target.get(k).is_some_and(|t| nic.get(k) == Some(t));
    (is("node") && is("netdev")) || (is("switch") && is("port"))
}

/// Whether `d` is a decision about `fault` (started at `start`): its
/// action, at one of its sites, proposed after it started; undos are not.
pub fn of_fault(fault: &GameFault, start: Nanos, d: &Decision) -> bool {
    d.undo_of.is_none()
        && kind_matches(&fault.action, &d.proposal.action.kind)
        && d.proposal.decided_at >= start
        && fault.fault.locations.iter().any(|s| at_site(s, &d.proposal.action.target.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_is_at_a_site_by_host_or_by_switch_port() {
        let t = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let site: Location = t(&[
            ("node", "node-05"),
            ("netdev", "eth5"),
            ("rail", "5"),
            ("switch", "leaf-rail5"),
            ("port", "Ethernet16"),
        ]);
        assert!(at_site(&site, &t(&[("node", "node-05"), ("netdev", "eth5")])));
        assert!(at_site(&site, &t(&[("switch", "leaf-rail5"), ("port", "Ethernet16"), ("queue", "3")])));
        assert!(!at_site(&site, &t(&[("node", "node-05"), ("netdev", "eth4")])));
        assert!(!at_site(&site, &t(&[("switch", "leaf-rail5"), ("port", "Ethernet20")])));
    }
}
