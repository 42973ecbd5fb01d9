//! Scenarios on the wall clock, on real Linux links: a veth pair per
//! faulted link in a private network namespace, the daemon's ordinary
//! run loop (`engine::runtime::run`) with the `netlink_link` sensor and the
//! playbook's real actuators (the `link` actuator takes the veth down), and
//! the faults applied with `ip link` and `tc` from another thread.
//!
//! With `--daemon SOCKET` no daemon is started: the faults are applied to
//! links of the host's own namespace and the decisions are read afterwards
//! from the running daemon's control socket (a game day).
//!
//! Flaps are RTM_SETLINK requests on one netlink socket opened in the
//! namespace (what `ip link set` sends, without starting a process), and a
//! flap's time is taken just before the request: the latencies measured
//! are the kernel's, the sensor's, the engine's and the actuator's.

use std::collections::BTreeSet;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chaos::report::{DecisionRecord, FaultRecord, RunRecord, TransitionRecord};
use chaos::scenario::{check, FaultKind, Plan};
use engine::dispatch::Mode;
use engine::playbook::{Playbook, RulePolicy};
use engine::rule::{self, Helpers};
use engine::runtime::{self, ClockMode, Daemon, DaemonEvent, SensorSlot};
use engine::time::wall_clock_now;
use engine::{EngineEvent, Evaluator, HealthBoard, Labels, Nanos, SeriesTable};
use sensors::NetlinkLinkConfig;
use tokio::sync::{mpsc, watch};

use super::lockstep::decision_record;
use super::{Options, Sources};

/// The `node` label of the daemon under test in its namespace; the
/// playbook's `link` actuator must be configured for it.
pub const NODE: &str = "chaos-veth";

/// Why wall-clock scenarios cannot run here, if they cannot.
pub fn missing_part() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (network namespaces and tc need CAP_NET_ADMIN and CAP_SYS_ADMIN)".into());
    }
    for tool in ["ip", "tc"] {
        match Command::new(tool).arg("-V").output() {
            Ok(out) if out.status.success() => {}
            _ => return Some(format!("`{tool}` (iproute2) is not installed")),
        }
    }
    None
}

fn run_tool(tool: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(tool).args(args).output().map_err(|e| anyhow::anyhow!("{tool} {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        anyhow::bail!("{tool} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())
    }
}

/// A network namespace with one veth pair per link (`<link>` and
/// `<link>p`); deleted on drop.
struct Netns {
    name: String,
}

impl Netns {
    fn create(name: &str, links: &BTreeSet<String>) -> anyhow::Result<Netns> {
        let _ = Command::new("ip").args(["netns", "del", name]).output();
        run_tool("ip", &["netns", "add", name])?;
        let ns = Netns { name: name.to_string() };
        for link in links {
            let peer = format!("{link}p");
            run_tool("ip", &["-n", name, "link", "add", link, "type", "veth", "peer", "name", &peer])?;
            run_tool("ip", &["-n", name, "link", "set", &peer, "up"])?;
            run_tool("ip", &["-n", name, "link", "set", link, "up"])?;
        }
        Ok(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

/// Where faults are applied: in a namespace, or the host's own.
#[derive(Clone)]
struct Target {
    netns: Option<String>,
}

impl Target {
    fn tool(&self, tool: &str, args: &[&str]) -> anyhow::Result<()> {
        let mut all: Vec<&str> = Vec::new();
        if let Some(ns) = &self.netns {
            all.extend(["-n", ns.as_str()]);
        }
        all.extend_from_slice(args);
        run_tool(tool, &all)
    }
}

/// Takes links up and down with RTM_SETLINK on one netlink socket, in the
/// network namespace of the thread that opened it.
struct LinkSetter {
    runtime: tokio::runtime::Runtime,
    handle: rtnetlink::Handle,
}

impl LinkSetter {
    fn open() -> anyhow::Result<LinkSetter> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.block_on(async {
            let (connection, handle, _) = rtnetlink::new_connection()?;
            // Driven whenever a request below is awaited.
            tokio::spawn(connection);
            anyhow::Ok(handle)
        })?;
        Ok(LinkSetter { runtime, handle })
    }

    /// The index of the link `name`.
    fn index(&self, name: &str) -> anyhow::Result<u32> {
        use futures_util::TryStreamExt;
        self.runtime.block_on(async {
            let mut links = self.handle.link().get().match_name(name.to_string()).execute();
            match links.try_next().await {
                Ok(Some(link)) => Ok(link.header.index),
                Ok(None) => anyhow::bail!("there is no link {name:?}"),
                Err(e) => anyhow::bail!("reading link {name:?}: {e}"),
            }
        })
    }

    fn set(&self, index: u32, up: bool) -> anyhow::Result<()> {
        let message = rtnetlink::LinkUnspec::new_with_index(index);
        let message = if up { message.up() } else { message.down() }.build();
        self.runtime
            .block_on(self.handle.link().set(message).execute())
            .map_err(|e| anyhow::anyhow!("RTM_SETLINK {index} {}: {e}", if up { "up" } else { "down" }))
    }
}

/// Enters the namespace `ns` on this thread (sockets opened afterwards are in it).
fn enter(ns: &str) -> anyhow::Result<()> {
    let path = format!("/run/netns/{ns}");
    let file = std::fs::File::open(&path).map_err(|e| anyhow::anyhow!("opening {path}: {e}"))?;
    // SAFETY: a valid namespace fd; setns changes only the calling thread.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        anyhow::bail!("setns {path}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Applies the faults of `plan` from `start` on, from a thread of its own
/// (in `target`'s namespace); returns what was done and when.
async fn apply_faults(plan: &Plan, target: Target, start: Nanos, seed: u64) -> anyhow::Result<Vec<FaultRecord>> {
    let plan = plan.clone();
    let thread = std::thread::spawn(move || {
        if let Some(ns) = &target.netns {
            enter(ns)?;
        }
        drive_faults(&plan, &target, start, seed)
    });
    tokio::task::spawn_blocking(move || thread.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the fault thread panicked"))?
}

/// Applies the faults of `plan` from `start` on; returns what was done and
/// when. Blocks: `tc` is a process, and flaps are timed on this thread.
fn drive_faults(plan: &Plan, target: &Target, start: Nanos, seed: u64) -> anyhow::Result<Vec<FaultRecord>> {
    let schedule = plan.schedule_real(seed);
    let end = start + plan.duration;
    let mut out = Vec::new();
    let sleep_until = |t: Nanos| {
        let now = wall_clock_now();
        if t > now {
            std::thread::sleep(Duration::from_nanos((t - now) as u64));
        }
    };
    for s in schedule {
        let f = &plan.faults[s.fault];
        let link = f.link.clone().unwrap_or_default();
        let stop = s.end.map(|e| start + e).unwrap_or(end).min(end);
        sleep_until(start + s.start);
        match f.kind {
            FaultKind::VethFlap => {
                // Flap the peer: the watched end loses carrier, as a NIC
                // does when the switch port or the cable goes.
                let links = LinkSetter::open()?;
                let peer = links.index(&format!("{link}p"))?;
                while wall_clock_now() + f.down < stop {
                    // Stamped before the request: the kernel's event (and
                    // the daemon's reaction) can come before it returns.
                    let down_at = wall_clock_now();
                    links.set(peer, false)?;
                    std::thread::sleep(Duration::from_nanos(f.down.max(0) as u64));
                    links.set(peer, true)?;
                    let up_at = wall_clock_now();
                    out.push(FaultRecord {
                        label: format!("veth_flap {link}"),
                        nodes: vec![NODE.into()],
                        start: down_at,
                        end: Some(up_at),
                    });
                    sleep_until(down_at + f.period);
                }
            }
            FaultKind::Netem | FaultKind::Tbf => {
                let args: Vec<String> = if f.kind == FaultKind::Netem {
                    let mut a: Vec<String> = ["qdisc", "add", "dev", &link, "root", "netem"].map(String::from).to_vec();
                    if f.loss > 0.0 {
                        a.extend(["loss".into(), format!("{}%", f.loss * 100.0)]);
                    }
                    if f.delay > 0 {
                        a.extend(["delay".into(), format!("{}us", f.delay / 1_000)]);
                    }
                    a
                } else {
                    ["qdisc", "add", "dev", &link, "root", "tbf", "rate"]
                        .map(String::from)
                        .into_iter()
                        .chain([
                            format!("{}mbit", f.rate_mbit),
                            "burst".into(),
                            "32kbit".into(),
                            "latency".into(),
                            "50ms".into(),
                        ])
                        .collect()
                };
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                target.tool("tc", &args)?;
                let at = wall_clock_now();
                sleep_until(stop);
                target.tool("tc", &["qdisc", "del", "dev", &link, "root"])?;
                out.push(FaultRecord {
                    label: s.label.clone(),
                    nodes: vec![NODE.into()],
                    start: at,
                    end: Some(wall_clock_now()),
                });
            }
            other => anyhow::bail!("fault {other:?} is a simulator fault; it cannot run on the wall clock"),
        }
    }
    sleep_until(end);
    Ok(out)
}

/// `playbook` with `overrides` of rule modes.
fn with_modes(playbook: &Playbook, overrides: &[(String, Mode)]) -> anyhow::Result<Playbook> {
    let mut p = playbook.clone();
    for (rule, mode) in overrides {
        let policy: RulePolicy = toml::from_str(&format!("mode = {:?}", mode.as_str()))?;
        p.rule.insert(rule.clone(), policy);
    }
    Ok(p)
}

type Seen = Arc<Mutex<(Vec<TransitionRecord>, Vec<DecisionRecord>)>>;

fn observe(seen: &Seen, event: &DaemonEvent) {
    let mut s = seen.lock().unwrap_or_else(|p| p.into_inner());
    match event {
        DaemonEvent::Engine(EngineEvent::Transition { rule, subject, from, to, at, .. }) => {
            s.0.push(TransitionRecord {
                at: *at,
                rule: rule.clone(),
                subject: subject.0.clone(),
                from: from.as_str().into(),
                to: to.as_str().into(),
            })
        }
        DaemonEvent::Decision(d) => s.1.push(decision_record(wall_clock_now(), d)),
        _ => {}
    }
}

/// The daemon under test, in the namespace `ns`, until `stop`.
fn daemon_in(
    ns: &str,
    plan: &Plan,
    sources: &Sources,
    options: &Options,
    links: Vec<String>,
    seen: Seen,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<std::thread::JoinHandle<anyhow::Result<()>>> {
    let ns = ns.to_string();
    let topology = plan.topology.clone();
    let rules_src = sources.rules.clone();
    let playbook = with_modes(&sources.playbook, &options.rule_modes)?;
    Ok(std::thread::spawn(move || {
        // Every socket the daemon opens from this thread is in the namespace.
        enter(&ns)?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        rt.block_on(async move {
            let series = SeriesTable::new(Some(topology.clone()), Labels::from_pairs([("node", NODE)]));
            let helpers = Helpers::new(Some(series.clone()), Some(topology.clone()));
            let rules = rule::load_sources(&rules_src, helpers)
                .map_err(|e| anyhow::anyhow!(e.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")))?;
            let rules = crate::wiring::without_disabled(rules, &playbook);
            let evaluator = Evaluator::new(series, rules, None)?;
            let dispatcher = crate::wiring::dispatcher(&playbook, Some(topology), None)
                .map_err(|e| anyhow::anyhow!(e.join("\n")))?;
            let sensor = NetlinkLinkConfig { include: links, ..NetlinkLinkConfig::default() }.build("netlink_link")?;
            let daemon = Daemon {
                evaluator,
                dispatcher,
                sensors: vec![SensorSlot { sensor: Box::new(sensor), max_series: 1_000 }],
                loader: None,
                clock: ClockMode::Wall,
                tick: Duration::from_millis(10),
                record: None,
                stop_when_sensors_end: false,
                health: HealthBoard::default(),
            };
            let (_commands_tx, commands) = mpsc::channel(1);
            runtime::run(daemon, stop, commands, move |e| observe(&seen, e)).await?;
            anyhow::Ok(())
        })
    }))
}

/// Runs `plan` once on the wall clock.
pub async fn run(
    plan: &Plan,
    sources: &Sources,
    options: &Options,
    index: u32,
    seed: u64,
) -> anyhow::Result<RunRecord> {
    if let Some(reason) = missing_part() {
        anyhow::bail!("scenario {}: {reason}; wall-clock scenarios need real links", plan.name);
    }
    if let Some(socket) = &options.daemon {
        return attached(plan, socket, index, seed).await;
    }
    let links: BTreeSet<String> = plan.faults.iter().filter_map(|f| f.link.clone()).collect();
    let ns_name = format!("rm-chaos-{}-{index}", std::process::id());
    let ns = Netns::create(&ns_name, &links)?;
    let seen: Seen = Arc::default();
    let (stop_tx, stop) = watch::channel(false);
    let daemon = daemon_in(&ns.name, plan, sources, options, links.iter().cloned().collect(), seen.clone(), stop)?;
    // Let the sensor subscribe and read every link once before the faults.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start = wall_clock_now();
    let faults = apply_faults(plan, Target { netns: Some(ns.name.clone()) }, start, seed).await?;
    // The last decisions of a fault at the end of the run.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = stop_tx.send(true);
    tokio::task::spawn_blocking(move || daemon.join())
        .await?
        .map_err(|_| anyhow::anyhow!("the daemon thread panicked"))??;
    drop(ns);
    let (transitions, decisions) = std::mem::take(&mut *seen.lock().unwrap_or_else(|p| p.into_inner()));
    let mut record = RunRecord {
        run: index,
        seed,
        start,
        end: wall_clock_now(),
        faults,
        transitions,
        decisions,
        probes: Vec::new(),
        outcome: Default::default(),
    };
    record.outcome = check(plan, &record);
    Ok(record)
}

/// A game day: faults on the host's links, decisions from the daemon at
/// `socket`.
async fn attached(plan: &Plan, socket: &Path, index: u32, seed: u64) -> anyhow::Result<RunRecord> {
    let start = wall_clock_now();
    let faults = apply_faults(plan, Target { netns: None }, start, seed).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let request =
        crate::control::pb::ListDecisionsRequest { since_ns: start, rule: String::new(), target: String::new() };
    let reply = crate::control::client::connect(&crate::control::client::Target::Unix(socket.to_path_buf()))
        .await?
        .list_decisions(request)
        .await
        .map_err(|s| anyhow::anyhow!("the daemon at {}: {}", socket.display(), s.message()))?;
    let mut decisions = Vec::new();
    let mut transitions = Vec::new();
    for text in reply.into_inner().decisions_json {
        let d: engine::dispatch::Decision = serde_json::from_str(&text)?;
        // The ledger keeps when the instance fired: that is the detection.
        transitions.push(TransitionRecord {
            at: d.proposal.active_at,
            rule: d.proposal.rule.clone(),
            subject: d.proposal.subject.0.clone(),
            from: "pending".into(),
            to: "firing".into(),
        });
        decisions.push(decision_record(d.steps.last().map(|s| s.at).unwrap_or(d.proposal.decided_at), &d));
    }
    let mut record = RunRecord {
        run: index,
        seed,
        start,
        end: wall_clock_now(),
        faults,
        transitions,
        decisions,
        probes: Vec::new(),
        outcome: Default::default(),
    };
    record.outcome = check(plan, &record);
    Ok(record)
}
