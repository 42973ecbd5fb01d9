//! A node's LLDP neighbours, from lldpd: `lldpcli [-u SOCKET] -f json show neighbors` (or,
//! without lldpd, from raw frames: [`lldp_raw`](crate::inventory::lldp_raw)).
//!
//! lldpcli's JSON keys each interface by its name; with one interface `lldp.interface` is an
//! object, with more it is an array of one-key objects. The chassis is keyed by its system
//! name, or is a bare `{ "id": … }` when the neighbour sends none. Both shapes are read.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::inventory::DiscoverError;

/// What one local interface sees at the far end of its cable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbor {
    /// The local interface (`eth0`).
    pub local: String,
    /// The neighbour's system name (`leaf-rail0`), when it sends one.
    pub sys_name: Option<String>,
    /// Its port id (`Ethernet0` when the switch sends its interface name).
    pub port_id: String,
    /// The port id's subtype (`ifname`, `mac`, `local`).
    pub port_id_type: String,
    /// Its port description, when it sends one.
    pub port_descr: Option<String>,
    /// Who heard it.
    pub via: Via,
}

/// Where a neighbour was heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// lldpd, asked through lldpcli (or its saved JSON).
    Lldpd,
    /// A raw LLDP frame on the local interface ([`lldp_raw`](crate::inventory::lldp_raw)).
    Frame,
}

impl Neighbor {
    /// The switch's port name: the port id when it is an interface name or a locally assigned
    /// one (SONiC's), else the description (a MAC says nothing about the port's name).
    pub fn port_name(&self) -> &str {
        match (self.port_id_type.as_str(), &self.port_descr) {
            ("ifname" | "local", _) | (_, None) => &self.port_id,
            (_, Some(descr)) => descr,
        }
    }

    /// Which field [`port_name`](Self::port_name) took, for the fragment's comment.
    pub fn port_field(&self) -> String {
        match (self.port_id_type.as_str(), &self.port_descr, self.via) {
            ("ifname" | "local", _, Via::Frame) | (_, None, Via::Frame) => {
                format!("port id TLV (subtype {})", self.port_id_type)
            }
            (_, Some(_), Via::Frame) => format!("port description TLV (the port id is a {})", self.port_id_type),
            ("ifname" | "local", _, Via::Lldpd) | (_, None, Via::Lldpd) => format!("port id ({})", self.port_id_type),
            (_, Some(_), Via::Lldpd) => format!("port description (the port id is a {})", self.port_id_type),
        }
    }
}

/// Asks lldpd (through `socket` when given) for every neighbour.
pub fn query(lldpcli: &str, socket: Option<&Path>) -> Result<Vec<Neighbor>, DiscoverError> {
    parse(&ask(lldpcli, socket).map_err(DiscoverError::Lldp)?)
}

/// lldpcli's JSON, or why lldpd could not be asked (lldpcli absent, its daemon not running).
pub fn ask(lldpcli: &str, socket: Option<&Path>) -> Result<String, String> {
    let mut command = Command::new(lldpcli);
    if let Some(socket) = socket {
        command.arg("-u").arg(socket);
    }
    command.args(["-f", "json", "show", "neighbors"]);
    let out = command.output().map_err(|e| format!("cannot run {lldpcli}: {e}; is lldpd installed?"))?;
    if !out.status.success() {
        return Err(format!(
            "{lldpcli} -f json show neighbors: {} (is lldpd running{}?)",
            String::from_utf8_lossy(&out.stderr).trim(),
            socket.map(|s| format!(" with control socket {}", s.display())).unwrap_or_default()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Reads lldpcli's JSON.
pub fn parse(text: &str) -> Result<Vec<Neighbor>, DiscoverError> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| DiscoverError::Lldp(format!("lldpcli's JSON at line {}: {e}", e.line())))?;
    let interfaces = match doc.pointer("/lldp/interface") {
        None => return Ok(Vec::new()),
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_object).flat_map(|o| o.iter()).collect::<Vec<_>>(),
        Some(Value::Object(map)) => map.iter().collect(),
        Some(other) => {
            return Err(DiscoverError::Lldp(format!("lldp.interface is neither an object nor a list: {other}")))
        }
    };
    let mut out = Vec::new();
    for (local, entry) in interfaces {
        let (sys_name, _) = chassis(entry.get("chassis"));
        let port = entry.get("port");
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        let Some(port_id) = text(port.and_then(|p| p.pointer("/id/value"))) else {
            return Err(DiscoverError::Lldp(format!("interface {local}: a neighbour without a port id")));
        };
        out.push(Neighbor {
            local: local.clone(),
            sys_name,
            port_id,
            port_id_type: text(port.and_then(|p| p.pointer("/id/type"))).unwrap_or_default(),
            port_descr: text(port.and_then(|p| p.get("descr"))),
            via: Via::Lldpd,
        });
    }
    out.sort_by(|a, b| a.local.cmp(&b.local));
    Ok(out)
}

/// The chassis's system name (the key of its one entry, unless that entry is the bare id).
fn chassis(value: Option<&Value>) -> (Option<String>, Option<&Value>) {
    match value.and_then(Value::as_object) {
        Some(map) if map.contains_key("id") => (None, Some(&map["id"])),
        Some(map) => map.iter().next().map(|(k, v)| (Some(k.clone()), Some(v))).unwrap_or((None, None)),
        None => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// lldpcli 1.0.16's output on a node with two neighbours (trimmed of capabilities).
    const TWO: &str = r#"{"lldp": {"interface": [
        {"eth0": {"via": "LLDP", "chassis": {"leaf-rail0": {"id": {"type": "mac", "value": "de:41:18:6c:99:18"}}},
                  "port": {"id": {"type": "ifname", "value": "Ethernet8"}, "descr": "Ethernet8", "ttl": "120"}}},
        {"eth1": {"via": "LLDP", "chassis": {"id": {"type": "mac", "value": "de:41:18:6c:99:19"}},
                  "port": {"id": {"type": "mac", "value": "de:41:18:6c:99:19"}, "descr": "Ethernet12"}}}
    ]}}"#;

    #[test]
    fn both_shapes_of_lldpclis_json_are_read() {
        let n = parse(TWO).unwrap();
        assert_eq!(n.len(), 2);
        assert_eq!(
            (n[0].local.as_str(), n[0].sys_name.as_deref(), n[0].port_name()),
            ("eth0", Some("leaf-rail0"), "Ethernet8")
        );
        assert_eq!(
            (n[1].sys_name.as_deref(), n[1].port_name()),
            (None, "Ethernet12"),
            "a MAC port id: the description"
        );
        let one = r#"{"lldp": {"interface": {"eth3": {"chassis": {"leaf-rail3": {}}, "port": {"id": {"type": "ifname", "value": "Ethernet4"}}}}}}"#;
        let n = parse(one).unwrap();
        assert_eq!((n[0].local.as_str(), n[0].port_name()), ("eth3", "Ethernet4"));
        assert_eq!(parse(r#"{"lldp": {}}"#).unwrap(), Vec::new(), "no neighbour yet");
    }

    #[test]
    fn malformed_json_says_where() {
        let err = parse("{\n\"lldp\": [").unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}
