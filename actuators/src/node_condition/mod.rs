//! The node condition `RoceFabricHealthy`, kept on this daemon's Kubernetes
//! Node for the tools clusters already run (node-problem-detector's
//! consumers, remediation controllers, schedulers' affinities), the way
//! node-problem-detector keeps its own: a strategic-merge `PATCH
//! /api/v1/nodes/<node>/status` of one entry of `status.conditions`, with
//! `lastHeartbeatTime` renewed at every write and `lastTransitionTime` only
//! when the status changes.
//!
//! - `False` while a rule of at least the playbook's severity fires for a
//!   subject whose `node` label is this daemon's node; the reason is the
//!   leading incident's rule in CamelCase (`PfcStorm`), the message lists
//!   the incidents;
//! - `True`, reason `RoceFabricHealthy`, while none does.
//!
//! Not an [`Actuator`](engine::Actuator): the condition reports, it changes
//! nothing a safety policy should count, and it is written whatever the
//! mode (a dry run still tells the cluster what it sees).
//!
//! - [`condition`]: the incidents, the condition they make, its PATCH body;
//! - [`reporter`]: the task that writes it, and the engine loop's [`Feed`].

pub mod condition;
pub mod reporter;

use engine::playbook::KubernetesCondition;

pub use condition::{Condition, Incident, Incidents};
pub use reporter::{Clock, Feed, ReportError, Reporter};

use crate::kube::{KubeApi, KubeSettings};
use crate::ActuatorConfigError;

/// The table of the settings, naming them in errors.
const TABLE: &str = "kubernetes_condition";

/// Checks `config` as [`build`] does: the API server's URL, the token and
/// CA files, the Node's name.
pub fn check(config: &KubernetesCondition) -> Result<(), ActuatorConfigError> {
    api(config)?;
    if let Some(node) = &config.node {
        check_node(node)?;
    }
    Ok(())
}

/// The reporter of `config` for the daemon whose node is `daemon_node`:
/// the Node is the config's `node`, else `daemon_node`.
pub fn build(config: &KubernetesCondition, daemon_node: &str) -> Result<Reporter, ActuatorConfigError> {
    let node = config.node.clone().unwrap_or_else(|| daemon_node.to_string());
    check_node(&node)?;
    Ok(Reporter::new(api(config)?, node, daemon_node.to_string(), config.severity, config.heartbeat))
}

fn api(config: &KubernetesCondition) -> Result<KubeApi, ActuatorConfigError> {
    let settings = KubeSettings {
        table: TABLE,
        api_server: &config.api_server,
        token: config.token.as_deref(),
        token_file: config.token_file.as_deref(),
        ca_file: config.ca_file.as_deref(),
    };
    KubeApi::new(settings, config.timeout)
}

/// The Node's name reaches a URL path.
fn check_node(node: &str) -> Result<(), ActuatorConfigError> {
    crate::cordon::check_node(node).map_err(|source| ActuatorConfigError::Unsafe {
        setting: format!("{TABLE}.node"),
        value: node.to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> KubernetesCondition {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn settings_are_refused_naming_the_key() {
        let cases = [
            ("api_server = \"https://k:6443\"", "kubernetes_condition.ca_file", "an https api_server needs ca_file"),
            ("api_server = \"ftp://k\"", "kubernetes_condition.api_server", "ftp"),
            ("api_server = \"http://k\"\ntoken = \"a\"\ntoken_file = \"/t\"", "kubernetes_condition", "not both"),
            ("api_server = \"http://k\"\nnode = \"-rf\"", "kubernetes_condition.node", "-rf"),
            (
                "api_server = \"http://k\"\ntoken_file = \"/nonexistent\"",
                "kubernetes_condition.token_file",
                "/nonexistent",
            ),
        ];
        for (text, setting, message) in cases {
            let err = check(&config(text)).expect_err(text);
            assert_eq!(err.setting(), setting, "{text}: {err}");
            assert!(err.to_string().contains(message), "{text}: {err}");
        }
        assert!(check(&config("api_server = \"http://127.0.0.1:8001\"\nnode = \"gpu-01.example\"")).is_ok());
    }

    #[test]
    fn the_node_is_the_daemons_unless_set() {
        let r = build(&config("api_server = \"http://127.0.0.1:8001\""), "gpu-01").unwrap();
        assert_eq!(
            format!("{r:?}"),
            "Reporter { api: KubeApi { base: \"http://127.0.0.1:8001/\", token: \"none\", .. }, node: \"gpu-01\", .. }"
        );
        let r = build(&config("api_server = \"http://127.0.0.1:8001\"\nnode = \"gpu-01.example\""), "gpu-01").unwrap();
        assert!(format!("{r:?}").contains("node: \"gpu-01.example\""));
        assert_eq!(r.daemon_node(), "gpu-01", "incidents are still the daemon node's");
    }
}
