//! `rocemend inventory check`: every cabling fault of an inventory, by element — the
//! daemon's own checks (each at its line and column), then the rails of GPUs across nodes,
//! then the switches' LLDP tables when given ([`faults`]).

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Two nodes of one GPU each, GPU 0 on rail 0 on node-a and rail 1 on node-b, a third node
    /// on rail 0; node-b's NIC also on a port node-a's uses.
    const TEXT: &str = r#"
[[switch]]
name = "leaf-rail0"
role = "leaf"
rail = 0
plane = 0

[[switch]]
name = "leaf-rail1"
role = "leaf"
rail = 1
plane = 0

[[node]]
name = "node-a"
[[node.gpu]]
index = 0
[[node.nic]]
rdma_dev = "mlx5_0"
netdev = "eth0"
gpu = 0
rail = 0
plane = 0
switch = "leaf-rail0"
switch_port = "Ethernet0"

[[node]]
name = "node-b"
[[node.gpu]]
index = 0
[[node.nic]]
rdma_dev = "mlx5_0"
netdev = "eth0"
gpu = 0
rail = 1
plane = 0
switch = "leaf-rail1"
switch_port = "Ethernet0"

[[node]]
name = "node-c"
[[node.gpu]]
index = 0
[[node.nic]]
rdma_dev = "mlx5_0"
netdev = "eth0"
gpu = 0
rail = 0
plane = 0
switch = "leaf-rail0"
switch_port = "Ethernet0"
"#;

    #[test]
    fn the_daemons_checks_and_the_rail_check_are_each_placed_at_their_line() {
        let faults = check(TEXT, "inv.toml", &[]).unwrap();
        assert_eq!(faults.len(), 2, "{faults:#?}");
        assert!(faults[0].contains("port \"Ethernet0\" is cabled to two NICs"), "{}", faults[0]);
        assert!(
            faults[1]
                .starts_with("inv.toml:35:1: node \"node-b\" NIC mlx5_0 (eth0), cabled to leaf-rail1 port Ethernet0"),
            "{}",
            faults[1]
        );
        assert!(faults[1].contains("but GPU 0 of node-a, node-c is on rail 0"), "{}", faults[1]);
    }

    #[test]
    fn a_file_that_is_not_the_schema_is_unusable() {
        let err = check("[[node]]\nnmae = \"x\"\n", "inv.toml", &[]).unwrap_err().to_string();
        assert!(err.starts_with("inv.toml:2:1:"), "{err}");
    }
}
