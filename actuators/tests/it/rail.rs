//! The node side of the `rail` actuator: the NCCL environment file, Slurm
//! node features against a real one-node Slurm (the cordon test's cluster),
//! and the Kubernetes label and taint against a fake API server that checks
//! the exact requests. A step that fails rolls back the steps before it.
//!
//! The Slurm test needs root and `slurmctld slurmd munge`; without them it
//! prints `skipped: <reason>` and passes.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use actuators::RailConfig;
use common::kube::{exchange, fake_api_server, with_body};
use common::slurm::{slurm_missing, Cluster};
use engine::{Action, Actuator, ActuatorError, Labels, Verification};
use serde_json::json;

fn drain(node: &str, rail: &str) -> Action {
    let dev = format!("mlx5_{rail}");
    let netdev = format!("eth{rail}");
    Action {
        kind: "rail.drain".into(),
        target: Labels::from_pairs([
            ("node", node),
            ("rail", rail),
            ("plane", "0"),
            ("netdev", netdev.as_str()),
            ("rdma_dev", dev.as_str()),
        ]),
        params: BTreeMap::from([("incident".into(), "inc-7".into())]),
    }
}

fn nccl_config(file: &Path) -> String {
    format!("[nccl]\nenv_file = {:?}\nnode = \"node-04\"\n", file.display().to_string())
}

#[tokio::test]
async fn the_nccl_file_excludes_each_drained_rail_and_undo_removes_only_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nccl.env");
    std::fs::write(&file, "NCCL_DEBUG=WARN\n").unwrap();
    let rail = toml::from_str::<RailConfig>(&nccl_config(&file)).unwrap().build("rail").unwrap();
    let (one, three) = (drain("node-04", "1"), drain("node-04", "3"));
    let text = || std::fs::read_to_string(&file).unwrap();

    let plan = rail.dry_run(&one).await.unwrap();
    assert_eq!(plan.requests, [format!("replace {} atomically: NCCL_IB_HCA=^mlx5_1", file.display())]);
    assert_eq!(text(), "NCCL_DEBUG=WARN\n", "a dry run changes nothing");
    let applied_one = rail.execute(&one).await.unwrap();
    assert_eq!(applied_one.requests, plan.requests, "dry_run and execute differ");
    assert!(text().ends_with("NCCL_DEBUG=WARN\nexport NCCL_IB_HCA=^mlx5_1\n"), "{}", text());
    let applied_three = rail.execute(&three).await.unwrap();
    assert!(text().ends_with("export NCCL_IB_HCA=^mlx5_1,mlx5_3\n"), "{}", text());
    assert_eq!(rail.verify(&one, Some(&applied_one)).await.unwrap(), Verification::InEffect);

    // Undone out of order: each takes only its own device away.
    let undo_plan = rail.dry_run_undo(&one, &applied_one).await.unwrap();
    let undone = rail.undo(&one, &applied_one).await.unwrap();
    assert_eq!(undone.requests, undo_plan.requests, "dry_run_undo and undo differ");
    assert!(text().ends_with("export NCCL_IB_HCA=^mlx5_3\n"), "{}", text());
    assert_eq!(rail.verify(&one, Some(&applied_one)).await.unwrap(), Verification::NotInEffect);
    rail.undo(&three, &applied_three).await.unwrap();
    assert!(!text().contains("NCCL_IB_HCA"), "{}", text());
    assert!(text().contains("NCCL_DEBUG=WARN\n"));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left: {leftovers:?}");

    // The file lives on node-04; a drain of another node's rail is not this daemon's.
    let err = rail.execute(&drain("node-05", "1")).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::NotSupported(m) if m.contains("node-04")), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slurm_features_of_a_real_node_mark_the_rail_drained_and_undo_gives_them_back() {
    if let Some(reason) = slurm_missing() {
        return test_peers::missing(reason);
    }
    let dir = tempfile::tempdir().unwrap();
    let cluster = tokio::task::block_in_place(|| Cluster::start(dir.path()));
    let text = format!("[slurm]\nslurm_conf = {:?}\n", cluster.conf.display().to_string());
    let rail = toml::from_str::<RailConfig>(&text).unwrap().build("rail").unwrap();
    // The node offers rail 2 (and gpu): a job asking for rail2 may land on it.
    let node = format!("NodeName={}", cluster.node);
    cluster.scontrol(&["update", &node, "AvailableFeatures=gpu,rail2", "ActiveFeatures=gpu,rail2"]).unwrap();
    let action = drain(&cluster.node, "2");
    assert_eq!(rail.verify(&action, None).await.unwrap(), Verification::NotInEffect);

    let plan = rail.dry_run(&action).await.unwrap();
    assert_eq!(
        plan.requests,
        [format!(
            "/usr/bin/scontrol update {node} AvailableFeatures=gpu,rail2_drained ActiveFeatures=gpu,rail2_drained"
        )]
    );
    let applied = rail.execute(&action).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    let shown = cluster.show().unwrap();
    assert!(shown.contains("ActiveFeatures=gpu,rail2_drained"), "{shown}");
    assert_eq!(rail.verify(&action, Some(&applied)).await.unwrap(), Verification::InEffect);

    let undo_plan = rail.dry_run_undo(&action, &applied).await.unwrap();
    assert_eq!(
        undo_plan.requests,
        [format!("/usr/bin/scontrol update {node} AvailableFeatures=gpu,rail2 ActiveFeatures=gpu,rail2")]
    );
    let undone = rail.undo(&action, &applied).await.unwrap();
    assert_eq!(undone.requests, undo_plan.requests, "dry_run_undo and undo differ");
    let shown = cluster.show().unwrap();
    assert!(shown.contains("ActiveFeatures=gpu,rail2"), "{shown}");
    assert_eq!(rail.verify(&action, Some(&applied)).await.unwrap(), Verification::NotInEffect);
}

#[tokio::test]
async fn kubernetes_gets_a_label_and_a_taint_by_merge_patch_with_the_resource_version() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let node = "/api/v1/nodes/node-04";
    let other = json!({ "key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule" });
    let ours = json!({ "key": "rocemend.io/rail-1-drained", "value": "inc-7", "effect": "NoSchedule" });
    let before = json!({ "metadata": { "name": "node-04", "resourceVersion": "41", "labels": { "zone": "a" } },
                         "spec": { "taints": [other] } });
    let after = json!({ "metadata": { "name": "node-04", "resourceVersion": "42",
                                      "labels": { "zone": "a", "rocemend.io/rail-1": "drained" } },
                        "spec": { "taints": [other, ours] } });
    let drain_patch = json!({ "metadata": { "resourceVersion": "41", "labels": { "rocemend.io/rail-1": "drained" } },
                              "spec": { "taints": [other, ours] } });
    let undo_patch = json!({ "metadata": { "resourceVersion": "42", "labels": { "rocemend.io/rail-1": null } },
                             "spec": { "taints": [other] } });
    let merge = "application/merge-patch+json";
    let script = vec![
        exchange("GET", node, 200, before.clone()), // dry run
        exchange("GET", node, 200, before.clone()), // execute
        with_body(exchange("PATCH", node, 200, after.clone()), merge, drain_patch.clone()),
        exchange("GET", node, 200, after.clone()), // verify
        exchange("GET", node, 200, after.clone()), // dry-run undo
        exchange("GET", node, 200, after.clone()), // undo
        with_body(exchange("PATCH", node, 200, before.clone()), merge, undo_patch.clone()),
        exchange("GET", node, 200, before.clone()), // verify
        // A node changed between GET and PATCH: 409, and the drain fails (to retry).
        exchange("GET", node, 200, before.clone()),
        with_body(exchange("PATCH", node, 409, json!({ "reason": "Conflict" })), merge, drain_patch.clone()),
    ];
    let server = tokio::spawn(fake_api_server(listener, script));
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let text = format!(
        "[kubernetes]\napi_server = \"http://127.0.0.1:{port}\"\ntoken_file = {:?}\n",
        token.display().to_string()
    );
    let rail = toml::from_str::<RailConfig>(&text).unwrap().build("rail").unwrap();
    let action = drain("node-04", "1");

    let plan = rail.dry_run(&action).await.unwrap();
    assert_eq!(plan.requests, [format!("PATCH http://127.0.0.1:{port}{node} ({merge}) {drain_patch}")]);
    let applied = rail.execute(&action).await.unwrap();
    assert_eq!(applied.requests, plan.requests, "dry_run and execute differ");
    assert_eq!(rail.verify(&action, Some(&applied)).await.unwrap(), Verification::InEffect);
    let undo_plan = rail.dry_run_undo(&action, &applied).await.unwrap();
    let undone = rail.undo(&action, &applied).await.unwrap();
    assert_eq!(undone.requests, undo_plan.requests, "dry_run_undo and undo differ");
    assert_eq!(undone.requests, [format!("PATCH http://127.0.0.1:{port}{node} ({merge}) {undo_patch}")]);
    assert_eq!(rail.verify(&action, Some(&applied)).await.unwrap(), Verification::NotInEffect);
    let err = rail.execute(&action).await.unwrap_err();
    assert!(matches!(&err, ActuatorError::Failed(m) if m.contains("409") && m.contains("retry")), "{err:?}");
    assert_eq!(server.await.unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn a_failing_step_rolls_back_the_steps_before_it() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // The API server refuses: the NCCL file written just before goes back.
    let script = vec![exchange("GET", "/api/v1/nodes/node-04", 403, json!({ "reason": "Forbidden" }))];
    let server = tokio::spawn(fake_api_server(listener, script));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nccl.env");
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret").unwrap();
    let text = format!(
        "{}[kubernetes]\napi_server = \"http://127.0.0.1:{port}\"\ntoken_file = {:?}\n",
        nccl_config(&file),
        token.display().to_string()
    );
    let rail = toml::from_str::<RailConfig>(&text).unwrap().build("rail").unwrap();
    let err = rail.execute(&drain("node-04", "1")).await.unwrap_err();
    assert!(
        matches!(&err, ActuatorError::Failed(m) if m.contains("step kubernetes") && m.contains("403") && m.contains("the 1 step(s) before it were undone")),
        "{err:?}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("NCCL_IB_HCA"), "{text}");
    assert_eq!(server.await.unwrap(), Vec::<String>::new());
}
