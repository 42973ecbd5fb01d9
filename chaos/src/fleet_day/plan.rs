//! A fleet game day file, checked and resolved on the shared plan
//! (`crate::plan`): durations in nanoseconds, paths found and made
//! absolute (the daemons' configs live in a temporary directory), faults
//! resolved as a scenario's are and turned into fabric effects on the NICs
//! they select, and the script's phases typed. Every error names
//! `file:line:col`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::contracts::Scope;
use engine::playbook::Playbook;
use engine::policy::kind_matches;
use engine::{Nanos, Topology};
use sim::fabric::{Effect, Fabric};
use toml::Spanned;

use fleet::settings::BudgetConfig;

use super::spec::{AggregatorSpec, BreakerExpect, BudgetSpec, FleetScenario};
use super::FleetDayError;
use crate::plan::site::Location;
use crate::plan::{Ctx, FaultPlan};
use crate::report::fleet::Role;
use crate::spec::{By, Dur, FaultKind, FaultSpec, Keyed, ScenarioError};

mod phases;

/// The identity of the switch aggregator's daemon (node daemons are named
/// after their node).
pub const AGGREGATOR: &str = "aggregator";

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
    pub faults: Vec<GameFault>,
    /// The script.
    pub phases: Vec<PhasePlan>,
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
    /// As written (`"4s"`): what the daemons' configs say.
    pub lease_ttl_text: String,
    /// As written (`"2s"`).
    pub request_timeout_text: String,
    /// The budgets.
    pub budgets: Vec<BudgetPlan>,
}

/// A budget, with its limit per cell.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BudgetPlan {
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

/// A game's fault: a fault resolved as a scenario's is, named, with its
/// effects on the game's fabric and what the daemons must do about it.
#[derive(Debug, Clone)]
pub struct GameFault {
    /// Its name.
    pub name: String,
    /// The fault: its label (`symbol_errors {plane=0}`) and where it lands
    /// (one NIC location per NIC it hits, in the fabric's order).
    pub fault: FaultPlan,
    /// What it does to the fabric.
    pub effects: Vec<Effect>,
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

impl GameFault {
    /// The daemons that decide about it, each with the NICs it decides on.
    pub fn deciders(&self) -> BTreeMap<String, Vec<&Location>> {
        let mut out: BTreeMap<String, Vec<&Location>> = BTreeMap::new();
        for nic in &self.fault.locations {
            let who = match self.by {
                By::Nodes => nic.get("node").cloned().unwrap_or_default(),
                By::Aggregator => AGGREGATOR.to_string(),
            };
            out.entry(who).or_default().push(nic);
        }
        out
    }

    /// The nodes of the NICs it hits.
    pub fn nodes(&self) -> Vec<String> {
        let nodes: std::collections::BTreeSet<&String> =
            self.fault.locations.iter().filter_map(|l| l.get("node")).collect();
        nodes.into_iter().cloned().collect()
    }
}

/// One step of the script.
#[derive(Debug, Clone, PartialEq)]
pub enum PhasePlan {
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

const SECOND: Nanos = engine::SECOND;

/// An existing file or directory, from the game's folder then the current
/// directory, made absolute: the daemons' configs name it from elsewhere.
fn absolute(ctx: &Ctx, p: &Spanned<String>, what: &str) -> Result<PathBuf, ScenarioError> {
    let found = ctx.path(p, what)?;
    std::fs::canonicalize(&found).map_err(|e| ctx.err(p.span(), format!("{what} {}: {e}", found.display())))
}

/// Reads and resolves the game at `path`.
pub fn load(path: &Path) -> Result<FleetPlan, FleetDayError> {
    let text = engine::config::read_text(path).map_err(ScenarioError::from)?;
    parse(&text, path)
}

/// Parses and resolves game `text`, read from `path`.
pub fn parse(text: &str, path: &Path) -> Result<FleetPlan, FleetDayError> {
    let origin = path.display().to_string();
    let spec: FleetScenario = engine::config::parse_toml(text, &origin).map_err(ScenarioError::from)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let ctx = Ctx { text, origin: &origin, base, what: "game" };
    let topology = Arc::new(topology(&ctx, &spec.inventory)?);
    let node_playbook = absolute(&ctx, &spec.playbook, "playbook")?;
    let aggregator = aggregator(&ctx, &spec.aggregator)?;
    let (node_book, aggregator_book) = (Playbook::load(&node_playbook)?, Playbook::load(&aggregator.playbook)?);
    let trip_after = (node_book.breaker.trip_after, aggregator_book.breaker.trip_after);
    let scopes = (actuators::registry::scopes(&node_book)?, actuators::registry::scopes(&aggregator_book)?);
    let rules = spec.rules.as_ref().map(|r| absolute(&ctx, r, "rules")).transpose()?;
    let fleet_size = topology.node_count() as u32;
    let faults = faults(&ctx, &spec.fault, &topology)?;
    let fleet = fleet_table(&ctx, &spec, fleet_size)?;
    let etcd = etcd(&ctx, &spec)?;
    let phases = phases::resolve(&ctx, &spec.phase, &faults, &etcd, fleet.lease_ttl)?;
    Ok(FleetPlan {
        name: spec.name.clone(),
        description: spec.description.clone(),
        file: path.to_path_buf(),
        topology,
        node_playbook,
        rules,
        step: ctx.positive_or(&spec.step, "step", 100_000_000)?,
        seed: spec.seed,
        startup_within: ctx.positive_or(&spec.startup_within, "startup_within", 60 * SECOND)?,
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

/// The inventory: one node daemon per node, none called as the aggregator.
fn topology(ctx: &Ctx, inventory: &Spanned<String>) -> Result<Topology, ScenarioError> {
    let topology = Topology::load(&absolute(ctx, inventory, "inventory")?)
        .map_err(|e| ctx.err(inventory.span(), e.to_string()))?;
    if topology.inventory().node.iter().any(|n| n.name == AGGREGATOR) {
        return Err(ctx.err(inventory.span(), format!("a node is called {AGGREGATOR:?}, the aggregator's name")));
    }
    Ok(topology)
}

/// Every daemon's `[fleet]` table: a lease TTL etcd can grant (whole
/// seconds), a request timeout, the budgets.
fn fleet_table(ctx: &Ctx, spec: &FleetScenario, fleet_size: u32) -> Result<FleetTable, ScenarioError> {
    let lease_ttl = ctx.positive(&spec.fleet.lease_ttl, "fleet.lease_ttl")?;
    if lease_ttl < 2 * SECOND || lease_ttl % SECOND != 0 {
        return Err(ctx.err(spec.fleet.lease_ttl.span(), "fleet.lease_ttl: etcd leases are whole seconds, at least 2s"));
    }
    let request_timeout = spec.fleet.request_timeout.clone().unwrap_or_else(|| Dur::new(0..0, "2s"));
    ctx.positive(&request_timeout, "fleet.request_timeout")?;
    Ok(FleetTable {
        lease_ttl,
        lease_ttl_text: spec.fleet.lease_ttl.text().to_string(),
        request_timeout_text: request_timeout.text().to_string(),
        budgets: budgets(ctx, &spec.fleet.budget, fleet_size)?,
    })
}

/// The etcd cluster: 1 to 7 members, its raft timing in ms.
fn etcd(ctx: &Ctx, spec: &FleetScenario) -> Result<EtcdPlan, ScenarioError> {
    let members = spec.etcd.members.as_ref().map(|m| (*m.get_ref(), m.span())).unwrap_or((3, 0..0));
    if !(1..=7).contains(&members.0) {
        return Err(ctx.err(members.1, format!("etcd.members = {}: expected 1 to 7", members.0)));
    }
    let ms = |d: &Option<Dur>, field: &str, default: Nanos| {
        ctx.positive_or(d, field, default).map(|ns| (ns / 1_000_000) as u64)
    };
    Ok(EtcdPlan {
        members: members.0,
        heartbeat_ms: ms(&spec.etcd.heartbeat, "etcd.heartbeat", 50_000_000)?,
        election_ms: ms(&spec.etcd.election_timeout, "etcd.election_timeout", 500_000_000)?,
    })
}

fn aggregator(ctx: &Ctx, a: &AggregatorSpec) -> Result<AggregatorPlan, ScenarioError> {
    let interval = a.sample_interval.clone().unwrap_or_else(|| Dur::new(0..0, "1s"));
    ctx.positive(&interval, "aggregator.sample_interval")?;
    Ok(AggregatorPlan {
        playbook: absolute(ctx, &a.playbook, "aggregator.playbook")?,
        election: a.election.clone(),
        presets: a.presets.clone().unwrap_or_else(|| vec!["sonic_pfc".into()]),
        sample_interval: interval.text().to_string(),
    })
}

/// The budgets, checked as `fleet::settings` checks them (the daemons
/// check them again at start).
fn budgets(ctx: &Ctx, specs: &[BudgetSpec], fleet_size: u32) -> Result<Vec<BudgetPlan>, ScenarioError> {
    let mut out: Vec<BudgetPlan> = Vec::new();
    for spec in specs {
        let b = &spec.value;
        let name = &b.name;
        let at = |m: String| ctx.err(spec.value_span("name", ctx.text), format!("fleet.budget {name:?}: {m}"));
        if name.is_empty() || name.contains('/') {
            return Err(at("the name must be non-empty and without '/'".into()));
        }
        if out.iter().any(|o| &o.config.name == name) {
            return Err(at("is declared twice".into()));
        }
        if b.kinds.is_empty() {
            return Err(at("counts no action kind".into()));
        }
        let mut limit = b.max;
        if let Some(p) = b.max_percent {
            if !(0.0..=100.0).contains(&p) {
                return Err(at(format!("max_percent = {p}: expected 0..=100")));
            }
            limit = limit.min((f64::from(fleet_size) * p / 100.0).floor() as u32);
        }
        out.push(BudgetPlan { config: b.clone(), limit });
    }
    if out.is_empty() {
        return Err(ctx.err(0..0, "[fleet] declares no [[fleet.budget]]: a game day checks the budgets it declares"));
    }
    Ok(out)
}

/// The keys of a game day's fault; the others time a scenario's faults or
/// act on real links, and a game's phases start its faults.
const GAME_KEYS: &[&str] = &["name", "kind", "select", "ber", "prio", "expect"];

fn faults(ctx: &Ctx, specs: &[Keyed<FaultSpec>], topology: &Arc<Topology>) -> Result<Vec<GameFault>, ScenarioError> {
    // A fabric only to select NICs: its NICs are in inventory order, as the
    // game's fabric's are, so the indices hold there too.
    let fabric = Fabric::new(topology.clone(), &[], 0, 0).map_err(|e| ctx.err(0..0, e.to_string()))?;
    let mut out: Vec<GameFault> = Vec::new();
    for f in specs {
        out.push(game_fault(ctx, f, &fabric, &out)?);
    }
    Ok(out)
}

/// One fault of the game, checked as only a game checks it (its keys, its
/// name, its kind, its BER and priority, its expectation), then resolved
/// on the shared plan; `before` are the faults already resolved.
fn game_fault(
    ctx: &Ctx,
    f: &Keyed<FaultSpec>,
    fabric: &Fabric,
    before: &[GameFault],
) -> Result<GameFault, ScenarioError> {
    if let Some((key, span)) = f.first_key_not(|k| GAME_KEYS.contains(&k)) {
        return Err(ctx.err(
            span,
            format!(
                "`{key}` does not apply to a game day's fault (it takes {}; its phases start it)",
                GAME_KEYS.join(", ")
            ),
        ));
    }
    let spec = &f.value;
    let Some(name_at) = &spec.name else { return Err(ctx.err(spec.kind.span(), "missing field `name`")) };
    let name = name_at.get_ref();
    if before.iter().any(|o| &o.name == name) {
        return Err(ctx.err(name_at.span(), format!("fault {name:?} is declared twice")));
    }
    let selector = spec.select.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default();
    fabric.select(&selector).map_err(|e| {
        ctx.err(spec.select.as_ref().map(|s| s.span()).unwrap_or(name_at.span()), format!("fault {name:?}: {e}"))
    })?;
    match spec.kind.get_ref() {
        FaultKind::SymbolErrors => {
            let ber = spec.ber.unwrap_or(1e-9);
            if !(ber > 0.0 && ber < 1.0) {
                return Err(ctx.err(name_at.span(), format!("fault {name:?}: ber = {ber}: expected in (0, 1)")));
            }
        }
        FaultKind::PfcStorm => {
            let prio = spec.prio.unwrap_or(3);
            if prio > 7 {
                return Err(ctx.err(name_at.span(), format!("fault {name:?}: prio = {prio}: expected 0 to 7")));
            }
        }
        _ => {
            return Err(ctx.err(
                spec.kind.span(),
                "a fleet game day takes symbol_errors (the node daemons read the NICs' sysfs counters) and \
                 pfc_storm (the aggregator reads the leaves' PFC counters)",
            ))
        }
    }
    let Some(expect) = &spec.expect else {
        return Err(ctx.err(name_at.span(), format!("fault {name:?}: missing field `expect`")));
    };
    let action = expect.action.get_ref();
    if action.is_empty() || !action.contains('.') {
        return Err(ctx.err(expect.action.span(), format!("expect.action = {action:?}: write a kind like rail.drain")));
    }
    let fault = spec.resolve(ctx, fabric, None, None)?;
    Ok(GameFault {
        name: name.clone(),
        effects: fault.effects(fabric),
        fault,
        action: action.clone(),
        by: expect.by,
        executed: expect.executed,
        detect_within: expect.detect_within.as_ref().map(|d| ctx.positive(d, "expect.detect_within")).transpose()?,
        mitigate_within: expect
            .mitigate_within
            .as_ref()
            .map(|d| ctx.positive(d, "expect.mitigate_within"))
            .transpose()?,
    })
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
        assert_eq!(plan.faults[0].fault.locations.len(), 64, "16 nodes x the 4 NICs of plane 0");
        assert_eq!(plan.faults[0].deciders().len(), 16);
        assert_eq!(plan.faults[0].fault.label, "symbol_errors {plane=0}");
        assert_eq!(plan.fleet.budgets[0].limit, 1);
        assert_eq!(
            plan.phases[2],
            PhasePlan::KillTokenHolder { fault: 0, return_within: 6 * SECOND },
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
