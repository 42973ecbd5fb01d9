//! The generated cluster and its names: two scalable units (`su0`, `su1`) of
//! 16 nodes, 8 GPUs and 8 NICs a node, one leaf per rail per unit and 8
//! spines in two planes, and its inventory TOML.
//!
//! Cabling, as a rail-optimized build cables it:
//!
//! - NIC `i` of a node is `mlx5_i`, next to GPU `i` on the same PCIe switch
//!   (its bus is the GPU's plus one, hence its predictable netdev name
//!   `enp<bus>s0np0`), on rail `i`, cabled to `leaf-su<u>-rail<i>` port
//!   `Ethernet<4k>` for node `k` of unit `u` (SONiC names 4-lane ports in
//!   steps of 4);
//! - rails 0–3 are plane 0, rails 4–7 plane 1; spines 0–3 are plane 0,
//!   spines 4–7 plane 1;
//! - a leaf's uplinks are `Ethernet64`..`Ethernet92`, two to each spine of
//!   its plane (uplink `m` to spine `4p + m/2`); a spine reaches each of the
//!   8 leaves of its plane over two ports, `Ethernet<8j>` and
//!   `Ethernet<8j+4>` for leaf `j = 4u + rail % 4`.
//!
//! The inventory lists NICs only; uplinks have no NIC behind them, which is
//! how the daemon tells them from node ports.

use std::fmt::Write;

/// Scalable units.
pub(super) const UNITS: usize = 2;
/// Nodes in a unit.
pub(super) const NODES_PER_UNIT: usize = 16;
/// Nodes in the cluster.
pub(super) const NODES: usize = UNITS * NODES_PER_UNIT;
/// Rails (NICs and GPUs per node).
pub(super) const RAILS: usize = 8;
/// Rails in a plane.
pub(super) const RAILS_PER_PLANE: usize = 4;
/// Uplinks per leaf.
pub(super) const UPLINKS: usize = 8;
/// Spines.
pub(super) const SPINES: usize = 8;

/// PCI buses of GPUs 0–7 (an HGX board's usual layout).
const GPU_BUS: [u32; RAILS] = [0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb];

/// `node-07`.
pub(super) fn node_name(k: usize) -> String {
    format!("node-{k:02}")
}

/// The unit of node `k`.
pub(super) fn unit_of(k: usize) -> usize {
    k / NODES_PER_UNIT
}

/// The plane of a rail.
pub(super) fn plane_of(rail: usize) -> usize {
    rail / RAILS_PER_PLANE
}

/// The leaf of rail `rail` in unit `unit`.
pub(super) fn leaf_name(unit: usize, rail: usize) -> String {
    format!("leaf-su{unit}-rail{rail}")
}

/// `spine-3`.
pub(super) fn spine_name(spine: usize) -> String {
    format!("spine-{spine}")
}

/// The leaf port of node `k` (on every leaf of its unit).
pub(super) fn node_port(k: usize) -> String {
    format!("Ethernet{}", 4 * (k % NODES_PER_UNIT))
}

/// The leaf port of uplink `m`.
pub(super) fn uplink_port(m: usize) -> String {
    format!("Ethernet{}", 64 + 4 * m)
}

/// The spine at the far end of uplink `m` of a leaf of rail `rail`.
pub(super) fn uplink_spine(rail: usize, m: usize) -> usize {
    plane_of(rail) * 4 + m / 2
}

/// The spine port at the far end of uplink `m` of leaf (`unit`, `rail`).
pub(super) fn spine_port(unit: usize, rail: usize, m: usize) -> String {
    format!("Ethernet{}", 8 * (unit * RAILS_PER_PLANE + rail % RAILS_PER_PLANE) + 4 * (m % 2))
}

/// `mlx5_3`.
pub(super) fn rdma_dev(rail: usize) -> String {
    format!("mlx5_{rail}")
}

/// The netdev of NIC `rail` (`enp25s0np0` for the NIC on bus 0x19).
pub(super) fn netdev(rail: usize) -> String {
    format!("enp{}s0np0", GPU_BUS[rail % RAILS] + 1)
}

/// The PCI bus id of GPU `gpu`, as NVML reports it.
pub(super) fn pci_bus_id(gpu: usize) -> String {
    format!("0000:{:02x}:00.0", GPU_BUS[gpu % RAILS])
}

/// The inventory TOML of the generated cluster (parsable by
/// `engine::Topology::parse(text, "field")`).
pub fn inventory_toml() -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str(
        "# The field-case cluster: two scalable units of 16 nodes x 8 GPUs x 8 NICs, rail-optimized.\n\
         # NIC i of every node is on rail i and cabled to leaf-su<u>-rail<i>; rails 0-3 are plane 0,\n\
         # 4-7 plane 1. Node k of a unit uses port Ethernet<4k> of its unit's leaves; a leaf's\n\
         # uplinks Ethernet64-Ethernet92 go two to each spine of its plane.\n\n\
         cluster = \"field-two-units\"\n\n[gnmi]\npath_style = \"prefix-target\"\n",
    );
    for unit in 0..UNITS {
        for rail in 0..RAILS {
            let port = 57400 + unit * RAILS + rail;
            let _ = write!(
                out,
                "\n[[switch]]\nname = \"{}\"\nrole = \"leaf\"\nrail = {rail}\nplane = {}\naddress = \"127.0.0.1:{port}\"\n",
                leaf_name(unit, rail),
                plane_of(rail)
            );
        }
    }
    for spine in 0..SPINES {
        let _ = write!(
            out,
            "\n[[switch]]\nname = \"{}\"\nrole = \"spine\"\nplane = {}\naddress = \"127.0.0.1:{}\"\n",
            spine_name(spine),
            spine / 4,
            57416 + spine
        );
    }
    for k in 0..NODES {
        node_toml(&mut out, k);
    }
    out
}

/// One `[[node]]` with its GPUs and NICs.
fn node_toml(out: &mut String, k: usize) {
    let unit = unit_of(k);
    let rack = (k % NODES_PER_UNIT) / 4;
    let _ = write!(
        out,
        "\n[[node]]\nname = \"{}\"\nrack = \"rack-su{unit}-{rack}\"\npod = \"su{unit}\"\nzone = \"hall-1\"\n",
        node_name(k)
    );
    for gpu in 0..RAILS {
        let _ = write!(out, "\n[[node.gpu]]\nindex = {gpu}\npci_bus_id = \"{}\"\n", pci_bus_id(gpu));
    }
    for rail in 0..RAILS {
        let _ = write!(
            out,
            "\n[[node.nic]]\nrdma_dev = \"{}\"\nnetdev = \"{}\"\nport = 1\ngpu = {rail}\nrail = {rail}\nplane = {}\n\
             switch = \"{}\"\nswitch_port = \"{}\"\n",
            rdma_dev(rail),
            netdev(rail),
            plane_of(rail),
            leaf_name(unit, rail),
            node_port(k)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inventory_parses_and_cables_every_nic_to_its_rail() {
        let topology = engine::Topology::parse(&inventory_toml(), "field").expect("the inventory parses");
        assert_eq!(topology.node_count(), NODES);
        let inventory = topology.inventory();
        assert_eq!(inventory.switch.len(), UNITS * RAILS + SPINES);
        let node = &inventory.node[17];
        assert_eq!(node.name, "node-17");
        assert_eq!(node.pod.as_deref(), Some("su1"));
        let nic = &node.nic[5];
        assert_eq!((nic.rail, nic.plane), (5, 1));
        assert_eq!(nic.switch.as_deref(), Some("leaf-su1-rail5"));
        assert_eq!(nic.switch_port.as_deref(), Some("Ethernet4"));
        assert_eq!(topology.nodes_facing("leaf-su0-rail2").len(), NODES_PER_UNIT);
    }

    #[test]
    fn uplinks_pair_up_with_spine_ports() {
        assert_eq!(uplink_port(7), "Ethernet92");
        assert_eq!(uplink_spine(5, 7), 7);
        assert_eq!(uplink_spine(1, 0), 0);
        assert_eq!(spine_port(1, 6, 3), "Ethernet52");
        assert_eq!(netdev(0), "enp25s0np0");
        assert_eq!(pci_bus_id(7), "0000:db:00.0");
    }
}
