use std::collections::BTreeMap;

use engine::{Action, Actuator, Labels, Verification};

use super::*;

fn action(job: &str, params: &[(&str, &str)]) -> Action {
    Action {
        kind: QPS_KIND.into(),
        target: Labels::from_pairs([("job", job)]),
        params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
    }
}

fn run<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
}

#[test]
fn qps_are_raised_for_one_job_and_undone_to_what_its_file_held() {
    let dir = tempfile::tempdir().unwrap();
    let nccl = NcclConfig { env_dir: dir.path().into() }.build("nccl").unwrap();
    let other = dir.path().join("train-b.env");
    std::fs::write(&other, "export NCCL_IB_QPS_PER_CONNECTION=2\n").unwrap();
    let raise = action("train-a", &[("qps", "4"), ("split", "1")]);
    let file = dir.path().join("train-a.env");

    let plan = run(nccl.dry_run(&raise)).unwrap();
    let expected =
        format!("replace {} atomically: NCCL_IB_QPS_PER_CONNECTION=4 NCCL_IB_SPLIT_DATA_ON_QPS=1", file.display());
    assert_eq!(plan.requests, std::slice::from_ref(&expected));
    assert!(!file.exists(), "a dry run writes nothing");

    let applied = run(nccl.execute(&raise)).unwrap();
    assert_eq!(applied.requests, [expected]);
    assert!(applied.summary.contains("takes effect when the job next creates them"), "{}", applied.summary);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.ends_with("export NCCL_IB_QPS_PER_CONNECTION=4\nexport NCCL_IB_SPLIT_DATA_ON_QPS=1\n"), "{text}");
    assert_eq!(run(nccl.verify(&raise, Some(&applied))).unwrap(), Verification::InEffect);
    let again = run(nccl.prepare(&raise)).unwrap().unwrap();
    assert!(again.holds_already, "the file already asks for it");

    let undone = run(nccl.undo(&raise, &applied)).unwrap();
    assert!(undone.summary.contains("back to"), "{}", undone.summary);
    assert!(!file.exists(), "a file that says nothing is removed");
    assert_eq!(run(nccl.verify(&raise, Some(&applied))).unwrap(), Verification::NotInEffect);
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "export NCCL_IB_QPS_PER_CONNECTION=2\n", "another job's file");
}

#[test]
fn a_file_with_more_qps_or_other_lines_keeps_them_and_a_human_change_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let nccl = NcclConfig { env_dir: dir.path().into() }.build("nccl").unwrap();
    let file = dir.path().join("train-a.env");
    std::fs::write(&file, "NCCL_DEBUG=INFO\nexport NCCL_IB_QPS_PER_CONNECTION=8\n").unwrap();
    let raise = action("train-a", &[("qps", "4")]);
    assert!(run(nccl.prepare(&raise)).unwrap().unwrap().holds_already, "8 QPs are already more than 4");

    let raise16 = action("train-a", &[("qps", "16")]);
    let applied = run(nccl.execute(&raise16)).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("NCCL_DEBUG=INFO\n") && text.contains("NCCL_IB_QPS_PER_CONNECTION=16"), "{text}");
    std::fs::write(&file, "export NCCL_IB_QPS_PER_CONNECTION=32\n").unwrap();
    let seen = run(nccl.verify(&raise16, Some(&applied))).unwrap();
    assert!(matches!(&seen, Verification::Changed(why) if why.contains("=32")), "{seen:?}");
}

#[test]
fn bad_targets_and_params_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let nccl = NcclConfig { env_dir: dir.path().into() }.build("nccl").unwrap();
    for (act, expected) in [
        (action("train-a", &[]), "needs the parameter qps"),
        (action("train-a", &[("qps", "0")]), "qps 0 is out of range"),
        (action("train-a", &[("qps", "4"), ("split", "yes")]), "split \"yes\" is not 0 or 1"),
        (action("../x", &[("qps", "4")]), "cannot name a file"),
        (Action { kind: "nccl.hca".into(), ..action("a", &[("qps", "4")]) }, "nccl.qps"),
    ] {
        let err = run(nccl.execute(&act)).unwrap_err().to_string();
        assert!(err.contains(expected), "{act}: {err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let err = NcclConfig { env_dir: "relative".into() }.build("nccl").unwrap_err().to_string();
    assert!(err.contains("not an absolute path"), "{err}");
}
