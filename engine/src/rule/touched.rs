//! The running jobs an action touches, from its target: what a proposal
//! carries (`Proposal::jobs`) and `[limits] max_jobs_touched` counts.
//!
//! A job is running on a node when the job signals said so
//! (`job_node_info{job, node}`, kept by the helpers). The nodes an action
//! reaches come from its target, most precise label first:
//!
//! | the target names | the nodes it reaches |
//! |---|---|
//! | `node` | that node |
//! | `switch` and `port` | the node the inventory cables to that port; for a port no node faces (an uplink) or `"*"` (switch-wide), every node facing the switch |
//! | `switch` | every node with a NIC cabled to it |
//! | `rail` | every node with a NIC on that rail |
//! | `plane` | every node with a NIC on that plane |
//!
//! A target naming a running `job` touches that job too. Without an
//! inventory only a target's own `node` or `job` can be counted: a switch,
//! rail or plane then reaches no node that is known.
//!
//! Where a port's node is unknown the switch's nodes are counted, not none:
//! a limit that undercounts lets through what it exists to stop.

use std::collections::{BTreeMap, BTreeSet};

use crate::labels::Labels;
use crate::topology::Topology;

/// job → the nodes it runs on.
pub(crate) type JobNodes = BTreeMap<String, BTreeSet<String>>;

/// The running jobs an action on `target` touches, sorted, each once.
pub(crate) fn jobs_touched(target: &Labels, topology: Option<&Topology>, jobs: &JobNodes) -> Vec<String> {
    let nodes = nodes_reached(target, topology);
    let on_a_node = |(_, on): &(&String, &BTreeSet<String>)| nodes.iter().any(|n| on.contains(*n));
    let mut touched: BTreeSet<&String> = jobs.iter().filter(on_a_node).map(|(job, _)| job).collect();
    if let Some((job, _)) = target.get("job").and_then(|job| jobs.get_key_value(job)) {
        touched.insert(job);
    }
    touched.into_iter().cloned().collect()
}

/// The nodes an action on `target` reaches (see the module doc).
fn nodes_reached<'a>(target: &'a Labels, topology: Option<&'a Topology>) -> Vec<&'a str> {
    if let Some(node) = target.get("node") {
        return vec![node];
    }
    let Some(topology) = topology else { return Vec::new() };
    if let Some(switch) = target.get("switch") {
        let port = target.get("port").filter(|p| *p != "*");
        if let Some(node) = port.and_then(|port| topology.node_at(switch, port)) {
            return vec![node];
        }
        return topology.nodes_facing(switch);
    }
    let number = |label: &str| target.get(label).and_then(|v| v.parse::<u32>().ok());
    if let Some(rail) = number("rail") {
        return topology.nodes_on_rail(rail);
    }
    if let Some(plane) = number("plane") {
        return topology.nodes_on_plane(plane);
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two leaves on two rails in two planes: n1 and n2 on leaf-a (rail 0, plane 0), n3 on
    /// leaf-b (rail 1, plane 1), so every row of the table reaches a different set.
    const INVENTORY: &str = r#"
[[switch]]
name = "leaf-a"
role = "leaf"
rail = 0
plane = 0
[[switch]]
name = "leaf-b"
role = "leaf"
rail = 1
plane = 1
[[node]]
name = "n1"
[[node.nic]]
rdma_dev = "mlx5_0"
netdev = "eth0"
rail = 0
plane = 0
switch = "leaf-a"
switch_port = "Ethernet0"
[[node]]
name = "n2"
[[node.nic]]
rdma_dev = "mlx5_0"
netdev = "eth0"
rail = 0
plane = 0
switch = "leaf-a"
switch_port = "Ethernet4"
[[node]]
name = "n3"
[[node.nic]]
rdma_dev = "mlx5_1"
netdev = "eth1"
rail = 1
plane = 1
switch = "leaf-b"
switch_port = "Ethernet0"
"#;

    fn topology() -> Topology {
        Topology::parse(INVENTORY, "inventory.toml").unwrap()
    }

    /// train-a spans n1 and n2, eval-b runs on n2, serve-c on n3.
    fn jobs() -> JobNodes {
        let mut jobs = JobNodes::new();
        for (job, node) in [("train-a", "n1"), ("train-a", "n2"), ("eval-b", "n2"), ("serve-c", "n3")] {
            jobs.entry(job.to_string()).or_default().insert(node.to_string());
        }
        jobs
    }

    fn touched(target: &[(&str, &str)], topology: Option<&Topology>) -> Vec<String> {
        jobs_touched(&Labels::from_pairs(target.iter().copied()), topology, &jobs())
    }

    #[test]
    fn each_kind_of_target_reaches_the_jobs_of_its_nodes_sorted_and_once() {
        let t = topology();
        let t = Some(&t);
        assert_eq!(touched(&[("node", "n2"), ("netdev", "eth0")], t), ["eval-b", "train-a"]);
        assert_eq!(touched(&[("switch", "leaf-a"), ("port", "Ethernet0"), ("queue", "3")], t), ["train-a"]);
        assert_eq!(touched(&[("switch", "leaf-a")], t), ["eval-b", "train-a"], "train-a once for two nodes");
        assert_eq!(touched(&[("switch", "leaf-b")], t), ["serve-c"]);
        assert_eq!(touched(&[("rail", "1")], t), ["serve-c"]);
        assert_eq!(touched(&[("plane", "0")], t), ["eval-b", "train-a"]);
        assert_eq!(touched(&[("team", "fabric")], t), Vec::<String>::new(), "a notification reaches no node");
    }

    #[test]
    fn a_port_no_node_faces_counts_every_node_of_its_switch() {
        let t = topology();
        assert_eq!(touched(&[("switch", "leaf-a"), ("port", "Ethernet64")], Some(&t)), ["eval-b", "train-a"]);
        assert_eq!(touched(&[("switch", "leaf-a"), ("port", "*")], Some(&t)), ["eval-b", "train-a"]);
    }

    #[test]
    fn a_node_in_the_target_wins_over_its_switch() {
        let t = topology();
        // A NIC's target may carry its leaf too: the change is on the node.
        assert_eq!(touched(&[("node", "n3"), ("switch", "leaf-a")], Some(&t)), ["serve-c"]);
    }

    #[test]
    fn a_target_naming_a_running_job_touches_it_and_an_unknown_one_does_not() {
        assert_eq!(touched(&[("job", "serve-c")], None), ["serve-c"]);
        assert_eq!(touched(&[("job", "finished-long-ago")], None), Vec::<String>::new());
    }

    #[test]
    fn without_an_inventory_only_a_node_is_counted() {
        assert_eq!(touched(&[("node", "n1")], None), ["train-a"]);
        assert_eq!(touched(&[("switch", "leaf-a"), ("port", "Ethernet0")], None), Vec::<String>::new());
        assert_eq!(touched(&[("rail", "0")], None), Vec::<String>::new());
    }
}
