//! `rocemend inventory check`: every cabling fault of an inventory, by element — the
//! daemon's own checks (each at its line and column), then the rails of GPUs across nodes,
//! then the switches' LLDP tables when given ([`faults`](crate::inventory::faults)).

use engine::config::Locator;
use engine::topology::{Inventory, TopologyError};
use engine::Topology;

use crate::inventory::faults;
use crate::inventory::switch_view::SwitchView;
use crate::inventory::DiscoverError;

/// Every fault of the inventory `text` (named `origin`), as `file:line:col: message` lines.
/// An error is input that cannot be checked (not TOML, not the schema).
pub fn check(text: &str, origin: &str, views: &[SwitchView]) -> Result<Vec<String>, DiscoverError> {
    let inventory: Inventory = toml::from_str(text).map_err(|e| {
        let (line, column) = engine::config::line_col(text, e.span().map(|s| s.start).unwrap_or(0));
        DiscoverError::Unusable(format!("{origin}:{line}:{column}: {}", e.message()))
    })?;
    let mut out = match Topology::parse(text, origin) {
        Ok(_) => Vec::new(),
        Err(TopologyError::Invalid { problems }) => problems.iter().map(ToString::to_string).collect(),
        Err(other) => return Err(DiscoverError::Unusable(other.to_string())),
    };
    let at = Locator::new(text, origin);
    for fault in faults::rails(&inventory).into_iter().chain(faults::lldp(&inventory, views)) {
        out.push(at.error(&fault.at.keys(), fault.message).to_string());
    }
    Ok(out)
}
