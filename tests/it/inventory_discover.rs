//! `rocemend inventory discover`, `merge` and `check` on a real LLDP fabric: 4 nodes and 2
//! leaves, each a network namespace running lldpd, joined by veth pairs (NIC i of node k to
//! leaf-rail<i> port Ethernet<4(k-1)>), each node with a fake H100/ConnectX-7 sysfs tree.
//!
//! Discovery on every node, then merge with the leaves' LLDP tables, must give exactly
//! `fixtures/inventory_fabric.toml`, and each fragment must load as the daemon's inventory.
//! Then node-2's two cables are swapped between the leaves: its new fragment still loads (each
//! NIC's rail is its leaf's), but `inventory check` names the swap by both ends — node, NIC,
//! netdev, leaf and port — and checking the intended inventory against the leaves' tables
//! names the disagreement.
//!
//! The leaves' tables are what SONiC's lldp_syncd would write to APPL_DB `LLDP_ENTRY_TABLE`,
//! made here from the leaf's own `lldpcli` (the test plays lldp_syncd).
//!
//! Needs root, iproute2 and lldpd; skipped with the reason otherwise.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{bin, repo, text};
use engine::topology::Inventory;
use net::netns::{self, Netns};
use serde_json::json;

/// How long lldpd gets to hear every neighbour (it sends at once on `lldpcli update`).
const SETTLE: Duration = Duration::from_secs(30);

fn lldpd_missing() -> Option<String> {
    for tool in ["lldpd", "lldpcli"] {
        let found = Command::new(tool).arg("-v").output().is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!("`{tool}` is not installed (Debian lldpd)"));
        }
    }
    None
}

/// One namespace with its lldpd. lldpd is killed (by its id) and the namespace deleted on drop,
/// a failing test included.
struct Host {
    name: String,
    ns: Netns,
    socket: PathBuf,
    lldpd: Option<Child>,
}

impl Host {
    fn new(prefix: &str, name: &str, dir: &Path) -> Host {
        let ns = Netns::create(&format!("{prefix}{name}")).unwrap_or_else(|e| panic!("netns {name}: {e}"));
        ns.ip(&["link", "set", "lo", "up"]).unwrap();
        Host { name: name.to_string(), ns, socket: dir.join(format!("{name}.sock")), lldpd: None }
    }

    /// Starts lldpd on `pattern`'s interfaces, named `self.name`, port ids as interface names.
    fn start_lldpd(&mut self, pattern: &str, dir: &Path) {
        let pid = dir.join(format!("{}.pid", self.name));
        let child = Command::new("ip")
            .args(["netns", "exec", &self.ns.name, "lldpd", "-d", "-u"])
            .arg(&self.socket)
            .arg("-p")
            .arg(&pid)
            .args(["-I", pattern])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("lldpd starts");
        self.lldpd = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.lldpcli(&["show", "configuration"]).status.success() {
            assert!(Instant::now() < deadline, "lldpd of {} never opened {}", self.name, self.socket.display());
            std::thread::sleep(Duration::from_millis(100));
        }
        for args in
            [vec!["configure", "system", "hostname", &self.name], vec!["configure", "lldp", "portidsubtype", "ifname"]]
        {
            let out = self.lldpcli(&args);
            assert!(out.status.success(), "lldpcli {args:?}: {}", text(&out));
        }
    }

    fn lldpcli(&self, args: &[&str]) -> Output {
        Command::new("lldpcli").arg("-u").arg(&self.socket).args(args).output().expect("lldpcli runs")
    }

    /// Its neighbours as lldpd sees them.
    fn neighbors(&self) -> Vec<ops::inventory::lldp::Neighbor> {
        let out = self.lldpcli(&["-f", "json", "show", "neighbors"]);
        ops::inventory::lldp::parse(&String::from_utf8_lossy(&out.stdout)).unwrap_or_default()
    }

    /// Its LLDP table as lldp_syncd writes APPL_DB's `LLDP_ENTRY_TABLE`, dumped as
    /// `sonic-db-dump` dumps it.
    fn lldp_entry_table(&self, path: &Path) -> String {
        let mut table = serde_json::Map::new();
        for n in self.neighbors() {
            let fields = json!({
                "lldp_rem_sys_name": n.sys_name, "lldp_rem_port_id": n.port_id,
                "lldp_rem_port_desc": n.port_descr, "lldp_rem_port_id_subtype": "5",
            });
            table.insert(format!("LLDP_ENTRY_TABLE:{}", n.local), json!({"type": "hash", "value": fields}));
        }
        std::fs::write(path, serde_json::to_string_pretty(&table).unwrap()).unwrap();
        format!("{}={}", self.name, path.display())
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(mut child) = self.lldpd.take() {
            // SIGTERM first: lldpd's monitor then stops its unprivileged child and removes the
            // socket; SIGKILL if it has not gone within two seconds.
            // SAFETY: kill(2) on the id of a child this test started and has not reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(2);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Cables node `k`'s NIC `i` (eth<i>) to leaf `leaf` port Ethernet<4(k-1)>.
fn cable(node: &Host, nic: usize, leaf: &Host, k: usize) {
    let port = format!("Ethernet{}", 4 * (k - 1));
    let link = format!("eth{nic}");
    let add = ["link", "add", &link, "type", "veth", "peer", "name", &port, "netns", &leaf.ns.name];
    node.ns.ip(&add).unwrap_or_else(|e| panic!("{} {link} ↔ {} {port}: {e}", node.name, leaf.name));
    node.ns.ip(&["link", "set", &link, "up"]).unwrap();
    leaf.ns.ip(&["link", "set", &port, "up"]).unwrap();
}

/// Sends LLDP now from every host until `done` holds.
fn settle(hosts: &[&Host], what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + SETTLE;
    while !done() {
        assert!(Instant::now() < deadline, "LLDP did not settle within {SETTLE:?}: {what}");
        for h in hosts {
            h.lldpcli(&["update"]);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn rocemend(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("rocemend runs")
}

/// Discovers node `host` (its fake tree under `dir/<name>`) into `dir/<name>.toml`.
fn discover(host: &Host, dir: &Path) -> PathBuf {
    let root = dir.join(&host.name);
    if !root.exists() {
        ops::inventory::testing::write_h100(&root, &["eth0", "eth1"]).unwrap();
    }
    let out = dir.join(format!("{}.toml", host.name));
    let run = rocemend(&[
        "inventory",
        "discover",
        "--node",
        &host.name,
        "--sysfs-root",
        &root.display().to_string(),
        "-u",
        &host.socket.display().to_string(),
        "-o",
        &out.display().to_string(),
    ]);
    assert!(run.status.success(), "discover on {}: {}", host.name, text(&run));
    let check = rocemend(&["check", "--inventory", &out.display().to_string()]);
    assert!(check.status.success(), "the fragment of {} loads as an inventory: {}", host.name, text(&check));
    out
}

fn load(path: &Path) -> Inventory {
    toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Four nodes cabled to two leaves, lldpd in each, every port hearing its far end.
fn fabric(prefix: &str, dir: &Path) -> (Vec<Host>, Vec<Host>) {
    let mut leaves: Vec<Host> = (0..2).map(|r| Host::new(prefix, &format!("leaf-rail{r}"), dir)).collect();
    let mut nodes: Vec<Host> = (1..=4).map(|k| Host::new(prefix, &format!("node-{k}"), dir)).collect();
    for (k, node) in (1..=4).zip(&nodes) {
        for (i, leaf) in leaves.iter().enumerate() {
            cable(node, i, leaf, k);
        }
    }
    for leaf in &mut leaves {
        leaf.start_lldpd("Ethernet*", dir);
    }
    for node in &mut nodes {
        node.start_lldpd("eth*", dir);
    }
    let all: Vec<&Host> = leaves.iter().chain(&nodes).collect();
    settle(&all, "every port sees its far end", || {
        nodes.iter().all(|n| n.neighbors().iter().filter(|x| x.sys_name.is_some()).count() == 2)
            && leaves.iter().all(|l| l.neighbors().iter().filter(|x| x.sys_name.is_some()).count() == 4)
    });
    (leaves, nodes)
}

/// `rocemend inventory merge -o out FRAGMENTS… --lldp-table T…`, which must exit 0.
fn merge(out: &Path, fragments: &[&PathBuf], tables: &[String]) {
    let mut args = vec!["inventory".to_string(), "merge".into(), "-o".into(), out.display().to_string()];
    args.extend(fragments.iter().map(|f| f.display().to_string()));
    for t in tables {
        args.extend(["--lldp-table".to_string(), t.clone()]);
    }
    let run = rocemend(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(run.status.success(), "merge (the nodes and leaves agree): {}", text(&run));
}

/// Swaps node-2's cables (eth0 to leaf-rail1 Ethernet4, eth1 to leaf-rail0 Ethernet4) and
/// waits until both ends of both cables have heard the change.
fn swap_node_2(leaves: &[Host], nodes: &[Host]) {
    for i in 0..2 {
        nodes[1].ns.ip(&["link", "del", &format!("eth{i}")]).unwrap();
    }
    cable(&nodes[1], 0, &leaves[1], 2);
    cable(&nodes[1], 1, &leaves[0], 2);
    let all: Vec<&Host> = leaves.iter().chain(nodes).collect();
    let sees = |h: &Host, local: &str, far: &str| {
        h.neighbors().iter().any(|n| n.local == local && (n.port_id == far || n.sys_name.as_deref() == Some(far)))
    };
    settle(&all, "the leaves and node-2 hear the swapped cables", || {
        sees(&leaves[0], "Ethernet4", "eth1")
            && sees(&leaves[1], "Ethernet4", "eth0")
            && sees(&nodes[1], "eth0", "leaf-rail1")
            && sees(&nodes[1], "eth1", "leaf-rail0")
    });
}

#[test]
fn discovered_fragments_merge_into_the_fabric_and_a_swapped_cable_is_named_by_both_ends() {
    if let Some(reason) = netns::missing_part(&["ip"]).or_else(lldpd_missing) {
        return test_peers::missing(reason);
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("rmi{}-", std::process::id());
    let (leaves, nodes) = fabric(&prefix, dir.path());
    let fragments: Vec<PathBuf> = nodes.iter().map(|n| discover(n, dir.path())).collect();
    let fragment = std::fs::read_to_string(&fragments[0]).unwrap();
    assert!(fragment.contains("switch_port = \"Ethernet0\"  # lldpcli: neighbour of eth0"), "{fragment}");
    assert!(fragment.contains("gpu = 0  # deepest common PCIe bridge 0000:01:00.0"), "{fragment}");
    let table = |l: &Host, tag: &str| l.lldp_entry_table(&dir.path().join(format!("{}.{tag}.json", l.name)));
    let tables: Vec<String> = leaves.iter().map(|l| table(l, "lldp")).collect();
    let merged = dir.path().join("merged.toml");
    merge(&merged, &fragments.iter().collect::<Vec<_>>(), &tables);
    let expected = repo("tests/it/fixtures/inventory_fabric.toml");
    assert_eq!(load(&merged), load(&expected), "merged: {}", std::fs::read_to_string(&merged).unwrap());
    let clean = rocemend(&["inventory", "check", &merged.display().to_string()]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean));

    swap_node_2(&leaves, &nodes);
    let swapped = discover(&nodes[1], dir.path());
    let merged = dir.path().join("merged-swapped.toml");
    merge(&merged, &[&fragments[0], &swapped, &fragments[2], &fragments[3]], &[]);
    let faults = rocemend(&["inventory", "check", &merged.display().to_string()]);
    let out = text(&faults);
    assert_eq!(faults.status.code(), Some(1), "{out}");
    assert!(out.contains("node \"node-2\" NIC mlx5_0 (eth0), cabled to leaf-rail1 port Ethernet4, the NIC nearest to GPU 0, is on rail 1, but GPU 0 of node-1, node-3, node-4 is on rail 0"), "{out}");
    assert!(out.contains("node \"node-2\" NIC mlx5_1 (eth1), cabled to leaf-rail0 port Ethernet4, the NIC nearest to GPU 1, is on rail 0"), "{out}");
    assert!(out.contains("2 fault(s)"), "{out}");

    // The intended cabling against what the leaves see now.
    let tables: Vec<String> = leaves.iter().map(|l| table(l, "swapped")).collect();
    let intended = expected.display().to_string();
    let run = rocemend(&["inventory", "check", &intended, "--lldp-table", &tables[0], "--lldp-table", &tables[1]]);
    let out = text(&run);
    assert_eq!(run.status.code(), Some(1), "{out}");
    assert!(out.contains("node \"node-2\" NIC mlx5_0 (eth0), cabled to leaf-rail0 port Ethernet4, but leaf-rail0 port Ethernet4 sees node-2 eth1"), "{out}");
    assert!(out.contains("node \"node-2\" NIC mlx5_1 (eth1), cabled to leaf-rail1 port Ethernet4, but leaf-rail1 port Ethernet4 sees node-2 eth0"), "{out}");
    assert!(out.contains("2 fault(s)"), "only node-2's two cables: {out}");
    drop((nodes, leaves));
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&left.stdout).contains(&prefix), "namespaces removed");
}

#[test]
fn an_inventory_that_is_not_toml_is_unusable_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "[[node]]\nname = \n").unwrap();
    let run = rocemend(&["inventory", "check", &path.display().to_string()]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run));
    assert!(text(&run).contains("bad.toml:2:"), "{}", text(&run));
}

/// A redis-server on a loopback port standing in for a leaf's, killed (by its id) on drop.
struct LeafRedis(Child, u16);

impl LeafRedis {
    fn start(dir: &Path) -> LeafRedis {
        let [port] = test_peers::free_ports::<1>();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let redis = LeafRedis(child, port);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !redis.cli(&["PING"]).status.success() {
            assert!(Instant::now() < deadline, "redis-server never answered on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        redis
    }

    fn cli(&self, args: &[&str]) -> Output {
        Command::new("redis-cli").args(["-p", &self.1.to_string()]).args(args).output().expect("redis-cli runs")
    }
}

impl Drop for LeafRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// sonic-gnmi's front over `redis` (with `tls` when given), on a loopback port, on a thread of
/// its own until the returned sender is dropped.
fn gnmi_front(
    redis: &LeafRedis,
    tls: Option<sonic::gnmi_front::FrontTls>,
) -> (u16, tokio::sync::oneshot::Sender<()>, std::thread::JoinHandle<()>) {
    use sonic::gnmi_front::{serve, FrontConfig, GnmiFront, RedisBackend};
    use sonic::layout::{DatabaseLayout, Instance};
    let instance =
        Instance { name: "redis".into(), hostname: "127.0.0.1".into(), port: redis.1, unix_socket_path: None };
    let switch = sonic::Switch::new(DatabaseLayout::standard_at(instance), None);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let front = GnmiFront::new(std::sync::Arc::new(RedisBackend::new(switch)), FrontConfig::default());
            serve(front, listener, tls, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
    });
    (port, stop, thread)
}

/// A leaf's Redis whose APPL_DB (database 0) has node-2's eth1 where its eth0 should be, as
/// lldp_syncd would write it; `None` (the test skipped) without redis-server.
fn leaf_redis_with_node_2_swapped(dir: &tempfile::TempDir) -> Option<LeafRedis> {
    let missing =
        ["redis-server", "redis-cli"].into_iter().find(|t| Command::new(t).arg("--version").output().is_err());
    if let Some(tool) = missing {
        test_peers::missing(format!("`{tool}` is not installed (Debian redis-server)"));
        return None;
    }
    let redis = LeafRedis::start(dir.path());
    for (k, netdev) in [(1, "eth0"), (2, "eth1"), (3, "eth0"), (4, "eth0")] {
        let key = format!("LLDP_ENTRY_TABLE:Ethernet{}", 4 * (k - 1));
        let node = format!("node-{k}");
        let fields = ["lldp_rem_sys_name", &node, "lldp_rem_port_id", netdev, "lldp_rem_port_desc", netdev];
        let set = redis.cli(&[&["HSET", key.as_str()][..], &fields[..]].concat());
        assert!(set.status.success(), "{}", text(&set));
    }
    Some(redis)
}

#[test]
fn a_leafs_lldp_table_is_read_from_its_redis_and_its_gnmi_and_a_port_seeing_another_nic_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let Some(redis) = leaf_redis_with_node_2_swapped(&dir) else { return };
    // As lldp_syncd writes APPL_DB (database 0): node-2's eth1 where its eth0 should be.
    for (k, netdev) in [(1, "eth0"), (2, "eth1"), (3, "eth0"), (4, "eth0")] {
        let key = format!("LLDP_ENTRY_TABLE:Ethernet{}", 4 * (k - 1));
        let node = format!("node-{k}");
        let fields = ["lldp_rem_sys_name", &node, "lldp_rem_port_id", netdev, "lldp_rem_port_desc", netdev];
        let set = redis.cli(&[&["HSET", key.as_str()][..], &fields[..]].concat());
        assert!(set.status.success(), "{}", text(&set));
    }
    let (gnmi_port, stop, front) = gnmi_front(&redis, None);
    let intended = repo("tests/it/fixtures/inventory_fabric.toml").display().to_string();
    for (flag, source) in
        [("--redis", format!("redis 127.0.0.1:{}", redis.1)), ("--gnmi", format!("gnmi 127.0.0.1:{gnmi_port}"))]
    {
        let address = source.split_once(' ').unwrap().1;
        let run = rocemend(&["inventory", "check", &intended, flag, &format!("leaf-rail0={address}")]);
        let out = text(&run);
        assert_eq!(run.status.code(), Some(1), "{flag}: {out}");
        let expected = format!(
            "node \"node-2\" NIC mlx5_0 (eth0), cabled to leaf-rail0 port Ethernet4, but leaf-rail0 port Ethernet4 sees node-2 eth1 ({source})"
        );
        assert!(out.contains(&expected), "{flag}: {out}");
        assert!(out.contains("1 fault(s)"), "{flag}: only Ethernet4: {out}");
    }
    drop(stop);
    front.join().unwrap();
}

/// `rocemend args…` inside `host`'s namespace, while `leaves` send LLDP every half second (as
/// a switch would every 30 s), until it exits.
fn rocemend_in(host: &Host, leaves: &[&Host], args: &[&str]) -> Output {
    let mut child = Command::new("ip")
        .args(["netns", "exec", &host.ns.name])
        .arg(bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rocemend starts in the namespace");
    while child.try_wait().expect("rocemend is waited for").is_none() {
        for leaf in leaves {
            leaf.lldpcli(&["update"]);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    child.wait_with_output().expect("rocemend's output")
}

/// `inventory discover` of `host` in its namespace with `extra` flags, into `dir/<tag>.toml`.
fn discover_in(host: &Host, leaves: &[&Host], dir: &Path, tag: &str, extra: &[&str]) -> (PathBuf, Output) {
    let root = dir.join(&host.name);
    if !root.exists() {
        ops::inventory::testing::write_h100(&root, &["eth0", "eth1"]).unwrap();
    }
    let out = dir.join(format!("{tag}.toml"));
    let (root, out_arg) = (root.display().to_string(), out.display().to_string());
    let base = ["inventory", "discover", "--node", &host.name, "--sysfs-root", &root, "-o", &out_arg];
    (out.clone(), rocemend_in(host, leaves, &[&base[..], extra].concat()))
}

#[test]
fn without_lldpd_raw_lldp_frames_give_the_same_fragment_as_lldpd() {
    let setpriv = || {
        let found = Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success());
        (!found).then(|| "`setpriv` is not installed (Debian util-linux)".to_string())
    };
    if let Some(reason) = netns::missing_part(&["ip"]).or_else(lldpd_missing).or_else(setpriv) {
        return test_peers::missing(reason);
    }
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("rmr{}-", std::process::id());
    let mut leaves: Vec<Host> = (0..2).map(|r| Host::new(&prefix, &format!("leaf-rail{r}"), dir.path())).collect();
    let mut node = Host::new(&prefix, "node-1", dir.path());
    for (i, leaf) in leaves.iter().enumerate() {
        cable(&node, i, leaf, 1);
    }
    for leaf in &mut leaves {
        leaf.start_lldpd("Ethernet*", dir.path());
    }
    let senders: Vec<&Host> = leaves.iter().collect();

    // No lldpd on the node: asked for raw frames, and by default when lldpd does not answer.
    let (raw, run) = discover_in(&node, &senders, dir.path(), "raw", &["--lldp", "raw", "--lldp-wait", "10"]);
    assert!(run.status.success(), "discover --lldp raw: {}", text(&run));
    let fragment = std::fs::read_to_string(&raw).unwrap();
    assert!(
        fragment.contains("switch_port = \"Ethernet0\"  # raw LLDP frame on eth0: port id TLV (subtype ifname)"),
        "{fragment}"
    );
    assert!(fragment.contains("switch = \"leaf-rail1\"  # raw LLDP frame on eth1: system name TLV"), "{fragment}");
    let none = dir.path().join("no-lldpd.sock").display().to_string();
    let (auto, run) = discover_in(&node, &senders, dir.path(), "auto", &["-u", &none, "--lldp-wait", "10"]);
    assert!(run.status.success(), "discover (auto, no lldpd): {}", text(&run));
    let header = std::fs::read_to_string(&auto).unwrap();
    assert!(header.contains("leaves from raw LLDP frames (lldpd not reachable: "), "{header}");
    assert_eq!(load(&auto), load(&raw));

    // Without CAP_NET_RAW (dropped from the bounding set, so root's exec does not get it back):
    // exit 2 and the reason, not an empty fragment; by default, lldpd's absence too.
    let root = dir.path().join("node-1").display().to_string();
    for (how, why) in [("raw", None), ("auto", Some("is lldpd running with control socket"))] {
        let drop_cap = ["setpriv", "--bounding-set", "-net_raw", "--inh-caps", "-net_raw"];
        let discover = [bin(), "inventory", "discover", "--sysfs-root", &root, "--lldp", how, "-u", &none];
        let exec = ["netns", "exec", &node.ns.name];
        let run = Command::new("ip").args([&exec[..], &drop_cap[..], &discover[..]].concat()).output().unwrap();
        let out = text(&run);
        assert_eq!(run.status.code(), Some(2), "--lldp {how}: {out}");
        assert!(out.contains("needs CAP_NET_RAW") && why.is_none_or(|w| out.contains(w)), "--lldp {how}: {out}");
    }

    // Then lldpd on the node: its fragment is the same inventory.
    node.start_lldpd("eth*", dir.path());
    let all: Vec<&Host> = leaves.iter().chain([&node]).collect();
    settle(&all, "node-1 hears both leaves", || node.neighbors().iter().filter(|x| x.sys_name.is_some()).count() == 2);
    let lldpd = discover(&node, dir.path());
    assert_eq!(load(&raw), load(&lldpd), "raw:\n{fragment}\nlldpd:\n{}", std::fs::read_to_string(&lldpd).unwrap());
    drop((node, leaves));
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&left.stdout).contains(&prefix), "namespaces removed");
}

#[test]
fn merge_and_check_reach_a_gnmi_over_tls_with_a_login_as_gnmi_spells_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(redis) = leaf_redis_with_node_2_swapped(&dir) else { return };
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.path().join("leaf-ca.pem"), cert.cert.pem()).unwrap();
    let tls = sonic::gnmi_front::FrontTls {
        cert_pem: cert.cert.pem().into_bytes(),
        key_pem: cert.key_pair.serialize_pem().into_bytes(),
    };
    let (port, stop, front) = gnmi_front(&redis, Some(tls));
    let secret = |name: &str, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.path().join(name);
        std::fs::write(&path, "username = \"admin\"\npassword = \"YourPaSsWoRd\"\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    secret("login.toml", 0o600);
    secret("open-login.toml", 0o644);
    let settings = |name: &str, login: &str| {
        let path = dir.path().join(name);
        let text = format!("[gnmi]\ncredentials_file = \"{login}\"\ntls = {{ ca_file = \"leaf-ca.pem\" }}\n");
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let (good, open) = (settings("gnmi.toml", "login.toml"), settings("open.toml", "open-login.toml"));
    let intended = repo("tests/it/fixtures/inventory_fabric.toml").display().to_string();
    let leaf = format!("leaf-rail0=localhost:{port}");
    let check = |extra: &[&str]| rocemend(&[&["inventory", "check", &intended, "--gnmi", &leaf][..], extra].concat());

    let run = check(&["--gnmi-settings", &good]);
    let out = text(&run);
    assert_eq!(run.status.code(), Some(1), "over TLS: {out}");
    assert!(out.contains("but leaf-rail0 port Ethernet4 sees node-2 eth1 (gnmi localhost:"), "{out}");
    let plain = check(&[]);
    assert_eq!(plain.status.code(), Some(2), "plain text to a TLS port: {}", text(&plain));
    assert!(text(&plain).contains("switch leaf-rail0 (gnmi localhost:"), "{}", text(&plain));
    let refused = check(&["--gnmi-settings", &open]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("gnmi.credentials_file"), "a login others can read: {}", text(&refused));

    // merge takes the same settings.
    let fragment = dir.path().join("node-2.toml");
    let mut node_2 = load(Path::new(&intended));
    node_2.node.retain(|n| n.name == "node-2");
    node_2.switch.retain(|s| s.name == "leaf-rail0" || s.name == "leaf-rail1");
    std::fs::write(&fragment, toml::to_string(&node_2).unwrap()).unwrap();
    let f = fragment.display().to_string();
    let run = rocemend(&["inventory", "merge", &f, "--gnmi", &leaf, "--gnmi-settings", &good]);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run));
    assert!(text(&run).contains("but leaf-rail0 port Ethernet4 sees node-2 eth1 (gnmi localhost:"), "{}", text(&run));
    drop(stop);
    front.join().unwrap();
}
