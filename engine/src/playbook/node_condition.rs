//! `[kubernetes_condition]`: the node condition `RoceFabricHealthy` this
//! daemon keeps on its Kubernetes Node, for the tools that read node
//! conditions (node-problem-detector's consumers, schedulers' affinities,
//! remediation controllers). Off when the section is absent.
//!
//! ```toml
//! [kubernetes_condition]
//! api_server = "https://10.0.0.1:6443"
//! token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token"
//! ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
//! heartbeat = "1m"          # the condition is written again at least this often
//! severity = "critical"     # the lowest rule severity that makes the node unhealthy
//! ```
//!
//! The engine only declares and checks the settings; the binary builds the
//! reporter from them (the API server's client is the actuators').

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Playbook;
use crate::config::duration::show;
use crate::config::{Key, TomlError};
use crate::contracts::Severity;

/// The shortest heartbeat: each one is a write of the Node's status, kept
/// by etcd and sent to every watcher of Nodes; a cluster of thousands of
/// nodes beating every second would load its API server for nothing (the
/// kubelet itself reports every 10 s).
pub const MIN_HEARTBEAT: Duration = Duration::from_secs(10);

/// The longest heartbeat: a consumer that judges a condition stale by its
/// `lastHeartbeatTime` should learn of a daemon gone quiet within the hour.
pub const MAX_HEARTBEAT: Duration = Duration::from_secs(3600);

/// The settings of `[kubernetes_condition]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesCondition {
    /// The API server's URL, `https://host:port` (or `http://` for a local
    /// proxy such as `kubectl proxy`).
    pub api_server: String,
    /// The bearer token, inline. Prefer `token_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// A file holding the bearer token (a service account token), read
    /// again whenever it changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// The PEM file of the CA that signed the API server's certificate;
    /// required for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// The Node object to report on. Unset: the daemon's node (the config's
    /// `node`, else `$ROCEMEND_NODE`, which the DaemonSet sets to the pod's
    /// `spec.nodeName`, else the host's short name). Incidents count when
    /// their subject's `node` label is the daemon's node either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// How often the condition is written while nothing changes (its
    /// `lastHeartbeatTime`), 10s to 1h; a write that failed is tried again
    /// then.
    #[serde(default = "default_heartbeat", with = "crate::config::duration")]
    pub heartbeat: Duration,
    /// The lowest severity of a firing rule that makes the node unhealthy:
    /// `info`, `warning` or `critical`.
    #[serde(default = "default_severity")]
    pub severity: Severity,
    /// How long one PATCH may take; below `heartbeat`.
    #[serde(default = "default_timeout", with = "crate::config::duration")]
    pub timeout: Duration,
}

fn default_heartbeat() -> Duration {
    Duration::from_secs(60)
}

fn default_severity() -> Severity {
    Severity::Critical
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

impl KubernetesCondition {
    /// Resolves relative `token_file` and `ca_file` against `base` (the
    /// playbook's directory), as actuators' files are.
    pub(super) fn resolve_paths(&mut self, base: &Path) {
        for path in [&mut self.token_file, &mut self.ca_file].into_iter().flatten() {
            if path.is_relative() {
                *path = base.join(&*path);
            }
        }
    }
}

/// The heartbeat is within its bounds and the timeout above 0 and below it:
/// a PATCH that may outlast the heartbeat would let writes pile up.
pub(super) fn check(p: &Playbook, errors: &mut Vec<TomlError>) {
    let Some(c) = &p.kubernetes_condition else { return };
    let at = |key: &'static str| [Key::from("kubernetes_condition"), key.into()];
    let heartbeat_ok = (MIN_HEARTBEAT..=MAX_HEARTBEAT).contains(&c.heartbeat);
    if !heartbeat_ok {
        errors.push(p.error(
            &at("heartbeat"),
            format!(
                "kubernetes_condition.heartbeat = {:?}: expected {} to {}",
                show(c.heartbeat),
                show(MIN_HEARTBEAT),
                show(MAX_HEARTBEAT)
            ),
        ));
    }
    // Against a heartbeat refused above, the timeout would be refused for it
    // too: one mistake, one error.
    if heartbeat_ok && (c.timeout.is_zero() || c.timeout >= c.heartbeat) {
        errors.push(p.error(
            &at("timeout"),
            format!(
                "kubernetes_condition.timeout = {:?}: expected above 0 and below the heartbeat ({})",
                show(c.timeout),
                show(c.heartbeat)
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_off_when_absent_and_has_defaults() {
        assert_eq!(Playbook::parse("name = \"t\"\n", "p.toml").unwrap().kubernetes_condition, None);
        let p =
            Playbook::parse("name = \"t\"\n[kubernetes_condition]\napi_server = \"http://127.0.0.1:8001\"\n", "p.toml")
                .unwrap();
        let c = p.kubernetes_condition.unwrap();
        assert_eq!(
            (c.heartbeat, c.severity, c.timeout),
            (Duration::from_secs(60), Severity::Critical, default_timeout())
        );
        assert_eq!(c.node, None);
    }

    #[test]
    fn bad_values_are_refused_at_their_line() {
        let head = "name = \"t\"\n[kubernetes_condition]\napi_server = \"http://k\"\n";
        let cases = [
            ("heartbeat = \"1s\"\n", (4, "kubernetes_condition.heartbeat = \"1s\": expected 10s to 1h")),
            ("timeout = \"2m\"\n", (4, "below the heartbeat (1m)")),
            ("severity = \"fatal\"\n", (4, "unknown variant `fatal`")),
            ("heartbeet = \"1m\"\n", (4, "unknown field `heartbeet`")),
        ];
        for (tail, (line, message)) in cases {
            let errors = Playbook::parse(&format!("{head}{tail}"), "p.toml").unwrap_err();
            assert_eq!(errors.len(), 1, "{tail}: {errors}");
            assert_eq!(errors[0].line, line, "{tail}: {}", errors[0]);
            assert!(errors[0].message.contains(message), "{tail}: {}", errors[0]);
        }
    }

    #[test]
    fn relative_files_are_the_playbooks() {
        let mut c: KubernetesCondition =
            toml::from_str("api_server = \"https://k\"\ntoken_file = \"token\"\nca_file = \"/etc/ca.crt\"\n").unwrap();
        c.resolve_paths(Path::new("/etc/rocemend/playbooks"));
        assert_eq!(c.token_file.as_deref(), Some(Path::new("/etc/rocemend/playbooks/token")));
        assert_eq!(c.ca_file.as_deref(), Some(Path::new("/etc/ca.crt")), "an absolute path stays");
    }
}
