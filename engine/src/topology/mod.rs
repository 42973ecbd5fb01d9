//! The topology inventory: the tables every RoCE fabric needs.
//!
//! - GPU ↔ NIC affinity (which NIC is nearest to which GPU),
//! - rail numbering (NIC → rail, plane),
//! - placement (node → rack, pod, zone),
//! - the switch and switch port at the far end of every NIC port.
//!
//! It is loaded from TOML ([`Topology::load`]); sensors emit device-local
//! labels and [`Topology::enrich`] adds the rest, so rules and safety limits
//! can speak of "this rail", "this plane", "this switch". It is also the one
//! list of switches and how to reach them (`access`:
//! [`Topology::switch_access`]), which the gnmi sensor and the switch
//! actuators refer to by name.

mod access;
mod checks;
mod inventory;

pub use access::{AccessError, GnmiDefaults, PathStyleSetting, SwitchAccess, SwitchTls};
pub use checks::InventoryProblem;
pub use inventory::{Gpu, Inventory, Nic, Node, Switch, SwitchRole};

use std::collections::HashMap;
use std::path::Path;

use crate::config::{Locator, TomlError};
use crate::labels::Labels;

/// An inventory could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TOML is malformed or does not match the inventory schema.
    #[error("{path}:{line}:{column}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was expected.
        message: String,
    },
    /// The inventory is well-formed but inconsistent: every problem, each at its line and
    /// column (see `checks`).
    #[error("{}", problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Invalid {
        /// What is inconsistent, and where.
        problems: Vec<TomlError>,
    },
}

impl TopologyError {
    /// Each problem as a placed error (a whole-file one for an unreadable file), for a
    /// caller that lists every problem of every file.
    pub fn problems(&self) -> Vec<TomlError> {
        match self {
            TopologyError::Io { path, .. } => {
                vec![TomlError { path: path.clone(), line: 0, column: 0, message: self.to_string() }]
            }
            TopologyError::Parse { path, line, column, message } => {
                vec![TomlError { path: path.clone(), line: *line, column: *column, message: message.clone() }]
            }
            TopologyError::Invalid { problems } => problems.clone(),
        }
    }
}

/// The loaded inventory with its lookup indexes.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    inventory: Inventory,
    /// (node, rdma_dev) and (node, netdev) → (node index, nic index).
    nic_by_dev: HashMap<(String, String), (usize, usize)>,
    /// (switch, switch port) → (node index, nic index).
    nic_by_switch_port: HashMap<(String, String), (usize, usize)>,
    node_by_name: HashMap<String, usize>,
    switch_by_name: HashMap<String, usize>,
}

/// What [`Topology::enrich`] may add to a series' labels from the labels it has: (labels
/// needed, labels given), applied until nothing more follows ([`derivable_labels`]). A test
/// below holds it to `enrich`.
pub const DERIVED_LABELS: [(&[&str], &[&str]); 6] = [
    (&["node"], &["rack", "pod", "zone"]),
    (&["node", "rdma_dev"], &["netdev", "rail", "plane", "gpu", "switch", "switch_port"]),
    (&["node", "netdev"], &["rdma_dev", "rail", "plane", "gpu", "switch", "switch_port"]),
    (&["node", "gpu"], &["rail", "plane"]),
    (&["switch"], &["rail", "plane", "switch_role"]),
    (&["switch", "port"], &["peer_node", "peer_rdma_dev", "peer_netdev"]),
];

/// `labels` and every label [`Topology::enrich`] may derive from them, directly or through
/// another derived one. The rule loader asks it which labels every subject of a rule grouped
/// by `labels` carries, so an action template naming one its subjects cannot have is refused
/// at load (`rule::template::subject_labels`).
pub fn derivable_labels(labels: &[String]) -> Vec<String> {
    let mut out = labels.to_vec();
    loop {
        let before = out.len();
        for (needs, gives) in DERIVED_LABELS {
            if needs.iter().all(|n| out.iter().any(|l| l == n)) {
                for given in gives {
                    if !out.iter().any(|l| l == given) {
                        out.push(given.to_string());
                    }
                }
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

impl Topology {
    /// Loads and validates an inventory file.
    pub fn load(path: &Path) -> Result<Topology, TopologyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| TopologyError::Io { path: path.display().to_string(), source })?;
        let mut topology = Topology::parse(&text, &path.display().to_string())?;
        // File names in it are relative to the inventory, never the working directory.
        let base = path.parent().unwrap_or(Path::new("."));
        topology.inventory.gnmi.resolve(base);
        for s in &mut topology.inventory.switch {
            access::resolve_files(&mut s.credentials_file, &mut s.tls, base);
        }
        Ok(topology)
    }

    /// How to reach switch `name`: its inventory entry, with `[gnmi]` for
    /// what it does not set.
    pub fn switch_access(&self, name: &str) -> Result<SwitchAccess, AccessError> {
        let Some(&i) = self.switch_by_name.get(name) else {
            let names = self.inventory.switch.iter().map(|s| s.name.as_str());
            return Err(AccessError::Unknown { name: name.to_string(), hint: crate::names::did_you_mean(name, names) });
        };
        let (s, d) = (&self.inventory.switch[i], &self.inventory.gnmi);
        let address = s.address.clone().ok_or_else(|| AccessError::NoAddress { name: name.to_string() })?;
        Ok(SwitchAccess {
            name: s.name.clone(),
            address,
            path_style: s.path_style.or(d.path_style).unwrap_or_default(),
            namespace: s.namespace.clone().or_else(|| d.namespace.clone()),
            credentials_file: s.credentials_file.clone().or_else(|| d.credentials_file.clone()),
            tls: s.tls.clone().or_else(|| d.tls.clone()),
        })
    }

    /// [`Topology::switch_access`] of `name` in `topology`, which may be absent.
    pub fn access_in(topology: Option<&Topology>, name: &str) -> Result<SwitchAccess, AccessError> {
        topology.ok_or_else(|| AccessError::NoInventory { name: name.to_string() })?.switch_access(name)
    }

    /// Parses and validates inventory TOML; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Topology, TopologyError> {
        let inventory: Inventory = toml::from_str(text).map_err(|e| {
            let (line, column) = crate::config::line_col(text, e.span().map(|s| s.start).unwrap_or(0));
            TopologyError::Parse { path: origin.to_string(), line, column, message: e.message().to_string() }
        })?;
        Topology::index(inventory).map_err(|problems| {
            let at = Locator::new(text, origin);
            TopologyError::Invalid { problems: problems.iter().map(|p| at.error(&p.at.keys(), &p.message)).collect() }
        })
    }

    /// Builds the indexes of an inventory made in code, checking that every
    /// reference resolves.
    pub fn from_inventory(inventory: Inventory) -> Result<Topology, TopologyError> {
        Topology::index(inventory).map_err(|problems| TopologyError::Invalid {
            problems: (problems.into_iter())
                .map(|p| TomlError {
                    path: "<inventory>".into(),
                    line: 0,
                    column: 0,
                    message: format!("{}: {}", p.at, p.message),
                })
                .collect(),
        })
    }

    /// Checks `inventory` (every problem at once) and builds its indexes.
    fn index(inventory: Inventory) -> Result<Topology, Vec<InventoryProblem>> {
        let problems = checks::problems(&inventory);
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut t = Topology { inventory, ..Topology::default() };
        for (si, s) in t.inventory.switch.iter().enumerate() {
            t.switch_by_name.insert(s.name.clone(), si);
        }
        for (ni, node) in t.inventory.node.iter().enumerate() {
            t.node_by_name.insert(node.name.clone(), ni);
            for (ci, nic) in node.nic.iter().enumerate() {
                for dev in [&nic.rdma_dev, &nic.netdev] {
                    t.nic_by_dev.insert((node.name.clone(), dev.clone()), (ni, ci));
                }
                if let (Some(sw), Some(port)) = (&nic.switch, &nic.switch_port) {
                    t.nic_by_switch_port.insert((sw.clone(), port.clone()), (ni, ci));
                }
            }
        }
        Ok(t)
    }

    /// The inventory as loaded.
    pub fn inventory(&self) -> &Inventory {
        &self.inventory
    }

    /// Number of nodes in the fleet.
    pub fn node_count(&self) -> usize {
        self.inventory.node.len()
    }

    /// The nodes with a NIC cabled to `switch`, by name: the senders behind a leaf.
    pub fn nodes_facing(&self, switch: &str) -> Vec<&str> {
        let facing = |n: &&inventory::Node| n.nic.iter().any(|nic| nic.switch.as_deref() == Some(switch));
        self.inventory.node.iter().filter(facing).map(|n| n.name.as_str()).collect()
    }

    /// The node whose NIC is cabled to `port` of `switch`, if the inventory says.
    pub fn node_at(&self, switch: &str, port: &str) -> Option<&str> {
        let (ni, _) = self.nic_by_switch_port.get(&(switch.to_string(), port.to_string()))?;
        Some(self.inventory.node[*ni].name.as_str())
    }

    /// The nodes with a NIC on `rail`, by name: everyone a rail-wide change reaches.
    pub fn nodes_on_rail(&self, rail: u32) -> Vec<&str> {
        self.nodes_with_nic(|nic| nic.rail == rail)
    }

    /// The nodes with a NIC on `plane`, by name: everyone a plane-wide change reaches.
    pub fn nodes_on_plane(&self, plane: u32) -> Vec<&str> {
        self.nodes_with_nic(|nic| nic.plane == plane)
    }

    fn nodes_with_nic(&self, matches: impl Fn(&inventory::Nic) -> bool) -> Vec<&str> {
        self.inventory.node.iter().filter(|n| n.nic.iter().any(&matches)).map(|n| n.name.as_str()).collect()
    }

    /// Whether node `name` is listed.
    pub fn has_node(&self, name: &str) -> bool {
        self.node_by_name.contains_key(name)
    }

    /// Adds topology labels to `labels`, never overwriting one a sensor set.
    ///
    /// - `node` → `rack`, `pod`, `zone`;
    /// - `node` + `rdma_dev` or `netdev` → the other device name, `rail`,
    ///   `plane`, `gpu` (nearest), `switch` and `switch_port` (far end);
    /// - `switch` → its `rail`, `plane`, `switch_role`; with `port`, the
    ///   far end: `peer_node`, `peer_rdma_dev`, `peer_netdev`.
    pub fn enrich(&self, labels: &mut Labels) {
        let add = |labels: &mut Labels, k: &str, v: String| {
            labels.0.entry(k.to_string()).or_insert(v);
        };
        if let Some(node) = labels.get("node").and_then(|n| self.node_by_name.get(n)) {
            let node = &self.inventory.node[*node];
            for (k, v) in [("rack", &node.rack), ("pod", &node.pod), ("zone", &node.zone)] {
                if let Some(v) = v {
                    add(labels, k, v.clone());
                }
            }
        }
        let nic = labels.get("node").and_then(|node| {
            ["rdma_dev", "netdev"].iter().find_map(|k| {
                let dev = labels.get(k)?;
                self.nic_by_dev.get(&(node.to_string(), dev.to_string())).copied()
            })
        });
        if let Some((ni, ci)) = nic {
            let nic = &self.inventory.node[ni].nic[ci];
            add(labels, "rdma_dev", nic.rdma_dev.clone());
            add(labels, "netdev", nic.netdev.clone());
            add(labels, "rail", nic.rail.to_string());
            add(labels, "plane", nic.plane.to_string());
            if let Some(gpu) = nic.gpu {
                add(labels, "gpu", gpu.to_string());
            }
            if let Some(sw) = &nic.switch {
                add(labels, "switch", sw.clone());
            }
            if let Some(port) = &nic.switch_port {
                add(labels, "switch_port", port.clone());
            }
        }
        if let Some(node) = labels.get("node").and_then(|n| self.node_by_name.get(n)) {
            // A GPU series gets the rail and plane of the NIC nearest to it.
            let node = &self.inventory.node[*node];
            let gpu_nic = labels
                .get("gpu")
                .and_then(|g| g.parse::<u32>().ok())
                .and_then(|g| node.nic.iter().find(|n| n.gpu == Some(g)));
            if let Some(nic) = gpu_nic {
                add(labels, "rail", nic.rail.to_string());
                add(labels, "plane", nic.plane.to_string());
            }
        }
        if let Some(sw) = labels.get("switch").and_then(|s| self.switch_by_name.get(s)) {
            let sw = &self.inventory.switch[*sw];
            if let Some(rail) = sw.rail {
                add(labels, "rail", rail.to_string());
            }
            if let Some(plane) = sw.plane {
                add(labels, "plane", plane.to_string());
            }
            add(labels, "switch_role", sw.role.as_str().to_string());
        }
        let far_end = match (labels.get("switch"), labels.get("port")) {
            (Some(sw), Some(port)) => self.nic_by_switch_port.get(&(sw.to_string(), port.to_string())).copied(),
            _ => None,
        };
        if let Some((ni, ci)) = far_end {
            let node = &self.inventory.node[ni];
            let nic = &node.nic[ci];
            add(labels, "peer_node", node.name.clone());
            add(labels, "peer_rdma_dev", nic.rdma_dev.clone());
            add(labels, "peer_netdev", nic.netdev.clone());
        }
    }

    /// The labels of the other end of a link end described by `labels`:
    /// a NIC end (`node` + `rdma_dev`/`netdev`) gives its `switch` + `port`;
    /// a switch end (`switch` + `port`) gives its `node`, `rdma_dev`, `netdev`.
    pub fn peer(&self, labels: &Labels) -> Option<Labels> {
        if let (Some(sw), Some(port)) = (labels.get("switch"), labels.get("port")) {
            let (ni, ci) = *self.nic_by_switch_port.get(&(sw.to_string(), port.to_string()))?;
            let node = &self.inventory.node[ni];
            let nic = &node.nic[ci];
            return Some(Labels::from_pairs([
                ("node", node.name.as_str()),
                ("rdma_dev", nic.rdma_dev.as_str()),
                ("netdev", nic.netdev.as_str()),
            ]));
        }
        let node = labels.get("node")?;
        let (ni, ci) = ["rdma_dev", "netdev"]
            .iter()
            .find_map(|k| self.nic_by_dev.get(&(node.to_string(), labels.get(k)?.to_string())).copied())?;
        let nic = &self.inventory.node[ni].nic[ci];
        Some(Labels::from_pairs([("switch", nic.switch.as_deref()?), ("port", nic.switch_port.as_deref()?)]))
    }
}

/// The example inventory shipped with the project: 4 nodes × 8 GPUs × 8
/// NICs on 8 rail switches in two planes.
pub const EXAMPLE_INVENTORY: &str = include_str!("../../../docs/examples/inventory.toml");

#[cfg(test)]
mod tests {
    use super::*;

    /// [`derivable_labels`] says what `enrich` adds: each row's needed labels, taken from a NIC
    /// of an inventory with every optional fact set, are enriched to exactly the derivable ones.
    #[test]
    fn enrich_adds_what_derived_labels_says() {
        let t = Topology::parse(
            "[[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\nrail = 0\nplane = 0\n\
             [[node]]\nname = \"n1\"\nrack = \"r1\"\npod = \"p1\"\nzone = \"z1\"\n\
             [[node.gpu]]\nindex = 0\n\
             [[node.nic]]\nrdma_dev = \"mlx5_0\"\nnetdev = \"eth0\"\nrail = 0\nplane = 0\ngpu = 0\n\
             switch = \"leaf-rail0\"\nswitch_port = \"Ethernet0\"\n",
            "derived.toml",
        )
        .unwrap();
        let value = |label: &str| match label {
            "node" => "n1",
            "rdma_dev" => "mlx5_0",
            "netdev" => "eth0",
            "gpu" => "0",
            "switch" => "leaf-rail0",
            "port" => "Ethernet0",
            other => panic!("no sample value for {other}"),
        };
        for (needs, _) in DERIVED_LABELS {
            let mut labels = Labels::from_pairs(needs.iter().map(|l| (*l, value(l))));
            t.enrich(&mut labels);
            let mut enriched: Vec<String> = labels.0.into_keys().collect();
            let mut derivable = derivable_labels(&needs.iter().map(|l| l.to_string()).collect::<Vec<_>>());
            enriched.sort_unstable();
            derivable.sort_unstable();
            assert_eq!(enriched, derivable, "enrich from {needs:?}");
        }
    }

    #[test]
    fn a_switch_is_reached_with_its_own_settings_else_the_inventorys_gnmi_defaults() {
        let dir = std::env::temp_dir().join(format!("rocemend-access-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("inventory.toml");
        std::fs::write(
            &path,
            "[gnmi]\npath_style = \"auto\"\ncredentials_file = \"creds.toml\"\n[gnmi.tls]\nca_file = \"ca.pem\"\n\
             [[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\naddress = \"10.0.0.10:8080\"\n\
             [[switch]]\nname = \"leaf-rail1\"\nrole = \"leaf\"\naddress = \"10.0.0.11:8080\"\npath_style = \"sonic-db-origin\"\nnamespace = \"asic0\"\n\
             [[switch]]\nname = \"spine0\"\nrole = \"spine\"\n",
        )
        .unwrap();
        let t = Topology::load(&path).unwrap();
        let a = t.switch_access("leaf-rail0").unwrap();
        assert_eq!(
            (a.address.as_str(), a.path_style, a.namespace.as_deref()),
            ("10.0.0.10:8080", PathStyleSetting::Auto, None)
        );
        assert_eq!(a.credentials_file, Some(dir.join("creds.toml")), "relative to the inventory");
        assert_eq!(a.tls.map(|t| t.ca_file), Some(dir.join("ca.pem")));
        let b = t.switch_access("leaf-rail1").unwrap();
        assert_eq!((b.path_style, b.namespace.as_deref()), (PathStyleSetting::SonicDbOrigin, Some("asic0")));
        assert_eq!(t.switch_access("spine0").unwrap_err(), AccessError::NoAddress { name: "spine0".into() });
        let unknown = t.switch_access("leaf-rial0").unwrap_err().to_string();
        assert!(unknown.contains("did you mean \"leaf-rail0\"?"), "{unknown}");
        assert!(matches!(Topology::access_in(None, "leaf-rail0"), Err(AccessError::NoInventory { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn example() -> Topology {
        Topology::parse(EXAMPLE_INVENTORY, "inventory.toml").expect("example inventory loads")
    }

    #[test]
    fn the_example_is_a_rail_optimized_cluster() {
        let t = example();
        assert_eq!(t.node_count(), 4);
        for node in &t.inventory().node {
            assert_eq!(node.gpu.len(), 8);
            assert_eq!(node.nic.len(), 8);
            let rails: std::collections::BTreeSet<u32> = node.nic.iter().map(|n| n.rail).collect();
            assert_eq!(rails.len(), 8, "each NIC of {} on its own rail", node.name);
        }
        assert_eq!(t.inventory().switch.iter().filter(|s| s.role == SwitchRole::Leaf).count(), 8);
    }

    #[test]
    fn a_nic_sample_gets_rail_plane_and_far_end() {
        let t = example();
        let mut labels = Labels::from_pairs([("node", "node-02"), ("netdev", "eth5")]);
        t.enrich(&mut labels);
        assert_eq!(labels.get("rdma_dev"), Some("mlx5_5"));
        assert_eq!(labels.get("rail"), Some("5"));
        assert_eq!(labels.get("plane"), Some("1"));
        assert_eq!(labels.get("switch"), Some("leaf-rail5"));
        assert_eq!(labels.get("switch_port"), Some("Ethernet4"));
        assert_eq!(labels.get("gpu"), Some("5"));
        assert_eq!(labels.get("rack"), Some("rack-a"));
    }

    #[test]
    fn a_switch_port_sample_gets_its_far_end() {
        let t = example();
        let mut labels = Labels::from_pairs([("switch", "leaf-rail5"), ("port", "Ethernet4")]);
        t.enrich(&mut labels);
        assert_eq!(labels.get("peer_node"), Some("node-02"));
        assert_eq!(labels.get("peer_rdma_dev"), Some("mlx5_5"));
        assert_eq!(labels.get("rail"), Some("5"));
        let peer = t.peer(&labels).unwrap();
        assert_eq!(peer.get("node"), Some("node-02"));
        assert_eq!(t.node_at("leaf-rail5", "Ethernet4"), Some("node-02"));
        assert_eq!(t.node_at("leaf-rail5", "Ethernet99"), None, "no NIC on that port");
        let back = t.peer(&peer).unwrap();
        assert_eq!(back.get("switch"), Some("leaf-rail5"));
        assert_eq!(back.get("port"), Some("Ethernet4"));
    }

    #[test]
    fn sensor_labels_are_never_overwritten() {
        let t = example();
        let mut labels = Labels::from_pairs([("node", "node-01"), ("rdma_dev", "mlx5_0"), ("rail", "custom")]);
        t.enrich(&mut labels);
        assert_eq!(labels.get("rail"), Some("custom"));
    }

    #[test]
    fn a_dangling_switch_reference_is_rejected() {
        let text = r#"
[[node]]
name = "n1"
[[node.nic]]
rdma_dev = "mlx5_0"
netdev = "eth0"
rail = 0
plane = 0
switch = "nowhere"
switch_port = "Ethernet0"
"#;
        let err = Topology::parse(text, "inv.toml").unwrap_err().to_string();
        assert!(err.contains("switch \"nowhere\", which is not listed"), "{err}");
    }

    #[test]
    fn a_typo_in_a_field_names_line_and_column() {
        let text = "[[node]]\nname = \"n1\"\nrakc = \"r1\"\n";
        let err = Topology::parse(text, "inv.toml").unwrap_err().to_string();
        assert!(err.starts_with("inv.toml:3:1:"), "{err}");
        assert!(err.contains("rakc"), "{err}");
    }
}
