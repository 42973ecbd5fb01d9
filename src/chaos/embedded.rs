//! The scenario library, its rules and its playbook, built into the
//! binary: `rocemend demo` runs the closed loop wherever the binary is.

use std::path::Path;

use chaos::report::Report;
use engine::playbook::Playbook;

use super::{run_scenario, table, Options, Sources};

/// The chaos rules, `(path, text)`.
pub const RULES: &[(&str, &str)] = &[
    ("chaos/rules/rdma_link_flap.rhai", include_str!("../../chaos/rules/rdma_link_flap.rhai")),
    ("chaos/rules/rdma_symbol_errors.rhai", include_str!("../../chaos/rules/rdma_symbol_errors.rhai")),
    ("chaos/rules/rdma_xmit_wait.rhai", include_str!("../../chaos/rules/rdma_xmit_wait.rhai")),
    ("chaos/rules/switch_pfc_storm.rhai", include_str!("../../chaos/rules/switch_pfc_storm.rhai")),
];

/// The scenarios' playbook.
pub const PLAYBOOK: &str = include_str!("../../chaos/scenarios/playbooks/chaos.toml");

/// The scenario library, `(path, text)`.
pub const SCENARIOS: &[(&str, &str)] = &[
    ("chaos/scenarios/pfc_storm.toml", include_str!("../../chaos/scenarios/pfc_storm.toml")),
    ("chaos/scenarios/symbol_errors.toml", include_str!("../../chaos/scenarios/symbol_errors.toml")),
    ("chaos/scenarios/link_flap_storm.toml", include_str!("../../chaos/scenarios/link_flap_storm.toml")),
    ("chaos/scenarios/rail_failure.toml", include_str!("../../chaos/scenarios/rail_failure.toml")),
    ("chaos/scenarios/many_faults.toml", include_str!("../../chaos/scenarios/many_faults.toml")),
    ("chaos/scenarios/sensor_outage.toml", include_str!("../../chaos/scenarios/sensor_outage.toml")),
    ("chaos/scenarios/congestion.toml", include_str!("../../chaos/scenarios/congestion.toml")),
];

/// The built-in rules and playbook.
pub fn sources() -> anyhow::Result<Sources> {
    Ok(Sources {
        rules: RULES.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect(),
        playbook: Playbook::parse(PLAYBOOK, "chaos/scenarios/playbooks/chaos.toml")?,
    })
}

/// Runs the built-in scenario `name` `runs` times.
pub async fn run(name: &str, runs: u32) -> anyhow::Result<Report> {
    let (path, text) = SCENARIOS
        .iter()
        .find(|(p, _)| Path::new(p).file_stem().is_some_and(|s| s == name))
        .ok_or_else(|| anyhow::anyhow!("no built-in scenario {name:?}"))?;
    let loaded = chaos::scenario::parse(text, Path::new(path))?;
    let options = Options { runs: Some(runs), ..Options::default() };
    run_scenario(&loaded, &sources()?, &options).await
}

/// The closed loop of `rocemend demo`: the PFC-storm and link-flap
/// scenarios on the simulated fabric, with the recovery table. Returns
/// whether every run healed.
pub fn demo(runs: u32) -> anyhow::Result<bool> {
    let rt = crate::commands::runtime()?;
    let reports = rt.block_on(async {
        let mut out = Vec::new();
        for name in ["pfc_storm", "link_flap_storm"] {
            out.push(run(name, runs).await?);
        }
        anyhow::Ok(out)
    })?;
    println!();
    println!("closed loop: the same daemon on the simulated fabric, healing what it finds ({runs} runs each)");
    print!("{}", table(&reports));
    Ok(reports.iter().all(|r| r.failed == 0))
}
