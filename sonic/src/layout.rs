//! The switch's database layout, as sonic-buildimage writes it into
//! `database_config.json` (`dockers/docker-database/database_config.json.j2`) and
//! sonic-swss-common reads it (`common/dbconnector.cpp`, `SonicDBConfig::parseDatabaseConfig`):
//!
//! - `INSTANCES`: each Redis server by name (`redis`, `redis_bmp`, …) with its `hostname`,
//!   `port` and (optionally) `unix_socket_path`;
//! - `DATABASES`: each database by name (`CONFIG_DB`, `COUNTERS_DB`, …) with its number (`id`),
//!   the `separator` between a table and its key (`|` or `:`), and the `instance` serving it.
//!
//! A multi-ASIC switch has one such file per namespace (`/var/run/redis{N}/sonic-db/`), listed by
//! `database_global.json` (`INCLUDES`: `include` path relative to that file, `namespace` `asicN`);
//! [`GlobalLayout`] reads it. Some builds protect Redis with a password kept in
//! [`PASSWORD_PATH`]; [`read_password`] reads it.
//!
//! A switch without the file (an old image, a container without the mount) gets
//! [`DatabaseLayout::standard`]: the numbers and separators of sonic-utilities' copy of the file,
//! which are those every image has used.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Where SONiC keeps the layout of the default namespace (`SonicDBConfig::DEFAULT_SONIC_DB_CONFIG_FILE`).
pub const CONFIG_PATH: &str = "/var/run/redis/sonic-db/database_config.json";
/// Where a multi-ASIC switch lists its namespaces' layouts
/// (`SonicDBConfig::DEFAULT_SONIC_DB_GLOBAL_CONFIG_FILE`).
pub const GLOBAL_CONFIG_PATH: &str = "/var/run/redis/sonic-db/database_global.json";
/// The Redis password on builds that set one; read with [`read_password`].
pub const PASSWORD_PATH: &str = "/run/redis/auth/passwd";

/// The Redis unix socket of the default namespace (`RedisContext::DEFAULT_UNIXSOCKET`).
pub const DEFAULT_SOCKET: &str = "/var/run/redis/redis.sock";

/// The name of a database in the layout (`CONFIG_DB`, `COUNTERS_DB`, …).
pub mod db {
    /// Application state orchagent consumes and writes (`PFC_WD_TABLE_INSTORM`, `PORT_TABLE`).
    pub const APPL_DB: &str = "APPL_DB";
    /// The SAI objects as syncd holds them (`ASIC_STATE:SAI_OBJECT_TYPE_PORT:<oid>`).
    pub const ASIC_DB: &str = "ASIC_DB";
    /// Counters and the name maps (`COUNTERS:<oid>`, `COUNTERS_PORT_NAME_MAP`).
    pub const COUNTERS_DB: &str = "COUNTERS_DB";
    /// The configuration (`PFC_WD|<port>`, `PORT|<port>`).
    pub const CONFIG_DB: &str = "CONFIG_DB";
    /// The flex counter groups (and the watchdog's plugins).
    pub const FLEX_COUNTER_DB: &str = "FLEX_COUNTER_DB";
    /// State the daemons publish (`PORT_TABLE|<port>`).
    pub const STATE_DB: &str = "STATE_DB";
}

/// A layout that could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not the JSON SONiC writes.
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where and why, with line and column.
        source: serde_json::Error,
    },
    /// A database names an instance the file does not define.
    #[error("{path}: database {database} is served by instance {instance:?}, which INSTANCES does not define")]
    UnknownInstance {
        /// The file.
        path: PathBuf,
        /// The database.
        database: String,
        /// The instance it names.
        instance: String,
    },
    /// A separator that is not one character.
    #[error("{path}: database {database} has separator {separator:?}; SONiC's are one character (`|` or `:`)")]
    BadSeparator {
        /// The file.
        path: PathBuf,
        /// The database.
        database: String,
        /// The separator given.
        separator: String,
    },
    /// A database the caller needs is not in the layout.
    #[error("the database layout has no {0}")]
    UnknownDatabase(String),
    /// A namespace the global layout does not list.
    #[error("the global database layout has no namespace {0:?}")]
    UnknownNamespace(String),
}

/// One Redis server of the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The instance's name (`redis`).
    pub name: String,
    /// Its TCP host.
    pub hostname: String,
    /// Its TCP port.
    pub port: u16,
    /// Its unix socket, when it has one (an empty path in the file is none).
    pub unix_socket_path: Option<PathBuf>,
}

/// How to reach an instance: its unix socket when it has one (the switch's own processes use it;
/// nothing crosses the network), else TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A unix socket.
    Unix(PathBuf),
    /// `host:port`.
    Tcp {
        /// The host.
        host: String,
        /// The port.
        port: u16,
    },
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
            Endpoint::Tcp { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

impl Instance {
    /// The endpoint to use: the socket if there is one, else TCP.
    pub fn endpoint(&self) -> Endpoint {
        match &self.unix_socket_path {
            Some(path) => Endpoint::Unix(path.clone()),
            None => Endpoint::Tcp { host: self.hostname.clone(), port: self.port },
        }
    }
}

/// One database of the layout, with where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Database {
    /// Its name (`CONFIG_DB`).
    pub name: String,
    /// Its Redis database number.
    pub id: u32,
    /// The separator between a table and its key (`|` in CONFIG_DB and STATE_DB, `:` in the others).
    pub separator: char,
    /// The instance that serves it.
    pub instance: Instance,
}

impl Database {
    /// The Redis key of `table`'s entry `key`: `PFC_WD|Ethernet4`, `COUNTERS:oid:0x1…`.
    pub fn key(&self, table: &str, key: &str) -> String {
        format!("{table}{}{key}", self.separator)
    }
}

/// The raw file, as `SonicDBConfig::parseDatabaseConfig` reads it: other keys (`VERSION`,
/// `persistence_for_warm_boot`, `database_type`, `format`) are ignored there, so here too.
#[derive(Deserialize)]
struct RawLayout {
    #[serde(rename = "INSTANCES")]
    instances: BTreeMap<String, RawInstance>,
    #[serde(rename = "DATABASES")]
    databases: BTreeMap<String, RawDatabase>,
}

#[derive(Deserialize)]
struct RawInstance {
    hostname: String,
    port: u16,
    #[serde(default)]
    unix_socket_path: Option<String>,
}

#[derive(Deserialize)]
struct RawDatabase {
    id: u32,
    separator: String,
    instance: String,
}

/// The databases of one namespace and where each lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseLayout {
    databases: BTreeMap<String, Database>,
}

/// The layout every SONiC image has used for the databases rocemend touches, from the copy
/// sonic-utilities tests against (`tests/mock_tables/database_config.json`, whose numbers and
/// separators are the template's): name, id, separator. All on instance `redis`.
const STANDARD: [(&str, u32, char); 12] = [
    ("APPL_DB", 0, ':'),
    ("ASIC_DB", 1, ':'),
    ("COUNTERS_DB", 2, ':'),
    ("LOGLEVEL_DB", 3, ':'),
    ("CONFIG_DB", 4, '|'),
    ("PFC_WD_DB", 5, ':'),
    ("FLEX_COUNTER_DB", 5, ':'),
    ("STATE_DB", 6, '|'),
    ("SNMP_OVERLAY_DB", 7, '|'),
    ("RESTAPI_DB", 8, '|'),
    ("GB_ASIC_DB", 9, ':'),
    ("GB_COUNTERS_DB", 10, ':'),
];

impl DatabaseLayout {
    /// Parses the text of a `database_config.json`; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, LayoutError> {
        let raw: RawLayout =
            serde_json::from_str(text).map_err(|source| LayoutError::Parse { path: path.to_path_buf(), source })?;
        let instances: BTreeMap<String, Instance> = raw
            .instances
            .into_iter()
            .map(|(name, i)| {
                let socket = i.unix_socket_path.filter(|p| !p.is_empty()).map(PathBuf::from);
                (name.clone(), Instance { name, hostname: i.hostname, port: i.port, unix_socket_path: socket })
            })
            .collect();
        let mut databases = BTreeMap::new();
        for (name, d) in raw.databases {
            let instance = instances.get(&d.instance).cloned().ok_or_else(|| LayoutError::UnknownInstance {
                path: path.to_path_buf(),
                database: name.clone(),
                instance: d.instance.clone(),
            })?;
            let mut chars = d.separator.chars();
            let separator = match (chars.next(), chars.next()) {
                (Some(c), None) => c,
                _ => {
                    return Err(LayoutError::BadSeparator {
                        path: path.to_path_buf(),
                        database: name,
                        separator: d.separator,
                    })
                }
            };
            databases.insert(name.clone(), Database { name, id: d.id, separator, instance });
        }
        Ok(DatabaseLayout { databases })
    }

    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, LayoutError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| LayoutError::Read { path: path.to_path_buf(), source })?;
        Self::parse(&text, path)
    }

    /// [`DatabaseLayout::load`], or [`DatabaseLayout::standard`] when the file does not exist.
    /// Any other failure (unreadable, malformed) is an error: a layout that is there but wrong
    /// must not be papered over with defaults.
    pub fn load_or_standard(path: &Path) -> Result<Self, LayoutError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse(&text, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::standard()),
            Err(source) => Err(LayoutError::Read { path: path.to_path_buf(), source }),
        }
    }

    /// The standard layout of the default namespace: every database on instance `redis` at
    /// [`DEFAULT_SOCKET`] (TCP `127.0.0.1:6379`).
    pub fn standard() -> Self {
        Self::standard_at(Instance {
            name: "redis".into(),
            hostname: "127.0.0.1".into(),
            port: 6379,
            unix_socket_path: Some(PathBuf::from(DEFAULT_SOCKET)),
        })
    }

    /// The standard databases, all on `instance` (a test's own redis-server).
    pub fn standard_at(instance: Instance) -> Self {
        let databases = STANDARD
            .iter()
            .map(|&(name, id, separator)| {
                (name.to_string(), Database { name: name.to_string(), id, separator, instance: instance.clone() })
            })
            .collect();
        DatabaseLayout { databases }
    }

    /// The same layout with every database of instance `name` moved to `instance` (a test's
    /// redis-server standing in for the switch's).
    pub fn with_instance(mut self, name: &str, instance: Instance) -> Self {
        for db in self.databases.values_mut() {
            if db.instance.name == name {
                db.instance = instance.clone();
            }
        }
        self
    }

    /// The database called `name`.
    pub fn database(&self, name: &str) -> Result<&Database, LayoutError> {
        self.databases.get(name).ok_or_else(|| LayoutError::UnknownDatabase(name.to_string()))
    }

    /// Every database, by name.
    pub fn databases(&self) -> impl Iterator<Item = &Database> {
        self.databases.values()
    }
}

/// A namespace of a (possibly multi-ASIC) switch: the default one (sonic-gnmi calls it
/// `localhost`) or one ASIC's (`asic0`, `asic1`, …).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Namespace {
    /// The host's namespace (no `namespace` in `database_global.json`).
    Default,
    /// ASIC `n`'s namespace, `asic<n>`.
    Asic(u32),
}

impl Namespace {
    /// Parses `localhost` / empty (the default) or `asic<n>`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "" | "localhost" => Some(Namespace::Default),
            _ => text.strip_prefix("asic").and_then(|n| n.parse().ok()).map(Namespace::Asic),
        }
    }
}

impl std::fmt::Display for Namespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Namespace::Default => f.write_str("localhost"),
            Namespace::Asic(n) => write!(f, "asic{n}"),
        }
    }
}

#[derive(Deserialize)]
struct RawGlobal {
    #[serde(rename = "INCLUDES")]
    includes: Vec<RawInclude>,
}

#[derive(Deserialize)]
struct RawInclude {
    include: String,
    #[serde(default)]
    namespace: Option<String>,
}

/// Every namespace's layout, from `database_global.json` (`SonicDBConfig::initializeGlobalConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalLayout {
    namespaces: BTreeMap<Namespace, DatabaseLayout>,
}

impl GlobalLayout {
    /// Reads `path` and the layout each of its `INCLUDES` names (relative to `path`'s directory,
    /// as swss-common resolves them). A namespace whose file is missing is left out, as
    /// swss-common does with `ignore_nonexistent`; other failures are errors.
    pub fn load(path: &Path) -> Result<Self, LayoutError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| LayoutError::Read { path: path.to_path_buf(), source })?;
        let raw: RawGlobal =
            serde_json::from_str(&text).map_err(|source| LayoutError::Parse { path: path.to_path_buf(), source })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut namespaces = BTreeMap::new();
        for include in raw.includes {
            let file = dir.join(&include.include);
            let namespace = match include.namespace.as_deref() {
                None => Namespace::Default,
                Some(ns) => Namespace::parse(ns).ok_or_else(|| LayoutError::UnknownNamespace(ns.to_string()))?,
            };
            match std::fs::read_to_string(&file) {
                Ok(text) => {
                    namespaces.insert(namespace, DatabaseLayout::parse(&text, &file)?);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(LayoutError::Read { path: file, source }),
            }
        }
        Ok(GlobalLayout { namespaces })
    }

    /// The layout of `namespace`.
    pub fn namespace(&self, namespace: &Namespace) -> Result<&DatabaseLayout, LayoutError> {
        self.namespaces.get(namespace).ok_or_else(|| LayoutError::UnknownNamespace(namespace.to_string()))
    }

    /// Every namespace listed (and present).
    pub fn namespaces(&self) -> impl Iterator<Item = &Namespace> {
        self.namespaces.keys()
    }
}

/// The Redis password of builds that set one: the first line of `path` ([`PASSWORD_PATH`]),
/// trimmed. `None` when the file does not exist (most images); an unreadable file is an error,
/// since connecting without the password would then fail later with a less useful message.
pub fn read_password(path: &Path) -> Result<Option<String>, LayoutError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text.trim().to_string()).filter(|p| !p.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LayoutError::Read { path: path.to_path_buf(), source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{
        "INSTANCES": {
            "redis": {"hostname": "127.0.0.1", "port": 6379, "unix_socket_path": "/var/run/redis/redis.sock",
                      "persistence_for_warm_boot": "yes"},
            "remote_redis": {"hostname": "10.0.0.1", "port": 6380, "unix_socket_path": ""}
        },
        "DATABASES": {
            "CONFIG_DB": {"id": 4, "separator": "|", "instance": "redis"},
            "DPU_APPL_DB": {"id": 15, "separator": ":", "instance": "remote_redis", "format": "proto"}
        },
        "VERSION": "1.0"
    }"#;

    #[test]
    fn a_database_lives_on_its_instance_socket_first() {
        let layout = DatabaseLayout::parse(SAMPLE, Path::new("x.json")).unwrap();
        let config = layout.database("CONFIG_DB").unwrap();
        assert_eq!((config.id, config.separator), (4, '|'));
        assert_eq!(config.instance.endpoint(), Endpoint::Unix("/var/run/redis/redis.sock".into()));
        assert_eq!(config.key("PFC_WD", "Ethernet4"), "PFC_WD|Ethernet4");
        // An empty socket path is no socket: TCP.
        let remote = layout.database("DPU_APPL_DB").unwrap();
        assert_eq!(remote.instance.endpoint(), Endpoint::Tcp { host: "10.0.0.1".into(), port: 6380 });
        assert_eq!(remote.instance.endpoint().to_string(), "10.0.0.1:6380");
    }

    #[test]
    fn a_broken_layout_names_the_file_and_the_problem() {
        let text = SAMPLE.replace(r#""instance": "remote_redis""#, r#""instance": "nowhere""#);
        let e = DatabaseLayout::parse(&text, Path::new("/x/database_config.json")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/x/database_config.json: database DPU_APPL_DB is served by instance \"nowhere\", which INSTANCES does \
             not define"
        );
        let text = SAMPLE.replace(r#""separator": "|""#, r#""separator": "||""#);
        let e = DatabaseLayout::parse(&text, Path::new("f")).unwrap_err();
        assert!(e.to_string().contains("separator \"||\""), "{e}");
        let e = DatabaseLayout::parse("{\"INSTANCES\": {}}", Path::new("f")).unwrap_err();
        assert!(e.to_string().starts_with("f: missing field `DATABASES`"), "{e}");
        assert!(matches!(
            DatabaseLayout::standard().database("NO_DB"),
            Err(LayoutError::UnknownDatabase(name)) if name == "NO_DB"
        ));
    }

    #[test]
    fn a_missing_file_is_the_standard_layout_but_an_unreadable_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("database_config.json");
        assert_eq!(DatabaseLayout::load_or_standard(&missing).unwrap(), DatabaseLayout::standard());
        // A directory where the file should be: not "missing", an error.
        std::fs::create_dir(&missing).unwrap();
        assert!(matches!(DatabaseLayout::load_or_standard(&missing), Err(LayoutError::Read { .. })));
    }

    #[test]
    fn namespaces_are_localhost_or_asic_n() {
        assert_eq!(Namespace::parse("localhost"), Some(Namespace::Default));
        assert_eq!(Namespace::parse("asic3"), Some(Namespace::Asic(3)));
        assert_eq!(Namespace::parse("asicX"), None);
        assert_eq!(Namespace::Asic(1).to_string(), "asic1");
    }

    #[test]
    fn the_global_layout_reads_each_asic_file_relative_to_itself() {
        let dir = tempfile::tempdir().unwrap();
        let sonic_db = dir.path().join("redis/sonic-db");
        std::fs::create_dir_all(&sonic_db).unwrap();
        std::fs::create_dir_all(dir.path().join("redis0/sonic-db")).unwrap();
        std::fs::write(sonic_db.join("database_config.json"), SAMPLE).unwrap();
        let asic0 = SAMPLE.replace("/var/run/redis/redis.sock", "/var/run/redis0/redis.sock");
        std::fs::write(dir.path().join("redis0/sonic-db/database_config.json"), asic0).unwrap();
        let global = r#"{"INCLUDES": [
            {"include": "database_config.json"},
            {"namespace": "asic0", "include": "../../redis0/sonic-db/database_config.json"},
            {"namespace": "asic1", "include": "../../redis1/sonic-db/database_config.json"}
        ], "VERSION": "1.0"}"#;
        std::fs::write(sonic_db.join("database_global.json"), global).unwrap();
        let layout = GlobalLayout::load(&sonic_db.join("database_global.json")).unwrap();
        // asic1's file is absent: left out, as swss-common does.
        assert_eq!(layout.namespaces().cloned().collect::<Vec<_>>(), vec![Namespace::Default, Namespace::Asic(0)]);
        let config = layout.namespace(&Namespace::Asic(0)).unwrap().database("CONFIG_DB").unwrap();
        assert_eq!(config.instance.endpoint(), Endpoint::Unix("/var/run/redis0/redis.sock".into()));
        assert!(layout.namespace(&Namespace::Asic(1)).is_err());
    }

    #[test]
    fn the_password_file_is_optional_and_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("passwd");
        assert_eq!(read_password(&path).unwrap(), None);
        std::fs::write(&path, "s3cret\n").unwrap();
        assert_eq!(read_password(&path).unwrap().as_deref(), Some("s3cret"));
    }
}
