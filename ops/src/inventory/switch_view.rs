//! A switch's own view of its cables: SONiC's APPL_DB `LLDP_ENTRY_TABLE:<port>`, which
//! lldp_syncd writes from the switch's lldpd (`lldp_rem_sys_name`, `lldp_rem_port_id`,
//! `lldp_rem_port_desc`, …), read from the switch's Redis, from its gNMI (origin `sonic-db`,
//! `/APPL_DB/localhost/LLDP_ENTRY_TABLE`, with TLS and a login as `[gnmi]` spells them, or plain
//! text with none, sonic-gnmi's insecure port), or
//! from a JSON dump of the table.
//!
//! A dump is what `sonic-db-dump -n APPL_DB -k 'LLDP_ENTRY_TABLE:*'` writes (each key's
//! `{"type": "hash", "value": {fields}}`), or the plain `{key: {fields}}`; keys may omit the
//! `LLDP_ENTRY_TABLE:` prefix. Keys of other tables (`LLDP_LOC_CHASSIS`) are skipped.

use std::collections::BTreeMap;
use std::path::Path;

use engine::topology::GnmiDefaults;
use gnmi_proto::sonic::PathStyle;
use gnmi_proto::{ClientConfig, GnmiClient, TlsConfig};
use serde_json::Value;
use sonic::gnmi::SwitchGnmi;
use sonic::layout::{db, DatabaseLayout, Instance};
use sonic::Switch as SonicSwitch;

use crate::inventory::DiscoverError;

/// The table.
pub const LLDP_ENTRY_TABLE: &str = "LLDP_ENTRY_TABLE";

/// What a switch port sees at the far end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortNeighbor {
    /// `lldp_rem_sys_name`: the host's name.
    pub sys_name: Option<String>,
    /// `lldp_rem_port_id`: the host's port (its netdev, or a MAC).
    pub port_id: Option<String>,
    /// `lldp_rem_port_desc`: the host's port description (lldpd sends the netdev).
    pub port_desc: Option<String>,
}

impl PortNeighbor {
    /// Whether the far end is netdev `netdev` of host `node`.
    pub fn is(&self, node: &str, netdev: &str) -> bool {
        self.sys_name.as_deref() == Some(node)
            && (self.port_id.as_deref() == Some(netdev) || self.port_desc.as_deref() == Some(netdev))
    }

    /// `node-02 eth1`, as the switch names it.
    pub fn describe(&self) -> String {
        let port = self.port_id.as_deref().filter(|p| !p.contains(':')).or(self.port_desc.as_deref());
        format!("{} {}", self.sys_name.as_deref().unwrap_or("<no system name>"), port.unwrap_or("<no port>"))
    }
}

/// One switch's LLDP table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchView {
    /// The switch's inventory name.
    pub switch: String,
    /// Where the table was read (a file, `redis HOST:PORT`).
    pub source: String,
    /// Port → far end.
    pub ports: BTreeMap<String, PortNeighbor>,
}

fn neighbor(fields: &serde_json::Map<String, Value>) -> PortNeighbor {
    let get = |k: &str| fields.get(k).and_then(Value::as_str).map(str::to_string);
    PortNeighbor {
        sys_name: get("lldp_rem_sys_name"),
        port_id: get("lldp_rem_port_id"),
        port_desc: get("lldp_rem_port_desc"),
    }
}

/// Reads a JSON dump of switch `switch`'s table.
pub fn from_dump(switch: &str, path: &Path) -> Result<SwitchView, DiscoverError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| DiscoverError::Read { path: path.to_path_buf(), message: e.to_string() })?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| DiscoverError::Read {
        path: path.to_path_buf(),
        message: format!("line {} column {}: {e}", e.line(), e.column()),
    })?;
    let Value::Object(keys) = doc else {
        return Err(DiscoverError::Read { path: path.to_path_buf(), message: "not a JSON object of keys".into() });
    };
    let mut ports = BTreeMap::new();
    for (key, entry) in keys {
        let port = match key.split_once(':') {
            Some((LLDP_ENTRY_TABLE, port)) => port.to_string(),
            Some(_) => continue,
            // Another table's key without a port (`LLDP_LOC_CHASSIS`).
            None if key.starts_with("LLDP_") => continue,
            None => key,
        };
        let fields = entry.get("value").filter(|_| entry.get("type").is_some()).unwrap_or(&entry);
        let Value::Object(fields) = fields else {
            let message = format!("{port}: not an object of fields");
            return Err(DiscoverError::Read { path: path.to_path_buf(), message });
        };
        ports.insert(port, neighbor(fields));
    }
    Ok(SwitchView { switch: switch.to_string(), source: path.display().to_string(), ports })
}

/// Reads switch `switch`'s table from its Redis at `host:port` (APPL_DB, database 0).
pub async fn from_redis(switch: &str, address: &str) -> Result<SwitchView, DiscoverError> {
    let fail =
        |message: String| DiscoverError::Redis { switch: switch.to_string(), address: address.to_string(), message };
    let (host, port) = address.rsplit_once(':').ok_or_else(|| fail("not HOST:PORT".into()))?;
    let port: u16 = port.parse().map_err(|_| fail(format!("{port:?} is not a port number")))?;
    let instance = Instance { name: "redis".into(), hostname: host.to_string(), port, unix_socket_path: None };
    let sonic = SonicSwitch::new(DatabaseLayout::standard_at(instance), None);
    let appl = sonic.database(db::APPL_DB).await.map_err(|e| fail(e.to_string()))?;
    let mut ports = BTreeMap::new();
    for key in appl.keys(LLDP_ENTRY_TABLE).await.map_err(|e| fail(e.to_string()))? {
        if let Some(entry) = appl.entry(LLDP_ENTRY_TABLE, &key).await.map_err(|e| fail(e.to_string()))? {
            let fields = entry.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            ports.insert(key, neighbor(&fields));
        }
    }
    Ok(SwitchView { switch: switch.to_string(), source: format!("redis {address}"), ports })
}

/// How `merge` and `check` log in to the switches' gNMI: the `[gnmi]` table of a TOML file (an
/// inventory, or a file of that one table), spelled as the inventory spells it; file names
/// relative to that file. No table, or no file: plain text, no login.
pub fn gnmi_login(address: &str, settings: Option<&Path>) -> Result<ClientConfig, DiscoverError> {
    let mut config = ClientConfig::plain(address);
    let Some(path) = settings else { return Ok(config) };
    let fail = |message: String| DiscoverError::Read { path: path.to_path_buf(), message };
    #[derive(serde::Deserialize)]
    struct OnlyGnmi {
        #[serde(default)]
        gnmi: GnmiDefaults,
    }
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let gnmi = toml::from_str::<OnlyGnmi>(&text).map_err(|e| fail(format!("[gnmi]: {e}")))?.gnmi;
    let base = path.parent().unwrap_or(Path::new("."));
    if let Some(file) = &gnmi.credentials_file {
        let c = gnmi_proto::credentials::read_file(&base.join(file))
            .map_err(|e| fail(format!("gnmi.credentials_file: {e}")))?;
        config.credentials = Some((c.username, c.password));
    }
    if let Some(tls) = &gnmi.tls {
        let (cert, key) = (tls.cert_file.as_ref().map(|f| base.join(f)), tls.key_file.as_ref().map(|f| base.join(f)));
        let files =
            TlsConfig::from_files(&base.join(&tls.ca_file), cert.as_deref(), key.as_deref(), tls.domain.clone());
        config.tls = Some(files.map_err(|e| fail(format!("gnmi.tls: {e}")))?);
    }
    Ok(config)
}

/// Reads switch `switch`'s table over gNMI as `config` says (address, TLS, login): origin
/// `sonic-db`, namespace `localhost`, as sonic-gnmi serves APPL_DB since 202305.
pub async fn from_gnmi(switch: &str, config: &ClientConfig) -> Result<SwitchView, DiscoverError> {
    let address = config.address.as_str();
    let fail =
        |message: String| DiscoverError::Gnmi { switch: switch.to_string(), address: address.to_string(), message };
    let client = GnmiClient::connect(config).await.map_err(|e| fail(e.to_string()))?;
    let style = PathStyle::SonicDbOrigin { namespace: Some("localhost".to_string()) };
    let mut gnmi = SwitchGnmi::new(client, false, style, "localhost");
    let table = gnmi.table(db::APPL_DB, LLDP_ENTRY_TABLE).await.map_err(|e| fail(e.to_string()))?;
    let ports = (table.into_iter())
        .map(|(port, entry)| {
            let fields = entry.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            (port, neighbor(&fields))
        })
        .collect();
    Ok(SwitchView { switch: switch.to_string(), source: format!("gnmi {address}"), ports })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sonic_db_dump_and_a_plain_table_read_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let dump = dir.path().join("dump.json");
        std::fs::write(
            &dump,
            r#"{"LLDP_ENTRY_TABLE:Ethernet8": {"type": "hash", "ttl": -0.001, "value": {
                  "lldp_rem_sys_name": "node-03", "lldp_rem_port_id": "eth1", "lldp_rem_port_id_subtype": "5",
                  "lldp_rem_port_desc": "eth1", "lldp_rem_chassis_id": "de:41:18:6c:99:18"}},
                "LLDP_LOC_CHASSIS": {"type": "hash", "value": {}}}"#,
        )
        .unwrap();
        let plain = dir.path().join("plain.json");
        std::fs::write(&plain, r#"{"Ethernet8": {"lldp_rem_sys_name": "node-03", "lldp_rem_port_id": "aa:bb:cc:dd:ee:ff", "lldp_rem_port_desc": "eth1"}}"#).unwrap();
        for path in [&dump, &plain] {
            let view = from_dump("leaf-rail0", path).unwrap();
            assert_eq!(view.ports.keys().collect::<Vec<_>>(), ["Ethernet8"], "{path:?}");
            let far = &view.ports["Ethernet8"];
            assert!(far.is("node-03", "eth1") && !far.is("node-03", "eth0") && !far.is("node-02", "eth1"));
            assert_eq!(far.describe(), "node-03 eth1");
        }
        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, "{\n  \"Ethernet0\": 3\n}").unwrap();
        assert!(from_dump("leaf-rail0", &broken).unwrap_err().to_string().contains("Ethernet0: not an object"));
    }
}
