//! The scenario library, built in with the chaos playbook
//! ([`crate::run::PLAYBOOK`]) and the standard rules (the `rocemend-rules`
//! crate): `rocemend demo` runs the closed loop wherever the binary is.

use std::path::Path;

use crate::report::Report;
use crate::run::{run_scenario, Options, Sources};
use crate::ChaosError;

/// The scenario library, `(path, text)`.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("chaos/scenarios/pfc_storm.toml", include_str!("../scenarios/pfc_storm.toml")),
    ("chaos/scenarios/symbol_errors.toml", include_str!("../scenarios/symbol_errors.toml")),
    ("chaos/scenarios/link_flap_storm.toml", include_str!("../scenarios/link_flap_storm.toml")),
    ("chaos/scenarios/rail_failure.toml", include_str!("../scenarios/rail_failure.toml")),
    ("chaos/scenarios/many_faults.toml", include_str!("../scenarios/many_faults.toml")),
    ("chaos/scenarios/sensor_outage.toml", include_str!("../scenarios/sensor_outage.toml")),
    ("chaos/scenarios/congestion.toml", include_str!("../scenarios/congestion.toml")),
    ("chaos/scenarios/gpu_xid.toml", include_str!("../scenarios/gpu_xid.toml")),
    ("chaos/scenarios/incast.toml", include_str!("../scenarios/incast.toml")),
    ("chaos/scenarios/uplink_congestion.toml", include_str!("../scenarios/uplink_congestion.toml")),
    ("chaos/scenarios/ecmp_collision.toml", include_str!("../scenarios/ecmp_collision.toml")),
    ("chaos/scenarios/ecmp_hash.toml", include_str!("../scenarios/ecmp_hash.toml")),
];

/// The scenarios of the closed loop `rocemend demo` shows.
pub const DEMO: &[&str] = &["pfc_storm", "link_flap_storm"];

/// The built-in rules and playbook ([`Sources::built_in`]).
pub fn sources() -> Result<Sources, ChaosError> {
    Sources::built_in()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_library_scenario_is_built_in() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let listed = |dir: &str, ext: &str| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(repo.join(dir))
                .unwrap()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == ext))
                .map(|p| format!("{dir}/{}", p.file_name().unwrap().to_str().unwrap()))
                .collect();
            names.sort();
            names
        };
        let built = |list: &[(&str, &str)]| -> Vec<String> {
            let mut names: Vec<String> = list.iter().map(|(p, _)| p.to_string()).collect();
            names.sort();
            names
        };
        assert_eq!(built(SCENARIOS), listed("chaos/scenarios", "toml"));
        let inventories: Vec<String> =
            built(crate::scenario::inventories::BUILT_IN).iter().map(|p| format!("chaos/scenarios/{p}")).collect();
        assert_eq!(inventories, listed("chaos/scenarios/inventories", "toml"));
    }
}
