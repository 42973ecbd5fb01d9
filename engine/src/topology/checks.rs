//! The inventory checked against itself and against the shape of a rail-optimized fabric,
//! every problem at once, each with the path of the value it is about (for
//! [`Locator`](crate::config::Locator) to place at its line and column).
//!
//! A wrong inventory is not a cosmetic problem: the rail, plane and far end it gives a NIC are
//! what `rail.drain`, the playbook's per-rail limits and the switch actions act on. A NIC
//! written on the wrong rail would have its rail drained for another rail's fault, or a leaf
//! escalated for a port it does not face. What is checked:
//!
//! - names: an empty inventory, an empty name, a switch, node, device or GPU index listed twice;
//! - references: a NIC's GPU the node does not list, a switch that is not listed;
//! - cabling: a NIC cabled to a spine, or to a switch without naming the port; two NICs on one
//!   switch port; a NIC whose rail or plane is not its leaf's; a rail no leaf serves;
//! - rails: two leaves serving one rail of one plane for nodes of the same pod.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::config::KeyPath;

use super::inventory::{Inventory, Nic, Node, SwitchRole};

/// One problem of an inventory, and the value it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryProblem {
    /// Where in the file (`node[1].nic[3].rail`).
    pub at: KeyPath,
    /// What is wrong, naming the elements.
    pub message: String,
}

/// Every problem of `inventory`, in file order within each kind of check.
pub fn problems(inventory: &Inventory) -> Vec<InventoryProblem> {
    let mut out = Vec::new();
    if inventory.switch.is_empty() && inventory.node.is_empty() {
        out.push(problem(KeyPath::default(), "the inventory lists no switch and no node".to_string()));
        return out;
    }
    names(inventory, &mut out);
    // The first switch of each name (a second one is a problem `names` reports).
    let mut switches: HashMap<&str, &super::Switch> = HashMap::with_capacity(inventory.switch.len());
    for s in &inventory.switch {
        switches.entry(s.name.as_str()).or_insert(s);
    }
    for (ni, node) in inventory.node.iter().enumerate() {
        for (ci, nic) in node.nic.iter().enumerate() {
            references(inventory, &switches, node, nic, nic_at(ni, ci), &mut out);
        }
    }
    ports(inventory, &mut out);
    rails(inventory, &switches, &mut out);
    out
}

fn problem(at: KeyPath, message: String) -> InventoryProblem {
    InventoryProblem { at, message }
}

fn switch_at(si: usize) -> KeyPath {
    KeyPath::default().key("switch").index(si)
}

fn node_at(ni: usize) -> KeyPath {
    KeyPath::default().key("node").index(ni)
}

fn nic_at(ni: usize, ci: usize) -> KeyPath {
    node_at(ni).key("nic").index(ci)
}

/// `node "node-02" NIC mlx5_3 (eth3)`.
fn nic_name(node: &Node, nic: &Nic) -> String {
    format!("node {:?} NIC {} ({})", node.name, nic.rdma_dev, nic.netdev)
}

/// Empty names, and names (switches, nodes, a node's devices and GPU indexes) listed twice.
fn names(inventory: &Inventory, out: &mut Vec<InventoryProblem>) {
    unique_names("switch", inventory.switch.iter().map(|s| s.name.as_str()), switch_at, out);
    unique_names("node", inventory.node.iter().map(|n| n.name.as_str()), node_at, out);
    for (ni, node) in inventory.node.iter().enumerate() {
        let mut gpus = BTreeSet::new();
        for (gi, gpu) in node.gpu.iter().enumerate() {
            if !gpus.insert(gpu.index) {
                out.push(problem(
                    node_at(ni).key("gpu").index(gi).key("index"),
                    format!("node {:?}: GPU index {} is listed twice", node.name, gpu.index),
                ));
            }
        }
        let mut devices = BTreeSet::new();
        for (ci, nic) in node.nic.iter().enumerate() {
            for (field, dev) in [("rdma_dev", &nic.rdma_dev), ("netdev", &nic.netdev)] {
                if dev.trim().is_empty() {
                    out.push(problem(
                        nic_at(ni, ci).key(field),
                        format!("node {:?}: a NIC has an empty {field}", node.name),
                    ));
                } else if !devices.insert(dev.as_str()) {
                    out.push(problem(
                        nic_at(ni, ci).key(field),
                        format!("node {:?}: device {dev:?} is listed twice", node.name),
                    ));
                }
            }
        }
    }
}

/// Empty names among the `kind`s (`switch`, `node`) and names listed twice, each named at
/// `at(i)` with the first place it was listed.
fn unique_names<'a>(
    kind: &str,
    names: impl Iterator<Item = &'a str>,
    at: impl Fn(usize) -> KeyPath,
    out: &mut Vec<InventoryProblem>,
) {
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (i, name) in names.enumerate() {
        if name.trim().is_empty() {
            out.push(problem(at(i).key("name"), format!("a {kind} has an empty name")));
        } else if let Some(f) = first.get(name) {
            out.push(problem(
                at(i).key("name"),
                format!("{kind} {name:?} is listed twice (first as {kind} {})", f + 1),
            ));
        } else {
            first.insert(name, i);
        }
    }
}

/// One NIC's GPU, and the switch at its far end: listed, a leaf, with the port named, on the
/// NIC's rail and plane.
fn references(
    inventory: &Inventory,
    switches: &HashMap<&str, &super::Switch>,
    node: &Node,
    nic: &Nic,
    at: KeyPath,
    out: &mut Vec<InventoryProblem>,
) {
    if let Some(gpu) = nic.gpu {
        if !node.gpu.iter().any(|g| g.index == gpu) {
            out.push(problem(
                at.clone().key("gpu"),
                format!("{} names GPU {gpu}, which the node does not list", nic_name(node, nic)),
            ));
        }
    }
    let Some(name) = &nic.switch else { return };
    let Some(leaf) = switches.get(name.as_str()) else {
        let names = inventory.switch.iter().map(|s| s.name.as_str());
        out.push(problem(
            at.key("switch"),
            format!(
                "{} is cabled to switch {name:?}, which is not listed{}",
                nic_name(node, nic),
                crate::names::did_you_mean(name, names)
            ),
        ));
        return;
    };
    if leaf.role == SwitchRole::Spine {
        out.push(problem(
            at.clone().key("switch"),
            format!("{} is cabled to {name}, a spine: NICs are cabled to leaves", nic_name(node, nic)),
        ));
    }
    if nic.switch_port.as_deref().is_none_or(|p| p.trim().is_empty()) {
        out.push(problem(
            at.clone().key("switch"),
            format!("{} is cabled to {name} without a switch_port: say which port", nic_name(node, nic)),
        ));
    }
    let port = nic.switch_port.as_deref().unwrap_or("?");
    if let Some(rail) = leaf.rail.filter(|&r| r != nic.rail) {
        out.push(problem(
            at.clone().key("rail"),
            format!(
                "{} is on rail {}, but its cable goes to {name} port {port}, which serves rail {rail}",
                nic_name(node, nic),
                nic.rail
            ),
        ));
    }
    if let Some(plane) = leaf.plane.filter(|&p| p != nic.plane) {
        out.push(problem(
            at.key("plane"),
            format!(
                "{} is on plane {}, but its cable goes to {name} port {port}, which is on plane {plane}",
                nic_name(node, nic),
                nic.plane
            ),
        ));
    }
}

/// Two NICs on one switch port.
fn ports(inventory: &Inventory, out: &mut Vec<InventoryProblem>) {
    let mut cabled: HashMap<(&str, &str), (usize, usize)> = HashMap::new();
    for (ni, node) in inventory.node.iter().enumerate() {
        for (ci, nic) in node.nic.iter().enumerate() {
            let (Some(switch), Some(port)) = (&nic.switch, &nic.switch_port) else { continue };
            if let Some(&(fi, fc)) = cabled.get(&(switch.as_str(), port.as_str())) {
                let first = &inventory.node[fi];
                out.push(problem(
                    nic_at(ni, ci).key("switch_port"),
                    format!(
                        "switch {switch:?} port {port:?} is cabled to two NICs: {} and {}",
                        nic_name(first, &first.nic[fc]),
                        nic_name(node, nic)
                    ),
                ));
            } else {
                cabled.insert((switch.as_str(), port.as_str()), (ni, ci));
            }
        }
    }
}

/// Rails against the leaves that serve them, once the inventory gives leaves rails: a NIC's
/// rail no leaf serves (in its plane), and two leaves on one rail of one plane for nodes of
/// the same pod (different pods — scalable units — each have a leaf per rail).
fn rails(inventory: &Inventory, switches: &HashMap<&str, &super::Switch>, out: &mut Vec<InventoryProblem>) {
    let leaves: Vec<(usize, &super::Switch)> =
        inventory.switch.iter().enumerate().filter(|(_, s)| s.role == SwitchRole::Leaf && s.rail.is_some()).collect();
    if leaves.is_empty() {
        return;
    }
    let serves =
        |rail: u32, plane: u32| leaves.iter().any(|(_, s)| s.rail == Some(rail) && s.plane.is_none_or(|p| p == plane));
    let leaf_rail = |name: &str| switches.get(name).and_then(|s| s.rail);
    for (ni, node) in inventory.node.iter().enumerate() {
        for (ci, nic) in node.nic.iter().enumerate() {
            // A NIC cabled to a leaf with a rail is on that rail, or `references` said it is not.
            if nic.switch.as_deref().and_then(leaf_rail).is_none() && !serves(nic.rail, nic.plane) {
                let served: BTreeSet<u32> = leaves.iter().filter_map(|(_, s)| s.rail).collect();
                out.push(problem(
                    nic_at(ni, ci).key("rail"),
                    format!(
                        "{} is on rail {} of plane {}, which no leaf in the inventory serves (leaves serve rails {})",
                        nic_name(node, nic),
                        nic.rail,
                        nic.plane,
                        served.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
    }
    // The pods each leaf's NICs come from.
    let mut pods: HashMap<&str, BTreeSet<Option<&str>>> = HashMap::new();
    for node in &inventory.node {
        for nic in &node.nic {
            if let Some(switch) = &nic.switch {
                pods.entry(switch.as_str()).or_default().insert(node.pod.as_deref());
            }
        }
    }
    let mut by_rail: BTreeMap<(u32, Option<u32>), Vec<usize>> = BTreeMap::new();
    for (si, s) in &leaves {
        let rail = s.rail.expect("leaves with a rail");
        let Some(mine) = pods.get(s.name.as_str()) else { continue };
        let earlier = by_rail.entry((rail, s.plane)).or_default();
        if let Some(&other) =
            earlier.iter().find(|&&o| pods.get(inventory.switch[o].name.as_str()).is_some_and(|p| !p.is_disjoint(mine)))
        {
            out.push(problem(
                switch_at(*si).key("rail"),
                format!(
                    "leaves {} and {} both serve rail {rail}{} for nodes of the same pod: one leaf per rail and plane in a pod",
                    inventory.switch[other].name,
                    s.name,
                    s.plane.map(|p| format!(" of plane {p}")).unwrap_or_default()
                ),
            ));
        }
        earlier.push(*si);
    }
}

#[cfg(test)]
mod tests {
    use crate::topology::{Topology, TopologyError};

    /// The problems of `text`, as `line:col: message` without the file name.
    fn problems(text: &str) -> Vec<String> {
        match Topology::parse(text, "inv.toml") {
            Ok(_) => Vec::new(),
            Err(TopologyError::Invalid { problems }) => {
                problems.iter().map(|p| format!("{}:{}: {}", p.line, p.column, p.message)).collect()
            }
            Err(other) => panic!("not an inventory problem: {other}"),
        }
    }

    const LEAVES: &str = r#"
[[switch]]
name = "leaf-rail0"
role = "leaf"
rail = 0
plane = 0

[[switch]]
name = "leaf-rail1"
role = "leaf"
rail = 1
plane = 0

[[switch]]
name = "spine0"
role = "spine"
"#;

    #[test]
    fn every_cabling_fault_is_named_with_both_ends_at_its_line() {
        let text = format!(
            r#"{LEAVES}
[[node]]
name = "gpu-01"
[[node.gpu]]
index = 0
[[node.gpu]]
index = 0
[[node.nic]]
rdma_dev = "mlx5_0"
netdev = "eth0"
rail = 1
plane = 0
switch = "leaf-rail0"
switch_port = "Ethernet0"
[[node.nic]]
rdma_dev = "mlx5_1"
netdev = "eth1"
rail = 1
plane = 1
switch = "leaf-rail1"
switch_port = "Ethernet0"
[[node.nic]]
rdma_dev = "mlx5_2"
netdev = "eth2"
rail = 0
plane = 0
switch = "leaf-rail0"
switch_port = "Ethernet0"
[[node.nic]]
rdma_dev = "mlx5_3"
netdev = "eth3"
rail = 9
plane = 0
[[node.nic]]
rdma_dev = "mlx5_4"
netdev = "eth4"
rail = 0
plane = 0
switch = "spine0"
"#
        );
        let found = problems(&text);
        let expected = [
            "23:1: node \"gpu-01\": GPU index 0 is listed twice",
            "27:1: node \"gpu-01\" NIC mlx5_0 (eth0) is on rail 1, but its cable goes to leaf-rail0 port Ethernet0, which serves rail 0",
            "35:1: node \"gpu-01\" NIC mlx5_1 (eth1) is on plane 1, but its cable goes to leaf-rail1 port Ethernet0, which is on plane 0",
            "55:1: node \"gpu-01\" NIC mlx5_4 (eth4) is cabled to spine0, a spine: NICs are cabled to leaves",
            "55:1: node \"gpu-01\" NIC mlx5_4 (eth4) is cabled to spine0 without a switch_port: say which port",
            "44:1: switch \"leaf-rail0\" port \"Ethernet0\" is cabled to two NICs: node \"gpu-01\" NIC mlx5_0 (eth0) and node \"gpu-01\" NIC mlx5_2 (eth2)",
            "48:1: node \"gpu-01\" NIC mlx5_3 (eth3) is on rail 9 of plane 0, which no leaf in the inventory serves (leaves serve rails 0, 1)",
        ];
        for want in expected {
            assert!(found.iter().any(|f| f == want), "missing {want:?} in:\n{}", found.join("\n"));
        }
        assert_eq!(found.len(), expected.len(), "{}", found.join("\n"));
    }

    #[test]
    fn empty_names_and_an_empty_inventory_are_refused() {
        assert_eq!(problems(""), ["1:1: the inventory lists no switch and no node"]);
        assert_eq!(problems("cluster = \"c\"\n"), ["1:1: the inventory lists no switch and no node"]);
        let found = problems("[[switch]]\nname = \"\"\nrole = \"leaf\"\n[[node]]\nname = \" \"\n");
        assert_eq!(found, ["2:1: a switch has an empty name", "5:1: a node has an empty name"]);
    }

    #[test]
    fn two_leaves_on_one_rail_are_refused_within_a_pod_and_allowed_across_pods() {
        let fabric = |pod_b: &str| {
            format!(
                r#"
[[switch]]
name = "su1-leaf0"
role = "leaf"
rail = 0
[[switch]]
name = "su2-leaf0"
role = "leaf"
rail = 0
[[node]]
name = "a"
pod = "su1"
[[node.nic]]
rdma_dev = "mlx5_0"
netdev = "eth0"
rail = 0
plane = 0
switch = "su1-leaf0"
switch_port = "Ethernet0"
[[node]]
name = "b"
pod = "{pod_b}"
[[node.nic]]
rdma_dev = "mlx5_0"
netdev = "eth0"
rail = 0
plane = 0
switch = "su2-leaf0"
switch_port = "Ethernet0"
"#
            )
        };
        assert_eq!(problems(&fabric("su2")), Vec::<String>::new());
        assert_eq!(
            problems(&fabric("su1")),
            ["9:1: leaves su1-leaf0 and su2-leaf0 both serve rail 0 for nodes of the same pod: one leaf per rail and plane in a pod"]
        );
    }

    #[test]
    fn an_inventory_made_in_code_names_the_path_of_each_problem() {
        let mut inventory = crate::topology::Inventory::default();
        inventory.node.push(crate::topology::Node {
            name: String::new(),
            rack: None,
            pod: None,
            zone: None,
            gpu: Vec::new(),
            nic: Vec::new(),
        });
        let err = Topology::from_inventory(inventory).unwrap_err().to_string();
        assert_eq!(err, "<inventory>: node[0].name: a node has an empty name");
    }
}
