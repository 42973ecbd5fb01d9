//! `rocemend inventory merge`: node fragments joined into one inventory, with the switches'
//! own LLDP tables compared against what the nodes saw.
//!
//! Nodes are taken as their fragments write them (a node in two fragments is refused: which
//! one is right is not for the merge to guess). A leaf several nodes saw is written once; if
//! two fragments give it different rails or planes (different patterns on different nodes),
//! the first is kept and the other is a fault.

use std::collections::BTreeMap;
use std::path::PathBuf;

use engine::config::KeyPath;
use engine::topology::{Inventory, Switch};

use crate::inventory::faults::{self, Fault};
use crate::inventory::render::Notes;
use crate::inventory::switch_view::SwitchView;
use crate::inventory::DiscoverError;

/// The merged inventory, where each part came from, and what disagrees.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The inventory.
    pub inventory: Inventory,
    /// Where each node and switch came from.
    pub notes: Notes,
    /// Fragments that disagree about a leaf, and LLDP disagreements with the switches.
    pub faults: Vec<Fault>,
}

impl Merged {
    /// The inventory as TOML with its comments.
    pub fn to_toml(&self, header: &[String]) -> String {
        crate::inventory::render::render(&self.inventory, &self.notes, header)
    }
}

/// Merges `fragments` (path, parsed) and compares them with `views`.
pub fn merge(fragments: &[(PathBuf, Inventory)], views: &[SwitchView]) -> Result<Merged, DiscoverError> {
    let mut out = Inventory::default();
    let mut notes = Notes::default();
    let mut faults = Vec::new();
    let mut node_from: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut switch_at: BTreeMap<String, (usize, PathBuf)> = BTreeMap::new();
    for (path, fragment) in fragments {
        for node in &fragment.node {
            if let Some(first) = node_from.insert(node.name.clone(), path.clone()) {
                return Err(DiscoverError::Merge(format!(
                    "node {:?} is in {} and in {}: discover each node once",
                    node.name,
                    first.display(),
                    path.display()
                )));
            }
            notes.set(Notes::node(&node.name), "name", format!("fragment {}", path.display()));
            out.node.push(node.clone());
        }
        for sw in &fragment.switch {
            match switch_at.get(&sw.name) {
                None => {
                    switch_at.insert(sw.name.clone(), (out.switch.len(), path.clone()));
                    notes.set(Notes::switch(&sw.name), "name", format!("first seen in {}", path.display()));
                    out.switch.push(sw.clone());
                }
                Some((i, first)) => {
                    if let Some(message) = disagree(&out.switch[*i], sw, first, path) {
                        faults.push(Fault { at: KeyPath::default().key("switch").index(*i), message });
                    }
                }
            }
        }
    }
    faults.extend(faults::lldp(&out, views));
    Ok(Merged { inventory: out, notes, faults })
}

fn disagree(kept: &Switch, other: &Switch, first: &std::path::Path, path: &std::path::Path) -> Option<String> {
    if (kept.role, kept.rail, kept.plane) == (other.role, other.rail, other.plane) {
        return None;
    }
    let show = |s: &Switch| format!("{} rail {:?} plane {:?}", s.role.as_str(), s.rail, s.plane);
    Some(format!(
        "switch {:?} is {} in {} but {} in {}: the first is kept",
        kept.name,
        show(kept),
        first.display(),
        show(other),
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragment(node: &str, leaf_rail: u32) -> Inventory {
        toml::from_str(&format!(
            "[[switch]]\nname = \"leaf-a\"\nrole = \"leaf\"\nrail = {leaf_rail}\nplane = 0\n\
             [[node]]\nname = \"{node}\"\n[[node.nic]]\nrdma_dev = \"mlx5_0\"\nnetdev = \"eth0\"\nrail = {leaf_rail}\nplane = 0\n\
             switch = \"leaf-a\"\nswitch_port = \"Ethernet{leaf_rail}\"\n"
        ))
        .unwrap()
    }

    #[test]
    fn a_leaf_seen_twice_is_written_once_and_a_rail_two_fragments_disagree_on_is_a_fault() {
        let same = merge(&[("a.toml".into(), fragment("n1", 0)), ("b.toml".into(), fragment("n2", 0))], &[]).unwrap();
        assert_eq!((same.inventory.switch.len(), same.inventory.node.len(), same.faults.len()), (1, 2, 0));
        let differ = merge(&[("a.toml".into(), fragment("n1", 0)), ("b.toml".into(), fragment("n2", 4))], &[]).unwrap();
        assert_eq!(differ.faults.len(), 1, "{:?}", differ.faults);
        let message = &differ.faults[0].message;
        assert!(message.contains("leaf rail Some(0) plane Some(0) in a.toml but leaf rail Some(4)"), "{message}");
        assert_eq!(differ.inventory.switch[0].rail, Some(0), "the first is kept");
    }

    #[test]
    fn a_node_in_two_fragments_is_refused_naming_both() {
        let err =
            merge(&[("a.toml".into(), fragment("n1", 0)), ("b.toml".into(), fragment("n1", 0))], &[]).unwrap_err();
        assert_eq!(err.to_string(), "node \"n1\" is in a.toml and in b.toml: discover each node once");
    }
}
