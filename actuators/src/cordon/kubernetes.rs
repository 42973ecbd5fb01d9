//! Cordoning through Kubernetes, with the API server's REST API directly
//! ([`crate::kube`], which also keeps a rotating token fresh).
//!
//! - cordon: `PATCH /api/v1/nodes/<node>` (`application/strategic-merge-patch+json`)
//!   setting `spec.unschedulable: true`, the taint
//!   `rocemend.io/cordoned=<incident>:NoSchedule` and the annotation
//!   `rocemend.io/incident`; with `drain = true`, then every pod on the node
//!   (`GET /api/v1/pods?fieldSelector=spec.nodeName=<node>`) except DaemonSet
//!   and mirror pods is evicted (`POST …/pods/<pod>/eviction`, a `policy/v1`
//!   Eviction). An eviction a PodDisruptionBudget refuses (429) is reported
//!   in the outcome, not retried here: the engine's next proposal tries again.
//! - verify: `GET /api/v1/nodes/<node>`; our taint and unschedulable is in
//!   effect, neither is not, anything else is someone else's change.
//! - undo: removes our taint and annotation, and `spec.unschedulable` only if
//!   the node was schedulable before the cordon.

use std::time::Duration;

use engine::{ActuatorError, Outcome, Prior, Verification};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::config::KubernetesConfig;
use super::Request;
use crate::http::{HttpError, Response, Url};
use crate::kube::{KubeApi, KubeSettings};
use crate::ActuatorConfigError;

/// The taint rocemend sets; its value is the incident.
pub const TAINT_KEY: &str = "rocemend.io/cordoned";
/// The annotation rocemend sets; its value is the incident.
pub const ANNOTATION: &str = "rocemend.io/incident";
/// The content type of a strategic merge patch.
pub const STRATEGIC_MERGE: &str = "application/strategic-merge-patch+json";
/// At most this many pods are evicted per cordon: more than any GPU node
/// runs, and a bound on the requests one action makes.
const MAX_EVICTIONS: usize = 256;

/// Talks to one API server.
#[derive(Debug)]
pub struct Kubernetes {
    api: KubeApi,
    drain: bool,
}

impl Kubernetes {
    pub(super) fn new(config: &KubernetesConfig, timeout: Duration) -> Result<Kubernetes, ActuatorConfigError> {
        let settings = KubeSettings {
            table: "kubernetes",
            api_server: &config.api_server,
            token: config.token.as_deref(),
            token_file: config.token_file.as_deref(),
            ca_file: config.ca_file.as_deref(),
        };
        Ok(Kubernetes { api: KubeApi::new(settings, timeout)?, drain: config.drain })
    }

    fn node_url(&self, node: &str) -> Url {
        self.api.node_url(node)
    }

    fn pods_url(&self, node: &str) -> Url {
        self.api.base().join(&format!("/api/v1/pods?fieldSelector=spec.nodeName%3D{node}"))
    }

    fn taint_value(request: &Request) -> String {
        request.incident.clone().unwrap_or_else(|| "unknown".into())
    }

    /// The PATCH body of a cordon.
    pub fn cordon_patch(request: &Request) -> Value {
        let incident = Self::taint_value(request);
        json!({
            "metadata": { "annotations": { ANNOTATION: incident } },
            "spec": {
                "unschedulable": true,
                "taints": [{ "key": TAINT_KEY, "value": incident, "effect": "NoSchedule" }],
            },
        })
    }

    /// The PATCH body of the undo: our taint and annotation go; the
    /// unschedulable flag goes only if we set it.
    pub fn uncordon_patch(was_unschedulable: bool) -> Value {
        let mut spec = json!({ "taints": [{ "key": TAINT_KEY, "$patch": "delete" }] });
        if !was_unschedulable {
            spec["unschedulable"] = Value::Null;
        }
        json!({ "metadata": { "annotations": { ANNOTATION: null } }, "spec": spec })
    }

    fn describe(method: &str, url: &Url, body: Option<&Value>) -> String {
        match body {
            Some(body) => format!("{method} {url} {body}"),
            None => format!("{method} {url}"),
        }
    }

    pub(super) fn plan_cordon(&self, request: &Request) -> Vec<String> {
        let mut plan = vec![Self::describe("PATCH", &self.node_url(&request.node), Some(&Self::cordon_patch(request)))];
        if self.drain {
            plan.push(Self::describe("GET", &self.pods_url(&request.node), None));
            plan.push(format!(
                "POST {} for each pod listed, except DaemonSet and mirror pods",
                self.api.base().join("/api/v1/namespaces/<namespace>/pods/<pod>/eviction")
            ));
        }
        plan
    }

    pub(super) fn plan_uncordon(&self, request: &Request, applied: &Outcome) -> Result<Vec<String>, ActuatorError> {
        let patch = Self::uncordon_patch(was_unschedulable(applied));
        Ok(vec![Self::describe("PATCH", &self.node_url(&request.node), Some(&patch))])
    }

    async fn call(&self, method: &str, url: &Url, body: Option<(&str, &Value)>) -> Result<Response, ActuatorError> {
        self.api.call(method, url, body).await.map_err(|e| match e {
            HttpError::Timeout(t) => ActuatorError::Timeout(u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            e => ActuatorError::Failed(format!("{method} {url}: {e}")),
        })
    }

    async fn call_ok(&self, method: &str, url: &Url, body: Option<(&str, &Value)>) -> Result<Value, ActuatorError> {
        let response = self.call(method, url, body).await?;
        if !response.ok() {
            return Err(ActuatorError::Failed(format!(
                "{method} {url} answered {}: {}",
                response.status,
                response.snippet()
            )));
        }
        serde_json::from_slice(&response.body)
            .map_err(|e| ActuatorError::Failed(format!("{method} {url}: the answer is not JSON: {e}")))
    }

    async fn node(&self, node: &str) -> Result<NodeView, ActuatorError> {
        Ok(NodeView::from(&self.call_ok("GET", &self.node_url(node), None).await?))
    }

    pub(super) async fn cordon(&self, request: &Request) -> Result<Outcome, ActuatorError> {
        let before = self.node(&request.node).await?;
        if before.unschedulable && before.taint.is_none() {
            return Err(ActuatorError::Invalid(format!(
                "node {} is already cordoned by someone else (unschedulable, without our taint)",
                request.node
            )));
        }
        let patch = Self::cordon_patch(request);
        let url = self.node_url(&request.node);
        self.call_ok("PATCH", &url, Some((STRATEGIC_MERGE, &patch))).await?;
        let mut summary = format!("cordoned {} (taint {TAINT_KEY}={})", request.node, Self::taint_value(request));
        if self.drain {
            summary.push_str(&self.evict_all(&request.node).await?);
        }
        Ok(Outcome { summary, requests: self.plan_cordon(request), prior: Some(Prior::of(&before)?) })
    }

    /// Evicts the node's pods; the summary of what happened, pod by pod.
    async fn evict_all(&self, node: &str) -> Result<String, ActuatorError> {
        let pods = self.call_ok("GET", &self.pods_url(node), None).await?;
        let items = pods.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
        let (mut evicted, mut blocked, mut failed, mut skipped) = (Vec::new(), Vec::new(), Vec::new(), 0);
        for pod in items.iter().take(MAX_EVICTIONS) {
            let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            let namespace = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
            let daemon = pod
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|owners| owners.iter().any(|o| o.get("kind") == Some(&json!("DaemonSet"))));
            let mirror = pod.pointer("/metadata/annotations/kubernetes.io~1config.mirror").is_some();
            if daemon || mirror || super::check_node(name).is_err() || super::check_node(namespace).is_err() {
                skipped += 1;
                continue;
            }
            let url = self.api.base().join(&format!("/api/v1/namespaces/{namespace}/pods/{name}/eviction"));
            let body = json!({
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": { "name": name, "namespace": namespace },
            });
            let pod_name = format!("{namespace}/{name}");
            match self.call("POST", &url, Some(("application/json", &body))).await {
                Ok(r) if r.ok() || r.status == 404 => evicted.push(pod_name),
                // A PodDisruptionBudget says not now.
                Ok(r) if r.status == 429 => blocked.push(pod_name),
                Ok(r) => failed.push(format!("{pod_name} ({}: {})", r.status, r.snippet())),
                Err(e) => failed.push(format!("{pod_name} ({e})")),
            }
        }
        let list = |v: &Vec<String>| if v.is_empty() { "none".to_string() } else { v.join(", ") };
        Ok(format!(
            "; evicted: {}; blocked by a disruption budget (retry later): {}; failed: {}; left alone: {skipped}",
            list(&evicted),
            list(&blocked),
            list(&failed)
        ))
    }

    pub(super) async fn verify(
        &self,
        request: &Request,
        _applied: Option<&Outcome>,
    ) -> Result<Verification, ActuatorError> {
        let node = self.node(&request.node).await?;
        let ours = node.taint.as_deref() == Some(Self::taint_value(request).as_str());
        Ok(match (node.unschedulable, &node.taint) {
            (true, Some(_)) if ours => Verification::InEffect,
            (false, None) => Verification::NotInEffect,
            (true, None) => Verification::Changed("cordoned by someone else (our taint is gone)".into()),
            (false, Some(_)) => Verification::Changed("uncordoned by someone else (our taint is still there)".into()),
            (true, Some(other)) => Verification::Changed(format!("cordoned for another incident: {other}")),
        })
    }

    pub(super) async fn uncordon(&self, request: &Request, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let node = self.node(&request.node).await?;
        if node.taint.is_none() {
            return Err(ActuatorError::Invalid(format!(
                "node {} no longer carries our taint {TAINT_KEY}; not uncordoning it",
                request.node
            )));
        }
        let patch = Self::uncordon_patch(was_unschedulable(applied));
        self.call_ok("PATCH", &self.node_url(&request.node), Some((STRATEGIC_MERGE, &patch))).await?;
        Ok(Outcome {
            summary: format!("uncordoned {}", request.node),
            requests: self.plan_uncordon(request, applied)?,
            prior: Some(Prior::of(&node)?),
        })
    }
}

/// Whether the outcome of a cordon says the node was unschedulable before;
/// an outcome without a readable prior says it was not.
fn was_unschedulable(applied: &Outcome) -> bool {
    applied.prior.as_ref().and_then(|p| p.read::<NodeView>().ok()).is_some_and(|v| v.unschedulable)
}

/// What a cordon cares about in a Node object; a cordon's prior
/// (`{"unschedulable": …, "taint": …}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct NodeView {
    unschedulable: bool,
    /// The value of our taint, if the node has it.
    taint: Option<String>,
}

impl From<&Value> for NodeView {
    fn from(node: &Value) -> NodeView {
        let unschedulable = node.pointer("/spec/unschedulable").and_then(Value::as_bool).unwrap_or(false);
        let taint = node
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .and_then(|taints| taints.iter().find(|t| t.get("key") == Some(&json!(TAINT_KEY))))
            .map(|t| t.get("value").and_then(Value::as_str).unwrap_or_default().to_string());
        NodeView { unschedulable, taint }
    }
}
