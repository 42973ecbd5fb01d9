//! The `[gnmi]` settings the switch actuators share: which switches they may
//! change (an allow-list), how to log in, TLS and the timeout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use engine::SECOND;
use gnmi_proto::TlsConfig;
use serde::{Deserialize, Serialize};

use super::Sonic;
use crate::ConfigError;

/// The longest timeout accepted for one gNMI call: a switch that needs more
/// than a minute to answer a Set of a few fields is not healthy, and the
/// action holds a dispatch slot while it waits.
const MAX_TIMEOUT: i64 = 60 * SECOND;

/// How to reach the switches, as a playbook gives it.
///
/// ```toml
/// [actuator.gnmi]
/// switches = { leaf-rail0 = "10.0.0.10:8080", leaf-rail1 = "10.0.0.11:8080" }
/// credentials_file = "/etc/rocemend/gnmi-credentials.toml"
/// timeout = "5s"
/// [actuator.gnmi.tls]
/// ca_file = "/etc/rocemend/switch-ca.pem"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SonicConfig {
    /// Switch name (as the actions' `switch` label names it) → gNMI address
    /// (`host:port`). Only these switches are ever changed: an action naming
    /// any other is refused as invalid.
    pub switches: BTreeMap<String, String>,
    /// A TOML file with `username` and `password`, sent as gRPC metadata the
    /// way SONiC's telemetry server expects them. Kept out of the playbook,
    /// which more people read than a secret should reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_file: Option<PathBuf>,
    /// TLS; plain HTTP/2 when absent (a lab or a loopback simulator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<GnmiTls>,
    /// How long connecting and each call may take, e.g. `"5s"`; at most a minute.
    #[serde(default = "default_timeout")]
    pub timeout: String,
    /// How the switches address CONFIG_DB: `prefix-target` (the database as
    /// the request's prefix target, classic SONiC telemetry), `sonic-db-origin`
    /// (origin `sonic-db`, `CONFIG_DB/localhost/…`, sonic-gnmi's mixed schema
    /// that also saves the change) or `auto` (from each switch's Capabilities).
    #[serde(default)]
    pub path_style: super::PathStyleSetting,
}

/// TLS settings of the switch connections, PEM files.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GnmiTls {
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

fn default_timeout() -> String {
    "5s".into()
}

fn read(path: &Path, setting: &str) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|source| ConfigError::Read { setting: setting.into(), path: path.into(), source })
}

impl SonicConfig {
    /// Validates the settings, reads the files they name, and builds the client.
    pub fn build(&self) -> Result<Sonic, ConfigError> {
        let timeout = crate::error::bounded_duration("gnmi.timeout", &self.timeout, MAX_TIMEOUT)?;
        if self.switches.is_empty() {
            return Err(ConfigError::Empty {
                setting: "gnmi.switches".into(),
                need: "name the switches this actuator may change",
            });
        }
        for (name, address) in &self.switches {
            if name.is_empty() || address.is_empty() || address.chars().any(|c| c.is_whitespace()) {
                return Err(ConfigError::Entry {
                    setting: "gnmi.switches".into(),
                    key: name.clone(),
                    reason: format!("= {address:?} is not a name and a host:port"),
                });
            }
        }
        let credentials = self.credentials_file.as_deref().map(credentials).transpose()?;
        let tls = self.tls.as_ref().map(GnmiTls::build).transpose()?;
        Ok(Sonic::new(self.switches.clone(), credentials, tls, timeout, self.path_style))
    }
}

/// The username and password in the credentials file at `path`.
fn credentials(path: &Path) -> Result<(String, String), ConfigError> {
    let c = gnmi_proto::credentials::read_file(path)
        .map_err(|source| ConfigError::Credentials { setting: "gnmi.credentials_file".into(), source })?;
    Ok((c.username, c.password))
}

impl GnmiTls {
    /// The TLS settings, with the PEM files read.
    fn build(&self) -> Result<TlsConfig, ConfigError> {
        let identity = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => Some((read(cert, "gnmi.tls.cert_file")?, read(key, "gnmi.tls.key_file")?)),
            (None, None) => None,
            _ => {
                return Err(ConfigError::Conflict {
                    setting: "gnmi.tls".into(),
                    reason: "give cert_file and key_file together",
                })
            }
        };
        Ok(TlsConfig { ca_pem: Some(read(&self.ca_file, "gnmi.tls.ca_file")?), identity, domain: self.domain.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_and_credentials_read_from_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let cred = dir.path().join("cred.toml");
        std::fs::write(&cred, "username = \"admin\"\npassword = \"pw\"\n").unwrap();
        std::fs::set_permissions(&cred, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let text = format!("switches = {{ leaf-rail0 = \"127.0.0.1:1\" }}\ncredentials_file = {:?}\n", cred);
        let config: SonicConfig = toml::from_str(&text).unwrap();
        let sonic = config.build().unwrap();
        assert_eq!(sonic.address("leaf-rail0").unwrap(), "127.0.0.1:1");
        assert!(sonic.address("leaf-rail9").is_err());
        for (text, expected) in [
            ("switches = {}", "gnmi.switches is empty"),
            ("switches = { a = \"x:1\" }\ntimeout = \"2m\"", "at most 60s"),
            ("switches = { a = \"x 1\" }", "is not a name and a host:port"),
            ("switches = { a = \"x:1\" }\ncredentials_file = \"/nonexistent\"", "gnmi.credentials_file: /nonexistent"),
            ("switches = { a = \"x:1\" }\n[tls]\nca_file = \"/ca.pem\"\ncert_file = \"/c\"", "together"),
        ] {
            let config: SonicConfig = toml::from_str(text).unwrap();
            let err = config.build().err().unwrap().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
