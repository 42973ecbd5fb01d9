//! An inventory written back as the inventory's own TOML, each fact with a comment saying
//! where it came from (a sysfs path, NVML, lldpcli, the rail pattern, a fragment). The
//! schema's own serializer cannot put a comment beside a value, hence this writer; a test
//! reads every written file back with the schema.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use engine::topology::{Inventory, Nic, Switch};

/// Where each fact came from: (element, field) → words. Elements are named by [`Notes::switch`],
/// [`Notes::node`], [`Notes::gpu`] and [`Notes::nic`].
#[derive(Debug, Clone, Default)]
pub struct Notes(BTreeMap<(String, &'static str), String>);

impl Notes {
    /// The element of switch `name`.
    pub fn switch(name: &str) -> String {
        format!("switch {name}")
    }
    /// The element of node `name`.
    pub fn node(name: &str) -> String {
        format!("node {name}")
    }
    /// The element of GPU `index` of `node`.
    pub fn gpu(node: &str, index: u32) -> String {
        format!("node {node} gpu {index}")
    }
    /// The element of NIC `rdma_dev` of `node`.
    pub fn nic(node: &str, rdma_dev: &str) -> String {
        format!("node {node} nic {rdma_dev}")
    }

    /// Says where `field` of `element` came from.
    pub fn set(&mut self, element: String, field: &'static str, note: impl Into<String>) {
        self.0.insert((element, field), note.into());
    }

    fn get(&self, element: &str, field: &'static str) -> Option<&str> {
        self.0.get(&(element.to_string(), field)).map(String::as_str)
    }

    /// Every note of `from`, kept (merging fragments).
    pub fn extend(&mut self, from: Notes) {
        self.0.extend(from.0);
    }
}

/// `inventory` as TOML, with `header` (comment lines) first and the notes beside the values.
pub fn render(inventory: &Inventory, notes: &Notes, header: &[String]) -> String {
    let mut out = String::new();
    for line in header {
        let _ = writeln!(out, "# {line}");
    }
    if let Some(cluster) = &inventory.cluster {
        let _ = writeln!(out, "\ncluster = {}", quote(cluster));
    }
    for s in &inventory.switch {
        switch(&mut out, s, notes);
    }
    for node in &inventory.node {
        let el = Notes::node(&node.name);
        let _ = writeln!(out, "\n[[node]]");
        line(&mut out, "name", quote(&node.name), notes.get(&el, "name"));
        for (k, v) in [("rack", &node.rack), ("pod", &node.pod), ("zone", &node.zone)] {
            if let Some(v) = v {
                line(&mut out, k, quote(v), notes.get(&el, "placement"));
            }
        }
        for gpu in &node.gpu {
            let el = Notes::gpu(&node.name, gpu.index);
            let _ = writeln!(out, "\n[[node.gpu]]");
            line(&mut out, "index", gpu.index.to_string(), notes.get(&el, "index"));
            if let Some(bus) = &gpu.pci_bus_id {
                line(&mut out, "pci_bus_id", quote(bus), notes.get(&el, "pci_bus_id"));
            }
        }
        for n in &node.nic {
            nic(&mut out, &node.name, n, notes);
        }
    }
    out
}

fn switch(out: &mut String, s: &Switch, notes: &Notes) {
    let el = Notes::switch(&s.name);
    let _ = writeln!(out, "\n[[switch]]");
    line(out, "name", quote(&s.name), notes.get(&el, "name"));
    line(out, "role", quote(s.role.as_str()), notes.get(&el, "role"));
    if let Some(rail) = s.rail {
        line(out, "rail", rail.to_string(), notes.get(&el, "rail"));
    }
    if let Some(plane) = s.plane {
        line(out, "plane", plane.to_string(), notes.get(&el, "plane"));
    }
    if let Some(address) = &s.address {
        line(out, "address", quote(address), notes.get(&el, "address"));
    }
}

fn nic(out: &mut String, node: &str, n: &Nic, notes: &Notes) {
    let el = Notes::nic(node, &n.rdma_dev);
    let _ = writeln!(out, "\n[[node.nic]]");
    line(out, "rdma_dev", quote(&n.rdma_dev), notes.get(&el, "rdma_dev"));
    line(out, "netdev", quote(&n.netdev), notes.get(&el, "netdev"));
    line(out, "port", n.port.to_string(), notes.get(&el, "port"));
    match n.gpu {
        Some(gpu) => line(out, "gpu", gpu.to_string(), notes.get(&el, "gpu")),
        None => {
            if let Some(why) = notes.get(&el, "gpu") {
                let _ = writeln!(out, "# gpu: not written: {why}");
            }
        }
    }
    line(out, "rail", n.rail.to_string(), notes.get(&el, "rail"));
    line(out, "plane", n.plane.to_string(), notes.get(&el, "plane"));
    if let (Some(sw), Some(port)) = (&n.switch, &n.switch_port) {
        line(out, "switch", quote(sw), notes.get(&el, "switch"));
        line(out, "switch_port", quote(port), notes.get(&el, "switch_port"));
    }
}

fn line(out: &mut String, key: &str, value: String, note: Option<&str>) {
    match note {
        // One line: a note never holds a newline that would end the comment early.
        Some(note) => {
            let _ = writeln!(out, "{key} = {value}  # {}", note.replace('\n', " "));
        }
        None => {
            let _ = writeln!(out, "{key} = {value}");
        }
    }
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}
