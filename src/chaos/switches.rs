//! The simulated fabric's leaves on the network: one gNMI server per leaf,
//! each serving the leaf's own model, so the playbook's real switch
//! actuators (`pfcwd`, `ecn`, `rail`) reach the fabric the way they reach
//! SONiC — a gNMI Get of what is there, one SetRequest, a read-back — and
//! what they write is what the fabric's physics reads at the next step.
//!
//! The servers do not drive the models: the fabric's virtual clock does.
//! They only answer, on loopback ports the OS picks, for one run.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use chaos::fabric::Fabric;
use chaos::switch::{self, RunningSwitch};
use engine::playbook::Playbook;

/// The leaves of one fabric, serving gNMI.
pub struct LeafServers {
    servers: Vec<RunningSwitch>,
    /// Leaf name → gNMI address.
    pub addresses: BTreeMap<String, String>,
}

impl LeafServers {
    /// Serves every leaf of `fabric`.
    pub async fn start(fabric: &Fabric) -> anyhow::Result<LeafServers> {
        let mut servers = Vec::with_capacity(fabric.leaves.len());
        let mut addresses = BTreeMap::new();
        for (name, leaf) in &fabric.leaves {
            let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
            let server = switch::spawn(name, addr, leaf.model.clone(), switch::Options::default())
                .await
                .map_err(|e| anyhow::anyhow!("serving simulated leaf {name}: {e}"))?;
            addresses.insert(name.clone(), server.addr.to_string());
            servers.push(server);
        }
        Ok(LeafServers { servers, addresses })
    }

    /// Stops the servers.
    pub async fn stop(self) {
        for server in self.servers {
            if let Err(e) = server.stop().await {
                tracing::warn!(message = "Stopping a simulated leaf failed.", error = %e);
            }
        }
    }
}

/// Points every `[gnmi]` table of `playbook`'s actuators at `addresses`
/// (switch name → `host:port`), replacing the switches it names.
pub fn point_gnmi(playbook: &mut Playbook, addresses: &BTreeMap<String, String>) {
    let switches: toml::Table = addresses.iter().map(|(k, v)| (k.clone(), toml::Value::String(v.clone()))).collect();
    for entry in &mut playbook.actuator {
        if let Some(toml::Value::Table(gnmi)) = entry.settings.get_mut("gnmi") {
            gnmi.insert("switches".into(), toml::Value::Table(switches.clone()));
        }
    }
}

/// Whether the actuator `entry` acts on switches over gNMI (it has a
/// `[gnmi]` table): those run for real against the served leaves.
pub fn speaks_gnmi(entry: &engine::playbook::ActuatorEntry) -> bool {
    entry.settings.get("gnmi").is_some_and(toml::Value::is_table)
}
