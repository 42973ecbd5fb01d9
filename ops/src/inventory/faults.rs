//! Cabling faults the daemon's own inventory checks cannot see, because they need more than the
//! file: what the other nodes do, or what the switches say.
//!
//! - rails: in a rail-optimized fabric GPU *k* of every node reaches the same rail through its
//!   nearest NIC (the NIC's `gpu`, found from the PCIe tree). A node whose GPU *k* is on
//!   another rail than the other nodes' has its two NICs' cables swapped, or one NIC on the
//!   wrong leaf: each fault names the NIC, its netdev, and the leaf and port of its cable;
//! - LLDP: a NIC written at leaf L port P, where L's own LLDP table sees another host or port
//!   on P (or nothing); a port of L that sees a listed node's NIC the inventory places
//!   elsewhere.

use std::collections::{BTreeMap, BTreeSet};

use engine::config::KeyPath;
use engine::topology::{Inventory, Nic, Node};

use crate::inventory::switch_view::SwitchView;

/// One fault, about one element (a NIC, a switch port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The value it is about in the inventory, to place it at its line and column.
    pub at: KeyPath,
    /// What is wrong, naming both ends of the cable.
    pub message: String,
}

fn nic_at(ni: usize, ci: usize) -> KeyPath {
    KeyPath::default().key("node").index(ni).key("nic").index(ci)
}

/// `node "node-02" NIC mlx5_0 (eth0), cabled to leaf-rail1 port Ethernet8`.
fn nic_end(node: &Node, nic: &Nic) -> String {
    let far = match (&nic.switch, &nic.switch_port) {
        (Some(sw), Some(port)) => format!(", cabled to {sw} port {port}"),
        _ => String::new(),
    };
    format!("node {:?} NIC {} ({}){far}", node.name, nic.rdma_dev, nic.netdev)
}

/// GPUs whose nearest NIC is on another rail than the same GPU of the other nodes.
pub fn rails(inventory: &Inventory) -> Vec<Fault> {
    // GPU index → rail → the (node, nic) positions that reach it.
    let mut by_gpu: BTreeMap<u32, BTreeMap<u32, Vec<(usize, usize)>>> = BTreeMap::new();
    for (ni, node) in inventory.node.iter().enumerate() {
        for (ci, nic) in node.nic.iter().enumerate() {
            if let Some(gpu) = nic.gpu {
                by_gpu.entry(gpu).or_default().entry(nic.rail).or_default().push((ni, ci));
            }
        }
    }
    let mut out = Vec::new();
    for (gpu, rails) in by_gpu {
        if rails.len() < 2 {
            continue;
        }
        let most = rails.values().map(Vec::len).max().unwrap_or(0);
        let majority: Vec<u32> = rails.iter().filter(|(_, at)| at.len() == most).map(|(r, _)| *r).collect();
        // A single most common rail is the fabric's; with a tie nobody is blamed, all are named.
        let expected = (majority.len() == 1).then(|| majority[0]);
        for (rail, at) in &rails {
            if Some(*rail) == expected {
                continue;
            }
            for &(ni, ci) in at {
                out.push(rail_fault(inventory, gpu, *rail, (ni, ci), &rails, expected));
            }
        }
    }
    out.sort_by(|a, b| a.message.cmp(&b.message));
    out
}

fn rail_fault(
    inventory: &Inventory,
    gpu: u32,
    rail: u32,
    (ni, ci): (usize, usize),
    rails: &BTreeMap<u32, Vec<(usize, usize)>>,
    expected: Option<u32>,
) -> Fault {
    let (node, nic) = (&inventory.node[ni], &inventory.node[ni].nic[ci]);
    let names = |at: &[(usize, usize)]| {
        let set: BTreeSet<&str> = at.iter().map(|(n, _)| inventory.node[*n].name.as_str()).collect();
        set.into_iter().collect::<Vec<_>>().join(", ")
    };
    let others = match expected {
        Some(r) => format!("GPU {gpu} of {} is on rail {r}", names(&rails[&r])),
        None => {
            let other: Vec<String> = (rails.iter())
                .filter(|(r, _)| **r != rail)
                .map(|(r, at)| format!("rail {r} on {}", names(at)))
                .collect();
            format!("GPU {gpu} is on {} (no rail is the most common)", other.join(" and "))
        }
    };
    Fault {
        at: nic_at(ni, ci).key("rail"),
        message: format!(
            "{}, the NIC nearest to GPU {gpu}, is on rail {rail}, but {others}: a swapped cable, or the NIC on another rail's leaf",
            nic_end(node, nic)
        ),
    }
}

/// Where the inventory and the switches' LLDP tables disagree.
pub fn lldp(inventory: &Inventory, views: &[SwitchView]) -> Vec<Fault> {
    let mut out = Vec::new();
    for view in views {
        let mut claimed = BTreeSet::new();
        for (ni, node) in inventory.node.iter().enumerate() {
            for (ci, nic) in node.nic.iter().enumerate() {
                let (Some(sw), Some(port)) = (&nic.switch, &nic.switch_port) else { continue };
                if *sw != view.switch {
                    continue;
                }
                claimed.insert(port.as_str());
                let message = match view.ports.get(port) {
                    Some(far) if far.is(&node.name, &nic.netdev) => continue,
                    Some(far) => format!(
                        "{}, but {sw} port {port} sees {} ({})",
                        nic_end(node, nic),
                        far.describe(),
                        view.source
                    ),
                    None => {
                        format!("{}, but {sw} sees no LLDP neighbour on {port} ({})", nic_end(node, nic), view.source)
                    }
                };
                out.push(Fault { at: nic_at(ni, ci).key("switch_port"), message });
            }
        }
        for (port, far) in &view.ports {
            if claimed.contains(port.as_str()) {
                continue;
            }
            let found = inventory.node.iter().enumerate().find_map(|(ni, node)| {
                let ci = node.nic.iter().position(|nic| far.is(&node.name, &nic.netdev))?;
                Some((ni, ci))
            });
            if let Some((ni, ci)) = found {
                let (node, nic) = (&inventory.node[ni], &inventory.node[ni].nic[ci]);
                out.push(Fault {
                    at: nic_at(ni, ci).key("switch_port"),
                    message: format!(
                        "{} port {port} sees {} ({}), but the inventory has {}",
                        view.switch,
                        far.describe(),
                        view.source,
                        nic_end(node, nic)
                    ),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::switch_view::PortNeighbor;

    /// 4 nodes, 2 rails: NIC i of node k at leaf-rail<i> port Ethernet<4k>, nearest to GPU i.
    fn fabric() -> Inventory {
        let mut text = String::new();
        for k in 0..4 {
            text += &format!("[[node]]\nname = \"node-{}\"\n", k + 1);
            for i in 0..2 {
                text += &format!(
                    "[[node.nic]]\nrdma_dev = \"mlx5_{i}\"\nnetdev = \"eth{i}\"\ngpu = {i}\nrail = {i}\nplane = 0\nswitch = \"leaf-rail{i}\"\nswitch_port = \"Ethernet{}\"\n",
                    4 * k
                );
            }
        }
        toml::from_str(&text).unwrap()
    }

    /// Node 2's two cables swapped between the leaves, as its discovery writes it.
    fn swapped(inventory: &mut Inventory) {
        for (i, nic) in inventory.node[1].nic.iter_mut().enumerate() {
            nic.rail = 1 - i as u32;
            nic.switch = Some(format!("leaf-rail{}", 1 - i));
        }
    }

    #[test]
    fn a_swapped_pair_of_cables_names_both_nics_and_both_leaf_ports() {
        let mut inv = fabric();
        assert_eq!(rails(&inv), Vec::new(), "a rail-optimized fabric has no fault");
        swapped(&mut inv);
        let faults = rails(&inv);
        let messages: Vec<&str> = faults.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert!(messages[0].starts_with("node \"node-2\" NIC mlx5_0 (eth0), cabled to leaf-rail1 port Ethernet4, the NIC nearest to GPU 0, is on rail 1, but GPU 0 of node-1, node-3, node-4 is on rail 0"), "{}", messages[0]);
        assert!(messages[1].contains("NIC mlx5_1 (eth1), cabled to leaf-rail0 port Ethernet4"), "{}", messages[1]);
        assert_eq!(faults[0].at.to_string(), nic_at(1, 0).key("rail").to_string());
    }

    #[test]
    fn a_tie_blames_nobody_and_names_every_rail() {
        let mut inv = fabric();
        inv.node.truncate(2);
        swapped(&mut inv);
        let faults = rails(&inv);
        assert_eq!(faults.len(), 4, "{faults:#?}");
        assert!(faults.iter().all(|f| f.message.contains("no rail is the most common")));
    }

    #[test]
    fn a_switch_that_sees_another_host_port_on_a_written_port_is_a_disagreement_naming_both() {
        let inv = fabric();
        let far = |node: &str, port: &str| PortNeighbor {
            sys_name: Some(node.into()),
            port_id: Some(port.into()),
            port_desc: Some(port.into()),
        };
        let mut view = SwitchView { switch: "leaf-rail0".into(), source: "dump.json".into(), ports: BTreeMap::new() };
        for k in 0..4 {
            view.ports.insert(format!("Ethernet{}", 4 * k), far(&format!("node-{}", k + 1), "eth0"));
        }
        assert_eq!(lldp(&inv, std::slice::from_ref(&view)), Vec::new());
        view.ports.insert("Ethernet4".into(), far("node-2", "eth1"));
        view.ports.remove("Ethernet8");
        let messages: Vec<String> = lldp(&inv, &[view]).into_iter().map(|f| f.message).collect();
        assert_eq!(
            messages,
            [
                "node \"node-2\" NIC mlx5_0 (eth0), cabled to leaf-rail0 port Ethernet4, but leaf-rail0 port Ethernet4 sees node-2 eth1 (dump.json)",
                "node \"node-3\" NIC mlx5_0 (eth0), cabled to leaf-rail0 port Ethernet8, but leaf-rail0 sees no LLDP neighbour on Ethernet8 (dump.json)",
            ]
        );
    }
}
