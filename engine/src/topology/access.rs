//! How to reach each switch over gNMI, written once in the inventory and
//! used by every part that talks to switches: the gnmi sensor and the
//! switch actuators (`pfcwd`, `ecn`, `rail`) name switches, the inventory
//! says where they are and how to log in.
//!
//! ```toml
//! [gnmi]                      # for every switch, unless it says otherwise
//! path_style = "auto"
//! credentials_file = "/etc/rocemend/gnmi-credentials.toml"   # mode 0600
//! [gnmi.tls]
//! ca_file = "/etc/rocemend/switch-ca.pem"
//!
//! [[switch]]
//! name = "leaf-rail0"
//! role = "leaf"
//! address = "10.0.0.10:8080"
//! path_style = "sonic-db-origin"   # this one differs
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How a switch wants its SONiC databases named in gNMI requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathStyleSetting {
    /// The database as the request prefix's target, paths from the table:
    /// SONiC's classic telemetry.
    #[default]
    PrefixTarget,
    /// Origin `sonic-db`, the database (then the namespace) as the first
    /// path elements: sonic-gnmi's native paths.
    SonicDbOrigin,
    /// Found from the switch at its first connection: its Capabilities
    /// (and, in the sensor, a Get of a small table in each style).
    Auto,
}

impl PathStyleSetting {
    /// The setting as configs spell it.
    pub fn name(self) -> &'static str {
        match self {
            PathStyleSetting::PrefixTarget => "prefix-target",
            PathStyleSetting::SonicDbOrigin => "sonic-db-origin",
            PathStyleSetting::Auto => "auto",
        }
    }
}

/// TLS to the switches: PEM files.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchTls {
    /// The CA that signed the switches' certificates.
    pub ca_file: PathBuf,
    /// A client certificate, for mutual TLS (with `key_file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<PathBuf>,
    /// The client certificate's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
    /// The name the switches' certificates carry, when it is not the host of
    /// their address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

impl SwitchTls {
    fn resolve(&mut self, base: &Path) {
        resolve(&mut self.ca_file, base);
        if let Some(p) = self.cert_file.as_mut() {
            resolve(p, base);
        }
        if let Some(p) = self.key_file.as_mut() {
            resolve(p, base);
        }
    }
}

/// The inventory's `[gnmi]`: the access settings of every switch that does
/// not set its own.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GnmiDefaults {
    /// See [`SwitchAccess::path_style`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_style: Option<PathStyleSetting>,
    /// See [`SwitchAccess::namespace`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// See [`SwitchAccess::credentials_file`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_file: Option<PathBuf>,
    /// See [`SwitchAccess::tls`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<SwitchTls>,
}

impl GnmiDefaults {
    /// Makes relative file names relative to `base` (the inventory's directory).
    pub(super) fn resolve(&mut self, base: &Path) {
        resolve_files(&mut self.credentials_file, &mut self.tls, base);
    }
}

/// Makes the file names of a credentials file and TLS settings (of
/// `[gnmi]` or of one `[[switch]]`) relative to `base`.
pub(super) fn resolve_files(credentials_file: &mut Option<PathBuf>, tls: &mut Option<SwitchTls>, base: &Path) {
    if let Some(p) = credentials_file.as_mut() {
        resolve(p, base);
    }
    if let Some(t) = tls.as_mut() {
        t.resolve(base);
    }
}

/// Everything needed to open a gNMI session to one switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchAccess {
    /// The switch's name (its `switch` label).
    pub name: String,
    /// `host:port` of its gNMI server.
    pub address: String,
    /// How it names its databases.
    pub path_style: PathStyleSetting,
    /// The namespace element after the database in the `sonic-db-origin`
    /// style (`localhost`; `asic0` on a multi-ASIC switch); none when unset.
    pub namespace: Option<String>,
    /// A TOML file of `username` and `password`, mode 0600.
    pub credentials_file: Option<PathBuf>,
    /// TLS; plain HTTP/2 when absent (a lab only).
    pub tls: Option<SwitchTls>,
}

/// Why a switch cannot be reached by name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AccessError {
    /// No inventory is loaded.
    #[error(
        "switch {name:?} is named, but there is no inventory (the daemon config's `inventory`, or `check --inventory`)"
    )]
    NoInventory {
        /// The switch.
        name: String,
    },
    /// The inventory has no such switch.
    #[error("switch {name:?} is not in the inventory{hint}")]
    Unknown {
        /// The switch.
        name: String,
        /// "; did you mean …?" or empty.
        hint: String,
    },
    /// The inventory's switch has no `address`.
    #[error("switch {name:?} has no `address` in the inventory")]
    NoAddress {
        /// The switch.
        name: String,
    },
}

fn resolve(path: &mut PathBuf, base: &Path) {
    if path.is_relative() {
        *path = base.join(&*path);
    }
}
