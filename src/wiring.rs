//! Wiring: turning configuration into a running daemon's parts. The only
//! place that knows every concrete sensor and actuator crate.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use engine::dispatch::{ActuatorRoute, DispatchConfig, Dispatcher};
use engine::ledger::Ledger;
use engine::playbook::Playbook;
use engine::rule::{self, Helpers, RuleError, RuleSet};
use engine::runtime::SensorSlot;
use engine::Topology;

use crate::config::DaemonConfig;

/// Loads an inventory, if one is named.
pub fn topology(path: Option<&Path>) -> anyhow::Result<Option<Arc<Topology>>> {
    match path {
        None => Ok(None),
        Some(p) => Ok(Some(Arc::new(Topology::load(p)?))),
    }
}

/// Drops the rules a playbook switches off.
pub fn without_disabled(mut rules: RuleSet, playbook: &Playbook) -> RuleSet {
    let off = playbook.disabled_rules();
    rules.rules.retain(|r| !off.contains(&r.name.as_str()));
    rules
}

/// Loads the rule directory and applies the playbook.
pub fn load_rules(dir: &Path, helpers: Helpers, playbook: &Playbook) -> Result<RuleSet, Vec<RuleError>> {
    let rules = rule::load_dir(dir, helpers)?;
    Ok(without_disabled(rules, playbook))
}

/// The actuator registry: each playbook actuator built by its kind
/// (`type`: log, exec, cordon, link, webhook, pfcwd, ecn, rail), as routes
/// from the action kinds it handles, in the playbook's order (first match
/// wins). Every actuator that fails to build is reported, not only the first.
pub fn routes(playbook: &Playbook) -> Result<Vec<ActuatorRoute>, Vec<String>> {
    let mut routes = Vec::new();
    let mut errors = Vec::new();
    for entry in &playbook.actuator {
        match actuators::build(&entry.kind, &entry.name, entry.settings.clone()) {
            Ok(actuator) => {
                for pattern in &entry.handles {
                    routes.push(ActuatorRoute {
                        pattern: pattern.clone(),
                        actuator: actuator.clone(),
                        destructive: entry.destructive,
                    });
                }
            }
            Err(e) => errors.push(format!("playbook {:?}: {e}", playbook.name)),
        }
    }
    if errors.is_empty() {
        Ok(routes)
    } else {
        Err(errors)
    }
}

/// Builds the playbook's actuators and the dispatcher that routes to them,
/// with its safety policy and, if given, the ledger it records to.
pub fn dispatcher(
    playbook: &Playbook,
    topology: Option<Arc<Topology>>,
    ledger: Option<Ledger>,
) -> Result<Dispatcher, Vec<String>> {
    let policy = playbook.policy().map_err(|e| vec![format!("playbook {:?}: {e}", playbook.name)]);
    let routes = routes(playbook)?;
    Ok(Dispatcher::new(
        DispatchConfig {
            mode: playbook.mode,
            rule_modes: playbook.rule_modes(),
            routes,
            timeout: playbook.timeout(),
            policy: policy?,
            topology,
        },
        ledger,
    ))
}

/// Attaches fleet coordination when the configuration has a `[fleet]`
/// table. Without one the dispatcher stays standalone: its local policy
/// alone decides, exactly as before. Connecting is lazy, so the daemon
/// starts while etcd is down and holds fleet-scoped actions until it is up.
pub async fn fleet(
    dispatcher: Dispatcher,
    config: Option<&fleet::FleetConfig>,
    playbook: &Playbook,
) -> anyhow::Result<Dispatcher> {
    let Some(config) = config else { return Ok(dispatcher) };
    let settings = fleet::FleetSettings::new(config).map_err(|e| anyhow::anyhow!("[fleet]: {e}"))?;
    #[cfg(feature = "etcd")]
    {
        tracing::info!(
            message = "Fleet coordination through etcd.",
            etcd = %settings.endpoints.join(","),
            identity = %settings.identity
        );
        let coordinator = fleet::EtcdCoordinator::start(settings).await?;
        Ok(dispatcher.with_coordinator(Arc::new(coordinator), playbook.scopes()))
    }
    #[cfg(not(feature = "etcd"))]
    {
        let _ = (settings, playbook, dispatcher);
        anyhow::bail!(
            "[fleet] is configured, but this rocemend was built without etcd support; \
             build it with `cargo build --features etcd`, or remove [fleet] to run standalone"
        )
    }
}

/// Builds the configured sensors.
pub fn sensors(config: &DaemonConfig) -> Result<Vec<SensorSlot>, Vec<String>> {
    let mut slots = Vec::new();
    let mut errors = Vec::new();
    for entry in &config.sensor {
        let name = entry.name.clone().unwrap_or_else(|| entry.kind.clone());
        match sensors::build(&entry.kind, &name, entry.settings.clone()) {
            Ok(sensor) => slots.push(SensorSlot {
                sensor,
                max_series: entry.max_series.unwrap_or(config.engine.max_series_per_sensor),
            }),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(slots)
    } else {
        Err(errors)
    }
}

/// The rule directory a daemon uses: the config's, else the playbook's.
pub fn rules_dir(config: &DaemonConfig, playbook: &Playbook) -> anyhow::Result<std::path::PathBuf> {
    config
        .rules
        .clone()
        .or_else(|| playbook.rules_dir(&config.playbook))
        .context("no rule directory: set `rules` in the config or in the playbook")
}
