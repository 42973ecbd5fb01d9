//! A node's RDMA NICs and GPUs as sysfs shows them, under a root the caller chooses (`/` on a
//! node, a fake tree in tests).
//!
//! - `/sys/class/infiniband/<dev>/device` links to the NIC's PCI function; its `net/` names the
//!   netdev;
//! - `/sys/bus/pci/devices/<bdf>` links into `/sys/devices/pci<domain>:<bus>/…/<bdf>`: every
//!   PCIe bridge above the function, in order, which is what affinity is computed from;
//! - `numa_node` beside it, the fallback when the tree says nothing;
//! - GPUs without NVML: PCI functions of vendor 0x10de (NVIDIA) and class 0x0302xx (3D
//!   controller, the H100's) or 0x0300xx (VGA).
//!
//! Sysfs's own links are relative, so a fake tree built the same way resolves inside its root.

use std::path::{Path, PathBuf};

use crate::inventory::DiscoverError;

/// NVIDIA's PCI vendor id.
const NVIDIA: &str = "0x10de";

/// One PCI function and the PCIe path to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciFunction {
    /// Its address, `0000:03:00.0`.
    pub bdf: String,
    /// From the root complex (`pci0000:00`) down to its parent bridge, each by its name in
    /// `/sys/devices`.
    pub bridges: Vec<String>,
    /// Its NUMA node, when sysfs says (`-1` means none, read as `None`).
    pub numa_node: Option<u32>,
    /// The sysfs path it was read from (relative to the root, for the fragment's comments).
    pub source: String,
}

/// One RDMA device and its network interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaNic {
    /// `mlx5_0`.
    pub rdma_dev: String,
    /// `eth0`, `ens1f0np0`.
    pub netdev: String,
    /// Where the netdev was read (`/sys/class/infiniband/mlx5_0/device/net/eth0`).
    pub netdev_source: String,
    /// Its PCI function.
    pub pci: PciFunction,
}

/// A GPU found in sysfs, not numbered yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciGpu {
    /// Its PCI function.
    pub pci: PciFunction,
    /// Its class, as sysfs writes it (`0x030200`).
    pub class: String,
}

/// A sysfs tree under `root`.
#[derive(Debug, Clone)]
pub struct Sysfs {
    root: PathBuf,
}

impl Sysfs {
    /// The tree under `root` (`/` on a node).
    pub fn new(root: impl Into<PathBuf>) -> Sysfs {
        Sysfs { root: root.into() }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// Every RDMA device with its netdev and PCI function, sorted by device name.
    pub fn rdma_nics(&self) -> Result<Vec<RdmaNic>, DiscoverError> {
        let class = "/sys/class/infiniband";
        let mut out = Vec::new();
        for dev in list(&self.path(class))? {
            let device = format!("{class}/{dev}/device");
            let netdir = format!("{device}/net");
            // A function has one netdev on a ConnectX port; the first by name when there are more.
            let netdev = list(&self.path(&netdir))?.into_iter().next().ok_or_else(|| DiscoverError::Sysfs {
                path: self.path(&netdir),
                message: format!("RDMA device {dev} has no network interface (is it an InfiniBand port?)"),
            })?;
            let bdf = file_name(&canonical(&self.path(&device))?);
            out.push(RdmaNic {
                rdma_dev: dev,
                netdev_source: format!("{netdir}/{netdev}"),
                netdev,
                pci: self.pci_function(&bdf)?,
            });
        }
        Ok(out)
    }

    /// The PCI function `bdf` (`0000:03:00.0`, case as NVML writes it or not).
    pub fn pci_function(&self, bdf: &str) -> Result<PciFunction, DiscoverError> {
        let bdf = normalize_bdf(bdf);
        let source = format!("/sys/bus/pci/devices/{bdf}");
        let real = canonical(&self.path(&source))?;
        let devices = canonical(&self.path("/sys/devices"))?;
        let below = real.strip_prefix(&devices).map_err(|_| DiscoverError::Sysfs {
            path: real.clone(),
            message: "a PCI device outside /sys/devices".to_string(),
        })?;
        let mut chain: Vec<String> = below.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        chain.pop();
        let numa_node = std::fs::read_to_string(real.join("numa_node"))
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .and_then(|n| u32::try_from(n).ok());
        Ok(PciFunction { bdf, bridges: chain, numa_node, source })
    }

    /// NVIDIA GPUs by PCI class, sorted by address (the order NVML numbers them in).
    pub fn gpus(&self) -> Result<Vec<PciGpu>, DiscoverError> {
        let dir = "/sys/bus/pci/devices";
        let mut out = Vec::new();
        for bdf in list(&self.path(dir))? {
            let read = |f: &str| std::fs::read_to_string(self.path(&format!("{dir}/{bdf}/{f}"))).unwrap_or_default();
            let (vendor, class) = (read("vendor").trim().to_lowercase(), read("class").trim().to_lowercase());
            if vendor == NVIDIA && (class.starts_with("0x0302") || class.starts_with("0x0300")) {
                out.push(PciGpu { pci: self.pci_function(&bdf)?, class });
            }
        }
        Ok(out)
    }
}

/// `00000000:18:00.0` (NVML) or `0000:18:00.0` → `0000:18:00.0`, lower case.
pub fn normalize_bdf(bdf: &str) -> String {
    let bdf = bdf.trim().to_lowercase();
    match bdf.split_once(':') {
        Some((domain, rest)) if domain.len() > 4 => format!("{}:{rest}", &domain[domain.len() - 4..]),
        _ => bdf,
    }
}

/// The names in directory `dir`, sorted; none when it does not exist.
fn list(dir: &Path) -> Result<Vec<String>, DiscoverError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(DiscoverError::Sysfs { path: dir.to_path_buf(), message: e.to_string() }),
    };
    let mut names: Vec<String> =
        entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    Ok(names)
}

fn canonical(path: &Path) -> Result<PathBuf, DiscoverError> {
    std::fs::canonicalize(path).map_err(|e| DiscoverError::Sysfs { path: path.to_path_buf(), message: e.to_string() })
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::testing::FakeNode;

    #[test]
    fn a_nic_resolves_to_its_netdev_and_every_bridge_above_it() {
        let node = FakeNode::h100(2);
        let nics = Sysfs::new(node.root()).rdma_nics().unwrap();
        assert_eq!(nics.len(), 2);
        assert_eq!((nics[1].rdma_dev.as_str(), nics[1].netdev.as_str()), ("mlx5_1", "eth1"));
        assert_eq!(nics[1].pci.bdf, "0000:13:00.0");
        assert_eq!(nics[1].pci.bridges, ["pci0000:10", "0000:10:01.0", "0000:11:00.0", "0000:12:00.0"]);
        assert_eq!((nics[0].pci.numa_node, nics[1].pci.numa_node), (Some(0), Some(1)));
    }

    #[test]
    fn gpus_are_found_by_vendor_and_class_and_nothing_else() {
        let node = FakeNode::h100(2);
        let gpus = Sysfs::new(node.root()).gpus().unwrap();
        let bdfs: Vec<&str> = gpus.iter().map(|g| g.pci.bdf.as_str()).collect();
        assert_eq!(bdfs, ["0000:04:00.0", "0000:14:00.0"], "the NICs and bridges are not GPUs");
    }

    #[test]
    fn nvml_bus_ids_name_the_same_function() {
        assert_eq!(normalize_bdf("00000000:1A:00.0"), "0000:1a:00.0");
        assert_eq!(normalize_bdf("0000:1a:00.0"), "0000:1a:00.0");
    }
}
