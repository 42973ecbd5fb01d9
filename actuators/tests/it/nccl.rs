//! The `nccl` actuator's job file reaching a job: a real one-node Slurm whose `TaskProlog` is the
//! packaged `packaging/slurm/nccl-taskprolog.sh`, and jobs launched with `srun`. The job the
//! action named gets the queue pairs in its environment, another job does not, and after the
//! undo neither does. Needs root and `slurmctld slurmd munge`; without them it prints
//! `skipped: <reason>` and passes (and fails in CI).

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use actuators::NcclConfig;
use common::slurm::{slurm_missing, Cluster};
use engine::{Action, Actuator, Labels};

/// What `srun --job-name=NAME env` prints: the task's environment.
fn task_env(cluster: &Cluster, name: &str) -> String {
    let out = Command::new("/usr/bin/srun")
        .args([&format!("--job-name={name}"), "--ntasks=1", "/usr/bin/env"])
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .unwrap();
    assert!(out.status.success(), "srun: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_queue_pairs_reach_its_tasks_through_the_packaged_task_prolog() {
    if let Some(reason) = slurm_missing() {
        return test_peers::missing(reason);
    }
    let dir = tempfile::tempdir().unwrap();
    let env_dir = dir.path().join("nccl-jobs");
    std::fs::create_dir(&env_dir).unwrap();
    // The packaged script, pointed at this test's directory as a site points it at its own.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/slurm/nccl-taskprolog.sh");
    let prolog = dir.path().join("taskprolog");
    std::fs::write(
        &prolog,
        format!("#!/bin/sh\nROCEMEND_NCCL_DIR={} exec /bin/sh {}\n", env_dir.display(), script.display()),
    )
    .unwrap();
    std::fs::set_permissions(&prolog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let extra = format!("TaskProlog={}\n", prolog.display());
    let cluster = tokio::task::block_in_place(|| Cluster::start_with(dir.path(), &extra));

    let nccl = NcclConfig { env_dir: env_dir.clone() }.build("nccl").unwrap();
    let raise = Action {
        kind: "nccl.qps".into(),
        target: Labels::from_pairs([("job", "train-a")]),
        params: BTreeMap::from([("qps".into(), "16".into()), ("split".into(), "1".into())]),
    };
    let before = tokio::task::block_in_place(|| task_env(&cluster, "train-a"));
    assert!(!before.contains("NCCL_IB_QPS_PER_CONNECTION"), "{before}");

    let applied = nccl.execute(&raise).await.unwrap();
    let (ours, theirs) = tokio::task::block_in_place(|| (task_env(&cluster, "train-a"), task_env(&cluster, "eval-b")));
    assert!(ours.lines().any(|l| l == "NCCL_IB_QPS_PER_CONNECTION=16"), "{ours}");
    assert!(ours.lines().any(|l| l == "NCCL_IB_SPLIT_DATA_ON_QPS=1"), "{ours}");
    assert!(!theirs.contains("NCCL_IB_QPS_PER_CONNECTION"), "another job: {theirs}");

    nccl.undo(&raise, &applied).await.unwrap();
    let after = tokio::task::block_in_place(|| task_env(&cluster, "train-a"));
    assert!(!after.contains("NCCL_IB_QPS_PER_CONNECTION"), "{after}");
}
