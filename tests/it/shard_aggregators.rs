//! Switch aggregators sharing their switches through etcd (`[fleet] shard`):
//! three `rocemend run` aggregators on one real etcd, eight simulated SONiC
//! leaves serving gNMI. Each leaf is read, and changed, by one aggregator
//! at a time:
//!
//! - at the start every leaf is claimed once, and subscribed to by its
//!   owner alone;
//! - a PFC storm on a leaf is escalated once, by its owner;
//! - the owner is SIGKILLed: each of its leaves is claimed and subscribed
//!   to again by another aggregator within the lease TTL + 1 s, and the
//!   new owner, seeing the storm go on, finds the escalation in place and
//!   sends nothing (no switch action twice);
//! - an aggregator stopped cleanly hands its leaves over at once.
//!
//! It needs the `etcd` feature and etcd's `etcd` and `etcdctl`; without
//! them it says why it is skipped. `.ci/run` runs it with both.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{etcd_here, repo, toml_path, Daemon};
use engine::dispatch::Verdict;
use sim::switch::{Model, Profile, RunningSwitch};

/// The aggregators' lease TTL: a dead one's leaves must move within it + 1 s.
const TTL: Duration = Duration::from_secs(2);
const LEAVES: usize = 8;
const AGGREGATORS: [&str; 3] = ["agg-1", "agg-2", "agg-3"];
const GROUP: &str = "pod-a";
const PREFIX: &str = "/rocemend/fleet/";
const PORT: &str = "Ethernet8";
const QUEUE: usize = 3;

/// One etcd member on loopback, killed when dropped.
struct Etcd {
    child: Child,
    endpoint: String,
}

impl Etcd {
    fn start(dir: &Path) -> Etcd {
        let [client, peer] = test_peers::free_ports();
        let endpoint = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let child = Command::new("etcd")
            .args(["--name", "shard-test", "--data-dir"])
            .arg(dir.join("etcd"))
            .args(["--listen-client-urls", &endpoint, "--advertise-client-urls", &endpoint])
            .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("shard-test={peer_url}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("etcd starts");
        let etcd = Etcd { child, endpoint };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !etcd.ctl(&["endpoint", "health"]).0 {
            assert!(Instant::now() < deadline, "etcd did not become healthy");
            std::thread::sleep(Duration::from_millis(100));
        }
        etcd
    }

    /// Runs `etcdctl ARGS` against this member: (success, stdout).
    fn ctl(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg("--endpoints")
            .arg(&self.endpoint)
            .args(args)
            .output()
            .expect("etcdctl runs");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Switch → the aggregator whose claim holds it.
    fn owners(&self) -> BTreeMap<String, String> {
        let prefix = format!("{PREFIX}shard/{GROUP}/owner/");
        let (_, out) = self.ctl(&["get", "--prefix", &prefix]);
        let lines: Vec<&str> = out.lines().collect();
        lines
            .chunks(2)
            .filter_map(|kv| match kv {
                [key, value] => Some((key.strip_prefix(&prefix)?.to_string(), value.to_string())),
                _ => None,
            })
            .collect()
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The simulated leaves, served and driven on a runtime of the test's own.
struct Leaves {
    runtime: tokio::runtime::Runtime,
    switches: Vec<RunningSwitch>,
    /// Sets a leaf took before the test counts them: each aggregator's probe of its
    /// writability is a Set too.
    uncounted: std::sync::Mutex<BTreeMap<String, usize>>,
}

impl Leaves {
    fn start() -> Leaves {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let switches: Vec<RunningSwitch> = runtime.block_on(async {
            let mut switches = Vec::new();
            for i in 0..LEAVES {
                let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
                // Watchdogs that only alert, as on the leaves the aggregators are there to
                // escalate: a leaf booted with `pfcwd start_default` (drop) ends a storm's pause
                // itself within a poll or two, and the rule rightly never sees it.
                let alerting = Profile { pfcwd_action: sonic::watchdog::Action::Alert, ..Profile::default() };
                let model = Model::with_profile(8, alerting);
                let switch = sim::switch::spawn(&format!("leaf-{i}"), addr, model.clone(), Default::default())
                    .await
                    .expect("a simulated leaf serves");
                tokio::spawn(sim::switch::drive(model, Duration::from_millis(100), std::future::pending()));
                switches.push(switch);
            }
            switches
        });
        Leaves { runtime, switches, uncounted: Default::default() }
    }

    fn get(&self, name: &str) -> &RunningSwitch {
        self.switches.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no leaf {name}"))
    }

    /// Subscriptions started on `name` so far, and running now.
    fn subscriptions(&self, name: &str) -> (usize, usize) {
        let clients = self.get(name).model.clients();
        (clients.subscribed.load(Ordering::SeqCst), clients.streaming.load(Ordering::SeqCst))
    }

    fn sets(&self, name: &str) -> usize {
        let uncounted = self.uncounted.lock().unwrap().get(name).copied().unwrap_or(0);
        self.get(name).model.clients().sets.load(Ordering::SeqCst) - uncounted
    }

    /// Counts `name`'s Sets from now on.
    fn count_sets_from_now(&self, name: &str) {
        let now = self.get(name).model.clients().sets.load(Ordering::SeqCst);
        self.uncounted.lock().unwrap().insert(name.to_string(), now);
    }

    /// Waits until `name` has answered `n` Sets (a Set is answered a second after CONFIG_DB
    /// changes: SONiC's config updater pauses after applying it), then checks no more came.
    fn answered_sets(&self, name: &str, n: usize, why: &str, logs: impl Fn() -> String) {
        until(Duration::from_secs(5), why, logs, || (self.sets(name) >= n).then_some(()));
        assert_eq!(self.sets(name), n, "{why} on {name}");
    }

    /// `restoration_time` of the stormed port's watchdog: the simulated
    /// leaves start at 200 ms, the escalation sets 2000 ms.
    fn watchdog_restoration(&self, name: &str) -> Option<String> {
        self.get(name).model.config_entry("PFC_WD", PORT).and_then(|e| e.get("restoration_time").cloned())
    }
}

impl Drop for Leaves {
    fn drop(&mut self) {
        let switches = std::mem::take(&mut self.switches);
        self.runtime.block_on(async {
            for s in switches {
                let _ = s.stop().await;
            }
        });
    }
}

/// Writes the rules, the playbook, the inventory and one config per
/// aggregator; returns the configs' paths by aggregator.
fn write_configs(dir: &Path, leaves: &Leaves, etcd: &Etcd) -> BTreeMap<&'static str, PathBuf> {
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::copy(repo("rules/switch_pfc_storm.rhai"), rules.join("switch_pfc_storm.rhai")).unwrap();
    let inventory: String = leaves
        .switches
        .iter()
        .map(|s| format!("[[switch]]\nname = \"{}\"\nrole = \"leaf\"\naddress = \"{}\"\n", s.name, s.addr))
        .collect();
    std::fs::write(dir.join("inventory.toml"), inventory).unwrap();
    // The PFC watchdog escalation is fleet-scoped here (the kind's default):
    // it takes a token of the `switch` budget as well as the ownership check.
    // It is undone when its incident resolves, by whoever owns the leaf then.
    std::fs::write(
        dir.join("playbook.toml"),
        "name = \"shard\"\nmode = \"enforce\"\nrules = \"rules\"\n\
         [undo]\non_resolve = [\"pfcwd.*\"]\n\
         [[actuator]]\nname = \"pfcwd\"\ntype = \"pfcwd\"\nhandles = [\"pfcwd.*\"]\n\
         [actuator.gnmi]\nswitches = [\"*\"]\ntimeout = \"5s\"\n\
         [actuator.levels.1]\naction = \"drop\"\ndetection_time = 200\nrestoration_time = 2000\n",
    )
    .unwrap();
    let targets: String =
        leaves.switches.iter().map(|s| format!("[[sensor.targets]]\nname = \"{}\"\n", s.name)).collect();
    let mut configs = BTreeMap::new();
    for identity in AGGREGATORS {
        let home = dir.join(identity);
        std::fs::create_dir_all(&home).unwrap();
        let config = home.join("rocemend.toml");
        std::fs::write(
            &config,
            format!(
                "node = \"{identity}\"\nstate_dir = \"state\"\nplaybook = {playbook}\ninventory = {inventory}\n\
                 [engine]\nreload_poll = \"0\"\n\
                 [log]\nlevel = \"info\"\n\
                 [control]\nsocket = {socket}\n\
                 [fleet]\netcd = [\"{endpoint}\"]\nidentity = \"{identity}\"\nlease_ttl = \"{ttl}s\"\n\
                 request_timeout = \"1s\"\nshard = \"{GROUP}\"\n\
                 [[sensor]]\ntype = \"gnmi\"\npresets = [\"sonic_pfc\", \"sonic_pfcwd\"]\nsample_interval = \"1s\"\n{targets}",
                playbook = toml_path(&dir.join("playbook.toml")),
                inventory = toml_path(&dir.join("inventory.toml")),
                socket = toml_path(&home.join("control.sock")),
                endpoint = etcd.endpoint,
                ttl = TTL.as_secs(),
            ),
        )
        .unwrap();
        configs.insert(identity, config);
    }
    configs
}

/// Polls `probe` every 20 ms until it returns a value, at most `limit`.
fn until<T>(limit: Duration, what: &str, logs: impl Fn() -> String, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "gave up after {limit:?} waiting for {what}\n{}", logs());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn logs(daemons: &BTreeMap<&str, Daemon>) -> String {
    daemons.iter().map(|(id, d)| format!("--- {id} ---\n{}", d.log())).collect()
}

/// The id of the one escalation `daemon` executed on `leaf`.
fn by_owner_id(daemon: &Daemon, leaf: &str) -> String {
    let executed: Vec<String> = daemon
        .decisions()
        .into_iter()
        .filter(|d| d.proposal.action.kind == "pfcwd.escalate" && d.proposal.action.target.get("switch") == Some(leaf))
        .filter(|d| matches!(d.verdict, Verdict::Executed { .. }))
        .map(|d| d.id)
        .collect();
    assert_eq!(executed.len(), 1, "{executed:?}");
    executed[0].clone()
}

/// The escalations `daemon` decided on `leaf`.
fn escalations(daemon: &Daemon, leaf: &str) -> Vec<Verdict> {
    daemon
        .decisions()
        .into_iter()
        .filter(|d| d.proposal.action.kind == "pfcwd.escalate" && d.proposal.action.target.get("switch") == Some(leaf))
        .map(|d| d.verdict)
        .collect()
}

#[test]
fn sharded_aggregators_read_and_change_each_leaf_once_and_a_dead_ones_leaves_move_within_its_lease() {
    if !etcd_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut fleet = Fleet::start(dir.path());
    let owners = fleet.every_leaf_claimed_once_and_read();

    // A storm on a leaf: escalated once, by its owner.
    let stormed = fleet.names[0].clone();
    let owner = owners[&stormed].clone();
    fleet.storm_escalated_once_by_its_owner(&stormed, &owner);
    let original = by_owner_id(&fleet.daemons[owner.as_str()], &stormed);

    let moved = fleet.the_dead_owners_leaves_move_within_its_lease(&owners, &owner);

    // The storm goes on. The new owner adopts the escalation its previous
    // owner left in effect, and, reading the storm itself, sends nothing.
    let heir = moved[&stormed].1.clone();
    fleet.the_heir_adopts_the_escalation_then_undoes_it(&stormed, &owner, &heir, &original);
    fleet.a_clean_stop_hands_the_leaves_over_at_once(&owner, &stormed);
}

/// The test's fabric: etcd, eight leaves, three aggregators sharing them.
/// The fields drop in this order: the aggregators first, etcd last.
struct Fleet {
    daemons: BTreeMap<&'static str, Daemon>,
    names: Vec<String>,
    leaves: Leaves,
    etcd: Etcd,
}

impl Fleet {
    /// etcd, the leaves and the aggregators, each aggregator ready.
    fn start(dir: &Path) -> Fleet {
        let etcd = Etcd::start(dir);
        let leaves = Leaves::start();
        let names: Vec<String> = leaves.switches.iter().map(|s| s.name.clone()).collect();
        let configs = write_configs(dir, &leaves, &etcd);
        let mut daemons: BTreeMap<&str, Daemon> = configs
            .iter()
            .map(|(id, config)| {
                let home = config.parent().unwrap();
                (*id, Daemon::start(config, &home.join("control.sock"), &home.join("daemon.log")))
            })
            .collect();
        for daemon in daemons.values_mut() {
            daemon.wait_ready();
        }
        Fleet { daemons, names, leaves, etcd }
    }

    fn logs(&self) -> String {
        logs(&self.daemons)
    }

    /// Every leaf claimed once and read, each aggregator owning some, each
    /// leaf with one subscriber; the owners by leaf.
    fn every_leaf_claimed_once_and_read(&self) -> BTreeMap<String, String> {
        let owners = until(
            Duration::from_secs(20),
            "every leaf claimed and read",
            || self.logs(),
            || {
                let owners = self.etcd.owners();
                let read = self.names.iter().all(|n| self.leaves.subscriptions(n).1 > 0);
                (owners.len() == LEAVES && read).then_some(owners)
            },
        );
        let held: BTreeSet<&String> = owners.values().collect();
        assert_eq!(held.len(), AGGREGATORS.len(), "each aggregator owns some of the leaves: {owners:?}");
        // Settled: one subscriber per leaf. Each aggregator subscribes with the
        // same requests, so every leaf has the same number of streams; a leaf
        // read twice would have twice as many.
        std::thread::sleep(Duration::from_secs(1));
        let streams = self.leaves.subscriptions(&self.names[0]).1;
        for n in &self.names {
            assert_eq!(self.leaves.subscriptions(n).1, streams, "{n} is read by one aggregator: {owners:?}");
        }
        owners
    }

    /// A storm on `stormed` is escalated once, by `owner`, and by no other.
    fn storm_escalated_once_by_its_owner(&self, stormed: &str, owner: &str) {
        self.leaves.count_sets_from_now(stormed);
        self.leaves.get(stormed).model.inject_pfc_storm(PORT, QUEUE).unwrap();
        until(
            Duration::from_secs(20),
            "the storm escalated",
            || self.logs(),
            || (self.leaves.watchdog_restoration(stormed).as_deref() == Some("2000")).then_some(()),
        );
        // An escalation is a replace, which is two Sets (the entry deleted, then written).
        self.leaves.answered_sets(stormed, 2, "one escalation", || self.logs());
        // The Set lands between the intent on disk and the verdict recorded.
        let by_owner = until(
            Duration::from_secs(5),
            "the escalation recorded",
            || self.logs(),
            || {
                let v = escalations(&self.daemons[owner], stormed);
                v.iter().any(|v| matches!(v, Verdict::Executed { .. })).then_some(v)
            },
        );
        assert!(matches!(by_owner.as_slice(), [Verdict::Executed { .. }]), "{owner}: {by_owner:?}");
        for (id, daemon) in &self.daemons {
            if *id != owner {
                assert!(escalations(daemon, stormed).is_empty(), "{id} does not read {stormed}");
            }
        }
    }

    /// `owner` is SIGKILLed: each of its leaves is claimed and read by
    /// another aggregator within TTL + 1 s. By leaf: how soon, and by whom.
    fn the_dead_owners_leaves_move_within_its_lease(
        &mut self,
        owners: &BTreeMap<String, String>,
        owner: &str,
    ) -> BTreeMap<String, (Duration, String)> {
        let orphaned: Vec<String> = owners.iter().filter(|(_, o)| **o == owner).map(|(s, _)| s.clone()).collect();
        let started_before: BTreeMap<String, usize> =
            orphaned.iter().map(|s| (s.clone(), self.leaves.subscriptions(s).0)).collect();
        self.daemons.get_mut(owner).unwrap().kill();
        let killed = Instant::now();
        let mut moved = BTreeMap::new();
        while moved.len() < orphaned.len() {
            let owners = self.etcd.owners();
            for s in &orphaned {
                let claimed = owners.get(s).is_some_and(|o| *o != owner);
                let (started, streaming) = self.leaves.subscriptions(s);
                if !moved.contains_key(s) && claimed && started > started_before[s] && streaming > 0 {
                    moved.insert(s.clone(), (killed.elapsed(), owners[s].clone()));
                }
            }
            assert!(
                killed.elapsed() < TTL + Duration::from_secs(1),
                "within TTL + 1 s of the kill only {moved:?} of {orphaned:?} were read elsewhere\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        for (s, (after, by)) in &moved {
            eprintln!("{s}: read by {by} {:.2} s after {owner} was killed", after.as_secs_f64());
        }
        moved
    }

    /// `heir` adopts the escalation `owner` made on `stormed` (decision
    /// `original`) and sends nothing while the storm goes on; when it ends,
    /// the heir undoes it and the hand-over record goes.
    fn the_heir_adopts_the_escalation_then_undoes_it(&self, stormed: &str, owner: &str, heir: &str, original: &str) {
        let step = format!("adopted by {heir} from {owner} (its decision {original}): switch {stormed} changed hands");
        let adopted = until(
            Duration::from_secs(20),
            "the new owner's adoption",
            || self.logs(),
            || self.daemons[heir].decisions().into_iter().find(|d| d.steps.iter().any(|s| s.what == step)),
        );
        assert!(matches!(adopted.verdict, Verdict::Executed { .. }), "{adopted:#?}");
        std::thread::sleep(Duration::from_secs(3));
        assert_eq!(self.leaves.sets(stormed), 2, "still one escalation on {stormed}");

        // The storm ends: the new owner undoes the escalation, as its previous
        // owner would have, and its record goes.
        self.leaves.get(stormed).model.clear_pfc_storm(PORT, QUEUE).unwrap();
        until(
            Duration::from_secs(30),
            "the escalation undone by the new owner",
            || self.logs(),
            || (self.leaves.watchdog_restoration(stormed).as_deref() == Some("200")).then_some(()),
        );
        self.leaves.answered_sets(stormed, 4, "the escalation and its undo", || self.logs());
        // As above, the undo's Set lands before its verdict is recorded.
        until(
            Duration::from_secs(5),
            "the undo recorded",
            || self.logs(),
            || {
                self.daemons[heir].decisions().into_iter().find(|d| {
                    d.undo_of.as_deref() == Some(&adopted.id) && matches!(d.verdict, Verdict::Executed { .. })
                })
            },
        );
        until(
            Duration::from_secs(5),
            "the hand-over record deleted",
            || self.logs(),
            || {
                let (_, out) = self.etcd.ctl(&["get", "--prefix", "--keys-only", &format!("{PREFIX}handover/")]);
                out.trim().is_empty().then_some(())
            },
        );
    }

    /// An aggregator stopped cleanly (not `owner`) hands its leaves to the
    /// last one at once, not after the lease.
    fn a_clean_stop_hands_the_leaves_over_at_once(&mut self, owner: &str, stormed: &str) {
        let owners = self.etcd.owners();
        let leaving = owners.values().find(|o| **o != owner).unwrap().clone();
        let handed: Vec<String> = owners.iter().filter(|(_, o)| **o == leaving).map(|(s, _)| s.clone()).collect();
        let stopped_at = Instant::now();
        assert!(self.daemons.get_mut(leaving.as_str()).unwrap().stop().success());
        let last = AGGREGATORS.iter().find(|a| **a != owner && **a != leaving).unwrap().to_string();
        let took = until(
            TTL,
            "the leaves of the stopped aggregator claimed by the last one",
            || self.logs(),
            || {
                let owners = self.etcd.owners();
                handed.iter().all(|s| owners.get(s) == Some(&last)).then(|| stopped_at.elapsed())
            },
        );
        eprintln!("{leaving} stopped: its {} leaves claimed by {last} {:.2} s later", handed.len(), took.as_secs_f64());
        assert_eq!(self.etcd.owners().len(), LEAVES, "every leaf is still owned");
        assert_eq!(self.leaves.sets(stormed), 4, "and {stormed} was changed once and restored once in all");
    }
}
