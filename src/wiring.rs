//! Wiring: the one place that knows every concrete crate. It builds the
//! configured sensors and the playbook's actuators for `ops`' build step
//! ([`Wiring`], its `Components`), tells each host actuator the daemon's
//! node, loads the rules for reloads and attaches fleet coordination.
//! The playbook's actuators and dispatcher are `actuators::registry`.

use std::path::Path;
use std::sync::Arc;

use actuators::registry::PlaybookError;
use engine::config::{Key, TomlError};
use engine::dispatch::{ActuatorRoute, DispatchConfig, Dispatcher};
use engine::playbook::Playbook;
use engine::policy::PolicySettings;
use engine::rule::{self, Helpers, RuleSet};
use engine::runtime::SensorSlot;
use engine::{BuildError, Errors, RuleErrors, Topology};
use ops::config::DaemonConfig;
use ops::plan::Components;

/// The environment variable that names this daemon's node when its config sets no `node`: a
/// Kubernetes DaemonSet sets it from the downward API (`spec.nodeName`), a name that may differ
/// from the host's short name (the FQDN node names of some clouds), and one config then serves
/// every node.
pub const NODE_ENV: &str = "ROCEMEND_NODE";

/// The concrete sensors and actuators of this binary, for `ops`' build step.
pub struct Wiring;

impl Components for Wiring {
    /// `$ROCEMEND_NODE` when set, else this host's short name.
    fn local_node(&self) -> std::io::Result<String> {
        match std::env::var(NODE_ENV) {
            Ok(node) if !node.trim().is_empty() => Ok(node.trim().to_string()),
            _ => actuators::link::config::local_node(),
        }
    }

    fn one_node(&self, playbook: &mut Playbook, node: &str) -> Vec<TomlError> {
        match one_node(playbook, node) {
            Ok(()) => Vec::new(),
            Err(problems) => problems.into_iter().map(|m| playbook.error(&["actuator".into()], m)).collect(),
        }
    }

    fn sensors(
        &self,
        config: &DaemonConfig,
        inventory: Option<&Topology>,
    ) -> Result<Vec<SensorSlot>, Errors<BuildError>> {
        sensors(config, inventory)
    }

    fn routes(&self, playbook: &Playbook, inventory: Option<&Topology>) -> Result<Vec<ActuatorRoute>, Vec<TomlError>> {
        actuators::registry::routes(playbook, inventory)
            .map_err(|errors| errors.into_iter().map(|e| actuator_error(playbook, e)).collect())
    }

    fn node_condition(&self, playbook: &Playbook) -> Vec<TomlError> {
        let Some(config) = &playbook.kubernetes_condition else { return Vec::new() };
        match actuators::node_condition::check(config) {
            Ok(()) => Vec::new(),
            Err(error) => {
                // `kubernetes_condition.ca_file` → that key; the table itself
                // for a clash of two keys.
                let keys: Vec<Key<'_>> = error.setting().split('.').map(Key::from).collect();
                let message = error.to_string();
                let message = if message.starts_with("kubernetes_condition") {
                    message
                } else {
                    format!("kubernetes_condition: {message}")
                };
                vec![playbook.error(&keys, message)]
            }
        }
    }

    fn dispatch_config(
        &self,
        playbook: &Playbook,
        routes: Vec<ActuatorRoute>,
        policy: PolicySettings,
        topology: Option<Arc<Topology>>,
    ) -> DispatchConfig {
        actuators::registry::dispatch_config(playbook, routes, policy, topology)
    }
}

/// An actuator that could not be built, placed at its `[[actuator]]`.
fn actuator_error(playbook: &Playbook, error: PlaybookError) -> TomlError {
    let at: Vec<Key<'_>> = match &error {
        PlaybookError::Actuator { error, .. } => match playbook.actuator.iter().position(|a| a.name == error.name()) {
            Some(i) => vec!["actuator".into(), i.into()],
            None => vec!["actuator".into()],
        },
        _ => Vec::new(),
    };
    playbook.error(&at, error.to_string())
}

/// Where an actuator kind keeps "the node this daemon runs on": the
/// settings path of its `node`, which must be the daemon's.
fn node_setting(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "link" => Some(&["node"]),
        "pfcwd" | "ecn" => Some(&["host", "node"]),
        _ => None,
    }
}

/// The table at `path` inside `table`, if every step is a table.
fn table_at<'a>(table: &'a mut toml::Table, path: &[&str]) -> Option<&'a mut toml::Table> {
    match path.split_first() {
        None => Some(table),
        Some((key, rest)) => match table.get_mut(*key) {
            Some(toml::Value::Table(inner)) => table_at(inner, rest),
            _ => None,
        },
    }
}

/// Gives every actuator of `playbook` that acts on this host the daemon's
/// `node`: one identity for the series' `node` label and every actuator
/// that compares an action's node with its own. An actuator that names
/// another node is an error, for `check` and `run` alike.
fn one_node(playbook: &mut Playbook, node: &str) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let name = playbook.name.clone();
    for entry in &mut playbook.actuator {
        let Some(path) = node_setting(&entry.kind) else { continue };
        let (last, parents) = path.split_last().expect("a non-empty path");
        // No host side configured: nothing acts on this node.
        let Some(table) = table_at(&mut entry.settings, parents) else { continue };
        match table.get(*last).and_then(|v| v.as_str()) {
            Some(theirs) if theirs != node => errors.push(format!(
                "playbook {:?}: actuator {:?} ({}): {} = {theirs:?} is not this daemon's node {node:?} (the config's `node`); \
                 leave it out, the daemon's node is used",
                name,
                entry.name,
                entry.kind,
                path.join(".")
            )),
            Some(_) => {}
            None => {
                table.insert(last.to_string(), toml::Value::String(node.to_string()));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Loads the rule directory and applies the playbook.
pub fn load_rules(dir: &Path, helpers: Helpers, playbook: &Playbook) -> Result<RuleSet, RuleErrors> {
    Ok(rule::load_dir(dir, helpers)?.without_disabled(&playbook.disabled_rules()))
}

/// Attaches fleet coordination when the configuration has a `[fleet]`
/// table. Without one the dispatcher stays standalone: its local policy
/// alone decides, exactly as before. Connecting is lazy, so the daemon
/// starts while etcd is down and holds fleet-scoped actions until it is up.
///
/// With `fleet.shard`, this aggregator joins the shard group with the
/// switches its sensors read: each sensor that reads switches reads only
/// the ones it owns from then on, and every switch action is held unless
/// the switch is confirmed ours right before.
pub async fn fleet(
    dispatcher: Dispatcher,
    sensors: &mut [SensorSlot],
    config: Option<&fleet::FleetConfig>,
    playbook: &Playbook,
    node: &str,
) -> anyhow::Result<(Dispatcher, Departure)> {
    let Some(config) = config else { return Ok((dispatcher, Departure::default())) };
    let settings = fleet::FleetSettings::new(config).map_err(|e| anyhow::anyhow!("[fleet]: {e}"))?;
    #[cfg(feature = "etcd")]
    {
        tracing::info!(
            message = "Fleet coordination through etcd.",
            etcd = %settings.endpoints.join(","),
            identity = %settings.identity
        );
        let mut coordinator = fleet::EtcdCoordinator::start(settings.clone()).await?;
        let mut departure = Departure::default();
        if let Some(group) = &settings.shard {
            let switches: std::collections::BTreeSet<String> =
                sensors.iter().flat_map(|slot| slot.sensor.switches()).collect();
            tracing::info!(message = "Sharing switches with the shard group.", group = %group, switches = switches.len());
            let shard = Arc::new(fleet::shard::Shard::start(&settings, group, switches).await?);
            for slot in sensors.iter_mut().filter(|slot| !slot.sensor.switches().is_empty()) {
                slot.sensor.read_only_owned(shard.subscribe());
            }
            coordinator = coordinator.with_shard(shard.clone(), node);
            departure.shard = Some(shard);
        }
        Ok((dispatcher.with_coordinator(Arc::new(coordinator), playbook.scopes()), departure))
    }
    #[cfg(not(feature = "etcd"))]
    {
        let _ = (settings, playbook, dispatcher, sensors, node);
        anyhow::bail!(
            "[fleet] is configured, but this rocemend was built without etcd support; \
             build it with `cargo build --features etcd`, or remove [fleet] to run standalone"
        )
    }
}

/// What a daemon of the fleet does on a clean stop: an aggregator sharing
/// its switches leaves its shard group, so the others take them over at
/// once rather than when its lease lapses.
#[derive(Default)]
pub struct Departure {
    #[cfg(feature = "etcd")]
    shard: Option<Arc<fleet::shard::Shard>>,
}

impl Departure {
    /// Leaves the shard group, if this daemon is in one.
    pub async fn leave(self) {
        #[cfg(feature = "etcd")]
        if let Some(shard) = self.shard {
            match shard.leave().await {
                Ok(()) => tracing::info!(message = "Left the shard group; its switches are handed over."),
                Err(error) => tracing::warn!(
                    message = "Could not leave the shard group; its switches move when the lease lapses.",
                    %error
                ),
            }
        }
    }
}

/// Builds the configured sensors; the switches a `gnmi` sensor names are
/// looked up in `inventory`.
pub fn sensors(config: &DaemonConfig, inventory: Option<&Topology>) -> Result<Vec<SensorSlot>, Errors<BuildError>> {
    let mut slots = Vec::new();
    let mut errors = Vec::new();
    for entry in &config.sensor {
        let name = entry.name.clone().unwrap_or_else(|| entry.kind.clone());
        match sensors::build_in(&entry.kind, &name, entry.settings.clone(), inventory) {
            Ok(sensor) => slots.push(SensorSlot {
                sensor,
                max_series: entry.max_series.unwrap_or(config.engine.max_series_per_sensor),
            }),
            Err(e) => errors.push(e),
        }
    }
    Errors::or_ok(errors, slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn playbook(text: &str) -> Playbook {
        Playbook::parse(text, "p.toml").unwrap()
    }

    #[test]
    fn host_actuators_act_on_the_daemons_node_and_another_node_is_an_error() {
        let mut p = playbook(
            "name = \"p\"\n\
             [[actuator]]\nname = \"isolate\"\ntype = \"link\"\nhandles = [\"link.*\"]\n\
             [[actuator]]\nname = \"wd\"\ntype = \"pfcwd\"\nhandles = [\"pfcwd.*\"]\n[actuator.host]\nnetdevs = [\"eth0\"]\n\
             [[actuator]]\nname = \"ecn\"\ntype = \"ecn\"\nhandles = [\"ecn.*\"]\n",
        );
        one_node(&mut p, "node-01").unwrap();
        assert_eq!(p.actuator[0].settings["node"].as_str(), Some("node-01"));
        assert_eq!(p.actuator[1].settings["host"]["node"].as_str(), Some("node-01"));
        assert!(p.actuator[2].settings.get("host").is_none(), "no host side, nothing to say");

        let mut p = playbook(
            "name = \"p\"\n[[actuator]]\nname = \"isolate\"\ntype = \"link\"\nhandles = [\"link.*\"]\nnode = \"vm\"\n",
        );
        let errors = one_node(&mut p, "node-01").unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].contains("actuator \"isolate\" (link): node = \"vm\" is not this daemon's node \"node-01\""),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn the_packaged_example_configs_load() {
        // The switches the aggregator names are those of the example inventory.
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let inventory = Topology::load(&root.join("docs/examples/inventory.toml")).unwrap();
        for example in ["packaging/examples/node.toml", "packaging/examples/switch-aggregator.toml"] {
            let config = DaemonConfig::load(&root.join(example)).unwrap_or_else(|e| panic!("{example}: {e}"));
            assert!(config.metrics.listen.is_some(), "{example} shows the metrics endpoint");
            for s in &config.sensor {
                let name = s.name.clone().unwrap_or_else(|| s.kind.clone());
                sensors::build_in(&s.kind, &name, s.settings.clone(), Some(&inventory))
                    .unwrap_or_else(|e| panic!("{example}: sensor {name}: {e}"));
            }
        }
    }
}
