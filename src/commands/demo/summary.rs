//! What `rocemend demo` prints around the run: what it runs on, which
//! decision answered which fault, and the closed loop on the simulated
//! fabric.

use chaos::report::table::table;
use engine::playbook::Playbook;
use engine::Topology;
use sim::leaves::LeafServers;

use ops::report::ms;
use ops::report::table::Table;

use super::printer::Printer;

/// What the demo runs on, before it starts.
pub(super) fn header(
    topology: &Topology,
    rules: usize,
    playbook: &Playbook,
    leaves: &LeafServers,
    state: &std::path::Path,
    speed: f64,
) {
    let inv = topology.inventory();
    say!("rocemend demo: the daemon replaying a built-in recording against simulated switches");
    say!(
        "  inventory  {} nodes x {} GPUs x {} NICs, {} switches ({})",
        inv.node.len(),
        inv.node.first().map_or(0, |n| n.gpu.len()),
        inv.node.first().map_or(0, |n| n.nic.len()),
        inv.switch.len(),
        inv.cluster.as_deref().unwrap_or("unnamed")
    );
    say!("  rules      {rules} standard rules from rules/");
    say!(
        "  playbook   {} (mode {}): pfcwd, ecn and rail (switch side) send gNMI Sets; link and cordon are dry-run",
        playbook.name,
        playbook.mode.as_str()
    );
    say!(
        "  switches   {} simulated SONiC switches over gNMI on loopback ({})",
        leaves.addresses.len(),
        leaves.addresses.iter().map(|(n, a)| format!("{n}={a}")).collect::<Vec<_>>().join(" ")
    );
    say!("  state      {} (sled)", state.display());
    say!("  replay     chaos/sim/data/demo.jsonl at {speed}x recorded speed");
    say!();
}

/// Prints which decision answered each fault, and when; returns how many
/// faults no decision answered.
pub(super) fn detections(printer: &Printer) -> usize {
    let mut t = Table::new(["fault", "decided by", "first sample -> decision"]).right(&[2]);
    let mut missed = 0;
    for (i, fault) in printer.faults.iter().enumerate() {
        match printer.first_decision.get(&i) {
            Some((rule, at)) => t.row([fault.text.clone(), rule.clone(), ms(at - fault.ts)]),
            None => {
                missed += 1;
                t.row([fault.text.clone(), "-".into(), "NOT DETECTED".into()]);
            }
        }
    }
    say!("\n{}", t.render());
    missed
}

/// The closed loop: the same daemon on the simulated fabric, healing the
/// library's PFC-storm and link-flap scenarios. Returns whether every run
/// healed.
pub(super) fn closed_loop(rt: &tokio::runtime::Runtime, runs: u32) -> anyhow::Result<bool> {
    let reports = rt.block_on(async {
        let mut out = Vec::new();
        for name in chaos::library::DEMO {
            out.push(chaos::library::run(name, runs).await?);
        }
        Ok::<_, chaos::ChaosError>(out)
    })?;
    say!();
    say!("closed loop: the same daemon on the simulated fabric, healing what it finds ({runs} runs each)");
    say!("{}", table(&reports).trim_end_matches('\n'));
    Ok(reports.iter().all(|r| r.failed == 0))
}
