//! The kustomize base of packaging/kubernetes/base: each manifest parses
//! into the typed model, the DaemonSet and the aggregators' Deployment mount
//! what their actuators need, the RBAC grants exactly the calls of the
//! cordon and rail actuators, and the configs, laid out from the ConfigMaps
//! at the pod's mount paths, pass `rocemend check`, their rules passing
//! `rocemend test`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{bin, repo, text};

use super::configmaps::generated;
use super::model::{ClusterRole, PolicyRule, Volume, Workload};

const BASE: &str = "packaging/kubernetes/base";

fn read(path: &str) -> String {
    std::fs::read_to_string(repo(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn workload(file: &str) -> Workload {
    let path = format!("{BASE}/{file}");
    serde_yaml_ng::from_str(&read(&path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The documents of a multi-document YAML file, as values.
fn documents(path: &str) -> Vec<serde_yaml_ng::Value> {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(&read(path))
        .map(|d| serde_yaml_ng::Value::deserialize(d).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

/// Volumes and mounts agree, each volume has one source, the selector
/// matches the template, and the probes are on the metrics port.
fn check_pod(w: &Workload) {
    let name = w.metadata.name.clone().unwrap();
    assert_eq!(w.metadata.namespace.as_deref(), Some("rocemend"), "{name}");
    for (k, v) in &w.spec.selector.match_labels {
        assert_eq!(w.spec.template.metadata.labels.get(k), Some(v), "{name}: selector label {k} not on the template");
    }
    let pod = &w.spec.template.spec;
    let volumes: BTreeMap<&str, &Volume> = pod.volumes.iter().map(|v| (v.name.as_str(), v)).collect();
    let c = &pod.containers[0];
    for m in &c.volume_mounts {
        let v = volumes.get(m.name.as_str()).unwrap_or_else(|| panic!("{name}: mount {} has no volume", m.name));
        assert_eq!(v.sources(), 1, "{name}: volume {} has exactly one source", v.name);
    }
    assert_eq!(c.image, "rocemend", "{name}: the image kustomization.yaml's `images` rewrites");
    let metrics = c.ports.iter().find(|p| p.name == "metrics").unwrap().container_port;
    assert_eq!(c.liveness_probe.as_ref().unwrap().http_get.path, "/healthz");
    assert_eq!(c.readiness_probe.as_ref().unwrap().http_get.path, "/readyz");
    assert_eq!(c.liveness_probe.as_ref().unwrap().http_get.port, metrics);
    assert_eq!(c.args, ["run", "--config", "/etc/rocemend/config/rocemend.toml"]);
    assert!(c.resources.as_ref().is_some_and(|r| r.limits.contains_key("memory") && r.requests.contains_key("cpu")));
    let sc = c.security_context.as_ref().unwrap();
    assert!(!sc.privileged && !sc.allow_privilege_escalation && sc.read_only_root_filesystem, "{name}");
    assert_eq!(sc.capabilities.drop, ["ALL"]);
    assert_eq!(sc.seccomp_profile.kind, "RuntimeDefault");
}

#[test]
fn the_daemonset_mounts_what_its_actuators_need() {
    let ds = workload("daemonset.yaml");
    assert_eq!((ds.api_version.as_str(), ds.kind.as_str()), ("apps/v1", "DaemonSet"));
    check_pod(&ds);
    let strategy = ds.spec.update_strategy.as_ref().unwrap();
    assert!(strategy.rolling_update.as_ref().is_some_and(|r| r.max_unavailable.as_u64() == Some(1)));
    let pod = &ds.spec.template.spec;
    assert!(pod.host_network, "the daemon reads and acts on the host's NICs");
    assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirstWithHostNet"));
    assert_eq!(pod.runtime_class_name.as_deref(), Some("nvidia"), "NVML comes with the NVIDIA runtime");
    assert_eq!(pod.service_account_name.as_deref(), Some("rocemend-node"));
    assert!(pod.tolerations.iter().any(|t| t.key == "rocemend.io/cordoned"), "must run on nodes it cordoned");
    let c = &pod.containers[0];
    let node = c.env.iter().find(|e| e.name == "ROCEMEND_NODE").expect("ROCEMEND_NODE is set");
    assert_eq!(node.value_from.as_ref().map(|s| s.field_ref.field_path.as_str()), Some("spec.nodeName"));
    let volumes: BTreeMap<&str, &Volume> = pod.volumes.iter().map(|v| (v.name.as_str(), v)).collect();
    let host = |mount: &str| {
        let m = c.volume_mounts.iter().find(|m| m.mount_path == mount).unwrap_or_else(|| panic!("nothing at {mount}"));
        let path = volumes[m.name.as_str()].host_path.as_ref().map(|h| h.path.clone());
        (path, m.read_only)
    };
    assert_eq!(host("/sys"), (Some("/sys".into()), true), "the sensors' sysfs, read-only");
    assert_eq!(host("/host/sys"), (Some("/sys".into()), false), "ecn.dcqcn's sysfs, writable");
    assert_eq!(host("/var/lib/rocemend"), (Some("/var/lib/rocemend".into()), false), "the state, on the host");
    assert_eq!(host("/etc/rocemend/nccl"), (Some("/etc/rocemend/nccl".into()), false), "the NCCL file's directory");
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!(sc.capabilities.add, ["NET_ADMIN"]);
    // The node playbook writes where the DaemonSet mounts.
    let playbook = std::fs::read_to_string(repo("packaging/kubernetes/config/node-playbook.toml")).unwrap();
    assert!(playbook.contains("env_file = \"/etc/rocemend/nccl/nccl.env\""));
    assert!(playbook.contains("sysfs_root = \"/host/sys/class/net\""));
}

#[test]
fn the_aggregators_share_their_switches_and_hold_nothing() {
    let d = workload("aggregator.yaml");
    assert_eq!((d.api_version.as_str(), d.kind.as_str()), ("apps/v1", "Deployment"));
    check_pod(&d);
    assert!(d.spec.replicas.is_some_and(|r| r >= 2), "sharding needs more than one");
    let ds = workload("daemonset.yaml");
    let (a, n) = (&d.spec.selector.match_labels, &ds.spec.template.metadata.labels);
    assert!(
        a.iter().any(|(k, v)| n.get(k) != Some(v)),
        "the DaemonSet's pods must not match the Deployment's selector"
    );
    let (n, a) = (&ds.spec.selector.match_labels, &d.spec.template.metadata.labels);
    assert!(n.iter().any(|(k, v)| a.get(k) != Some(v)), "the aggregators must not match the DaemonSet's selector");
    let pod = &d.spec.template.spec;
    assert_eq!(pod.automount_service_account_token, Some(false), "no Kubernetes API call");
    let sc = pod.containers[0].security_context.as_ref().unwrap();
    assert!(sc.run_as_non_root == Some(true) && sc.run_as_user != 0 && sc.capabilities.add.is_empty());
    let config: toml::Value = toml::from_str(&read("packaging/kubernetes/config/aggregator.toml")).unwrap();
    assert!(config["fleet"]["shard"].as_str().is_some(), "the aggregators share the switches through etcd");
}

#[test]
fn the_node_account_may_make_exactly_the_actuators_calls() {
    let docs = documents(&format!("{BASE}/rbac.yaml"));
    fn of<'a>(docs: &'a [serde_yaml_ng::Value], kind: &'a str) -> impl Iterator<Item = &'a serde_yaml_ng::Value> {
        docs.iter().filter(move |d| d["kind"] == kind)
    }
    let kind = |k: &'static str| of(&docs, k);
    let role: ClusterRole = serde_yaml_ng::from_value(kind("ClusterRole").next().unwrap().clone()).unwrap();
    let mut rules = role.rules;
    rules.sort();
    let rule = |resource: &str, verbs: &[&str]| PolicyRule {
        api_groups: vec![String::new()],
        resources: vec![resource.into()],
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
    };
    // cordon and rail drain: GET and PATCH the Node; the drain: list the node's pods, evict them;
    // the node condition: PATCH the Node's status.
    let mut want = vec![
        rule("nodes", &["get", "patch"]),
        rule("nodes/status", &["patch"]),
        rule("pods", &["list"]),
        rule("pods/eviction", &["create"]),
    ];
    want.sort();
    assert_eq!(rules, want);
    let binding = kind("ClusterRoleBinding").next().unwrap();
    assert_eq!(binding["roleRef"]["name"], role.metadata.name.unwrap().as_str());
    let ds = workload("daemonset.yaml");
    assert_eq!(binding["subjects"][0]["name"], ds.spec.template.spec.service_account_name.unwrap().as_str());
    let accounts: BTreeSet<&str> = kind("ServiceAccount").filter_map(|d| d["metadata"]["name"].as_str()).collect();
    assert_eq!(accounts, BTreeSet::from(["rocemend-node", "rocemend-aggregator"]));
}

#[test]
fn the_kustomization_lists_every_manifest_of_the_base() {
    let k: serde_yaml_ng::Value = serde_yaml_ng::from_str(&read(&format!("{BASE}/kustomization.yaml"))).unwrap();
    let listed: BTreeSet<String> =
        k["resources"].as_sequence().unwrap().iter().map(|r| r.as_str().unwrap().to_string()).collect();
    let mut present = BTreeSet::new();
    for dir in ["", "configmaps/"] {
        for entry in std::fs::read_dir(repo(&format!("{BASE}/{dir}"))).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".yaml") && name != "kustomization.yaml" {
                present.insert(format!("{dir}{name}"));
            }
        }
    }
    assert_eq!(listed, present);
    assert_eq!(k["images"][0]["name"], "rocemend");
    let build = std::fs::read_to_string(repo("packaging/container/build.sh")).unwrap();
    let name = k["images"][0]["newName"].as_str().unwrap();
    assert!(build.contains(name), "packaging/container/build.sh tags {name}");
}

#[test]
fn the_schema_check_refuses_a_misplaced_key() {
    let text = read(&format!("{BASE}/daemonset.yaml"));
    // hostNetwork belongs to the pod spec, not the container: a classic mistake.
    let bad = text.replace("      hostNetwork: true\n", "").replace(
        "          imagePullPolicy: IfNotPresent\n",
        "          imagePullPolicy: IfNotPresent\n          hostNetwork: true\n",
    );
    assert_ne!(bad, text);
    let err = serde_yaml_ng::from_str::<Workload>(&bad).unwrap_err().to_string();
    assert!(err.contains("unknown field `hostNetwork`"), "{err}");
}

/// The absolute paths of the pod's files the configs name, moved under `root`.
const POD_PATHS: &[&str] = &["/etc/rocemend/", "/var/lib/rocemend", "/var/run/secrets/", "/host/sys/"];

/// Writes what `workload`'s container sees of its ConfigMaps under `root`,
/// each at its mount path, the paths in them moved under `root` too; and
/// the service account's token and CA, the sysfs and NCCL directories.
fn lay_out(workload: &Workload, root: &Path) {
    let pod = &workload.spec.template.spec;
    let maps: BTreeMap<&str, _> = generated().into_iter().map(|g| (g.name, g.committed())).collect();
    for m in &pod.containers[0].volume_mounts {
        let volume = pod.volumes.iter().find(|v| v.name == m.name).unwrap();
        let Some(source) = &volume.config_map else { continue };
        let dir = root.join(m.mount_path.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).unwrap();
        for (key, text) in &maps[source.name.as_str()].data {
            let mut text = text.clone();
            for path in POD_PATHS {
                text = text.replace(path, &format!("{}{path}", root.display()));
            }
            std::fs::write(dir.join(key), text).unwrap();
        }
    }
    let account = root.join("var/run/secrets/kubernetes.io/serviceaccount");
    std::fs::create_dir_all(&account).unwrap();
    std::fs::write(account.join("token"), "a-service-account-token").unwrap();
    let ca = rcgen::generate_simple_self_signed(vec!["kubernetes.default.svc".to_string()]).unwrap();
    std::fs::write(account.join("ca.crt"), ca.cert.pem()).unwrap();
    for dir in ["host/sys/class/net", "etc/rocemend/nccl", "var/lib/rocemend"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
}

fn rocemend(args: &[&Path], node: &str, cwd: &Path) -> Output {
    let args: Vec<PathBuf> = args.iter().map(|a| a.to_path_buf()).collect();
    Command::new(bin()).args(&args).env("ROCEMEND_NODE", node).current_dir(cwd).output().unwrap()
}

#[test]
fn the_node_config_passes_check_as_the_daemonset_lays_it_out() {
    let tmp = tempfile::tempdir().unwrap();
    lay_out(&workload("daemonset.yaml"), tmp.path());
    let etc = tmp.path().join("etc/rocemend");
    let config = etc.join("config/rocemend.toml");
    let check = |node: &str| rocemend(&[Path::new("check"), Path::new("--config"), &config], node, tmp.path());
    let out = check("node-02");
    assert!(out.status.success(), "rocemend check with ROCEMEND_NODE=node-02:\n{}", text(&out));
    // The node's name comes from ROCEMEND_NODE (the DaemonSet's spec.nodeName): one not in the
    // inventory is refused by that name.
    let out = check("gpu-99");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("node \"gpu-99\""), "{}", text(&out));
    // The rules' tests run where the ConfigMap puts them, from any directory.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = rocemend(&[Path::new("test"), &etc.join("rules")], "node-02", elsewhere.path());
    assert!(out.status.success(), "rocemend test {}:\n{}", etc.join("rules").display(), text(&out));
}

#[test]
fn the_aggregator_config_passes_check_as_the_deployment_lays_it_out() {
    let tmp = tempfile::tempdir().unwrap();
    lay_out(&workload("aggregator.yaml"), tmp.path());
    let config = tmp.path().join("etc/rocemend/config/rocemend.toml");
    let out = rocemend(&[Path::new("check"), Path::new("--config"), &config], "aggregator-0", tmp.path());
    if cfg!(feature = "etcd") {
        assert!(out.status.success(), "rocemend check:\n{}", text(&out));
    } else {
        // `[fleet]` needs the etcd build (the image has it); this one says so and nothing else.
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let said = text(&out);
        let problems: Vec<&str> = said.lines().filter(|l| l.contains("rocemend.toml:")).collect();
        assert!(!problems.is_empty() && problems.iter().all(|l| l.contains("etcd")), "{said}");
    }
}
