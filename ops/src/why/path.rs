//! The job's path through the fabric, and which element of it each series
//! is about.
//!
//! A job's nodes reach each other through their NICs (one per rail), the
//! leaf switch of each rail, and the plane's spine above the leaves. Any
//! of those can slow the job, and so can a neighbour: a NIC of another
//! node on the same leaf that storms PFC pauses stops the whole leaf's
//! lossless queue. So the path is the job's nodes *and* the leaves their
//! NICs are cabled to (every port of them) *and* those leaves' planes.
//!
//! Series are grouped into elements an SRE acts on:
//! - "rail 3 of node-02": the NIC's own series and its leaf port's
//!   (the two ends of one cable: a drain or an isolate acts on both);
//! - "GPU 5 of node-01": GPU series;
//! - "node node-01": node series that name no device;
//! - "switch leaf-rail3": switch-wide series;
//! - "spine/plane 0": the leaves' uplink ports and the plane's spine.
//!
//! Labels are first completed from the inventory ([`Topology::enrich`],
//! which never overwrites what was recorded), so a recording made with or
//! without an inventory is read the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use engine::{Labels, Topology};
use serde::Serialize;

/// A part of the fabric a series is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Element {
    /// One NIC of a node and the leaf port it is cabled to.
    Rail {
        /// Node.
        node: String,
        /// Rail.
        rail: String,
    },
    /// One GPU.
    Gpu {
        /// Node.
        node: String,
        /// GPU index.
        gpu: String,
    },
    /// A node as a whole.
    Node {
        /// Node.
        node: String,
    },
    /// A switch as a whole.
    Switch {
        /// Switch.
        switch: String,
    },
    /// A plane's spine and the uplinks of its leaves.
    Plane {
        /// Plane.
        plane: String,
    },
}

impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Element::Rail { node, rail } => write!(f, "rail {rail} of {node}"),
            Element::Gpu { node, gpu } => write!(f, "GPU {gpu} of {node}"),
            Element::Node { node } => write!(f, "node {node}"),
            Element::Switch { switch } => write!(f, "switch {switch}"),
            Element::Plane { plane } => write!(f, "spine/plane {plane}"),
        }
    }
}

/// One NIC's cable: its devices and the leaf port at the far end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cable {
    /// RDMA device.
    pub rdma_dev: String,
    /// Netdev.
    pub netdev: String,
    /// Leaf switch.
    pub switch: Option<String>,
    /// Leaf port.
    pub port: Option<String>,
}

/// The job's nodes and what their traffic crosses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobPath {
    /// The job's nodes.
    pub nodes: BTreeSet<String>,
    /// The leaves the nodes' NICs are cabled to.
    pub leaves: BTreeSet<String>,
    /// Their planes.
    pub planes: BTreeSet<String>,
    /// (node, rail) → its cable, for every NIC the inventory knows.
    pub cables: BTreeMap<(String, String), Cable>,
}

impl JobPath {
    /// Walks the inventory from `nodes`: their NICs, the leaves they are
    /// cabled to and the leaves' planes. Every node's cables are kept (a
    /// neighbour on a shared leaf is named with its ports too).
    pub fn walk(nodes: &BTreeSet<String>, topology: Option<&Topology>) -> JobPath {
        let mut path = JobPath { nodes: nodes.clone(), ..JobPath::default() };
        let Some(t) = topology else { return path };
        for node in &t.inventory().node {
            for nic in &node.nic {
                let cable = Cable {
                    rdma_dev: nic.rdma_dev.clone(),
                    netdev: nic.netdev.clone(),
                    switch: nic.switch.clone(),
                    port: nic.switch_port.clone(),
                };
                path.cables.insert((node.name.clone(), nic.rail.to_string()), cable);
                if nodes.contains(&node.name) {
                    path.leaves.extend(nic.switch.clone());
                    path.planes.insert(nic.plane.to_string());
                }
            }
        }
        path
    }

    /// Learns leaves and planes from a job node's enriched labels: a
    /// recording made with an inventory says where each NIC is cabled even
    /// when `why` is given none.
    pub fn learn(&mut self, labels: &Labels) {
        if labels.get("node").is_some_and(|n| self.nodes.contains(n)) && labels.get("rail").is_some() {
            self.leaves.extend(labels.get("switch").map(str::to_string));
            self.planes.extend(labels.get("plane").map(str::to_string));
        }
    }

    /// The element `labels` (already enriched) are about, or `None` when
    /// the series is off the job's path (or is the job's own signal).
    pub fn element_of(&self, labels: &Labels) -> Option<Element> {
        if labels.get("job").is_some() {
            return None;
        }
        let get = |k: &str| labels.get(k).map(str::to_string);
        if let Some(node) = get("node") {
            let on_path = self.nodes.contains(&node) || labels.get("switch").is_some_and(|s| self.leaves.contains(s));
            let device = labels.get("netdev").is_some() || labels.get("rdma_dev").is_some();
            return match (get("rail"), get("gpu")) {
                (Some(rail), _) if device && on_path => Some(Element::Rail { node, rail }),
                (_, Some(gpu)) if !device && self.nodes.contains(&node) => Some(Element::Gpu { node, gpu }),
                _ if self.nodes.contains(&node) => Some(Element::Node { node }),
                _ => None,
            };
        }
        let switch = get("switch")?;
        let spine = labels.get("switch_role") == Some("spine");
        if spine {
            return get("plane").filter(|p| self.planes.contains(p)).map(|plane| Element::Plane { plane });
        }
        let peer = get("peer_node");
        let on_path = self.leaves.contains(&switch) || peer.as_ref().is_some_and(|p| self.nodes.contains(p));
        if !on_path {
            return None;
        }
        match (labels.get("port"), peer, get("rail")) {
            (Some(_), Some(node), Some(rail)) => Some(Element::Rail { node, rail }),
            // A leaf port with no NIC at its far end: the uplink.
            (Some(_), None, _) => {
                get("plane").map(|plane| Element::Plane { plane }).or(Some(Element::Switch { switch }))
            }
            _ => Some(Element::Switch { switch }),
        }
    }

    /// The cable of a rail element, for saying which devices it is.
    pub fn cable(&self, element: &Element) -> Option<&Cable> {
        match element {
            Element::Rail { node, rail } => self.cables.get(&(node.clone(), rail.clone())),
            _ => None,
        }
    }
}

/// `labels` completed from `topology` (if any).
pub fn enriched(labels: &Labels, topology: Option<&Topology>) -> Labels {
    let mut labels = labels.clone();
    if let Some(t) = topology {
        t.enrich(&mut labels);
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Topology {
        Topology::parse(engine::topology::EXAMPLE_INVENTORY, "example").unwrap()
    }

    fn element(path: &JobPath, t: &Topology, pairs: &[(&str, &str)]) -> Option<String> {
        path.element_of(&enriched(&Labels::from_pairs(pairs.iter().copied()), Some(t))).map(|e| e.to_string())
    }

    #[test]
    fn a_nic_and_its_leaf_port_are_one_rail_and_neighbours_on_the_leaves_count() {
        let t = example();
        let path = JobPath::walk(&["node-02".to_string()].into(), Some(&t));
        assert_eq!(path.leaves.len(), 8);
        assert_eq!(path.planes, ["0".to_string(), "1".to_string()].into());
        let rail3 = Some("rail 3 of node-02".to_string());
        assert_eq!(element(&path, &t, &[("node", "node-02"), ("netdev", "eth3")]), rail3);
        // node k is cabled to Ethernet<4k>: node-02 is Ethernet4.
        assert_eq!(element(&path, &t, &[("switch", "leaf-rail3"), ("port", "Ethernet4")]), rail3);
        // node-04 is not in the job, but shares the leaves.
        assert_eq!(
            element(&path, &t, &[("switch", "leaf-rail3"), ("port", "Ethernet12")]).as_deref(),
            Some("rail 3 of node-04")
        );
        assert_eq!(
            element(&path, &t, &[("node", "node-04"), ("netdev", "eth3")]).as_deref(),
            Some("rail 3 of node-04")
        );
        assert_eq!(
            element(&path, &t, &[("node", "node-04"), ("gpu", "1")]),
            None,
            "another node's GPU is off the path"
        );
        assert_eq!(cable_port(&path), Some("Ethernet4".to_string()));
    }

    fn cable_port(path: &JobPath) -> Option<String> {
        path.cable(&Element::Rail { node: "node-02".into(), rail: "3".into() }).and_then(|c| c.port.clone())
    }

    #[test]
    fn gpus_uplinks_spines_and_job_signals() {
        let t = example();
        let path = JobPath::walk(&["node-01".to_string()].into(), Some(&t));
        assert_eq!(element(&path, &t, &[("node", "node-01"), ("gpu", "5")]).as_deref(), Some("GPU 5 of node-01"));
        // The leaves have one port per node (Ethernet0..12) and the uplink after them.
        assert_eq!(
            element(&path, &t, &[("switch", "leaf-rail6"), ("port", "Ethernet16")]).as_deref(),
            Some("spine/plane 1")
        );
        assert_eq!(
            element(&path, &t, &[("switch", "spine-0"), ("port", "Ethernet0")]).as_deref(),
            Some("spine/plane 0")
        );
        assert_eq!(element(&path, &t, &[("node", "node-01")]).as_deref(), Some("node node-01"));
        assert_eq!(element(&path, &t, &[("job", "j"), ("node", "node-01")]), None);
    }

    #[test]
    fn without_an_inventory_the_recorded_labels_say_where_a_nic_is_cabled() {
        let mut path = JobPath::walk(&["n1".to_string()].into(), None);
        path.learn(&Labels::from_pairs([
            ("node", "n1"),
            ("netdev", "eth0"),
            ("rail", "0"),
            ("switch", "leaf-a"),
            ("plane", "0"),
        ]));
        let port =
            Labels::from_pairs([("switch", "leaf-a"), ("port", "Ethernet0"), ("peer_node", "n2"), ("rail", "0")]);
        assert_eq!(path.element_of(&port).map(|e| e.to_string()).as_deref(), Some("rail 0 of n2"));
        let other = Labels::from_pairs([("switch", "leaf-b"), ("port", "Ethernet0")]);
        assert_eq!(path.element_of(&other), None);
    }
}
