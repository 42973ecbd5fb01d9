//! Packaging: the systemd unit passes `systemd-analyze verify` with no
//! warning, and the Kubernetes DaemonSet parses into a typed model of the
//! fields it uses (unknown fields refused at every level, so a misspelt or
//! misplaced key fails here rather than being ignored by the API server's
//! pruning).
//!
//! The model below is a hand-written subset of the Kubernetes API types
//! (apps/v1 DaemonSet, core/v1 PodSpec), not k8s-openapi: that crate's
//! generated code takes minutes to build for a check of one file.

// Every field of the model is there to be parsed (and so checked); not all are read.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn the_systemd_unit_verifies_without_warnings() {
    if Command::new("systemd-analyze").arg("--version").output().is_err() {
        return test_peers::missing("systemd-analyze is not installed (Debian package systemd)");
    }
    let unit = std::fs::read_to_string(repo("packaging/systemd/rocemend.service")).unwrap();
    // verify checks that ExecStart's binary exists: point it at the one just built.
    let unit = unit.replace("/usr/bin/rocemend", env!("CARGO_BIN_EXE_rocemend"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rocemend.service");
    std::fs::write(&path, unit).unwrap();
    let out = Command::new("systemd-analyze").arg("verify").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "systemd-analyze verify failed:\n{stderr}");
    // Unknown keys and bad values are warnings with exit 0: any line about our unit is a failure.
    let about_unit: Vec<&str> = stderr.lines().filter(|l| l.contains("rocemend.service")).collect();
    assert!(about_unit.is_empty(), "systemd-analyze warns about the unit:\n{}", about_unit.join("\n"));
}

#[test]
fn the_unit_grants_only_net_admin() {
    let unit = std::fs::read_to_string(repo("packaging/systemd/rocemend.service")).unwrap();
    let value = |key: &str| -> Vec<String> {
        unit.lines().filter_map(|l| l.strip_prefix(&format!("{key}="))).map(str::to_string).collect()
    };
    assert_eq!(value("CapabilityBoundingSet"), ["CAP_NET_ADMIN"]);
    assert_eq!(value("AmbientCapabilities"), ["CAP_NET_ADMIN"]);
    assert_eq!(value("ProtectSystem"), ["strict"]);
    assert_eq!(value("NoNewPrivileges"), ["yes"]);
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DaemonSet {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: DaemonSetSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ObjectMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DaemonSetSpec {
    selector: LabelSelector,
    #[serde(default)]
    update_strategy: Option<UpdateStrategy>,
    template: PodTemplate,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LabelSelector {
    match_labels: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UpdateStrategy {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    rolling_update: Option<RollingUpdate>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RollingUpdate {
    max_unavailable: serde_yaml_ng::Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PodTemplate {
    metadata: ObjectMeta,
    spec: PodSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PodSpec {
    #[serde(default)]
    service_account_name: Option<String>,
    #[serde(default)]
    host_network: bool,
    #[serde(default)]
    dns_policy: Option<String>,
    #[serde(default)]
    priority_class_name: Option<String>,
    #[serde(default)]
    node_selector: BTreeMap<String, String>,
    #[serde(default)]
    tolerations: Vec<Toleration>,
    #[serde(default)]
    termination_grace_period_seconds: Option<u32>,
    containers: Vec<Container>,
    #[serde(default)]
    volumes: Vec<Volume>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Toleration {
    key: String,
    operator: String,
    #[serde(default)]
    effect: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Container {
    name: String,
    image: String,
    #[serde(default)]
    image_pull_policy: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<EnvVar>,
    #[serde(default)]
    ports: Vec<ContainerPort>,
    #[serde(default)]
    liveness_probe: Option<Probe>,
    #[serde(default)]
    readiness_probe: Option<Probe>,
    #[serde(default)]
    resources: Option<Resources>,
    #[serde(default)]
    security_context: Option<SecurityContext>,
    #[serde(default)]
    volume_mounts: Vec<VolumeMount>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EnvVar {
    name: String,
    #[serde(default)]
    value: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ContainerPort {
    name: String,
    container_port: u16,
    protocol: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Probe {
    http_get: HttpGet,
    #[serde(default)]
    initial_delay_seconds: Option<u32>,
    #[serde(default)]
    period_seconds: Option<u32>,
    #[serde(default)]
    failure_threshold: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct HttpGet {
    path: String,
    port: u16,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Resources {
    requests: BTreeMap<String, String>,
    limits: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SecurityContext {
    run_as_user: u32,
    privileged: bool,
    allow_privilege_escalation: bool,
    read_only_root_filesystem: bool,
    capabilities: Capabilities,
    seccomp_profile: SeccompProfile,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Capabilities {
    drop: Vec<String>,
    add: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SeccompProfile {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct VolumeMount {
    name: String,
    mount_path: String,
    #[serde(default)]
    read_only: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Volume {
    name: String,
    #[serde(default)]
    config_map: Option<ConfigMapSource>,
    #[serde(default)]
    host_path: Option<HostPath>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ConfigMapSource {
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct HostPath {
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

fn daemonset() -> DaemonSet {
    let text = std::fs::read_to_string(repo("packaging/kubernetes/daemonset.yaml")).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("packaging/kubernetes/daemonset.yaml: {e}"))
}

#[test]
fn the_daemonset_parses_and_is_consistent() {
    let ds = daemonset();
    assert_eq!((ds.api_version.as_str(), ds.kind.as_str()), ("apps/v1", "DaemonSet"));
    assert_eq!(ds.metadata.name.as_deref(), Some("rocemend"));
    assert!(ds.metadata.namespace.is_some());
    // The selector must match the pod template, or the API server refuses the DaemonSet.
    for (k, v) in &ds.spec.selector.match_labels {
        assert_eq!(ds.spec.template.metadata.labels.get(k), Some(v), "selector label {k} not on the template");
    }
    let strategy = ds.spec.update_strategy.as_ref().unwrap();
    assert_eq!(strategy.kind, "RollingUpdate");
    assert!(strategy.rolling_update.as_ref().is_some_and(|r| r.max_unavailable.as_u64() == Some(1)));
    let pod = &ds.spec.template.spec;
    assert!(pod.host_network, "the daemon reads and acts on the host's NICs");
    assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirstWithHostNet"));
    assert!(pod.tolerations.iter().any(|t| t.key == "rocemend.io/cordoned"), "must run on nodes it cordoned");
    let volumes: BTreeMap<&str, &Volume> = pod.volumes.iter().map(|v| (v.name.as_str(), v)).collect();
    let c = &pod.containers[0];
    for m in &c.volume_mounts {
        let v = volumes.get(m.name.as_str()).unwrap_or_else(|| panic!("mount {} has no volume", m.name));
        assert!(v.config_map.is_some() != v.host_path.is_some(), "volume {} has exactly one source", v.name);
    }
    let mount = |path: &str| c.volume_mounts.iter().find(|m| m.mount_path == path);
    assert!(mount("/sys").is_some_and(|m| m.read_only), "/sys mounted read-only");
    assert!(mount("/var/lib/rocemend").is_some_and(|m| !m.read_only), "the state directory is writable");
    let sys = volumes["sys"].host_path.as_ref().unwrap();
    assert_eq!((sys.path.as_str(), sys.kind.as_str()), ("/sys", "Directory"));
    let sc = c.security_context.as_ref().unwrap();
    assert!(!sc.privileged && !sc.allow_privilege_escalation && sc.read_only_root_filesystem);
    assert_eq!(sc.capabilities.drop, ["ALL"]);
    assert_eq!(sc.capabilities.add, ["NET_ADMIN"]);
    assert_eq!(sc.seccomp_profile.kind, "RuntimeDefault");
    let metrics = c.ports.iter().find(|p| p.name == "metrics").unwrap().container_port;
    assert_eq!(c.liveness_probe.as_ref().unwrap().http_get.path, "/healthz");
    assert_eq!(c.readiness_probe.as_ref().unwrap().http_get.path, "/readyz");
    assert_eq!(c.liveness_probe.as_ref().unwrap().http_get.port, metrics);
    assert_eq!(c.args, ["run", "--config", "/etc/rocemend/rocemend.toml"]);
    assert!(!c.image.is_empty() && !c.name.is_empty());
    assert!(c.resources.as_ref().is_some_and(|r| r.limits.contains_key("memory") && r.requests.contains_key("cpu")));
}

#[test]
fn the_schema_check_refuses_a_misplaced_key() {
    let text = std::fs::read_to_string(repo("packaging/kubernetes/daemonset.yaml")).unwrap();
    // hostNetwork belongs to the pod spec, not the container: a classic mistake.
    let bad = text.replace("      hostNetwork: true\n", "").replace(
        "          imagePullPolicy: IfNotPresent\n",
        "          imagePullPolicy: IfNotPresent\n          hostNetwork: true\n",
    );
    assert_ne!(bad, text);
    let err = serde_yaml_ng::from_str::<DaemonSet>(&bad).unwrap_err().to_string();
    assert!(err.contains("unknown field `hostNetwork`"), "{err}");
}
