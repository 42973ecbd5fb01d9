//! The `cordon` actuator against a real Slurm (munged, slurmctld and slurmd
//! started by the test as child processes, on free loopback ports) and
//! against a fake Kubernetes API server.
//!
//! The Slurm test needs root and the Debian packages `slurmctld slurmd munge`;
//! without them it prints `skipped: <reason>` and passes.

use crate::common;

use std::collections::BTreeMap;

use common::kube::{exchange, fake_api_server, with_body};
use common::slurm::{free_port, slurm_missing, Cluster};

use actuators::cordon::slurm::parse_show_node;
use actuators::{CordonActuator, CordonConfig};
use engine::{Action, Actuator, ActuatorError, Labels, Verification};

/// The cordon actuator of `cluster`.
fn actuator(cluster: &Cluster) -> CordonActuator {
    let mut config = CordonConfig::slurm();
    config.slurm.slurm_conf = Some(cluster.conf.clone());
    config.build("slurm").unwrap()
}

fn cordon(node: &str, incident: &str) -> Action {
    Action {
        kind: "node.cordon".into(),
        target: Labels::from_pairs([("node", node)]),
        params: BTreeMap::from([("reason".into(), "xid".into()), ("incident".into(), incident.into())]),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_slurm_node_is_drained_with_our_reason_and_resumed_only_while_it_is_ours() {
    if let Some(reason) = slurm_missing() {
        return test_peers::missing(reason);
    }
    let dir = tempfile::tempdir().unwrap();
    let cluster = tokio::task::block_in_place(|| Cluster::start(dir.path()));
    let slurm = actuator(&cluster);
    let action = cordon(&cluster.node, "inc-42");

    assert_eq!(slurm.verify(&action, None).await.unwrap(), Verification::NotInEffect);
    let plan = slurm.dry_run(&action).await.unwrap();
    assert_eq!(
        plan.requests,
        [format!("/usr/bin/scontrol update NodeName={} State=DRAIN 'Reason=rocemend: xid inc-42'", cluster.node)]
    );
    // A dry run changes nothing.
    assert!(cluster.show().unwrap().contains("State=IDLE "));

    let applied = slurm.execute(&action).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    assert_eq!(
        applied.prior.as_ref().map(|p| p.as_json().clone()),
        Some(serde_json::json!({ "state": "IDLE", "reason": "" }))
    );
    let node = parse_show_node(&cluster.show().unwrap()).unwrap();
    assert!(node.drained(), "{node:?}");
    assert_eq!(node.reason, "rocemend: xid inc-42");
    assert_eq!(slurm.verify(&action, Some(&applied)).await.unwrap(), Verification::InEffect);

    let undo_plan = slurm.dry_run_undo(&action, &applied).await.unwrap();
    assert_eq!(undo_plan.requests, [format!("/usr/bin/scontrol update NodeName={} State=RESUME", cluster.node)]);
    let undone = slurm.undo(&action, &applied).await.unwrap();
    assert_eq!(undone.requests, undo_plan.requests, "dry_run_undo and undo differ");
    let node = parse_show_node(&cluster.show().unwrap()).unwrap();
    assert!(!node.drained(), "{node:?}");
    assert_eq!(slurm.verify(&action, Some(&applied)).await.unwrap(), Verification::NotInEffect);

    // Someone drains it by hand: it is theirs.
    cluster.scontrol(&["update", &format!("NodeName={}", cluster.node), "State=DRAIN", "Reason=hand"]).unwrap();
    assert_eq!(
        slurm.verify(&action, Some(&applied)).await.unwrap(),
        Verification::Changed("drained by someone else: hand".into())
    );
    let err = slurm.undo(&action, &applied).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains("drained by someone else: hand")), "{err:?}");
    // Nor does a cordon write over their reason.
    let err = slurm.execute(&action).await.unwrap_err();
    assert!(
        matches!(&err, ActuatorError::Invalid(m) if m.contains("already drained by someone else: hand")),
        "{err:?}"
    );
    let node = parse_show_node(&cluster.show().unwrap()).unwrap();
    assert!(node.drained(), "{node:?}");
    assert_eq!(node.reason, "hand");
}

#[tokio::test]
async fn an_unreachable_slurm_controller_fails_with_scontrols_message() {
    if let Some(reason) = slurm_missing() {
        return test_peers::missing(reason);
    }
    let dir = tempfile::tempdir().unwrap();
    // No cluster: scontrol cannot reach a controller, and says so.
    let conf = dir.path().join("slurm.conf");
    std::fs::write(
        &conf,
        format!("ClusterName=x\nSlurmctldHost=localhost\nSlurmctldPort={}\nNodeName=n1 CPUs=1\n", free_port()),
    )
    .unwrap();
    let mut config = CordonConfig::slurm();
    config.slurm.slurm_conf = Some(conf);
    config.timeout = std::time::Duration::from_secs(20);
    let err = config.build("slurm").unwrap().verify(&cordon("n1", "inc-1"), None).await.unwrap_err();
    assert!(
        matches!(&err, ActuatorError::Failed(m) if m.starts_with("/usr/bin/scontrol show node n1 exited with")),
        "{err:?}"
    );
}

/// What the API server is asked, in order, and answers, for a cordon of
/// `gpu-07` with `drain = true` (two pods evicted, one by a DaemonSet left
/// alone, one blocked by a disruption budget), its verify, its undo, and a
/// verify and an undo after someone cordoned the node by hand.
fn kubernetes_script() -> Vec<common::kube::Exchange> {
    use serde_json::json;
    let node = "/api/v1/nodes/gpu-07";
    let ours = json!({ "spec": { "unschedulable": true, "taints": [
        { "key": "other", "effect": "NoExecute" },
        { "key": "rocemend.io/cordoned", "value": "inc-42", "effect": "NoSchedule" } ] } });
    let by_hand = json!({ "spec": { "unschedulable": true } });
    let cordon_patch = json!({
        "metadata": { "annotations": { "rocemend.io/incident": "inc-42" } },
        "spec": { "unschedulable": true, "taints": [{ "key": "rocemend.io/cordoned", "value": "inc-42", "effect": "NoSchedule" }] },
    });
    let undo_patch = json!({
        "metadata": { "annotations": { "rocemend.io/incident": null } },
        "spec": { "unschedulable": null, "taints": [{ "key": "rocemend.io/cordoned", "$patch": "delete" }] },
    });
    let eviction = |name: &str| json!({ "apiVersion": "policy/v1", "kind": "Eviction", "metadata": { "name": name, "namespace": "train" } });
    let pod = |ns: &str, name: &str, owner: &str| json!({ "metadata": { "name": name, "namespace": ns, "ownerReferences": [{ "kind": owner, "name": "x" }] } });
    let strategic = "application/strategic-merge-patch+json";
    vec![
        exchange("GET", node, 200, json!({ "metadata": { "name": "gpu-07" }, "spec": {} })),
        with_body(exchange("PATCH", node, 200, json!({})), strategic, cordon_patch),
        exchange(
            "GET",
            "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-07",
            200,
            json!({ "items": [
            pod("train", "job-0", "Job"), pod("kube-system", "nvidia-dcgm", "DaemonSet"), pod("train", "job-1", "ReplicaSet") ] }),
        ),
        with_body(
            exchange("POST", "/api/v1/namespaces/train/pods/job-0/eviction", 201, json!({})),
            "application/json",
            eviction("job-0"),
        ),
        with_body(
            exchange(
                "POST",
                "/api/v1/namespaces/train/pods/job-1/eviction",
                429,
                json!({ "message": "Cannot evict pod as it would violate the pod's disruption budget." }),
            ),
            "application/json",
            eviction("job-1"),
        ),
        exchange("GET", node, 200, ours.clone()),
        exchange("GET", node, 200, ours.clone()),
        with_body(exchange("PATCH", node, 200, json!({})), strategic, undo_patch),
        exchange("GET", node, 200, by_hand.clone()),
        exchange("GET", node, 200, by_hand),
    ]
}

#[tokio::test]
async fn kubernetes_cordon_patches_evicts_verifies_and_undoes_only_its_own() {
    use serde_json::json;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let node = "/api/v1/nodes/gpu-07";
    let script = kubernetes_script();
    let server = tokio::spawn(fake_api_server(listener, script));

    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let settings: toml::Table = toml::from_str(&format!(
        "scheduler = \"kubernetes\"\ntimeout = \"5s\"\n[kubernetes]\napi_server = \"http://127.0.0.1:{port}\"\ntoken_file = \"{}\"\ndrain = true\n",
        token.display()
    ))
    .unwrap();
    let kube = actuators::build("cordon", "k8s", settings).unwrap();
    let action = cordon("gpu-07", "inc-42");

    let plan = kube.dry_run(&action).await.unwrap();
    let applied = kube.execute(&action).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    assert_eq!(
        plan.requests[0],
        format!(
            "PATCH http://127.0.0.1:{port}{node} {}",
            json!({
                "metadata": { "annotations": { "rocemend.io/incident": "inc-42" } },
                "spec": { "unschedulable": true, "taints": [{ "key": "rocemend.io/cordoned", "value": "inc-42", "effect": "NoSchedule" }] },
            })
        )
    );
    assert!(applied.summary.contains("evicted: train/job-0;"), "{}", applied.summary);
    assert!(
        applied.summary.contains("blocked by a disruption budget (retry later): train/job-1;"),
        "{}",
        applied.summary
    );
    assert!(applied.summary.ends_with("left alone: 1"), "{}", applied.summary);
    assert_eq!(
        applied.prior.as_ref().map(|p| p.as_json().clone()),
        Some(json!({ "unschedulable": false, "taint": null }))
    );
    assert_eq!(kube.verify(&action, Some(&applied)).await.unwrap(), Verification::InEffect);

    let undo_plan = kube.dry_run_undo(&action, &applied).await.unwrap();
    let undone = kube.undo(&action, &applied).await.unwrap();
    assert_eq!(undone.requests, undo_plan.requests, "dry_run_undo and undo differ");

    assert_eq!(
        kube.verify(&action, Some(&applied)).await.unwrap(),
        Verification::Changed("cordoned by someone else (our taint is gone)".into())
    );
    let err = kube.undo(&action, &applied).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains("no longer carries our taint")), "{err:?}");
    let problems = server.await.unwrap();
    assert!(problems.is_empty(), "{problems:#?}");
}
