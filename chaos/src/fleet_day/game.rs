//! Playing a game day: the etcd cluster, the watch on it, the fabric and
//! its leaves, the daemons; then the script's phases in order; then every
//! daemon's decisions and the watch's events, for [`super::measure`].
//!
//! Every part is a guard: whatever way this function is left (the end, an
//! error, or its future dropped on Ctrl-C), the daemons and etcd members
//! are killed, the fabric's thread stopped and the game's directory
//! removed, in that order (locals drop in reverse).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engine::dispatch::Decision;
use engine::time::wall_clock_now;
use engine::Nanos;

use super::about::{at_site, of_fault};
use super::config::Shared;
use super::daemons::Daemons;
use super::etcd::Cluster;
use super::fabric::Driver;
use super::plan::{FleetPlan, PhasePlan};
use super::state::{self, PREFIX};
use super::watch::{Event, Watch};
use super::{FleetDayError, Options};
use crate::report::fleet::{PhaseRecord, Role};
use crate::spec::By;

/// How long past a deadline the game keeps measuring, so a late figure is
/// reported (and fails) instead of missing.
const GRACE: Nanos = 5 * engine::SECOND;

/// How often the game looks again while it waits.
const POLL: Duration = Duration::from_millis(100);

/// How long etcd may take to elect its first leader.
const ETCD_START: Duration = Duration::from_secs(20);

/// One daemon's part in the game.
#[derive(Debug, Clone)]
pub struct DaemonRun {
    /// Its identity.
    pub name: String,
    /// What it is.
    pub role: Role,
    /// When the game killed it.
    pub killed_at: Option<Nanos>,
    /// Its decisions made during the game, in id order.
    pub decisions: Vec<Decision>,
}

/// A game, played.
#[derive(Debug, Clone)]
pub struct Played {
    /// When the daemons were all up and the script began.
    pub start: Nanos,
    /// When the script ended.
    pub end: Nanos,
    /// Starting etcd and the daemons, ms.
    pub setup_ms: f64,
    /// When each fault started (by the plan's index).
    pub fault_starts: Vec<Option<Nanos>>,
    /// What each phase did.
    pub phases: Vec<PhaseRecord>,
    /// The daemons.
    pub daemons: Vec<DaemonRun>,
    /// Everything written under the fleet prefix in etcd, in arrival order.
    pub events: Vec<Event>,
    /// etcd's members.
    pub members: Vec<String>,
}

/// Progress lines on stderr.
struct Progress {
    on: bool,
    since: Instant,
}

impl Progress {
    fn say(&self, what: impl std::fmt::Display) {
        if self.on {
            eprintln!("  [{:>5.1} s] {what}", self.since.elapsed().as_secs_f64());
        }
    }
}

/// Plays `plan`.
pub async fn play(plan: &FleetPlan, options: &Options) -> Result<Played, FleetDayError> {
    let say = Progress { on: options.progress, since: Instant::now() };
    let dir = tempfile::Builder::new()
        .prefix("rocemend-fleet-")
        .tempdir()
        .map_err(|e| FleetDayError::io("creating the game's directory", e))?;
    if options.keep_dir {
        say.say(format!("the game's directory is kept: {}", dir.path().display()));
    }
    // A kept directory is let go of here: a `TempDir` merely left unused
    // would still be removed when this function returns.
    let (root, _dir): (PathBuf, _) =
        if options.keep_dir { (dir.keep(), None) } else { (dir.path().to_path_buf(), Some(dir)) };
    let mkdir = |name: &str| {
        let p = root.join(name);
        std::fs::create_dir_all(&p).map(|_| p).map_err(|e| FleetDayError::io(format!("creating {name}"), e))
    };

    let mut etcd = Cluster::start(&mkdir("etcd")?, plan.etcd.members, plan.etcd.heartbeat_ms, plan.etcd.election_ms)?;
    let first_leader = etcd.wait_ready(ETCD_START).await?;
    say.say(format!("etcd: {} members, m{} leads", plan.etcd.members, first_leader.leader));
    let live = Arc::new(Mutex::new(etcd.live_endpoints()));
    let watch = {
        let live = live.clone();
        Watch::start(PREFIX, move || live.lock().unwrap_or_else(|p| p.into_inner()).clone())
    };

    let driver = Driver::start(plan.topology.clone(), plan.seed, &mkdir("sysfs")?, plan.step).await?;
    let inventory = root.join("inventory.toml");
    let served = driver.served_inventory(&plan.topology);
    let text = toml::to_string(served.inventory())
        .map_err(|e| FleetDayError::io("writing the served inventory", std::io::Error::other(e)))?;
    std::fs::write(&inventory, text).map_err(|e| FleetDayError::io("writing the served inventory", e))?;
    let leaves = served.inventory().switch.iter().filter(|s| s.address.is_some()).map(|s| s.name.clone()).collect();
    let shared = Shared { inventory, sysfs: root.join("sysfs"), endpoints: etcd.endpoints(), leaves };
    let mut daemons = Daemons::launch(plan, &options.binary, &mkdir("daemons")?, &shared, &options.attach)?;
    daemons.wait_ready(&watch, Duration::from_nanos(plan.startup_within as u64)).await?;
    let setup_ms = say.since.elapsed().as_secs_f64() * 1e3;
    say.say(format!("{} daemons up, each with a session in etcd", daemons.list.len()));

    let start = wall_clock_now();
    let mut game =
        Game { plan, daemons, etcd, live, watch, driver, start, fault_starts: vec![None; plan.faults.len()], say };
    let mut phases = Vec::new();
    for phase in &plan.phases {
        phases.push(game.phase(phase).await?);
    }
    let end = wall_clock_now();
    game.daemons.refresh(start).await;
    game.daemons.stop();
    game.daemons.read_ledgers(start)?;
    let Game { daemons, watch, driver, etcd, fault_starts, .. } = game;
    driver.stop().await;
    Ok(Played {
        start,
        end,
        setup_ms,
        fault_starts,
        phases,
        daemons: daemons
            .list
            .into_iter()
            .map(|d| DaemonRun {
                name: d.name,
                role: d.role,
                killed_at: d.killed_at,
                decisions: d.decisions.into_values().collect(),
            })
            .collect(),
        events: watch.events(),
        members: etcd.members.iter().map(|m| m.name.clone()).collect(),
    })
}

/// The parts of a game in progress.
struct Game<'a> {
    plan: &'a FleetPlan,
    daemons: Daemons,
    etcd: Cluster,
    live: Arc<Mutex<Vec<String>>>,
    watch: Watch,
    driver: Driver,
    start: Nanos,
    fault_starts: Vec<Option<Nanos>>,
    say: Progress,
}

impl Game<'_> {
    /// Fails the game if a daemon died unbidden or the fabric stopped.
    fn check(&mut self) -> Result<(), FleetDayError> {
        if let Some(why) = self.driver.failure() {
            return Err(FleetDayError::io("stepping the fabric", std::io::Error::other(why)));
        }
        self.daemons.check_alive()
    }

    async fn phase(&mut self, phase: &PhasePlan) -> Result<PhaseRecord, FleetDayError> {
        self.check()?;
        let plan = self.plan;
        let names = |list: &[usize]| list.iter().map(|&i| plan.faults[i].name.clone()).collect::<Vec<_>>();
        match phase {
            PhasePlan::Start(list) => {
                let effects: Vec<_> = list.iter().flat_map(|&i| plan.faults[i].effects.clone()).collect();
                let at = self.driver.start_faults(&effects);
                for &i in list {
                    self.fault_starts[i] = Some(at);
                }
                self.say.say(format!("started {}", names(list).join(", ")));
                Ok(PhaseRecord::Start { at, faults: names(list) })
            }
            PhasePlan::Settle { faults, within } => self.settle(faults, *within, names(faults)).await,
            PhasePlan::Pause(ns) => {
                let at = wall_clock_now();
                self.wait_until(at + ns).await?;
                Ok(PhaseRecord::Pause { at, ns: *ns })
            }
            PhasePlan::KillEtcdLeader { elect_within } => self.kill_etcd_leader(*elect_within).await,
            PhasePlan::KillTokenHolder { fault, return_within } => self.kill_token_holder(*fault, *return_within).await,
        }
    }

    /// Sleeps until `t`, watching the parts.
    async fn wait_until(&mut self, t: Nanos) -> Result<(), FleetDayError> {
        while wall_clock_now() < t {
            self.check()?;
            let left = Duration::from_nanos((t - wall_clock_now()).max(0) as u64);
            tokio::time::sleep(left.min(POLL)).await;
        }
        Ok(())
    }

    /// Who has not yet decided on which site of `faults`: `node-03 eth1`.
    fn undecided(&self, faults: &[usize]) -> Vec<String> {
        let mut missing = Vec::new();
        for &i in faults {
            let fault = &self.plan.faults[i];
            let Some(start) = self.fault_starts[i] else { continue };
            for (who, sites) in fault.deciders() {
                let Some(d) = self.daemons.get(&who) else { continue };
                if !d.alive() {
                    continue;
                }
                for site in sites {
                    // A decision whose action is still going out (its intent on disk, the switch
                    // not yet answered: on SONiC each Set waits out the config updater's pause)
                    // is not decided yet.
                    let decided = d.decisions.values().any(|dec| {
                        of_fault(fault, start, dec)
                            && at_site(site, &dec.proposal.action.target.0)
                            && dec.phase != engine::dispatch::Phase::Intent
                    });
                    if !decided {
                        let label = |k: &str| site.get(k).map(String::as_str).unwrap_or_default();
                        missing.push(match fault.by {
                            By::Nodes => format!("{who} {}", label("netdev")),
                            By::Aggregator => format!("{who} {} {}", label("switch"), label("port")),
                        });
                    }
                }
            }
        }
        missing
    }

    async fn settle(
        &mut self,
        faults: &[usize],
        within: Nanos,
        names: Vec<String>,
    ) -> Result<PhaseRecord, FleetDayError> {
        let at = wall_clock_now();
        loop {
            self.check()?;
            self.daemons.refresh(self.start).await;
            let missing = self.undecided(faults);
            let now = wall_clock_now();
            if missing.is_empty() {
                let decisions: usize = self
                    .daemons
                    .list
                    .iter()
                    .flat_map(|d| d.decisions.values())
                    .filter(|d| {
                        faults
                            .iter()
                            .any(|&i| self.fault_starts[i].is_some_and(|s| of_fault(&self.plan.faults[i], s, d)))
                    })
                    .count();
                self.say.say(format!("{}: every daemon decided ({decisions} decisions)", names.join(", ")));
                return Ok(PhaseRecord::Settle { at, faults: names, done_at: Some(now), within, missing });
            }
            if now - at > within {
                self.say.say(format!(
                    "{}: {} site(s) still undecided after {} ms",
                    names.join(", "),
                    missing.len(),
                    within / 1_000_000
                ));
                return Ok(PhaseRecord::Settle { at, faults: names, done_at: None, within, missing });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn kill_etcd_leader(&mut self, within: Nanos) -> Result<PhaseRecord, FleetDayError> {
        let before = loop {
            if let Some(l) = self.etcd.leadership().await? {
                break l;
            }
            self.wait_until(wall_clock_now() + POLL.as_nanos() as Nanos).await?;
        };
        let killed = self.etcd.members[before.leader].name.clone();
        let at = wall_clock_now();
        self.etcd.kill(before.leader);
        *self.live.lock().unwrap_or_else(|p| p.into_inner()) = self.etcd.live_endpoints();
        self.say.say(format!("etcd: killed the leader {killed} (term {})", before.term));
        let (mut elected, mut new_term, mut elected_at) = (None, None, None);
        while wall_clock_now() - at <= within + GRACE {
            self.check()?;
            if let Some(l) = self.etcd.leadership().await? {
                elected = Some(self.etcd.members[l.leader].name.clone());
                new_term = Some(l.term);
                elected_at = Some(wall_clock_now());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        match (&elected, elected_at) {
            (Some(who), Some(t)) => self.say.say(format!("etcd: {who} leads after {} ms", (t - at) / 1_000_000)),
            _ => self.say.say("etcd: no new leader"),
        }
        Ok(PhaseRecord::KillEtcdLeader { at, killed, term: before.term, elected, new_term, elected_at, within })
    }

    async fn kill_token_holder(&mut self, fault: usize, within: Nanos) -> Result<PhaseRecord, FleetDayError> {
        let plan = self.plan;
        let f = &plan.faults[fault];
        let name = f.name.clone();
        self.daemons.refresh(self.start).await;
        let at = wall_clock_now();
        let record = |daemon, decision, tokens, returned_at, problem: Option<String>| PhaseRecord::KillTokenHolder {
            at,
            fault: name.clone(),
            daemon,
            decision,
            tokens,
            returned_at,
            within,
            problem,
        };
        let start = self.fault_starts[fault].unwrap_or(self.start);
        let executed = self
            .daemons
            .list
            .iter()
            .filter(|d| d.alive())
            .flat_map(|d| d.decisions.values().map(move |dec| (d.name.clone(), dec)))
            .filter(|(_, dec)| of_fault(f, start, dec) && dec.verdict.name() == "executed")
            .min_by_key(|(_, dec)| dec.finished_at)
            .map(|(who, dec)| (who, dec.id.clone()));
        let Some((holder, decision)) = executed else {
            let why = format!("no running daemon executed {} for {name}: nothing holds its token", f.action);
            self.say.say(&why);
            return Ok(record(None, None, Vec::new(), None, Some(why)));
        };
        // The fault's token must be there; every token the holder has then
        // must go (it may hold another fault's too).
        let (of_fault_decision, tokens) =
            self.watch.with(|e| (state::tokens_of(e, &holder, Some(&decision)), state::tokens_of(e, &holder, None)));
        if of_fault_decision.is_empty() {
            let why = format!("{holder} executed {decision} for {name}, but etcd holds no token of it");
            self.say.say(&why);
            return Ok(record(Some(holder), Some(decision), tokens, None, Some(why)));
        }
        let Some(killed_at) = self.daemons.kill(&holder) else {
            return Ok(record(Some(holder), Some(decision), tokens, None, Some("it was not running".into())));
        };
        self.say.say(format!("killed {holder}, holding {} token(s), {name}'s among them", tokens.len()));
        let mut returned_at = None;
        while wall_clock_now() - killed_at <= within + GRACE {
            self.check()?;
            let gone: Vec<Option<Nanos>> =
                self.watch.with(|e| tokens.iter().map(|k| state::deleted_after(e, k, killed_at)).collect());
            if gone.iter().all(Option::is_some) {
                returned_at = gone.into_iter().flatten().max();
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        match returned_at {
            Some(t) => self
                .say
                .say(format!("{holder}'s token(s) gone from etcd {} ms after the kill", (t - killed_at) / 1_000_000)),
            None => self.say.say(format!("{holder}'s token(s) still in etcd")),
        }
        let mut r = record(Some(holder), Some(decision), tokens, returned_at, None);
        if let PhaseRecord::KillTokenHolder { at, .. } = &mut r {
            *at = killed_at;
        }
        Ok(r)
    }
}
