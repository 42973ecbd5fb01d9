//! `rocemend inventory discover`: this node as an inventory fragment — one `[[node]]` with its
//! GPUs and NICs, and a `[[switch]]` per leaf its NICs' LLDP neighbours name.
//!
//! Each NIC's fact comes from one place: the device and netdev from sysfs, its nearest GPU
//! from the PCIe tree ([`affinity`]), its leaf and port from LLDP
//! ([`lldp`], or raw frames: [`lldp_raw`]), its rail and plane from the leaf's name ([`naming`](crate::inventory::naming)).
//! A NIC LLDP says nothing about has no rail: it is left out and named in the warnings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use engine::topology::{Gpu, Inventory, Nic, Node, Switch, SwitchRole};

use crate::inventory::affinity::{self, Affinity};
use crate::inventory::gpus::{self, FoundGpu, GpuSource};
use crate::inventory::lldp::{self, Neighbor, Via};
use crate::inventory::lldp_raw;
use crate::inventory::naming::{Naming, Read};
use crate::inventory::render::Notes;
use crate::inventory::sysfs::{RdmaNic, Sysfs};
use crate::inventory::DiscoverError;

/// Where the LLDP neighbours come from.
#[derive(Debug, Clone)]
pub enum LldpSource {
    /// Ask lldpd: `program [-u socket] -f json show neighbors`.
    Lldpcli {
        /// `lldpcli`.
        program: String,
        /// lldpd's control socket, when not the default.
        socket: Option<PathBuf>,
    },
    /// A saved output of that command.
    File(PathBuf),
    /// Listen for raw LLDP frames on each NIC's netdev for up to `wait` (needs CAP_NET_RAW).
    Raw {
        /// How long to listen at most.
        wait: Duration,
    },
    /// lldpd as [`Lldpcli`](Self::Lldpcli) when it answers, else [`Raw`](Self::Raw).
    Auto {
        /// `lldpcli`.
        program: String,
        /// lldpd's control socket, when not the default.
        socket: Option<PathBuf>,
        /// How long to listen for raw frames.
        wait: Duration,
    },
}

/// What to discover, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The node's name (`[[node]] name`).
    pub node: String,
    /// The root sysfs is under.
    pub sysfs_root: PathBuf,
    /// Where GPUs are read from.
    pub gpus: GpuSource,
    /// Where LLDP neighbours are read from.
    pub lldp: LldpSource,
    /// How rails and planes are read from leaf names.
    pub naming: Naming,
}

/// The node as found: the fragment, the notes beside it, and what could not be placed.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The fragment.
    pub inventory: Inventory,
    /// Where each fact came from.
    pub notes: Notes,
    /// The header's lines (where GPUs and neighbours came from).
    pub header: Vec<String>,
    /// NICs left out, and why.
    pub warnings: Vec<String>,
}

impl Discovery {
    /// The fragment as TOML with its comments.
    pub fn to_toml(&self) -> String {
        crate::inventory::render::render(&self.inventory, &self.notes, &self.header)
    }
}

/// Discovers this node.
pub fn discover(options: &Options) -> Result<Discovery, DiscoverError> {
    let sysfs = Sysfs::new(&options.sysfs_root);
    let (found, gpu_line) = gpus::find(&options.gpus, &sysfs, &options.sysfs_root)?;
    let nics = sysfs.rdma_nics()?;
    let netdevs: Vec<String> = nics.iter().map(|n| n.netdev.clone()).collect();
    let (neighbors, lldp_line) = neighbors(&options.lldp, &netdevs)?;
    let by_local: BTreeMap<&str, &Neighbor> = neighbors.iter().map(|n| (n.local.as_str(), n)).collect();
    let mut b = Builder::new(&options.node);
    for g in &found {
        b.gpu(g);
    }
    let gpu_functions: Vec<(u32, &_)> = found.iter().map(|g| (g.index, &g.pci)).collect();
    if nics.is_empty() {
        let root = options.sysfs_root.join("sys/class/infiniband");
        b.warnings.push(format!("no RDMA device in {}: is the NIC's driver (mlx5_ib) loaded?", root.display()));
    }
    for rdma in nics {
        let (dev, net) = (&rdma.rdma_dev, &rdma.netdev);
        let Some(neighbor) = by_local.get(net.as_str()) else {
            let why = format!("LLDP sees no neighbour on {net}, so its leaf, port and rail are unknown");
            b.warnings.push(format!("NIC {dev} ({net}): {why}; left out"));
            continue;
        };
        let Some(leaf) = neighbor.sys_name.clone() else {
            b.warnings.push(format!("NIC {dev} ({net}): its LLDP neighbour sends no system name; left out"));
            continue;
        };
        let rail = options.naming.rail(&leaf)?;
        let plane = options.naming.plane(&leaf, rail.value)?;
        let affinity = affinity::nearest(&rdma.pci, &gpu_functions);
        b.nic(rdma, neighbor, Leaf { name: leaf, rail, plane }, &affinity);
    }
    let header = vec![
        format!("Node {}, discovered by `rocemend inventory discover`.", options.node),
        format!("NICs from sysfs under {}; {gpu_line}; {lldp_line}.", options.sysfs_root.display()),
    ];
    let inventory =
        Inventory { switch: b.switches.into_values().collect(), node: vec![b.node], ..Inventory::default() };
    Ok(Discovery { inventory, notes: b.notes, header, warnings: b.warnings })
}

/// A NIC's leaf, with its rail and plane as read from its name.
struct Leaf {
    name: String,
    rail: Read,
    plane: Read,
}

/// The fragment as it is put together: each fact with its note.
struct Builder {
    node: Node,
    notes: Notes,
    switches: BTreeMap<String, Switch>,
    warnings: Vec<String>,
}

impl Builder {
    fn new(name: &str) -> Builder {
        let mut notes = Notes::default();
        notes.set(Notes::node(name), "name", "--node");
        let node = Node { name: name.to_string(), rack: None, pod: None, zone: None, gpu: Vec::new(), nic: Vec::new() };
        Builder { node, notes, switches: BTreeMap::new(), warnings: Vec::new() }
    }

    fn gpu(&mut self, g: &FoundGpu) {
        let el = Notes::gpu(&self.node.name, g.index);
        self.notes.set(el.clone(), "index", g.how.clone());
        self.notes.set(el, "pci_bus_id", g.pci.source.clone());
        self.node.gpu.push(Gpu { index: g.index, pci_bus_id: Some(g.pci.bdf.clone()) });
    }

    fn nic(&mut self, rdma: RdmaNic, neighbor: &Neighbor, leaf: Leaf, affinity: &Affinity) {
        let el = Notes::nic(&self.node.name, &rdma.rdma_dev);
        let seen = match neighbor.via {
            Via::Lldpd => format!("lldpcli: neighbour of {}", rdma.netdev),
            Via::Frame => format!("raw LLDP frame on {}", rdma.netdev),
        };
        let sys_name = match neighbor.via {
            Via::Lldpd => "system name",
            Via::Frame => "system name TLV",
        };
        let notes = &mut self.notes;
        notes.set(el.clone(), "rdma_dev", format!("/sys/class/infiniband/{}", rdma.rdma_dev));
        notes.set(el.clone(), "netdev", rdma.netdev_source.clone());
        notes.set(el.clone(), "port", "RDMA port 1 of the function");
        notes.set(el.clone(), "gpu", affinity.reason());
        notes.set(el.clone(), "rail", leaf.rail.how.clone());
        notes.set(el.clone(), "plane", leaf.plane.how.clone());
        notes.set(el.clone(), "switch", format!("{seen}: {sys_name}"));
        notes.set(el, "switch_port", format!("{seen}: {}", neighbor.port_field()));
        // One name, one pattern: a leaf's rail and plane are the same from every NIC.
        self.switches.entry(leaf.name.clone()).or_insert_with(|| {
            let el = Notes::switch(&leaf.name);
            notes.set(el.clone(), "name", seen);
            notes.set(el.clone(), "role", "a NIC's LLDP neighbour");
            notes.set(el.clone(), "rail", leaf.rail.how.clone());
            notes.set(el, "plane", leaf.plane.how.clone());
            let role = Switch::new(leaf.name.clone(), SwitchRole::Leaf);
            Switch { rail: Some(leaf.rail.value), plane: Some(leaf.plane.value), ..role }
        });
        self.node.nic.push(Nic {
            rdma_dev: rdma.rdma_dev,
            netdev: rdma.netdev,
            port: 1,
            gpu: affinity.gpu(),
            rail: leaf.rail.value,
            plane: leaf.plane.value,
            switch: Some(leaf.name),
            switch_port: Some(neighbor.port_name().to_string()),
        });
    }
}

fn neighbors(source: &LldpSource, netdevs: &[String]) -> Result<(Vec<Neighbor>, String), DiscoverError> {
    match source {
        LldpSource::Lldpcli { program, socket } => {
            let found = lldp::query(program, socket.as_deref())?;
            Ok((found, lldpcli_line(program, socket.as_deref())))
        }
        LldpSource::File(path) => {
            let text = read(path)?;
            Ok((lldp::parse(&text)?, format!("leaves from lldpcli's JSON in {}", path.display())))
        }
        LldpSource::Raw { wait } => raw(netdevs, *wait, "--lldp raw"),
        LldpSource::Auto { program, socket, wait } => match lldp::ask(program, socket.as_deref()) {
            Ok(text) => Ok((lldp::parse(&text)?, lldpcli_line(program, socket.as_deref()))),
            Err(why) => raw(netdevs, *wait, &format!("lldpd not reachable: {why}")).map_err(|e| match e {
                DiscoverError::Lldp(raw) => DiscoverError::Lldp(format!("{why}; and without lldpd, {raw}")),
                other => other,
            }),
        },
    }
}

fn lldpcli_line(program: &str, socket: Option<&Path>) -> String {
    let via = socket.map(|s| format!(" -u {}", s.display())).unwrap_or_default();
    format!("leaves from `{program}{via} -f json show neighbors`")
}

/// Neighbours heard in raw frames; the header line says why, how long, and what was skipped.
fn raw(netdevs: &[String], wait: Duration, why: &str) -> Result<(Vec<Neighbor>, String), DiscoverError> {
    let heard = lldp_raw::listen(netdevs, wait)?;
    let mut line = format!(
        "leaves from raw LLDP frames ({why}) on {}, heard within {:.1} s of at most {} s",
        netdevs.join(", "),
        heard.waited.as_secs_f64(),
        wait.as_secs()
    );
    if let Some(last) = &heard.last_skip {
        line.push_str(&format!("; {} malformed frame(s) skipped, the last {last}", heard.skipped));
    }
    Ok((heard.neighbors, line))
}

fn read(path: &Path) -> Result<String, DiscoverError> {
    std::fs::read_to_string(path).map_err(|e| DiscoverError::Read { path: path.to_path_buf(), message: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::naming::DEFAULT_RAIL_PATTERN;
    use crate::inventory::testing::FakeNode;

    fn options(node: &FakeNode, lldp: &Path) -> Options {
        Options {
            node: "gpu-07".into(),
            sysfs_root: node.root().to_path_buf(),
            gpus: GpuSource::Auto,
            lldp: LldpSource::File(lldp.to_path_buf()),
            naming: Naming::new(DEFAULT_RAIL_PATTERN, None, Some("0=0,1=1")).unwrap(),
        }
    }

    #[test]
    fn a_node_becomes_a_fragment_the_daemon_loads_with_every_fact_sourced() {
        let node = FakeNode::h100(3);
        let lldp = node.root().join("lldp.json");
        std::fs::write(
            &lldp,
            r#"{"lldp": {"interface": [
              {"eth0": {"chassis": {"leaf-rail0": {}}, "port": {"id": {"type": "ifname", "value": "Ethernet28"}}}},
              {"eth1": {"chassis": {"leaf-rail1": {}}, "port": {"id": {"type": "ifname", "value": "Ethernet28"}}}}]}}"#,
        )
        .unwrap();
        let d = discover(&options(&node, &lldp)).unwrap();
        let text = d.to_toml();
        let topology = engine::Topology::parse(&text, "fragment.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        let n = &topology.inventory().node[0];
        assert_eq!(n.gpu.len(), 3);
        let nics: Vec<_> =
            n.nic.iter().map(|c| (c.rdma_dev.as_str(), c.gpu, c.rail, c.plane, c.switch_port.as_deref())).collect();
        assert_eq!(
            nics,
            [("mlx5_0", Some(0), 0, 0, Some("Ethernet28")), ("mlx5_1", Some(1), 1, 1, Some("Ethernet28"))]
        );
        assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
        assert!(d.warnings[0].contains("mlx5_2 (eth2)"), "{:?}", d.warnings);
        assert!(text.contains("gpu = 1  # deepest common PCIe bridge 0000:11:00.0"), "{text}");
        assert!(text.contains("# sysfs: vendor 0x10de class 0x030200"), "{text}");
        assert!(text.contains("rail = 1  # rail pattern"), "{text}");
        assert!(text.contains("GPUs from sysfs: NVML not consulted"), "{text}");
    }

    #[test]
    fn a_node_without_rdma_devices_is_a_warning_not_an_empty_success() {
        let empty = tempfile::tempdir().unwrap();
        let lldp = empty.path().join("lldp.json");
        std::fs::write(&lldp, r#"{"lldp": {}}"#).unwrap();
        let mut o = options(&FakeNode::h100(0), &lldp);
        o.sysfs_root = empty.path().to_path_buf();
        let d = discover(&o).unwrap();
        assert!(d.warnings.iter().any(|w| w.contains("no RDMA device")), "{:?}", d.warnings);
    }
}
