//! Wiring: turning configuration into a running daemon's parts: the
//! inventory, the rules, the configured sensors and fleet coordination.
//! The playbook's actuators and dispatcher are `actuators::registry`.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use engine::dispatch::Dispatcher;
use engine::playbook::Playbook;
use engine::rule::{self, Helpers, RuleSet};
use engine::runtime::SensorSlot;
use engine::{BuildError, Errors, RuleErrors, Topology};

use crate::config::DaemonConfig;

/// Loads an inventory, if one is named.
pub fn topology(path: Option<&Path>) -> anyhow::Result<Option<Arc<Topology>>> {
    match path {
        None => Ok(None),
        Some(p) => Ok(Some(Arc::new(Topology::load(p)?))),
    }
}

/// Loads the rule directory and applies the playbook.
pub fn load_rules(dir: &Path, helpers: Helpers, playbook: &Playbook) -> Result<RuleSet, RuleErrors> {
    Ok(rule::load_dir(dir, helpers)?.without_disabled(playbook))
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
pub fn sensors(config: &DaemonConfig) -> Result<Vec<SensorSlot>, Errors<BuildError>> {
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
    Errors::or_ok(errors, slots)
}

/// The rule directory a daemon uses: the config's, else the playbook's.
pub fn rules_dir(config: &DaemonConfig, playbook: &Playbook) -> anyhow::Result<std::path::PathBuf> {
    config
        .rules
        .clone()
        .or_else(|| playbook.rules_dir(&config.playbook))
        .context("no rule directory: set `rules` in the config or in the playbook")
}
