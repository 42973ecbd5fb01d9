//! A real one-node Slurm cluster for tests: munged, slurmctld and slurmd as
//! child processes on free loopback ports, with a private munge key.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Child daemons, killed (and reaped) when the test ends, whatever happens.
pub struct Daemons(Vec<Child>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for child in self.0.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Why the real-Slurm test cannot run here, if it cannot.
pub fn slurm_missing() -> Option<String> {
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

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn short_hostname() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub fn spawn(program: &str, args: &[&str], log: &Path, env: &[(&str, &Path)]) -> Child {
    let log = std::fs::File::create(log).unwrap();
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log);
    for (k, v) in env {
        command.env(k, v);
    }
    command.spawn().unwrap_or_else(|e| panic!("cannot start {program}: {e}"))
}

/// Waits up to `limit` for `ready`, failing with the logs in `dir` if it never is.
pub fn wait_for(what: &str, dir: &Path, limit: Duration, mut ready: impl FnMut() -> bool) {
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
pub struct Cluster {
    /// Its slurm.conf.
    pub conf: PathBuf,
    /// The node's name (this host's short name).
    pub node: String,
    _daemons: Daemons,
}

impl Cluster {
    pub fn start(dir: &Path) -> Cluster {
        Cluster::start_with(dir, "")
    }

    /// [`Cluster::start`] with `extra` lines in its slurm.conf (`TaskProlog=…`).
    pub fn start_with(dir: &Path, extra: &str) -> Cluster {
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
        let [ctld_port, slurmd_port] = test_peers::free_ports();
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
                 PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP\n{extra}",
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

    pub fn scontrol(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("/usr/bin/scontrol").args(args).env("SLURM_CONF", &self.conf).output().unwrap();
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    pub fn show(&self) -> Result<String, String> {
        self.scontrol(&["show", "node", &self.node])
    }
}
