//! Switch ownership sharded between aggregators, with a real etcd: three
//! aggregators share 48 switches, one is SIGKILLed and its switches move
//! within its lease, a fourth joins and takes about a third, one cut from
//! etcd stops owning anything within its lease. An auditor replays every
//! claim and release in revision order and checks that no switch ever has
//! two owners.
#![cfg(feature = "etcd")]

// The helper re-exports what other fleet tests use.
#[allow(unused_imports)]
use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{etcd_available, settings, Cluster};
use fleet::etcd_client::{Client, EventType, WatchOptions};
use fleet::shard::{owner_of, Shard};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

const SHARD: &str = env!("CARGO_BIN_EXE_rocemend-fleet-shard");
const GROUP: &str = "pod-a";
const OWNERS: &str = "/rocemend/fleet/shard/pod-a/owner/";
/// Lease TTL of every aggregator here, in seconds.
const TTL: u64 = 2;

fn switches(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("leaf-{i:02}")).collect()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every claim and release of the group, replayed in revision order from
/// revision 1.
#[derive(Default)]
struct Audit {
    /// switch → (owner, create revision of its claim).
    owners: BTreeMap<String, (String, i64)>,
    /// When each switch was last claimed, and by whom.
    claimed: BTreeMap<String, (Instant, String)>,
    violations: Vec<String>,
    events: usize,
    revision: i64,
}

impl Audit {
    fn apply(&mut self, put: bool, switch: &str, owner: &str, revision: i64, created: i64) {
        self.events += 1;
        if revision < self.revision {
            self.violations.push(format!("revision {revision} after {}", self.revision));
        }
        self.revision = revision;
        if put {
            if let Some((held_by, since)) = self.owners.get(switch) {
                // A put on a held claim is refused by the claim's transaction;
                // checked anyway.
                if held_by != owner || *since != created {
                    self.violations.push(format!(
                        "{switch} claimed by {owner} at revision {revision} while {held_by} held it (since {since})"
                    ));
                }
            }
            self.owners.insert(switch.to_string(), (owner.to_string(), created));
            self.claimed.insert(switch.to_string(), (Instant::now(), owner.to_string()));
        } else {
            self.owners.remove(switch);
        }
    }
}

struct Auditor {
    audit: Arc<Mutex<Audit>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Auditor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Auditor {
    async fn start(endpoints: &[String]) -> Auditor {
        let client = Client::connect(endpoints, None).await.expect("an etcd client");
        let options = WatchOptions::new().with_prefix().with_start_revision(1);
        let mut stream = client.watch_client().watch(OWNERS, Some(options)).await.expect("watching the claims");
        let audit = Arc::new(Mutex::new(Audit::default()));
        let state = audit.clone();
        let task = tokio::spawn(async move {
            loop {
                let response = match stream.message().await {
                    Ok(Some(r)) if !r.canceled() => r,
                    other => {
                        lock(&state).violations.push(format!("the audit watch ended: {other:?}"));
                        return;
                    }
                };
                let mut audit = lock(&state);
                for event in response.events() {
                    let kv = event.kv().expect("an event's key");
                    let key = String::from_utf8_lossy(kv.key());
                    let switch = key.strip_prefix(OWNERS).expect("a claim key");
                    let owner = String::from_utf8_lossy(kv.value());
                    let put = event.event_type() == EventType::Put;
                    audit.apply(put, switch, &owner, kv.mod_revision(), kv.create_revision());
                }
            }
        });
        Auditor { audit, task }
    }

    /// switch → owner, as the claims say now.
    fn owners(&self) -> BTreeMap<String, String> {
        lock(&self.audit).owners.iter().map(|(s, (o, _))| (s.clone(), o.clone())).collect()
    }

    fn violations(&self) -> Vec<String> {
        lock(&self.audit).violations.clone()
    }
}

/// An aggregator in a process of its own; SIGKILLed when dropped.
struct Process {
    identity: String,
    child: Child,
    owned: Arc<Mutex<BTreeSet<String>>>,
}

impl Process {
    fn spawn(endpoints: &[String], identity: &str, switches: &[String]) -> Process {
        let mut child = Command::new(SHARD)
            .args(["--etcd", &endpoints.join(","), "--identity", identity, "--group", GROUP])
            .args(["--switches", &switches.join(","), "--ttl", &TTL.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting rocemend-fleet-shard");
        let owned = Arc::new(Mutex::new(BTreeSet::new()));
        let sink = owned.clone();
        let stdout = child.stdout.take().expect("its stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
                let set = v["owned"].as_array().expect("owned").iter().map(|s| s.as_str().unwrap().to_string());
                *lock(&sink) = set.collect();
            }
        });
        Process { identity: identity.into(), child, owned }
    }

    fn owned(&self) -> BTreeSet<String> {
        lock(&self.owned).clone()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether the group has settled on `published` (identity → the owned set
/// it publishes): every switch claimed, by the member the hash gives it
/// to, and each member's published set is exactly what it holds in etcd.
fn settled(
    owners: &BTreeMap<String, String>,
    published: &BTreeMap<String, BTreeSet<String>>,
    all: &[String],
) -> Result<(), String> {
    let members = || published.keys().map(String::as_str);
    for s in all {
        let want = owner_of(s, members()).unwrap();
        match owners.get(s) {
            Some(o) if o == want => {}
            other => return Err(format!("{s} claimed by {other:?}, the hash gives it to {want}")),
        }
    }
    if owners.len() != all.len() {
        return Err(format!("{} claims for {} switches: {owners:?}", owners.len(), all.len()));
    }
    for (id, set) in published {
        let held: BTreeSet<String> = owners.iter().filter(|(_, o)| *o == id).map(|(s, _)| s.clone()).collect();
        if *set != held {
            return Err(format!("{id} publishes {set:?} but holds {held:?}"));
        }
    }
    Ok(())
}

/// Each switch in at most one published set.
fn disjoint(published: &BTreeMap<String, BTreeSet<String>>) -> Result<(), String> {
    let mut seen: BTreeMap<&String, &String> = BTreeMap::new();
    for (id, set) in published {
        for s in set {
            if let Some(other) = seen.insert(s, id) {
                return Err(format!("{s} is published as owned by both {other} and {id}"));
            }
        }
    }
    Ok(())
}

async fn until<F: FnMut() -> Result<(), String>>(within: Duration, what: &str, mut check: F) {
    let deadline = Instant::now() + within;
    loop {
        match check() {
            Ok(()) => return,
            Err(why) if Instant::now() > deadline => panic!("{what} not within {within:?}: {why}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// What each aggregator process publishes it owns, by identity.
fn published(procs: &[Process]) -> BTreeMap<String, BTreeSet<String>> {
    procs.iter().map(|p| (p.identity.clone(), p.owned())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_aggregators_share_48_switches_a_killed_ones_move_within_its_lease_and_a_fourth_takes_a_third() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let all = switches(48);
    let auditor = Auditor::start(&endpoints).await;
    let mut procs: Vec<Process> =
        ["agg-a", "agg-b", "agg-c"].iter().map(|id| Process::spawn(&endpoints, id, &all)).collect();
    three_share_the_switches(&auditor, &procs, &all).await;
    let theirs = agg_b_killed_its_switches_move_within_its_lease(&auditor, &mut procs, &all).await;
    // The fourth stays in the group until the audit is read.
    let (_joiner, taken) = a_fourth_joins_and_takes_about_a_third(&endpoints, &auditor, &procs, &all).await;

    let audit = lock(&auditor.audit);
    assert!(audit.violations.is_empty(), "{:#?}", audit.violations);
    // 48 claims, then agg-b's again, then agg-d's releases and claims.
    assert!(audit.events >= 48 + theirs.len() + 2 * taken.len(), "only {} claim events seen", audit.events);
}

/// The three settle: every switch claimed by the member the hash gives it
/// to, each owning about a third.
async fn three_share_the_switches(auditor: &Auditor, procs: &[Process], all: &[String]) {
    until(Duration::from_secs(15), "three aggregators settling", || {
        disjoint(&published(procs))?;
        settled(&auditor.owners(), &published(procs), all)
    })
    .await;
    let shares = published(procs);
    let union: BTreeSet<&String> = shares.values().flatten().collect();
    assert_eq!(union.len(), 48, "{shares:?}");
    disjoint(&shares).unwrap();
    for (id, set) in &shares {
        println!("{id} owns {} of 48", set.len());
        assert!((8..=24).contains(&set.len()), "{id} owns {} of 48: {shares:?}", set.len());
    }
}

/// agg-b (`procs[1]`) SIGKILLed: no release, its lease lapses on its own,
/// and its switches are claimed by the others no sooner and not much later.
/// Returns the switches it had.
async fn agg_b_killed_its_switches_move_within_its_lease(
    auditor: &Auditor,
    procs: &mut Vec<Process>,
    all: &[String],
) -> BTreeSet<String> {
    let theirs = procs[1].owned();
    assert!(!theirs.is_empty());
    procs[1].kill();
    let killed = Instant::now();
    let dead = procs.remove(1);
    let failover = loop {
        disjoint(&published(procs)).unwrap();
        let claimed = {
            let audit = lock(&auditor.audit);
            theirs
                .iter()
                .map(|s| audit.claimed.get(s).filter(|(at, by)| *at > killed && by != "agg-b").map(|(at, _)| *at))
                .collect::<Option<Vec<Instant>>>()
        };
        if let Some(at) = claimed {
            break at.into_iter().max().unwrap() - killed;
        }
        assert!(killed.elapsed() < Duration::from_secs(TTL + 5), "agg-b's switches not claimed elsewhere");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    println!(
        "failover: agg-b's {} switches claimed by the others {failover:?} after SIGKILL (lease TTL {TTL}s)",
        theirs.len()
    );
    assert!(failover <= Duration::from_secs(TTL + 1), "failover took {failover:?}, more than TTL + 1 s");
    // Kept alive every third of the TTL, the lease lapses about two thirds
    // of it or more after the kill (half, for a late keep-alive): nobody
    // took the switches before.
    assert!(failover >= Duration::from_secs(TTL) / 2, "moved after {failover:?}: before the lease could lapse");
    until(Duration::from_secs(5), "two aggregators settling", || {
        disjoint(&published(procs))?;
        settled(&auditor.owners(), &published(procs), all)
    })
    .await;
    drop(dead);
    theirs
}

/// A fourth joins, in this process: it takes about a third, and only
/// switches moving to it move. Returns it and the switches it took.
async fn a_fourth_joins_and_takes_about_a_third(
    endpoints: &[String],
    auditor: &Auditor,
    procs: &[Process],
    all: &[String],
) -> (Shard, BTreeSet<String>) {
    let before = auditor.owners();
    let joiner = Shard::start(&settings(endpoints, "agg-d", 1, TTL), GROUP, all.to_vec()).await.unwrap();
    joiner.ready(Duration::from_secs(10)).await.unwrap();
    let joined = Instant::now();
    let with_joiner = |procs: &[Process]| {
        let mut p = published(procs);
        p.insert("agg-d".into(), joiner.owned());
        p
    };
    until(Duration::from_secs(10), "the fourth aggregator settling", || {
        disjoint(&with_joiner(procs))?;
        settled(&auditor.owners(), &with_joiner(procs), all)
    })
    .await;
    println!("join: agg-d settled {:?} after its session began", joined.elapsed());
    let after = auditor.owners();
    let taken = joiner.owned();
    println!("agg-d owns {} of 48", taken.len());
    assert!((8..=24).contains(&taken.len()), "agg-d owns {} of 48", taken.len());
    for s in all {
        if before[s] != after[s] {
            assert_eq!(after[s], "agg-d", "{s} moved from {} to {} when agg-d joined", before[s], after[s]);
        }
    }
    assert!(joiner.members().contains("agg-a") && joiner.members().contains("agg-d"), "{:?}", joiner.members());
    let one = taken.first().unwrap();
    assert!(joiner.owns(one) && joiner.confirm(one).await, "agg-d cannot confirm {one}");
    let other = all.iter().find(|s| !taken.contains(*s)).unwrap();
    assert!(!joiner.owns(other) && !joiner.confirm(other).await, "agg-d confirms {other}, owned by {}", after[other]);
    (joiner, taken)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aggregator_cut_from_etcd_owns_nothing_within_its_lease_and_claims_again_when_it_returns() {
    if !etcd_available() {
        return;
    }
    let mut cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let all = switches(12);
    let shard = Shard::start(&settings(&endpoints, "solo", 1, TTL), GROUP, all.clone()).await.unwrap();
    shard.ready(Duration::from_secs(10)).await.unwrap();
    let mut owned = shard.subscribe();
    until(Duration::from_secs(5), "owning every switch", || {
        (owned.borrow().len() == 12).then_some(()).ok_or_else(|| format!("{:?}", owned.borrow()))
    })
    .await;
    assert!(shard.confirm("leaf-00").await);
    owned.borrow_and_update();

    cluster.kill(0);
    let cut = Instant::now();
    while !owned.borrow_and_update().is_empty() {
        let left = Duration::from_secs(TTL + 1).saturating_sub(cut.elapsed());
        assert!(tokio::time::timeout(left, owned.changed()).await.is_ok(), "still owning {:?}", owned.borrow());
    }
    let emptied = cut.elapsed();
    println!("cut from etcd: the owned set emptied {emptied:?} after the kill (lease TTL {TTL}s)");
    assert!(emptied <= Duration::from_secs(TTL), "emptied after {emptied:?}, beyond the lease TTL");
    for s in &all {
        assert!(!shard.owns(s), "still owns {s}");
    }
    assert!(shard.owned().is_empty());
    assert!(!shard.confirm("leaf-00").await);

    cluster.restart(0).await;
    until(Duration::from_secs(20), "owning every switch again", || {
        (shard.owned().len() == 12).then_some(()).ok_or_else(|| format!("{:?}", shard.owned()))
    })
    .await;
    assert!(shard.confirm("leaf-00").await, "the new claim is not confirmed");
}

/// A TCP proxy to etcd that can be cut like a partition: while cut it
/// forwards nothing and closes nothing, so requests just get no answer.
struct Proxy {
    url: String,
    cut: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.heal();
    }
}

impl Proxy {
    async fn start(target: &str) -> Proxy {
        let target = target.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let cut = Arc::new(AtomicBool::new(false));
        let connections: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let (c, conns) = (cut.clone(), connections.clone());
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let (c, target) = (c.clone(), target.clone());
                let task = tokio::spawn(async move {
                    if c.load(Ordering::SeqCst) {
                        // Partitioned: hold the connection, answer nothing.
                        let _held = inbound;
                        match std::future::pending::<std::convert::Infallible>().await {}
                    }
                    let Ok(outbound) = TcpStream::connect(&target).await else { return };
                    let (ri, wi) = inbound.into_split();
                    let (ro, wo) = outbound.into_split();
                    tokio::join!(pump(ri, wo, c.clone()), pump(ro, wi, c));
                });
                lock(&conns).push(task);
            }
        });
        Proxy { url, cut, connections, accept }
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Ends the partition: the connections it spoiled are closed, new ones
    /// are forwarded.
    fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
        for task in lock(&self.connections).drain(..) {
            task.abort();
        }
    }
}

async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, cut: Arc<AtomicBool>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) if cut.load(Ordering::SeqCst) => {}
            Ok(n) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_aggregator_stops_owning_within_its_lease_before_another_claims() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let auditor = Auditor::start(&endpoints).await;
    let proxy = Proxy::start(&endpoints[0]).await;
    let all = switches(24);
    let p =
        Shard::start(&settings(std::slice::from_ref(&proxy.url), "agg-p", 1, TTL), GROUP, all.clone()).await.unwrap();
    let q = Shard::start(&settings(&endpoints, "agg-q", 1, TTL), GROUP, all.clone()).await.unwrap();
    p.ready(Duration::from_secs(10)).await.unwrap();
    q.ready(Duration::from_secs(10)).await.unwrap();
    let published = || BTreeMap::from([("agg-p".to_string(), p.owned()), ("agg-q".to_string(), q.owned())]);
    until(Duration::from_secs(10), "two aggregators settling", || {
        disjoint(&published())?;
        settled(&auditor.owners(), &published(), &all)
    })
    .await;
    let theirs = p.owned();
    assert!(!theirs.is_empty());
    let mut owned = p.subscribe();
    owned.borrow_and_update();

    proxy.cut();
    let cut = Instant::now();
    while !owned.borrow_and_update().is_empty() {
        let left = Duration::from_secs(TTL + 1).saturating_sub(cut.elapsed());
        assert!(tokio::time::timeout(left, owned.changed()).await.is_ok(), "still owning {:?}", owned.borrow());
    }
    let emptied = Instant::now();
    println!("partitioned: agg-p's owned set emptied {:?} after the cut (lease TTL {TTL}s)", emptied - cut);
    assert!(emptied - cut <= Duration::from_secs(TTL), "emptied after {:?}, beyond the lease TTL", emptied - cut);
    assert!(theirs.iter().all(|s| !p.owns(s)));
    until(Duration::from_secs(TTL + 3), "agg-q claiming agg-p's switches", || {
        (q.owned().len() == 24).then_some(()).ok_or_else(|| format!("{:?}", q.owned()))
    })
    .await;
    {
        let audit = lock(&auditor.audit);
        for s in &theirs {
            let (at, by) = &audit.claimed[s];
            assert_eq!(by, "agg-q");
            // The partitioned one had stopped before the other started.
            assert!(*at > emptied, "{s} claimed by agg-q {:?} before agg-p let go", emptied - *at);
        }
        assert!(audit.violations.is_empty(), "{:#?}", audit.violations);
    }
    println!(
        "partitioned: agg-q claimed them {:?} after the cut",
        lock(&auditor.audit).claimed.values().map(|(at, _)| *at - cut).max().unwrap()
    );

    proxy.heal();
    until(Duration::from_secs(20), "sharing again after the partition", || {
        disjoint(&published())?;
        settled(&auditor.owners(), &published(), &all)
    })
    .await;
    assert!(auditor.violations().is_empty(), "{:?}", auditor.violations());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregators_starting_together_disagree_for_a_moment_and_never_both_own_a_switch() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let auditor = Auditor::start(&endpoints).await;
    let all = switches(48);
    let ids = ["agg-1", "agg-2", "agg-3", "agg-4", "agg-5"];
    for round in 0..6u64 {
        // Started a few milliseconds apart, while the first ones are still
        // claiming: each has its own idea of the membership for a moment,
        // and goes for switches another is claiming at that moment.
        let mut shards = Vec::new();
        for id in ids {
            shards.push(Shard::start(&settings(&endpoints, id, 1, TTL), GROUP, all.clone()).await.unwrap());
            tokio::time::sleep(Duration::from_millis(3 * round)).await;
        }
        until(Duration::from_secs(10), "five aggregators settling", || {
            let published: BTreeMap<String, BTreeSet<String>> =
                shards.iter().map(|s| (s.identity().to_string(), s.owned())).collect();
            disjoint(&published)?;
            settled(&auditor.owners(), &published, &all)
        })
        .await;
        assert!(auditor.violations().is_empty(), "round {round}: {:#?}", auditor.violations());
        for s in shards {
            s.leave().await.unwrap();
        }
        until(Duration::from_secs(5), "every claim gone", || {
            auditor.owners().is_empty().then_some(()).ok_or_else(|| format!("{:?}", auditor.owners()))
        })
        .await;
    }
    let events = lock(&auditor.audit).events;
    assert!(events >= 6 * 2 * 48, "{events} events for 6 rounds of 48 claims and releases");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_switch_is_claimed_only_once_free_and_a_double_owner_is_caught() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let auditor = Auditor::start(&endpoints).await;
    let mut client = Client::connect(&endpoints, None).await.unwrap();
    let key = format!("{OWNERS}leaf-00");
    // Someone else holds leaf-00 (without a lease: it stays until deleted).
    client.put(key.as_str(), "intruder", None).await.unwrap();
    let shard = Shard::start(&settings(&endpoints, "agg-a", 1, TTL), GROUP, switches(2)).await.unwrap();
    shard.ready(Duration::from_secs(10)).await.unwrap();
    until(Duration::from_secs(5), "owning leaf-01", || {
        shard.owns("leaf-01").then_some(()).ok_or_else(|| format!("{:?}", shard.owned()))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!shard.owns("leaf-00"), "claimed a switch held by another");
    assert!(!shard.confirm("leaf-00").await);
    assert_eq!(auditor.owners().get("leaf-00").map(String::as_str), Some("intruder"));

    client.delete(key.as_str(), None).await.unwrap();
    let freed = Instant::now();
    until(Duration::from_secs(2), "claiming leaf-00 once free", || {
        shard.owns("leaf-00").then_some(()).ok_or_else(|| format!("{:?}", shard.owned()))
    })
    .await;
    println!("leaf-00 claimed {:?} after it was freed", freed.elapsed());
    assert!(shard.confirm("leaf-00").await);
    assert!(auditor.violations().is_empty(), "{:?}", auditor.violations());

    // The auditor's check can fail: a put over a held claim (what the
    // claim's transaction refuses) is reported.
    client.put(key.as_str(), "intruder", None).await.unwrap();
    until(Duration::from_secs(2), "the auditor reporting two owners", || {
        let v = auditor.violations();
        v.iter()
            .any(|v| v.starts_with("leaf-00 claimed by intruder") && v.contains("while agg-a held it"))
            .then_some(())
            .ok_or_else(|| format!("{v:?}"))
    })
    .await;
    // And agg-a, seeing its claim overwritten, stops owning leaf-00.
    until(Duration::from_secs(2), "agg-a letting go of leaf-00", || {
        (!shard.owns("leaf-00")).then_some(()).ok_or_else(|| "still owns leaf-00".into())
    })
    .await;
    assert!(!shard.confirm("leaf-00").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aggregator_that_leaves_hands_its_switches_over_at_once() {
    if !etcd_available() {
        return;
    }
    let cluster = Cluster::start(1).await;
    let endpoints = cluster.endpoints();
    let all = switches(24);
    // A long lease: a hand-over that waited for it would take 10 s.
    let x = Shard::start(&settings(&endpoints, "agg-x", 1, 10), GROUP, all.clone()).await.unwrap();
    let y = Shard::start(&settings(&endpoints, "agg-y", 1, 10), GROUP, all.clone()).await.unwrap();
    x.ready(Duration::from_secs(10)).await.unwrap();
    y.ready(Duration::from_secs(10)).await.unwrap();
    until(Duration::from_secs(10), "sharing the switches", || {
        let (a, b) = (x.owned(), y.owned());
        (a.len() + b.len() == 24 && a.is_disjoint(&b) && !a.is_empty() && !b.is_empty())
            .then_some(())
            .ok_or_else(|| format!("{a:?} {b:?}"))
    })
    .await;
    x.leave().await.unwrap();
    let left = Instant::now();
    until(Duration::from_secs(2), "agg-y owning every switch", || {
        (y.owned().len() == 24).then_some(()).ok_or_else(|| format!("{:?}", y.owned()))
    })
    .await;
    println!("hand-over on leave: {:?}", left.elapsed());
    assert_eq!(y.members(), BTreeSet::from(["agg-y".to_string()]));
}
