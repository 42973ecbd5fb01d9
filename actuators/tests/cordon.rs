//! The `cordon` actuator against a real Slurm (munged, slurmctld and slurmd
//! started by the test as child processes, on free loopback ports) and
//! against a fake Kubernetes API server.
//!
//! The Slurm test needs root and the Debian packages `slurmctld slurmd munge`;
//! without them it prints `skipped: <reason>` and passes.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use actuators::cordon::slurm::parse_show_node;
use actuators::{CordonActuator, CordonConfig};
use engine::{Action, Actuator, ActuatorError, Labels, Verification};

/// Child daemons, killed (and reaped) when the test ends, whatever happens.
struct Daemons(Vec<Child>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for child in self.0.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Why the real-Slurm test cannot run here, if it cannot.
fn slurm_missing() -> Option<String> {
    if !is_root() {
        return Some("not root (slurmd and munged need it)".into());
    }
    for program in
        ["/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/sbin/mungekey", "/usr/bin/scontrol"]
    {
        if !Path::new(program).exists() {
            return Some(format!("{program} is missing (apt-get install slurmctld slurmd munge)"));
        }
    }
    None
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn short_hostname() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn spawn(program: &str, args: &[&str], log: &Path, env: &[(&str, &Path)]) -> Child {
    let log = std::fs::File::create(log).unwrap();
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log);
    for (k, v) in env {
        command.env(k, v);
    }
    command.spawn().unwrap_or_else(|e| panic!("cannot start {program}: {e}"))
}

/// Waits up to `limit` for `ready`, failing with the logs in `dir` if it never is.
fn wait_for(what: &str, dir: &Path, limit: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        if start.elapsed() > limit {
            let mut logs = String::new();
            for name in ["munged.log", "slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"] {
                let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
                logs.push_str(&format!("--- {name}\n{}\n", text.lines().rev().take(15).collect::<Vec<_>>().join("\n")));
            }
            panic!("{what} not ready after {limit:?}\n{logs}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A one-node Slurm cluster in `dir`: its `slurm.conf` and its daemons.
struct Cluster {
    conf: PathBuf,
    node: String,
    _daemons: Daemons,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        let node = short_hostname();
        let p = |name: &str| dir.join(name);
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(p(sub)).unwrap();
        }
        // A private munge key and socket: nothing on the host's /etc/munge or
        // /run/munge is touched.
        let key = p("munge.key");
        let status =
            Command::new("/usr/sbin/mungekey").arg("--create").arg(format!("--keyfile={}", key.display())).status();
        assert!(status.unwrap().success(), "mungekey failed");
        let socket = p("munge.sock");
        let conf = p("slurm.conf");
        let (ctld_port, slurmd_port) = (free_port(), free_port());
        let d = dir.display();
        std::fs::write(
            &conf,
            format!(
                "ClusterName=rocemendtest\n\
                 SlurmctldHost={node}(127.0.0.1)\n\
                 SlurmctldPort={ctld_port}\n\
                 SlurmdPort={slurmd_port}\n\
                 AuthType=auth/munge\n\
                 CredType=cred/munge\n\
                 AuthInfo=socket={socket}\n\
                 SlurmUser=root\n\
                 SlurmdUser=root\n\
                 StateSaveLocation={d}/state\n\
                 SlurmdSpoolDir={d}/spool\n\
                 SlurmctldPidFile={d}/slurmctld.pid\n\
                 SlurmdPidFile={d}/slurmd.pid\n\
                 SlurmctldLogFile={d}/slurmctld.log\n\
                 SlurmdLogFile={d}/slurmd.log\n\
                 ProctrackType=proctrack/linuxproc\n\
                 TaskPlugin=task/none\n\
                 SelectType=select/linear\n\
                 SchedulerType=sched/builtin\n\
                 MpiDefault=none\n\
                 JobCompType=jobcomp/none\n\
                 AccountingStorageType=accounting_storage/none\n\
                 ReturnToService=2\n\
                 NodeName={node} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n\
                 PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP\n",
                socket = socket.display(),
            ),
        )
        .unwrap();
        let mut daemons = Daemons(Vec::new());
        let s = |path: PathBuf| path.display().to_string();
        daemons.0.push(spawn(
            "/usr/sbin/munged",
            &[
                "-F",
                "--force",
                &format!("--socket={}", s(socket.clone())),
                &format!("--key-file={}", s(key)),
                &format!("--log-file={}", s(p("munged.log"))),
                &format!("--pid-file={}", s(p("munged.pid"))),
                &format!("--seed-file={}", s(p("munged.seed"))),
            ],
            &p("munged.out"),
            &[],
        ));
        wait_for("munged", dir, Duration::from_secs(10), || socket.exists());
        let env = [("SLURM_CONF", conf.as_path())];
        let conf_arg = s(conf.clone());
        daemons.0.push(spawn("/usr/sbin/slurmctld", &["-D", "-f", &conf_arg], &p("slurmctld.out"), &env));
        daemons.0.push(spawn("/usr/sbin/slurmd", &["-D", "-f", &conf_arg], &p("slurmd.out"), &env));
        let cluster = Cluster { conf, node, _daemons: daemons };
        // Ready once slurmd has registered and the node is idle.
        wait_for("the node", dir, Duration::from_secs(30), || {
            cluster.show().map(|out| out.contains("State=IDLE ")).unwrap_or(false)
        });
        cluster
    }

    fn scontrol(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("/usr/bin/scontrol").args(args).env("SLURM_CONF", &self.conf).output().unwrap();
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    fn show(&self) -> Result<String, String> {
        self.scontrol(&["show", "node", &self.node])
    }

    fn actuator(&self) -> CordonActuator {
        let mut config = CordonConfig::slurm();
        config.slurm.slurm_conf = Some(self.conf.clone());
        config.build("slurm").unwrap()
    }
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
        println!("skipped: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cluster = tokio::task::block_in_place(|| Cluster::start(dir.path()));
    let slurm = cluster.actuator();
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
    assert_eq!(applied.prior, Some(serde_json::json!({ "state": "IDLE", "reason": "" })));
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
        println!("skipped: {reason}");
        return;
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
    config.timeout = "20s".into();
    let err = config.build("slurm").unwrap().verify(&cordon("n1", "inc-1"), None).await.unwrap_err();
    assert!(
        matches!(&err, ActuatorError::Failed(m) if m.starts_with("/usr/bin/scontrol show node n1 exited with")),
        "{err:?}"
    );
}

/// One request the fake API server expects, and its answer.
struct Exchange {
    method: &'static str,
    path: String,
    content_type: Option<&'static str>,
    body: Option<serde_json::Value>,
    status: u16,
    answer: serde_json::Value,
}

fn exchange(method: &'static str, path: &str, status: u16, answer: serde_json::Value) -> Exchange {
    Exchange { method, path: path.into(), content_type: None, body: None, status, answer }
}

fn with_body(mut e: Exchange, content_type: &'static str, body: serde_json::Value) -> Exchange {
    e.content_type = Some(content_type);
    e.body = Some(body);
    e
}

/// Serves `script` in order, one connection per request, and returns every
/// way the requests differed from it.
async fn fake_api_server(listener: tokio::net::TcpListener, script: Vec<Exchange>) -> Vec<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut problems = Vec::new();
    for (i, expected) in script.into_iter().enumerate() {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut raw = Vec::new();
        let mut buf = [0u8; 8192];
        let (head, body) = loop {
            let n = socket.read(&mut buf).await.unwrap();
            raw.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&raw).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .map(|v| v.trim().parse::<usize>().unwrap())
                    .unwrap_or(0);
                if raw.len() >= end + 4 + length {
                    break (text[..end].to_string(), text[end + 4..end + 4 + length].to_string());
                }
            }
            assert!(n > 0, "request {i}: the client closed early");
        };
        let mut lines = head.lines();
        let request_line = lines.next().unwrap_or_default().to_string();
        let headers: Vec<(String, String)> =
            lines.filter_map(|l| l.split_once(": ").map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))).collect();
        let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let want_line = format!("{} {} HTTP/1.1", expected.method, expected.path);
        if request_line != want_line {
            problems.push(format!("request {i}: {request_line:?}, expected {want_line:?}"));
        }
        if header("authorization").as_deref() != Some("Bearer s3cret") {
            problems.push(format!("request {i}: authorization {:?}", header("authorization")));
        }
        if header("content-type").as_deref() != expected.content_type {
            problems.push(format!(
                "request {i}: content type {:?}, expected {:?}",
                header("content-type"),
                expected.content_type
            ));
        }
        let got: Option<serde_json::Value> = if body.is_empty() { None } else { serde_json::from_str(&body).ok() };
        if got != expected.body {
            problems.push(format!("request {i}: body {body}, expected {:?}", expected.body.map(|b| b.to_string())));
        }
        let answer = expected.answer.to_string();
        let reply = format!(
            "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
            expected.status,
            answer.len()
        );
        socket.write_all(reply.as_bytes()).await.unwrap();
    }
    problems
}

#[tokio::test]
async fn kubernetes_cordon_patches_evicts_verifies_and_undoes_only_its_own() {
    use serde_json::json;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
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
    let script = vec![
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
    ];
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
    assert_eq!(applied.prior, Some(json!({ "unschedulable": false, "taint": null })));
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
