//! A typed model of the fields the Kubernetes manifests use: a
//! hand-written subset of apps/v1 DaemonSet and Deployment, core/v1 PodSpec,
//! ConfigMap, ServiceAccount and rbac/v1, with unknown fields refused at
//! every level, so a misspelt or misplaced key fails here rather than being
//! pruned by the API server. Not k8s-openapi: its generated code takes
//! minutes to build for a check of a few files. The full schemas are
//! checked by `kubernetes-validate` in `.ci/run`.

// Every field of the model is there to be parsed (and so checked); not all are read.
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde::Deserialize;

/// A DaemonSet or a Deployment.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Workload {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: WorkloadSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// Deployments only.
    #[serde(default)]
    pub replicas: Option<u32>,
    pub selector: LabelSelector,
    /// DaemonSets.
    #[serde(default)]
    pub update_strategy: Option<UpdateStrategy>,
    /// Deployments.
    #[serde(default)]
    pub strategy: Option<UpdateStrategy>,
    pub template: PodTemplate,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateStrategy {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub rolling_update: Option<RollingUpdate>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RollingUpdate {
    pub max_unavailable: serde_yaml_ng::Value,
    #[serde(default)]
    pub max_surge: Option<serde_yaml_ng::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodTemplate {
    pub metadata: ObjectMeta,
    pub spec: PodSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default)]
    pub service_account_name: Option<String>,
    #[serde(default)]
    pub automount_service_account_token: Option<bool>,
    #[serde(default)]
    pub runtime_class_name: Option<String>,
    #[serde(default)]
    pub host_network: bool,
    #[serde(default)]
    pub dns_policy: Option<String>,
    #[serde(default)]
    pub priority_class_name: Option<String>,
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
    /// Checked by the full schema only.
    #[serde(default)]
    pub affinity: Option<serde_yaml_ng::Value>,
    #[serde(default)]
    pub termination_grace_period_seconds: Option<u32>,
    #[serde(default)]
    pub security_context: Option<PodSecurityContext>,
    pub containers: Vec<Container>,
    #[serde(default)]
    pub volumes: Vec<Volume>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodSecurityContext {
    pub fs_group: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Toleration {
    pub key: String,
    pub operator: String,
    #[serde(default)]
    pub effect: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Container {
    pub name: String,
    pub image: String,
    #[serde(default)]
    pub image_pull_policy: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Vec<EnvVar>,
    #[serde(default)]
    pub ports: Vec<ContainerPort>,
    #[serde(default)]
    pub liveness_probe: Option<Probe>,
    #[serde(default)]
    pub readiness_probe: Option<Probe>,
    #[serde(default)]
    pub resources: Option<Resources>,
    #[serde(default)]
    pub security_context: Option<SecurityContext>,
    #[serde(default)]
    pub volume_mounts: Vec<VolumeMount>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnvVar {
    pub name: String,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub value_from: Option<EnvSource>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnvSource {
    pub field_ref: FieldRef,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FieldRef {
    pub field_path: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ContainerPort {
    pub name: String,
    pub container_port: u16,
    pub protocol: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Probe {
    pub http_get: HttpGet,
    #[serde(default)]
    pub initial_delay_seconds: Option<u32>,
    #[serde(default)]
    pub period_seconds: Option<u32>,
    #[serde(default)]
    pub failure_threshold: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HttpGet {
    pub path: String,
    pub port: u16,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Resources {
    pub requests: BTreeMap<String, String>,
    pub limits: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SecurityContext {
    pub run_as_user: u32,
    #[serde(default)]
    pub run_as_group: Option<u32>,
    #[serde(default)]
    pub run_as_non_root: Option<bool>,
    pub privileged: bool,
    pub allow_privilege_escalation: bool,
    pub read_only_root_filesystem: bool,
    pub capabilities: Capabilities,
    pub seccomp_profile: SeccompProfile,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Capabilities {
    pub drop: Vec<String>,
    #[serde(default)]
    pub add: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SeccompProfile {
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VolumeMount {
    pub name: String,
    pub mount_path: String,
    #[serde(default)]
    pub read_only: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Volume {
    pub name: String,
    #[serde(default)]
    pub config_map: Option<ConfigMapSource>,
    #[serde(default)]
    pub host_path: Option<HostPath>,
    #[serde(default)]
    pub empty_dir: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigMapSource {
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HostPath {
    pub path: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// A ConfigMap: its files, by key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigMap {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub data: BTreeMap<String, String>,
}

/// A ClusterRole.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterRole {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub rules: Vec<PolicyRule>,
}

#[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyRule {
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
}

impl Volume {
    /// Exactly one source is set.
    pub fn sources(&self) -> usize {
        usize::from(self.config_map.is_some())
            + usize::from(self.host_path.is_some())
            + usize::from(self.empty_dir.is_some())
    }
}
