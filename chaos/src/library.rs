//! The scenario library, its rules and its playbook, built in: `rocemend
//! demo` runs the closed loop wherever the binary is.

use std::path::Path;

use engine::playbook::Playbook;

use crate::report::Report;
use crate::run::{run_scenario, Options, Sources};
use crate::ChaosError;

/// The chaos rules, `(path, text)`.
pub const RULES: &[(&str, &str)] = &[
    ("chaos/rules/rdma_link_flap.rhai", include_str!("../rules/rdma_link_flap.rhai")),
    ("chaos/rules/rdma_symbol_errors.rhai", include_str!("../rules/rdma_symbol_errors.rhai")),
    ("chaos/rules/rdma_xmit_wait.rhai", include_str!("../rules/rdma_xmit_wait.rhai")),
    ("chaos/rules/switch_pfc_storm.rhai", include_str!("../rules/switch_pfc_storm.rhai")),
];

/// The scenarios' playbook.
pub const PLAYBOOK: &str = include_str!("../scenarios/playbooks/chaos.toml");

/// The scenario library, `(path, text)`.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("chaos/scenarios/pfc_storm.toml", include_str!("../scenarios/pfc_storm.toml")),
    ("chaos/scenarios/symbol_errors.toml", include_str!("../scenarios/symbol_errors.toml")),
    ("chaos/scenarios/link_flap_storm.toml", include_str!("../scenarios/link_flap_storm.toml")),
    ("chaos/scenarios/rail_failure.toml", include_str!("../scenarios/rail_failure.toml")),
    ("chaos/scenarios/many_faults.toml", include_str!("../scenarios/many_faults.toml")),
    ("chaos/scenarios/sensor_outage.toml", include_str!("../scenarios/sensor_outage.toml")),
    ("chaos/scenarios/congestion.toml", include_str!("../scenarios/congestion.toml")),
];

/// The scenarios of the closed loop `rocemend demo` shows.
pub const DEMO: &[&str] = &["pfc_storm", "link_flap_storm"];

/// The built-in rules and playbook.
pub fn sources() -> Result<Sources, ChaosError> {
    Ok(Sources {
        rules: RULES.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect(),
        playbook: Playbook::parse(PLAYBOOK, "chaos/scenarios/playbooks/chaos.toml")?,
    })
}

/// Runs the built-in scenario `name` `runs` times.
pub async fn run(name: &str, runs: u32) -> Result<Report, ChaosError> {
    let (path, text) = SCENARIOS
        .iter()
        .find(|(p, _)| Path::new(p).file_stem().is_some_and(|s| s == name))
        .ok_or_else(|| ChaosError::NoSuchScenario(name.to_string()))?;
    let loaded = crate::scenario::parse(text, Path::new(path))?;
    let options = Options { runs: Some(runs), ..Options::default() };
    run_scenario(&loaded, &sources()?, &options).await
}
