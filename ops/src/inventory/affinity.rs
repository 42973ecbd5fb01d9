//! Which GPU a NIC is nearest to: the one behind the deepest PCIe bridge the two share (a GPU
//! and a NIC behind one PCIe switch talk without crossing the CPU: GPUDirect RDMA's fast path).
//! When no GPU shares a bridge below the root complex with the NIC, or two share the same
//! deepest one, the GPUs on the NIC's NUMA node, if there is exactly one; otherwise none.

use crate::inventory::sysfs::PciFunction;

/// How a NIC's nearest GPU was chosen, for the fragment's comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Affinity {
    /// The GPU shares PCIe bridge `bridge` with the NIC, and no other GPU shares one as deep.
    Bridge {
        /// The GPU's index.
        gpu: u32,
        /// The deepest common bridge (`0000:01:00.0`).
        bridge: String,
    },
    /// No bridge decided; the GPU is the only one on NUMA node `node`.
    Numa {
        /// The GPU's index.
        gpu: u32,
        /// The NUMA node.
        node: u32,
    },
    /// Nothing decided: why.
    Unknown(String),
}

impl Affinity {
    /// The GPU chosen, if one was.
    pub fn gpu(&self) -> Option<u32> {
        match self {
            Affinity::Bridge { gpu, .. } | Affinity::Numa { gpu, .. } => Some(*gpu),
            Affinity::Unknown(_) => None,
        }
    }

    /// Where the choice came from, in words.
    pub fn reason(&self) -> String {
        match self {
            Affinity::Bridge { bridge, .. } => format!("deepest common PCIe bridge {bridge}"),
            Affinity::Numa { node, .. } => format!("no common PCIe bridge decided; the only GPU on NUMA node {node}"),
            Affinity::Unknown(why) => why.clone(),
        }
    }
}

/// The number of bridges `a` and `b` share from the root down (a root complex alone counts 1).
fn common_depth(a: &PciFunction, b: &PciFunction) -> usize {
    a.bridges.iter().zip(&b.bridges).take_while(|(x, y)| x == y).count()
}

/// The nearest of `gpus` (index, function) to `nic`.
pub fn nearest(nic: &PciFunction, gpus: &[(u32, &PciFunction)]) -> Affinity {
    let depths: Vec<(u32, usize)> = gpus.iter().map(|(i, g)| (*i, common_depth(nic, g))).collect();
    let best = depths.iter().map(|(_, d)| *d).max().unwrap_or(0);
    let at_best: Vec<u32> = depths.iter().filter(|(_, d)| *d == best).map(|(i, _)| *i).collect();
    // Below the root complex: a root port or a switch port, not merely the same host bridge.
    if best > 1 && at_best.len() == 1 {
        return Affinity::Bridge { gpu: at_best[0], bridge: nic.bridges[best - 1].clone() };
    }
    let Some(node) = nic.numa_node else {
        return Affinity::Unknown("no PCIe bridge decided and sysfs gives no NUMA node".to_string());
    };
    let on_node: Vec<u32> = gpus.iter().filter(|(_, g)| g.numa_node == Some(node)).map(|(i, _)| *i).collect();
    match on_node.as_slice() {
        [gpu] => Affinity::Numa { gpu: *gpu, node },
        [] => Affinity::Unknown(format!("no PCIe bridge decided and no GPU on NUMA node {node}")),
        more => Affinity::Unknown(format!(
            "no PCIe bridge decided and NUMA node {node} has {} GPUs: say which in `gpu`",
            more.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(path: &str, numa: Option<u32>) -> PciFunction {
        let mut bridges: Vec<String> = path.split('/').map(str::to_string).collect();
        let bdf = bridges.pop().unwrap();
        PciFunction { bdf, bridges, numa_node: numa, source: String::new() }
    }

    #[test]
    fn the_gpu_behind_the_same_pcie_switch_wins_over_one_on_the_same_root_complex() {
        let nic = f("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", Some(0));
        let near = f("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", Some(0));
        let far = f("pci0000:00/0000:00:03.0/0000:05:00.0", Some(0));
        let a = nearest(&nic, &[(0, &far), (1, &near)]);
        assert_eq!(a, Affinity::Bridge { gpu: 1, bridge: "0000:01:00.0".into() });
    }

    #[test]
    fn without_a_shared_bridge_the_only_gpu_on_the_numa_node_is_chosen_and_two_are_not() {
        let nic = f("pci0000:00/0000:00:01.0/0000:03:00.0", Some(1));
        let g0 = f("pci0000:40/0000:40:01.0/0000:41:00.0", Some(0));
        let g1 = f("pci0000:80/0000:80:01.0/0000:81:00.0", Some(1));
        assert_eq!(nearest(&nic, &[(0, &g0), (1, &g1)]), Affinity::Numa { gpu: 1, node: 1 });
        let g2 = f("pci0000:90/0000:90:01.0/0000:91:00.0", Some(1));
        let a = nearest(&nic, &[(0, &g0), (1, &g1), (2, &g2)]);
        assert_eq!(a.gpu(), None, "{a:?}");
        assert!(a.reason().contains("NUMA node 1 has 2 GPUs"), "{}", a.reason());
    }
}
