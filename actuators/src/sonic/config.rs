//! The `[gnmi]` settings the switch actuators share: which switches they may
//! change (an allow-list, by the inventory's names), and the timeout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use engine::topology::AccessError;
use engine::topology::SwitchTls;
use engine::{Topology, SECOND};
use gnmi_proto::TlsConfig;
use serde::{Deserialize, Serialize};

use std::sync::Arc;

use super::{GnmiTransport, RedisTransport, Sonic, Transport};
use crate::ActuatorConfigError;

/// The longest timeout accepted for one gNMI call: a switch that needs more
/// than a minute to answer a Set of a few fields is not healthy, and the
/// action holds a dispatch slot while it waits.
const MAX_TIMEOUT: i64 = 60 * SECOND;

/// The switches an actuator may change, as a playbook gives it.
///
/// Named, from the inventory, which says where each switch is and how to
/// log in (`[[switch]]` and its `[gnmi]` defaults): the one list of switches
/// the gnmi sensor uses too.
///
/// ```toml
/// [actuator.gnmi]
/// switches = ["leaf-rail0", "leaf-rail1"]
/// timeout = "5s"
/// ```
///
/// Or, in a lab without an inventory, by address, with the access settings
/// here:
///
/// ```toml
/// [actuator.gnmi]
/// switches = { leaf-rail0 = "127.0.0.1:57400" }
/// credentials_file = "/etc/rocemend/gnmi-credentials.toml"   # mode 0600
/// path_style = "prefix-target"
/// [actuator.gnmi.tls]
/// ca_file = "/etc/rocemend/switch-ca.pem"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SonicConfig {
    /// The switches (by the actions' `switch` label) this actuator may
    /// change: names of the inventory's switches, or name → `host:port` (none when only
    /// `[gnmi.redis]` is set).
    /// Only these switches are ever changed: an action naming any other is
    /// refused as invalid.
    #[serde(default = "no_switches")]
    pub switches: SwitchList,
    /// With switches by address: a TOML file with `username` and
    /// `password` (mode 0600), sent as gRPC metadata the way SONiC's
    /// telemetry server expects them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_file: Option<PathBuf>,
    /// With switches by address: TLS; plain HTTP/2 when absent (a lab or a
    /// loopback simulator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<SwitchTls>,
    /// How long connecting and each call may take, e.g. `"5s"`; at most a minute.
    #[serde(default = "default_timeout", with = "engine::config::duration")]
    pub timeout: Duration,
    /// With switches by address: how they address CONFIG_DB:
    /// `prefix-target` (the default: the database as the request's prefix
    /// target, classic SONiC telemetry), `sonic-db-origin` (origin
    /// `sonic-db`, `CONFIG_DB/localhost/…`, sonic-gnmi's mixed schema that
    /// also saves the change) or `auto` (from each switch's Capabilities).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_style: Option<super::PathStyleSetting>,
    /// On the switch itself (a container with `/var/run/redis` mounted): the switch reached
    /// through its own Redis rather than its gNMI ([`LocalRedis`]). One table, or one per ASIC
    /// namespace of a multi-ASIC switch (`[[gnmi.redis]]`, each its own `switch` name and
    /// `database_config`).
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    pub redis: Vec<LocalRedis>,
}

/// `[gnmi.redis]` (one switch) or `[[gnmi.redis]]` (one per ASIC), each table's own errors
/// (an unknown field, a missing `switch`) kept as they are.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<LocalRedis>, D::Error> {
    use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};

    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = Vec<LocalRedis>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a table (one switch) or an array of tables (one per ASIC)")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            LocalRedis::deserialize(MapAccessDeserializer::new(map)).map(|one| vec![one])
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Vec::deserialize(SeqAccessDeserializer::new(seq))
        }
    }
    d.deserialize_any(Visitor)
}

/// `[gnmi.redis]`: the switch rocemend runs on, reached through its own Redis.
///
/// ```toml
/// [actuator.gnmi]
/// switches = []
/// [actuator.gnmi.redis]
/// switch = "leaf-rail0"
/// database_config = "/var/run/redis/sonic-db/database_config.json"   # the default
/// password_file = "/run/redis/auth/passwd"                           # builds that set one
/// ```
///
/// On a multi-ASIC switch, one per namespace, each ASIC its own switch name:
///
/// ```toml
/// [[actuator.gnmi.redis]]
/// switch = "leaf-rail0-asic0"
/// database_config = "/var/run/redis0/sonic-db/database_config.json"
/// [[actuator.gnmi.redis]]
/// switch = "leaf-rail0-asic1"
/// database_config = "/var/run/redis1/sonic-db/database_config.json"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalRedis {
    /// The switch's name (the actions' `switch` label).
    pub switch: String,
    /// Its `database_config.json`: which socket and number each database has.
    #[serde(default = "default_database_config")]
    pub database_config: PathBuf,
    /// The file holding its Redis password, on builds that set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
}

fn default_database_config() -> PathBuf {
    PathBuf::from(sonic::layout::CONFIG_PATH)
}

impl LocalRedis {
    /// The switch's Redis: its layout and password read.
    fn open(&self, timeout: Duration) -> Result<sonic::Switch, ActuatorConfigError> {
        let layout = sonic::DatabaseLayout::load(&self.database_config).map_err(|e| ActuatorConfigError::Entry {
            setting: "gnmi.redis".into(),
            key: "database_config".into(),
            reason: e.to_string(),
        })?;
        let password = match &self.password_file {
            None => None,
            Some(path) => sonic::layout::read_password(path).map_err(|e| ActuatorConfigError::Entry {
                setting: "gnmi.redis".into(),
                key: "password_file".into(),
                reason: e.to_string(),
            })?,
        };
        Ok(sonic::Switch::new(layout, password).with_timeout(timeout))
    }
}

/// `gnmi.switches`: names of the inventory's switches, or name → address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SwitchList {
    /// `["leaf-rail0", …]`: everything else from the inventory; `["*"]`:
    /// every switch of the inventory that has an address.
    Names(Vec<String>),
    /// `{ leaf-rail0 = "10.0.0.10:8080", … }`: a lab without an inventory.
    Addresses(BTreeMap<String, String>),
}

/// The namespace element of the `sonic-db-origin` style when none is set:
/// `localhost`, which sonic-gnmi has required on single-ASIC switches since 2024.
const DEFAULT_NAMESPACE: &str = "localhost";

fn no_switches() -> SwitchList {
    SwitchList::Names(Vec::new())
}

fn default_timeout() -> Duration {
    Duration::from_secs(5)
}

impl SonicConfig {
    /// Validates the settings, reads the files they name, and builds the
    /// client; switches by name are looked up in `inventory`.
    pub fn build(&self, inventory: Option<&Topology>) -> Result<Sonic, ActuatorConfigError> {
        let timeout = crate::error::bounded_duration("gnmi.timeout", self.timeout, MAX_TIMEOUT)?;
        let mut switches = match &self.switches {
            SwitchList::Names(names) if names.is_empty() => BTreeMap::new(),
            SwitchList::Names(names) => self.named(names, inventory, timeout)?,
            SwitchList::Addresses(addresses) => self.addressed(addresses, timeout)?,
        };
        for local in &self.redis {
            let transport: Arc<dyn Transport> = Arc::new(RedisTransport::new(&local.switch, local.open(timeout)?));
            if switches.insert(local.switch.clone(), transport).is_some() {
                return Err(ActuatorConfigError::Entry {
                    setting: "gnmi.redis".into(),
                    key: "switch".into(),
                    reason: format!(
                        "{:?} is named twice (in gnmi.switches or another gnmi.redis): reach it one way",
                        local.switch
                    ),
                });
            }
        }
        if switches.is_empty() {
            return Err(ActuatorConfigError::Empty {
                setting: "gnmi.switches".into(),
                need: "name the switches this actuator may change",
            });
        }
        Ok(Sonic::new(switches, timeout))
    }

    /// Switches of the inventory, each reached as it says.
    fn named(
        &self,
        names: &[String],
        inventory: Option<&Topology>,
        timeout: Duration,
    ) -> Result<BTreeMap<String, Arc<dyn Transport>>, ActuatorConfigError> {
        if self.credentials_file.is_some() || self.tls.is_some() || self.path_style.is_some() {
            return Err(ActuatorConfigError::Conflict {
                setting: "gnmi".into(),
                reason: "switches named from the inventory are reached as the inventory says: set \
                         credentials_file, tls and path_style on its [[switch]] or its [gnmi], not here",
            });
        }
        let every: Vec<String>;
        let names = if names.iter().any(|n| n == "*") {
            if names.len() > 1 {
                return Err(ActuatorConfigError::Conflict {
                    setting: "gnmi.switches".into(),
                    reason: "\"*\" (every switch of the inventory) stands alone",
                });
            }
            let source = AccessError::NoInventory { name: "*".into() };
            let inventory = inventory.ok_or(ActuatorConfigError::Switch { setting: "gnmi.switches".into(), source })?;
            every =
                inventory.inventory().switch.iter().filter(|s| s.address.is_some()).map(|s| s.name.clone()).collect();
            &every[..]
        } else {
            names
        };
        let mut switches = BTreeMap::new();
        for name in names {
            let access = Topology::access_in(inventory, name)
                .map_err(|source| ActuatorConfigError::Switch { setting: "gnmi.switches".into(), source })?;
            let transport = GnmiTransport::new(
                name,
                &access.address,
                access.credentials_file.as_deref().map(credentials).transpose()?,
                access.tls.as_ref().map(tls_config).transpose()?,
                access.path_style,
                access.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE),
                timeout,
            );
            switches.insert(name.clone(), Arc::new(transport) as Arc<dyn Transport>);
        }
        Ok(switches)
    }

    /// Switches by address, all reached with this table's settings.
    fn addressed(
        &self,
        addresses: &BTreeMap<String, String>,
        timeout: Duration,
    ) -> Result<BTreeMap<String, Arc<dyn Transport>>, ActuatorConfigError> {
        for (name, address) in addresses {
            if name.is_empty() || address.is_empty() || address.chars().any(|c| c.is_whitespace()) {
                return Err(ActuatorConfigError::Entry {
                    setting: "gnmi.switches".into(),
                    key: name.clone(),
                    reason: format!("= {address:?} is not a name and a host:port"),
                });
            }
        }
        let credentials = self.credentials_file.as_deref().map(credentials).transpose()?;
        let tls = self.tls.as_ref().map(tls_config).transpose()?;
        let transport = |name: &String, address: &String| {
            let t = GnmiTransport::new(
                name,
                address,
                credentials.clone(),
                tls.clone(),
                self.path_style.unwrap_or_default(),
                DEFAULT_NAMESPACE,
                timeout,
            );
            Arc::new(t) as Arc<dyn Transport>
        };
        Ok(addresses.iter().map(|(name, address)| (name.clone(), transport(name, address))).collect())
    }
}

/// The username and password in the credentials file at `path`.
fn credentials(path: &Path) -> Result<(String, String), ActuatorConfigError> {
    let c = gnmi_proto::credentials::read_file(path)
        .map_err(|source| ActuatorConfigError::Credentials { setting: "gnmi.credentials_file".into(), source })?;
    Ok((c.username, c.password))
}

/// The client's TLS settings, its PEM files read.
fn tls_config(tls: &SwitchTls) -> Result<TlsConfig, ActuatorConfigError> {
    TlsConfig::from_files(&tls.ca_file, tls.cert_file.as_deref(), tls.key_file.as_deref(), tls.domain.clone())
        .map_err(|source| ActuatorConfigError::TlsFiles { setting: "gnmi.tls".into(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inventory(dir: &Path) -> Topology {
        let cred = dir.join("cred.toml");
        std::fs::write(&cred, "username = \"admin\"\npassword = \"pw\"\n").unwrap();
        std::fs::set_permissions(&cred, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let text = "[gnmi]\ncredentials_file = \"cred.toml\"\npath_style = \"sonic-db-origin\"\n\
                    [[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\naddress = \"127.0.0.1:1\"\n\
                    [[switch]]\nname = \"leaf-rail1\"\nrole = \"leaf\"\naddress = \"127.0.0.1:2\"\nnamespace = \"asic0\"\n\
                    [[switch]]\nname = \"spine0\"\nrole = \"spine\"\n";
        std::fs::write(dir.join("inventory.toml"), text).unwrap();
        Topology::load(&dir.join("inventory.toml")).unwrap()
    }

    fn named(text: &str, inventory: Option<&Topology>) -> Result<Sonic, String> {
        toml::from_str::<SonicConfig>(text).unwrap().build(inventory).map_err(|e| e.to_string())
    }

    #[test]
    fn switches_named_from_the_inventory_are_reached_as_it_says() {
        let dir = tempfile::tempdir().unwrap();
        let inventory = inventory(dir.path());
        let sonic = named("switches = [\"leaf-rail1\"]", Some(&inventory)).unwrap();
        let transport = format!("{:?}", sonic.transport("leaf-rail1").unwrap());
        for expected in ["address: \"127.0.0.1:2\"", "instance: \"asic0\"", "style: SonicDb"] {
            assert!(transport.contains(expected), "{transport}");
        }
        assert!(!transport.contains("pw"), "never the password: {transport}");
        assert!(sonic.address("leaf-rail0").is_err(), "only the switches named may be changed");
        let every = named("switches = [\"*\"]", Some(&inventory)).unwrap();
        assert!(every.address("leaf-rail0").is_ok() && every.address("leaf-rail1").is_ok());
        assert!(every.address("spine0").is_err(), "a switch without an address is not reachable");
        for (text, inventory, expected) in [
            ("switches = [\"leaf-rial0\"]", Some(&inventory), "not in the inventory; did you mean \"leaf-rail0\"?"),
            ("switches = [\"spine0\"]", Some(&inventory), "has no `address`"),
            ("switches = [\"leaf-rail0\"]", None, "but there is no inventory"),
            ("switches = [\"*\", \"leaf-rail0\"]", Some(&inventory), "stands alone"),
            ("switches = [\"leaf-rail0\"]\npath_style = \"auto\"", Some(&inventory), "as the inventory says"),
            ("switches = []", Some(&inventory), "gnmi.switches is empty"),
        ] {
            let error = named(text, inventory).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }

    #[test]
    fn settings_are_checked_and_credentials_read_from_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let cred = dir.path().join("cred.toml");
        std::fs::write(&cred, "username = \"admin\"\npassword = \"pw\"\n").unwrap();
        std::fs::set_permissions(&cred, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let text = format!("switches = {{ leaf-rail0 = \"127.0.0.1:1\" }}\ncredentials_file = {:?}\n", cred);
        let config: SonicConfig = toml::from_str(&text).unwrap();
        let sonic = config.build(None).unwrap();
        assert_eq!(sonic.address("leaf-rail0").unwrap(), "127.0.0.1:1");
        assert!(sonic.address("leaf-rail9").is_err());
        for (text, expected) in [
            ("switches = {}", "gnmi.switches is empty"),
            ("switches = { a = \"x:1\" }\ntimeout = \"2m\"", "at most 60s"),
            ("switches = { a = \"x 1\" }", "is not a name and a host:port"),
            ("switches = { a = \"x:1\" }\ncredentials_file = \"/nonexistent\"", "gnmi.credentials_file: /nonexistent"),
            ("switches = { a = \"x:1\" }\n[tls]\nca_file = \"/ca.pem\"\ncert_file = \"/c\"", "together"),
            (
                "switches = { a = \"x:1\" }\n[tls]\nca_file = \"/nonexistent-ca.pem\"",
                "gnmi.tls: ca_file /nonexistent-ca.pem",
            ),
        ] {
            let config: SonicConfig = toml::from_str(text).unwrap();
            let err = config.build(None).err().unwrap().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
    #[test]
    fn one_redis_table_or_one_per_asic_each_with_its_own_errors() {
        let dir = tempfile::tempdir().unwrap();
        let layout = dir.path().join("database_config.json");
        let json = r#"{"INSTANCES": {"redis": {"hostname": "127.0.0.1", "port": 6379, "unix_socket_path": ""}},
                       "DATABASES": {"CONFIG_DB": {"id": 4, "separator": "|", "instance": "redis"}}}"#;
        std::fs::write(&layout, json).unwrap();
        let one = format!("switches = []\n[redis]\nswitch = \"leaf-rail0\"\ndatabase_config = {layout:?}\n");
        let sonic = toml::from_str::<SonicConfig>(&one).unwrap().build(None).unwrap();
        assert!(sonic.transport("leaf-rail0").is_ok());
        let asic = |i: usize| format!("[[redis]]\nswitch = \"leaf-rail0-asic{i}\"\ndatabase_config = {layout:?}\n");
        let many = format!("switches = []\n{}{}", asic(0), asic(1));
        let sonic = toml::from_str::<SonicConfig>(&many).unwrap().build(None).unwrap();
        assert!(sonic.transport("leaf-rail0-asic0").is_ok() && sonic.transport("leaf-rail0-asic1").is_ok());
        // A table's own mistake is named as such, not as "no variant matched".
        let typo = "switches = []\n[[redis]]\nswitch = \"a\"\ndatabse_config = \"x\"\n";
        let error = toml::from_str::<SonicConfig>(typo).unwrap_err().to_string();
        assert!(error.contains("unknown field `databse_config`"), "{error}");
        let twice = format!("switches = []\n{}{}", asic(0), asic(0));
        let error = toml::from_str::<SonicConfig>(&twice).unwrap().build(None).err().unwrap().to_string();
        assert!(error.contains("\"leaf-rail0-asic0\" is named twice"), "{error}");
    }
}
