//! The Kubernetes step of a rail drain: a label and a taint on the Node.
//!
//! Draining rail `N` sets the label `rocemend.io/rail-N=drained` (for
//! selectors and dashboards) and the taint
//! `rocemend.io/rail-N-drained=<incident>:NoSchedule`: pods that need every
//! rail stay off the node, pods that can run without rail `N` tolerate the
//! taint. A taint list has no merge key in a JSON merge patch, so the step
//! GETs the Node, and PATCHes (`application/merge-patch+json`) the whole
//! list with its other taints untouched, carrying the `resourceVersion` it
//! read: if anyone changed the Node in between, the API server answers 409
//! Conflict and the action fails (to be retried) instead of losing their
//! change. Undo removes only this rail's label and taint, the same way.

use std::time::Duration;

use engine::{ActuatorError, Verification};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::http::{HttpError, Url};
use crate::kube::{KubeApi, KubeSettings};
use crate::ActuatorConfigError;

/// The content type of a JSON merge patch (RFC 7386).
pub const MERGE_PATCH: &str = "application/merge-patch+json";

/// How to reach the API server for rail drains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RailKubernetesConfig {
    /// The API server's URL.
    pub api_server: String,
    /// A file holding the bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<std::path::PathBuf>,
    /// The CA of the API server's certificate; required for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<std::path::PathBuf>,
}

/// Talks to one API server.
#[derive(Debug)]
pub struct Kube {
    api: KubeApi,
}

/// The label of rail `rail`.
pub fn label_key(rail: &str) -> String {
    format!("rocemend.io/rail-{rail}")
}

/// The taint key of rail `rail`.
pub fn taint_key(rail: &str) -> String {
    format!("rocemend.io/rail-{rail}-drained")
}

/// What the step reads of a Node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeView {
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// `spec.taints`, as they are.
    pub taints: Vec<Value>,
    /// Our label's value, if set.
    pub label: Option<String>,
}

impl Kube {
    /// Checks the settings.
    pub fn new(config: &RailKubernetesConfig, timeout: Duration) -> Result<Kube, ActuatorConfigError> {
        let settings = KubeSettings {
            table: "kubernetes",
            api_server: &config.api_server,
            token: None,
            token_file: config.token_file.as_deref(),
            ca_file: config.ca_file.as_deref(),
        };
        Ok(Kube { api: KubeApi::new(settings, timeout)? })
    }

    fn node_url(&self, node: &str) -> Url {
        self.api.node_url(node)
    }

    async fn call(&self, method: &str, url: &Url, body: Option<&Value>) -> Result<Value, ActuatorError> {
        let response = self.api.call(method, url, body.map(|b| (MERGE_PATCH, b))).await.map_err(|e| match e {
            HttpError::Timeout(t) => ActuatorError::Failed(format!("{method} {url} timed out after {t:?}")),
            e => ActuatorError::Failed(format!("{method} {url}: {e}")),
        })?;
        if !response.ok() {
            let why = if response.status == 409 { " (the Node changed since it was read; retry)" } else { "" };
            return Err(ActuatorError::Failed(format!(
                "{method} {url} answered {}{why}: {}",
                response.status,
                response.snippet()
            )));
        }
        serde_json::from_slice(&response.body)
            .map_err(|e| ActuatorError::Failed(format!("{method} {url}: the answer is not JSON: {e}")))
    }

    /// GETs the Node.
    pub async fn node(&self, node: &str, rail: &str) -> Result<NodeView, ActuatorError> {
        let object = self.call("GET", &self.node_url(node), None).await?;
        let resource_version = object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| ActuatorError::Failed(format!("node {node} has no metadata.resourceVersion")))?
            .to_string();
        let taints = object.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
        let label = object
            .pointer("/metadata/labels")
            .and_then(|l| l.get(label_key(rail)))
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(NodeView { resource_version, taints, label })
    }

    /// The merge patch that drains (`incident` given) or un-drains (`None`) rail `rail`.
    pub fn patch(view: &NodeView, rail: &str, incident: Option<&str>) -> Value {
        let key = taint_key(rail);
        let mut taints: Vec<Value> =
            view.taints.iter().filter(|t| t.get("key") != Some(&json!(key))).cloned().collect();
        if let Some(incident) = incident {
            taints.push(json!({ "key": key, "value": incident, "effect": "NoSchedule" }));
        }
        let label = if incident.is_some() { json!("drained") } else { Value::Null };
        json!({
            "metadata": { "resourceVersion": view.resource_version, "labels": { label_key(rail): label } },
            "spec": { "taints": taints },
        })
    }

    /// The request text of a PATCH.
    pub fn describe(&self, node: &str, patch: &Value) -> String {
        format!("PATCH {} ({MERGE_PATCH}) {patch}", self.node_url(node))
    }

    /// Sends the PATCH; its text.
    pub async fn send(&self, node: &str, patch: &Value) -> Result<String, ActuatorError> {
        self.call("PATCH", &self.node_url(node), Some(patch)).await?;
        Ok(self.describe(node, patch))
    }
}

/// In effect when our label and taint are both there.
pub fn verify(view: &NodeView, rail: &str) -> Verification {
    let taint = view.taints.iter().any(|t| t.get("key") == Some(&json!(taint_key(rail))));
    match (view.label.as_deref() == Some("drained"), taint) {
        (true, true) => Verification::InEffect,
        (false, false) => Verification::NotInEffect,
        _ => Verification::Changed(format!(
            "only one of {} and the taint {} is on the node",
            label_key(rail),
            taint_key(rail)
        )),
    }
}
