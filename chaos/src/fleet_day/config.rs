//! The daemons' configuration files, written for the game (the format of
//! `docs/config.md`; each daemon's own `rocemend run` checks it as it
//! checks any other):
//!
//! - a node daemon per inventory node: `node = <name>`, one `rdma_sysfs`
//!   sensor on its node's simulated sysfs tree, the game's node playbook;
//! - the switch aggregator: one `gnmi` sensor over every leaf of the
//!   inventory, the aggregator's playbook, and an aggregator election;
//! - for all: the served inventory (the leaves' loopback addresses), a
//!   state directory and control socket of their own, and the `[fleet]`
//!   table of the game with their identity and every etcd member.

use std::path::{Path, PathBuf};

use fleet::settings::BudgetConfig;
use toml::{Table, Value};

use super::plan::{FleetPlan, AGGREGATOR};

/// What every daemon's config points at.
pub struct Shared {
    /// The served inventory.
    pub inventory: PathBuf,
    /// The root of the nodes' sysfs trees (`<root>/<node>/class/…`).
    pub sysfs: PathBuf,
    /// Every etcd member's client URL.
    pub endpoints: Vec<String>,
    /// The leaves the aggregator reads.
    pub leaves: Vec<String>,
}

/// Where one daemon keeps its state and listens.
pub struct Place {
    /// Its state directory.
    pub state: PathBuf,
    /// Its control socket.
    pub socket: PathBuf,
}

fn path(p: &Path) -> Value {
    Value::String(p.display().to_string())
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

/// What both kinds of daemon share: state, inventory, playbook, rules,
/// logs, the control socket.
fn common(plan: &FleetPlan, playbook: &Path, place: &Place, shared: &Shared) -> Table {
    let mut t = Table::new();
    t.insert("state_dir".into(), path(&place.state));
    t.insert("inventory".into(), path(&shared.inventory));
    t.insert("playbook".into(), path(playbook));
    if let Some(rules) = &plan.rules {
        t.insert("rules".into(), path(rules));
    }
    // No rule directory polling: the rules do not change during a game, and
    // seventeen daemons polling it cost a 2-core machine for nothing.
    t.insert("engine".into(), Value::Table(Table::from_iter([("reload_poll".into(), Value::from("0"))])));
    t.insert(
        "log".into(),
        Value::Table(Table::from_iter([("format".into(), Value::from("json")), ("level".into(), Value::from("info"))])),
    );
    t.insert("control".into(), Value::Table(Table::from_iter([("socket".into(), path(&place.socket))])));
    t
}

/// The `[fleet]` table of daemon `identity`.
fn fleet(plan: &FleetPlan, identity: &str, shared: &Shared, election: Option<&str>) -> Value {
    let mut f = Table::new();
    f.insert("etcd".into(), strings(&shared.endpoints));
    f.insert("identity".into(), Value::from(identity));
    f.insert("lease_ttl".into(), Value::from(plan.fleet.lease_ttl_text.as_str()));
    f.insert("request_timeout".into(), Value::from(plan.fleet.request_timeout_text.as_str()));
    f.insert("fleet_size".into(), Value::from(plan.topology.node_count() as i64));
    if let Some(e) = election {
        f.insert("aggregator".into(), Value::from(e));
    }
    let budgets = plan.fleet.budgets.iter().map(|b| budget(&b.config)).collect();
    f.insert("budget".into(), Value::Array(budgets));
    Value::Table(f)
}

/// One `[[fleet.budget]]`, in the daemons' own schema: what they read is
/// what the game checks the tokens against.
fn budget(b: &BudgetConfig) -> Value {
    // Names, strings, numbers and a unit enum: always a TOML table.
    Value::try_from(b).expect("a budget serializes to a TOML table")
}

/// The config of the node daemon of `node`.
pub fn node(plan: &FleetPlan, node: &str, place: &Place, shared: &Shared) -> String {
    let mut t = common(plan, &plan.node_playbook, place, shared);
    t.insert("node".into(), Value::from(node));
    let mut sensor = Table::new();
    sensor.insert("type".into(), Value::from("rdma_sysfs"));
    sensor.insert("root".into(), path(&shared.sysfs.join(node)));
    sensor.insert("interval_ms".into(), Value::from((plan.step / 1_000_000).max(10)));
    t.insert("sensor".into(), Value::Array(vec![Value::Table(sensor)]));
    t.insert("fleet".into(), fleet(plan, node, shared, None));
    render(&t)
}

/// The config of the switch aggregator.
pub fn aggregator(plan: &FleetPlan, place: &Place, shared: &Shared) -> String {
    let a = &plan.aggregator;
    let mut t = common(plan, &a.playbook, place, shared);
    let mut sensor = Table::new();
    sensor.insert("type".into(), Value::from("gnmi"));
    sensor.insert("name".into(), Value::from("leaves"));
    sensor.insert("presets".into(), strings(&a.presets));
    sensor.insert("sample_interval".into(), Value::from(a.sample_interval.as_str()));
    let targets = shared
        .leaves
        .iter()
        .map(|l| Value::Table(Table::from_iter([("name".into(), Value::from(l.as_str()))])))
        .collect();
    sensor.insert("targets".into(), Value::Array(targets));
    t.insert("sensor".into(), Value::Array(vec![Value::Table(sensor)]));
    t.insert("fleet".into(), fleet(plan, AGGREGATOR, shared, a.election.as_deref()));
    render(&t)
}

fn render(t: &Table) -> String {
    format!("# Written by `rocemend chaos fleet` for one game day.\n{}", toml::to_string(t).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> FleetPlan {
        let game = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/fleet/spine_fault.toml");
        crate::fleet_day::load(&game).unwrap()
    }

    fn shared() -> Shared {
        Shared {
            inventory: "/g/inventory.toml".into(),
            sysfs: "/g/sysfs".into(),
            endpoints: vec!["http://127.0.0.1:1".into(), "http://127.0.0.1:2".into()],
            leaves: vec!["leaf-rail0".into(), "leaf-rail1".into()],
        }
    }

    #[test]
    fn a_node_daemon_reads_its_own_sysfs_tree_and_joins_the_fleet_under_its_name() {
        let place = Place { state: "/g/node-03/state".into(), socket: "/g/node-03/control.sock".into() };
        let text = node(&plan(), "node-03", &place, &shared());
        let t: Table = toml::from_str(&text).unwrap();
        assert_eq!(t["node"].as_str(), Some("node-03"));
        assert_eq!(t["control"]["socket"].as_str(), Some("/g/node-03/control.sock"));
        let sensor = &t["sensor"].as_array().unwrap()[0];
        assert_eq!((sensor["type"].as_str(), sensor["root"].as_str()), (Some("rdma_sysfs"), Some("/g/sysfs/node-03")));
        assert_eq!(sensor["interval_ms"].as_integer(), Some(100));
        let fleet = &t["fleet"];
        assert_eq!(fleet["identity"].as_str(), Some("node-03"));
        assert_eq!(fleet["etcd"].as_array().unwrap().len(), 2);
        assert_eq!(fleet["fleet_size"].as_integer(), Some(16));
        assert!(fleet.get("aggregator").is_none());
        let rail = fleet["budget"].as_array().unwrap().iter().find(|b| b["name"].as_str() == Some("rail")).unwrap();
        assert_eq!((rail["max"].as_integer(), rail["per"].as_str()), (Some(1), Some("plane")));
    }

    #[test]
    fn the_aggregator_reads_every_leaf_and_campaigns() {
        let place = Place { state: "/g/a/state".into(), socket: "/g/a/control.sock".into() };
        let t: Table = toml::from_str(&aggregator(&plan(), &place, &shared())).unwrap();
        let sensor = &t["sensor"].as_array().unwrap()[0];
        assert_eq!(sensor["type"].as_str(), Some("gnmi"));
        assert_eq!(sensor["targets"].as_array().unwrap().len(), 2);
        assert_eq!(t["fleet"]["identity"].as_str(), Some(AGGREGATOR));
        assert_eq!(t["fleet"]["aggregator"].as_str(), Some("fleet-day"));
        assert!(t["playbook"].as_str().unwrap().ends_with("chaos/scenarios/fleet/aggregator.toml"));
        assert!(t.get("node").is_none());
    }
}
