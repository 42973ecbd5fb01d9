//! A fleet game day file, checked and resolved: durations in
//! nanoseconds, paths found and made absolute (the daemons' configs live in
//! a temporary directory), faults turned into fabric effects on the NICs
//! they select, and the script's phases typed. Every error names
//! `file:line:col`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::contracts::Scope;
use engine::playbook::Playbook;
use engine::policy::kind_matches;
use engine::time::parse_duration;
use engine::{Nanos, Topology};
use sim::fabric::{Effect, Fabric, Nic};
use toml::Spanned;

use fleet::settings::BudgetConfig;

use super::spec::{AggregatorSpec, BreakerExpect, BudgetSpec, By, Dur, FaultSpec, FleetScenario};
use super::FleetDayError;

mod phases;
use crate::scenario::plan::locate;
use crate::scenario::{FaultKind, ScenarioError};

/// The identity of the switch aggregator's daemon (node daemons are named
/// after their node).
pub const AGGREGATOR: &str = "aggregator";

/// What a daemon is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The daemon of one node.
    Node,
    /// The switch aggregator.
    Aggregator,
}

/// A playbook's scopes: (action-kind pattern, scope), first match wins.
pub type Scopes = Vec<(String, Scope)>;

/// A game day, ready to play.
#[derive(Debug, Clone)]
pub struct FleetPlan {
    /// Its name.
    pub name: String,
    /// What it shows.
    pub description: String,
    /// The file.
    pub file: PathBuf,
    /// The inventory.
    pub topology: Arc<Topology>,
    /// The node daemons' playbook (absolute).
    pub node_playbook: PathBuf,
    /// A rule directory for every daemon instead of each playbook's.
    pub rules: Option<PathBuf>,
    /// The fabric's step and the node daemons' poll interval.
    pub step: Nanos,
    /// Seed of the fabric.
    pub seed: u64,
    /// How long every daemon may take to start.
    pub startup_within: Nanos,
    /// The etcd cluster.
    pub etcd: EtcdPlan,
    /// The daemons' `[fleet]` table.
    pub fleet: FleetTable,
    /// The switch aggregator.
    pub aggregator: AggregatorPlan,
    /// The faults.
    pub faults: Vec<Fault>,
    /// The script.
    pub phases: Vec<Phase>,
    /// The fleet breaker's expected state, if any.
    pub breaker: Option<BreakerExpect>,
    /// Hits of its own limits within its window that trip a daemon's
    /// breaker, and with it the fleet's: (node daemons, aggregator).
    pub trip_after: (u32, u32),
    /// The scopes the playbooks set: (node daemons, aggregator).
    pub scopes: (Scopes, Scopes),
}

impl FleetPlan {
    /// Whether an action of `kind` by a daemon of `role` takes a fleet
    /// token: its scope as its playbook sets it or its actuator declares it,
    /// and a budget
    /// of the game counting it (a fleet-scoped kind no budget counts is
    /// granted without a token).
    pub fn takes_token(&self, role: Role, kind: &str) -> bool {
        let scopes = match role {
            Role::Node => &self.scopes.0,
            Role::Aggregator => &self.scopes.1,
        };
        let scope =
            scopes.iter().find(|(pattern, _)| kind_matches(pattern, kind)).map(|(_, s)| *s).unwrap_or(Scope::Local);
        scope == Scope::Fleet && self.fleet.budgets.iter().any(|b| b.config.kinds.iter().any(|k| kind_matches(k, kind)))
    }
}

/// The etcd cluster.
#[derive(Debug, Clone)]
pub struct EtcdPlan {
    /// Members.
    pub members: usize,
    /// Raft heartbeat, ms.
    pub heartbeat_ms: u64,
    /// Raft election timeout, ms.
    pub election_ms: u64,
}

/// Every daemon's `[fleet]` table.
#[derive(Debug, Clone)]
pub struct FleetTable {
    /// Lease TTL.
    pub lease_ttl: Nanos,
    /// As written (`"4s"`).
    pub lease_ttl_text: String,
    /// As written (`"2s"`).
    pub request_timeout_text: String,
    /// The budgets.
    pub budgets: Vec<Budget>,
}

/// A budget, with its limit per cell.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Budget {
    /// As written: what every daemon is given as its `[[fleet.budget]]`.
    #[serde(flatten)]
    pub config: BudgetConfig,
    /// Tokens at most per cell: `max`, lowered by `max_percent` of the
    /// fleet, as `fleet::settings` computes it.
    pub limit: u32,
}

/// The switch aggregator.
#[derive(Debug, Clone)]
pub struct AggregatorPlan {
    /// Its playbook (absolute).
    pub playbook: PathBuf,
    /// Its election.
    pub election: Option<String>,
    /// gNMI presets.
    pub presets: Vec<String>,
    /// gNMI sample interval, as written.
    pub sample_interval: String,
}

/// Where a fault lands: one NIC, named as the daemons' targets name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The node.
    pub node: String,
    /// Its netdev.
    pub netdev: String,
    /// Its leaf.
    pub switch: String,
    /// The leaf port.
    pub port: String,
}

/// One fault.
#[derive(Debug, Clone)]
pub struct Fault {
    /// Its name.
    pub name: String,
    /// What and where, for people: `symbol_errors {plane=0}`.
    pub label: String,
    /// What it does to the fabric.
    pub effects: Vec<Effect>,
    /// The NICs it hits.
    pub sites: Vec<Site>,
    /// The action the daemons propose for it.
    pub action: String,
    /// Who proposes it.
    pub by: By,
    /// Exactly this many executed, if given.
    pub executed: Option<usize>,
    /// Detected within, ns.
    pub detect_within: Option<Nanos>,
    /// Mitigated within, ns.
    pub mitigate_within: Option<Nanos>,
}

impl Fault {
    /// The daemons that decide about it, each with the sites it decides
    /// on.
    pub fn deciders(&self) -> BTreeMap<String, Vec<&Site>> {
        let mut out: BTreeMap<String, Vec<&Site>> = BTreeMap::new();
        for s in &self.sites {
            let who = match self.by {
                By::Nodes => s.node.clone(),
                By::Aggregator => AGGREGATOR.to_string(),
            };
            out.entry(who).or_default().push(s);
        }
        out
    }
}

/// One step of the script.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// Start these faults (indices into the plan's faults).
    Start(Vec<usize>),
    /// Wait until every live daemon that decides about these faults has
    /// decided on each of its sites, at most `within`.
    Settle {
        /// The faults.
        faults: Vec<usize>,
        /// At most this long.
        within: Nanos,
    },
    /// Wait this long.
    Pause(Nanos),
    /// SIGKILL the member of etcd that leads; another must lead within
    /// `elect_within`.
    KillEtcdLeader {
        /// The deadline.
        elect_within: Nanos,
    },
    /// SIGKILL the daemon that executed the fault's action; its tokens
    /// must be gone from etcd within `return_within`.
    KillTokenHolder {
        /// The fault.
        fault: usize,
        /// The deadline.
        return_within: Nanos,
    },
}

struct Ctx<'a> {
    text: &'a str,
    origin: &'a str,
    base: PathBuf,
}

impl Ctx<'_> {
    fn err(&self, span: Range<usize>, message: impl Into<String>) -> ScenarioError {
        let (line, column) =
            if span.is_empty() && span.start == 0 { (0, 0) } else { engine::config::line_col(self.text, span.start) };
        ScenarioError { path: self.origin.to_string(), line, column, message: message.into() }
    }

    fn dur(&self, d: &Dur, field: &str) -> Result<Nanos, ScenarioError> {
        match parse_duration(d.get_ref()) {
            Ok(ns) if ns > 0 => Ok(ns),
            Ok(_) => Err(self.err(d.span(), format!("{field} = {:?}: must be more than zero", d.get_ref()))),
            Err(e) => Err(self.err(d.span(), format!("{field}: {e}"))),
        }
    }

    fn dur_or(&self, d: &Option<Dur>, field: &str, default: Nanos) -> Result<Nanos, ScenarioError> {
        d.as_ref().map(|d| self.dur(d, field)).transpose().map(|v| v.unwrap_or(default))
    }

    /// An existing file or directory, from the game's folder then the
    /// current directory, made absolute.
    fn path(&self, p: &Spanned<String>, what: &str) -> Result<PathBuf, ScenarioError> {
        let found = locate(&self.base, p.get_ref()).ok_or_else(|| {
            self.err(
                p.span(),
                format!(
                    "{what} {:?}: neither {} (from the game's folder) nor {} (from the current directory) exists",
                    p.get_ref(),
                    self.base.join(p.get_ref()).display(),
                    p.get_ref()
                ),
            )
        })?;
        std::fs::canonicalize(&found).map_err(|e| self.err(p.span(), format!("{what} {}: {e}", found.display())))
    }
}

const SECOND: Nanos = engine::SECOND;

/// Reads and resolves the game at `path`.
pub fn load(path: &Path) -> Result<FleetPlan, FleetDayError> {
    let text = engine::config::read_text(path).map_err(ScenarioError::from)?;
    parse(&text, path)
}

/// Parses and resolves game `text`, read from `path`.
pub fn parse(text: &str, path: &Path) -> Result<FleetPlan, FleetDayError> {
    let origin = path.display().to_string();
    let spec: FleetScenario = engine::config::parse_toml(text, &origin).map_err(ScenarioError::from)?;
    let ctx = Ctx { text, origin: &origin, base: path.parent().map(Path::to_path_buf).unwrap_or_default() };
    let inventory = ctx.path(&spec.inventory, "inventory")?;
    let topology = Topology::load(&inventory).map_err(|e| ctx.err(spec.inventory.span(), e.to_string()))?;
    if topology.inventory().node.iter().any(|n| n.name == AGGREGATOR) {
        return Err(ctx
            .err(spec.inventory.span(), format!("a node is called {AGGREGATOR:?}, the aggregator's name"))
            .into());
    }
    let topology = Arc::new(topology);
    let node_playbook = ctx.path(&spec.playbook, "playbook")?;
    let aggregator = aggregator(&ctx, &spec.aggregator)?;
    let (node_book, aggregator_book) = (Playbook::load(&node_playbook)?, Playbook::load(&aggregator.playbook)?);
    let trip_after = (node_book.breaker.trip_after, aggregator_book.breaker.trip_after);
    let scopes = (actuators::registry::scopes(&node_book)?, actuators::registry::scopes(&aggregator_book)?);
    let rules = spec.rules.as_ref().map(|r| ctx.path(r, "rules")).transpose()?;
    let fleet_size = topology.node_count() as u32;
    let faults = faults(&ctx, &spec.fault, &topology)?;
    let lease_ttl = ctx.dur(&spec.fleet.lease_ttl, "fleet.lease_ttl")?;
    if lease_ttl < 2 * SECOND || lease_ttl % SECOND != 0 {
        return Err(ctx
            .err(spec.fleet.lease_ttl.span(), "fleet.lease_ttl: etcd leases are whole seconds, at least 2s")
            .into());
    }
    let request_timeout = spec.fleet.request_timeout.clone().unwrap_or_else(|| Spanned::new(0..0, "2s".into()));
    ctx.dur(&request_timeout, "fleet.request_timeout")?;
    let fleet = FleetTable {
        lease_ttl,
        lease_ttl_text: spec.fleet.lease_ttl.get_ref().clone(),
        request_timeout_text: request_timeout.get_ref().clone(),
        budgets: budgets(&ctx, &spec.fleet.budget, fleet_size)?,
    };
    let members = spec.etcd.members.as_ref().map(|m| (*m.get_ref(), m.span())).unwrap_or((3, 0..0));
    if !(1..=7).contains(&members.0) {
        return Err(ctx.err(members.1, format!("etcd.members = {}: expected 1 to 7", members.0)).into());
    }
    let ms =
        |d: &Option<Dur>, field: &str, default: Nanos| ctx.dur_or(d, field, default).map(|ns| (ns / 1_000_000) as u64);
    let etcd = EtcdPlan {
        members: members.0,
        heartbeat_ms: ms(&spec.etcd.heartbeat, "etcd.heartbeat", 50_000_000)?,
        election_ms: ms(&spec.etcd.election_timeout, "etcd.election_timeout", 500_000_000)?,
    };
    let phases = phases::resolve(&ctx, &spec.phase, &faults, &etcd, lease_ttl)?;
    Ok(FleetPlan {
        name: spec.name.clone(),
        description: spec.description.clone(),
        file: path.to_path_buf(),
        topology,
        node_playbook,
        rules,
        step: ctx.dur_or(&spec.step, "step", 100_000_000)?,
        seed: spec.seed,
        startup_within: ctx.dur_or(&spec.startup_within, "startup_within", 60 * SECOND)?,
        etcd,
        fleet,
        aggregator,
        faults,
        phases,
        breaker: spec.expect.fleet_breaker,
        trip_after,
        scopes,
    })
}

fn aggregator(ctx: &Ctx, a: &AggregatorSpec) -> Result<AggregatorPlan, ScenarioError> {
    let interval = a.sample_interval.clone().unwrap_or_else(|| Spanned::new(0..0, "1s".into()));
    ctx.dur(&interval, "aggregator.sample_interval")?;
    Ok(AggregatorPlan {
        playbook: ctx.path(&a.playbook, "aggregator.playbook")?,
        election: a.election.clone(),
        presets: a.presets.clone().unwrap_or_else(|| vec!["sonic_pfc".into()]),
        sample_interval: interval.get_ref().clone(),
    })
}

/// The budgets, checked as `fleet::settings` checks them (the daemons
/// check them again at start).
fn budgets(ctx: &Ctx, specs: &[BudgetSpec], fleet_size: u32) -> Result<Vec<Budget>, ScenarioError> {
    let mut out: Vec<Budget> = Vec::new();
    for spec in specs {
        let b = &spec.value;
        let name = &b.name;
        let at = |m: String| ctx.err(spec.name_span.clone(), format!("fleet.budget {name:?}: {m}"));
        if name.is_empty() || name.contains('/') {
            return Err(at("the name must be non-empty and without '/'".into()));
        }
        if out.iter().any(|o| &o.config.name == name) {
            return Err(at("is declared twice".into()));
        }
        if b.kinds.is_empty() {
            return Err(at("counts no action kind".into()));
        }
        if let Some(w) = &b.window {
            parse_duration(w).map_err(|e| at(format!("window: {e}")))?;
        }
        let mut limit = b.max;
        if let Some(p) = b.max_percent {
            if !(0.0..=100.0).contains(&p) {
                return Err(at(format!("max_percent = {p}: expected 0..=100")));
            }
            limit = limit.min((f64::from(fleet_size) * p / 100.0).floor() as u32);
        }
        out.push(Budget { config: b.clone(), limit });
    }
    if out.is_empty() {
        return Err(ctx.err(0..0, "[fleet] declares no [[fleet.budget]]: a game day checks the budgets it declares"));
    }
    Ok(out)
}

/// The name of a fault kind as written.
fn kind_name(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::SymbolErrors => "symbol_errors",
        FaultKind::PfcStorm => "pfc_storm",
        _ => "other",
    }
}

fn faults(ctx: &Ctx, specs: &[FaultSpec], topology: &Arc<Topology>) -> Result<Vec<Fault>, ScenarioError> {
    // A fabric only to select NICs: its NICs are in inventory order, as the
    // game's fabric's are, so the indices hold there too.
    let fabric = Fabric::new(topology.clone(), &[], 0, 0).map_err(|e| ctx.err(0..0, e.to_string()))?;
    let mut out: Vec<Fault> = Vec::new();
    for f in specs {
        let name = f.name.get_ref();
        if out.iter().any(|o| &o.name == name) {
            return Err(ctx.err(f.name.span(), format!("fault {name:?} is declared twice")));
        }
        let selector = f.select.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default();
        let nics = fabric.select(&selector).map_err(|e| {
            ctx.err(f.select.as_ref().map(|s| s.span()).unwrap_or(f.name.span()), format!("fault {name:?}: {e}"))
        })?;
        let kind = *f.kind.get_ref();
        let effects = match kind {
            FaultKind::SymbolErrors => {
                let ber = f.ber.unwrap_or(1e-9);
                if !(ber > 0.0 && ber < 1.0) {
                    return Err(ctx.err(f.name.span(), format!("fault {name:?}: ber = {ber}: expected in (0, 1)")));
                }
                nics.iter().map(|&nic| Effect::Ber { nic, ber }).collect()
            }
            FaultKind::PfcStorm => {
                let prio = f.prio.unwrap_or(3);
                if prio > 7 {
                    return Err(ctx.err(f.name.span(), format!("fault {name:?}: prio = {prio}: expected 0 to 7")));
                }
                nics.iter().map(|&nic| Effect::PfcStorm { nic, prio }).collect()
            }
            _ => {
                return Err(ctx.err(
                    f.kind.span(),
                    "a fleet game day takes symbol_errors (the node daemons read the NICs' sysfs counters) and \
                     pfc_storm (the aggregator reads the leaves' PFC counters)",
                ))
            }
        };
        let sites = nics.iter().map(|&i| site(&fabric.nics[i])).collect();
        let action = f.expect.action.get_ref();
        if action.is_empty() || !action.contains('.') {
            return Err(
                ctx.err(f.expect.action.span(), format!("expect.action = {action:?}: write a kind like rail.drain"))
            );
        }
        out.push(Fault {
            name: name.clone(),
            label: format!("{} {selector}", kind_name(kind)),
            effects,
            sites,
            action: action.clone(),
            by: f.expect.by,
            executed: f.expect.executed,
            detect_within: f.expect.detect_within.as_ref().map(|d| ctx.dur(d, "expect.detect_within")).transpose()?,
            mitigate_within: f
                .expect
                .mitigate_within
                .as_ref()
                .map(|d| ctx.dur(d, "expect.mitigate_within"))
                .transpose()?,
        });
    }
    Ok(out)
}

fn site(nic: &Nic) -> Site {
    Site {
        node: nic.node.clone(),
        netdev: nic.netdev.clone(),
        switch: nic.switch.clone(),
        port: nic.switch_port.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAME: &str = r#"
name = "t"
inventory = "chaos/scenarios/fleet/inventory.toml"
playbook = "playbooks/chaos.toml"
[fleet]
lease_ttl = "4s"
[[fleet.budget]]
name = "rail"
kinds = ["rail.*"]
max = 1
per = "plane"
[aggregator]
playbook = "chaos/scenarios/fleet/aggregator.toml"
[[fault]]
name = "p0"
kind = "symbol_errors"
select = { plane = 0 }
expect = { action = "rail.drain", by = "nodes", executed = 1 }
[[phase]]
do = "start"
faults = ["p0"]
[[phase]]
do = "settle"
faults = ["p0"]
[[phase]]
do = "kill-token-holder"
fault = "p0"
"#;

    /// The repository root: the tests run in the crate's folder.
    fn game(text: &str) -> Result<FleetPlan, FleetDayError> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        parse(text, &root.join("game.toml"))
    }

    #[test]
    fn a_game_resolves_its_faults_sites_and_phases() {
        let plan = game(GAME).unwrap();
        assert_eq!(plan.faults[0].sites.len(), 64, "16 nodes x the 4 NICs of plane 0");
        assert_eq!(plan.faults[0].deciders().len(), 16);
        assert_eq!(plan.faults[0].label, "symbol_errors {plane=0}");
        assert_eq!(plan.fleet.budgets[0].limit, 1);
        assert_eq!(
            plan.phases[2],
            Phase::KillTokenHolder { fault: 0, return_within: 6 * SECOND },
            "default: the lease TTL + 2 s"
        );
        assert_eq!(plan.trip_after, (5, 5));
    }

    #[test]
    fn mistakes_are_refused_where_they_are_written() {
        let cases = [
            (GAME.replace("do = \"settle\"", "do = \"setle\""), "expected start, settle", 23),
            (GAME.replace("fault = \"p0\"\n", "fault = \"p0\"\nwithin = \"1s\"\n"), "within does not apply", 28),
            (
                GAME.replace("faults = [\"p0\"]\n[[phase]]\ndo = \"kill", "faults = [\"p1\"]\n[[phase]]\ndo = \"kill"),
                "no fault \"p1\"",
                24,
            ),
            (GAME.replace("lease_ttl = \"4s\"", "lease_ttl = \"1500ms\""), "whole seconds", 6),
            (GAME.replace("kind = \"symbol_errors\"", "kind = \"link_flap\""), "a fleet game day takes", 16),
            (GAME.replace("select = { plane = 0 }", "select = { plane = 9 }"), "matches no NIC", 17),
            // The daemons' budget schema, errors at the budget's name or
            // at the key itself.
            (GAME.replace("kinds = [\"rail.*\"]", "kinds = []"), "\"rail\": counts no action kind", 8),
            (GAME.replace("max = 1\n", "max = 1\nmax_percent = 120.0\n"), "max_percent = 120: expected 0..=100", 8),
            (GAME.replace("per = \"plane\"", "per = \"plane\"\nmaxx = 1"), "unknown field `maxx`", 12),
            (GAME.replace("per = \"plane\"", "per = \"rail\""), "unknown variant `rail`", 11),
        ];
        for (text, want, line) in cases {
            let e = game(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert!(e.contains(&format!("game.toml:{line}:")), "line {line}: {e}");
        }
    }
}
