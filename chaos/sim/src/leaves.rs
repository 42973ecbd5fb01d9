//! Simulated leaves on the network: one gNMI server per leaf, so a
//! playbook's real switch actuators (`pfcwd`, `ecn`, `rail`) reach them the
//! way they reach SONiC — a gNMI Get of what is there, one SetRequest, a
//! read-back.
//!
//! Two users start them: the chaos runner serves the leaves of a
//! [`Fabric`], whose virtual clock drives the models (what an actuator
//! writes is what the fabric's physics reads at the next step); `rocemend
//! demo` serves a fresh switch per leaf of the inventory. Both then give
//! the playbook's switch actuators the inventory with the servers'
//! addresses ([`LeafServers::inventory`]): the playbook names switches, the
//! inventory says where they are. The servers only answer, on loopback
//! ports the OS picks.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use engine::playbook::ActuatorEntry;
use engine::topology::{GnmiDefaults, Switch, SwitchRole};
use engine::Topology;

use crate::fabric::Fabric;
use crate::switch::{self, Model, RunningSwitch, SwitchError};

/// Ports per fresh simulated leaf: a 32-port leaf, as in the example
/// inventory's fabric.
pub const FRESH_LEAF_PORTS: usize = 32;

/// Leaves serving gNMI, by name.
pub struct LeafServers {
    servers: Vec<RunningSwitch>,
    /// Leaf name → gNMI address (`host:port`).
    pub addresses: BTreeMap<String, String>,
}

impl LeafServers {
    /// Serves every leaf of `fabric`, each over the leaf's own model.
    pub async fn serve(fabric: &Fabric) -> Result<LeafServers, SwitchError> {
        Self::spawn(fabric.leaves.iter().map(|(name, leaf)| (name.clone(), leaf.model.clone()))).await
    }

    /// Serves a fresh switch of [`FRESH_LEAF_PORTS`] ports for every leaf of
    /// `topology`'s inventory.
    pub async fn fresh(topology: &Topology) -> Result<LeafServers, SwitchError> {
        let leaves = topology.inventory().switch.iter().filter(|s| s.role == SwitchRole::Leaf);
        Self::spawn(leaves.map(|s| (s.name.clone(), Model::new(FRESH_LEAF_PORTS)))).await
    }

    async fn spawn(leaves: impl Iterator<Item = (String, Model)>) -> Result<LeafServers, SwitchError> {
        let mut servers = Vec::new();
        let mut addresses = BTreeMap::new();
        for (name, model) in leaves {
            let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
            let server = switch::spawn(&name, addr, model, switch::Options::default()).await?;
            addresses.insert(name, server.addr.to_string());
            servers.push(server);
        }
        Ok(LeafServers { servers, addresses })
    }

    /// `topology` with these leaves where its switches are: each served
    /// leaf's address, reached without TLS or login in the default path
    /// style, as the simulated switches serve; a leaf the inventory does not
    /// list is added. The inventory the switch actuators find the leaves in.
    pub fn inventory(&self, topology: &Topology) -> Topology {
        let mut inventory = topology.inventory().clone();
        inventory.gnmi = GnmiDefaults::default();
        for (name, address) in &self.addresses {
            let served = Switch { address: Some(address.clone()), ..Switch::new(name.clone(), SwitchRole::Leaf) };
            match inventory.switch.iter_mut().find(|s| &s.name == name) {
                Some(listed) => {
                    *listed = Switch { role: listed.role, rail: listed.rail, plane: listed.plane, ..served }
                }
                None => inventory.switch.push(served),
            }
        }
        Topology::from_inventory(inventory)
            .expect("a valid inventory stays valid when only its switches' access changes")
    }

    /// Stops the servers and waits until they have.
    pub async fn stop(self) {
        for server in self.servers {
            let name = server.name.clone();
            if let Err(e) = server.stop().await {
                tracing::warn!(message = "Stopping a simulated leaf failed.", leaf = %name, error = %e);
            }
        }
    }
}

/// Whether the actuator `entry` acts on switches over gNMI (it has a
/// `[gnmi]` table): those run for real against served leaves.
pub fn speaks_gnmi(entry: &ActuatorEntry) -> bool {
    entry.settings.get("gnmi").is_some_and(toml::Value::is_table)
}
