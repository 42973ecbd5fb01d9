//! The inventory read from the cluster instead of written by hand: what each node has and what
//! its cables reach (`discover`), the nodes joined with the switches' own view (`merge`), and
//! the cabling faults of the result (`check`). The binary's `rocemend inventory` verbs call
//! these; the file format is the daemon's own (`engine::topology`, docs/inventory.md,
//! "Discovering the inventory").
//!
//! # Brief overview
//!
//! - [`sysfs`]: a node's RDMA devices, their netdevs and the PCIe bridges above each
//!   function; GPUs by PCI class when NVML is absent ([`sysfs::Sysfs`], under any root);
//! - [`gpus`]: GPUs and their bus ids from NVML, else sysfs ([`gpus::GpuSource`]);
//! - [`affinity`]: a NIC's nearest GPU, by the deepest common PCIe bridge, else the NUMA node;
//! - [`lldp`]: a node's LLDP neighbours from lldpd's `lldpcli -f json show neighbors`;
//! - [`lldp_raw`]: … or, without lldpd, heard in raw LLDP frames on each NIC (AF_PACKET);
//! - [`lldp_frame`]: one LLDP frame's TLVs (IEEE 802.1AB);
//! - [`naming`]: a leaf's rail and plane from its name ([`naming::Naming`]);
//! - [`discover`]: the node's fragment ([`discover::discover`]);
//! - [`render`]: an inventory as TOML with a comment beside each fact saying where it came from;
//! - [`switch_view`]: a SONiC switch's APPL_DB `LLDP_ENTRY_TABLE`, from its Redis, its gNMI or a dump;
//! - [`merge`]: fragments into one inventory, compared with the switches' tables;
//! - [`faults`]: GPUs on another rail than the same GPU of the other nodes, LLDP disagreements;
//! - [`audit`]: every fault of an inventory file, placed at its line and column;
//! - [`testing`]: a fake sysfs tree shaped like an H100 node with ConnectX-7 NICs.
//!
//! ```
//! use ops::inventory::naming::{Naming, DEFAULT_RAIL_PATTERN};
//!
//! let naming = Naming::new(DEFAULT_RAIL_PATTERN, None, Some("0-3=0,4-7=1")).unwrap();
//! let rail = naming.rail("leaf-rail5").unwrap();
//! assert_eq!((rail.value, naming.plane("leaf-rail5", rail.value).unwrap().value), (5, 1));
//! ```

use std::path::PathBuf;

pub mod affinity;
pub mod audit;
pub mod discover;
pub mod faults;
pub mod gpus;
pub mod lldp;
pub mod lldp_frame;
pub mod lldp_raw;
pub mod merge;
pub mod naming;
pub mod render;
pub mod switch_view;
pub mod sysfs;
pub mod testing;

/// Discovery, merging or checking could not proceed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoverError {
    /// Sysfs could not be read where it had to be.
    #[error("{}: {message}", path.display())]
    Sysfs {
        /// The path.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A file could not be read or parsed.
    #[error("{}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// NVML was asked for and could not answer.
    #[error("NVML: {0}")]
    Nvml(String),
    /// lldpd could not be asked, or answered in an unknown shape.
    #[error("LLDP: {0}")]
    Lldp(String),
    /// A rail or plane pattern is malformed, or a leaf's name does not match it.
    #[error("{0}")]
    Pattern(String),
    /// A switch's Redis could not be read.
    #[error("switch {switch} (redis {address}): {message}")]
    Redis {
        /// The switch.
        switch: String,
        /// `HOST:PORT`.
        address: String,
        /// What went wrong.
        message: String,
    },
    /// A switch's gNMI could not be read.
    #[error("switch {switch} (gnmi {address}): {message}")]
    Gnmi {
        /// The switch.
        switch: String,
        /// `HOST:PORT`.
        address: String,
        /// What went wrong.
        message: String,
    },
    /// Fragments that cannot be merged.
    #[error("{0}")]
    Merge(String),
    /// An inventory that cannot be checked (not TOML, not the schema).
    #[error("{0}")]
    Unusable(String),
}
