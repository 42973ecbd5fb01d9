//! The inventory file's schema. Every field is documented here because this
//! is what operators write.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::access::{GnmiDefaults, PathStyleSetting, SwitchTls};

/// The whole inventory file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inventory {
    /// Free-form cluster name, shown in reports.
    #[serde(default)]
    pub cluster: Option<String>,
    /// How to reach every switch over gNMI, unless the switch says otherwise.
    #[serde(default)]
    pub gnmi: GnmiDefaults,
    /// Every switch that NICs are cabled to.
    #[serde(default)]
    pub switch: Vec<Switch>,
    /// Every GPU node.
    #[serde(default)]
    pub node: Vec<Node>,
}

/// The role of a switch in the fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchRole {
    /// A leaf (rail) switch; NICs are cabled to it.
    Leaf,
    /// A spine switch above the leaves.
    Spine,
}

impl SwitchRole {
    /// The role as written in the inventory.
    pub fn as_str(self) -> &'static str {
        match self {
            SwitchRole::Leaf => "leaf",
            SwitchRole::Spine => "spine",
        }
    }
}

/// A switch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Switch {
    /// Name, as used in the `switch` label and in gNMI targets.
    pub name: String,
    /// Leaf or spine.
    pub role: SwitchRole,
    /// The rail a leaf serves (rail-optimized fabrics: one leaf per rail).
    #[serde(default)]
    pub rail: Option<u32>,
    /// The plane the switch belongs to.
    #[serde(default)]
    pub plane: Option<u32>,
    /// gNMI address (`host:port`), used by the switch sensors and actuators.
    #[serde(default)]
    pub address: Option<String>,
    /// How it names its SONiC databases; `[gnmi] path_style` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_style: Option<PathStyleSetting>,
    /// The namespace element of the `sonic-db-origin` style; `[gnmi] namespace` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its credentials file (mode 0600); `[gnmi] credentials_file` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_file: Option<PathBuf>,
    /// Its TLS; `[gnmi.tls]` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<SwitchTls>,
}

impl Switch {
    /// A switch of `role` named `name`, with nothing else known about it.
    pub fn new(name: impl Into<String>, role: SwitchRole) -> Switch {
        Switch {
            name: name.into(),
            role,
            rail: None,
            plane: None,
            address: None,
            path_style: None,
            namespace: None,
            credentials_file: None,
            tls: None,
        }
    }
}

/// A GPU node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// Host name, as used in the `node` label and by the scheduler.
    pub name: String,
    /// Rack.
    #[serde(default)]
    pub rack: Option<String>,
    /// Pod (a group of racks under one set of spines).
    #[serde(default)]
    pub pod: Option<String>,
    /// Zone (a failure domain: power, cooling).
    #[serde(default)]
    pub zone: Option<String>,
    /// The node's GPUs.
    #[serde(default)]
    pub gpu: Vec<Gpu>,
    /// The node's RDMA NIC ports.
    #[serde(default)]
    pub nic: Vec<Nic>,
}

/// A GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// NVML index.
    pub index: u32,
    /// PCI bus id, as NVML reports it (`0000:18:00.0`).
    #[serde(default)]
    pub pci_bus_id: Option<String>,
}

/// One RDMA NIC port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nic {
    /// RDMA device name (`mlx5_0`).
    pub rdma_dev: String,
    /// Network interface name (`eth0`, `ens1f0np0`).
    pub netdev: String,
    /// RDMA port number on the device.
    #[serde(default = "default_port")]
    pub port: u32,
    /// Index of the nearest GPU (same PCIe switch).
    #[serde(default)]
    pub gpu: Option<u32>,
    /// Rail number.
    pub rail: u32,
    /// Plane number.
    pub plane: u32,
    /// The switch at the far end of the cable.
    #[serde(default)]
    pub switch: Option<String>,
    /// The switch port at the far end of the cable (`Ethernet0`).
    #[serde(default)]
    pub switch_port: Option<String>,
}

fn default_port() -> u32 {
    1
}
