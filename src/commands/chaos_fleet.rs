//! `rocemend chaos fleet`: a fleet game day (`chaos::fleet_day`): this
//! executable run as every daemon of a simulated fleet, coordinating through
//! a real etcd cluster; the report written as `chaos run` writes its own.
//!
//! Exit status: 0 when every expectation held (or the game was skipped:
//! no etcd support in this build, no `etcd` or `etcdctl` here), 1 when one
//! failed, 2 for a game file that does not load, or a game that could not
//! be played.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use chaos::fleet_day::{self, Options};
use chaos::report::{fleet, html, table, Report};
use chaos::run::AttachedDaemon;

use super::chaos::ControlSocket;
use super::Exit;

/// Keeps the game's directory (every daemon's config, log and state) and
/// prints where: for looking into a game after it ran.
const KEEP_ENV: &str = "ROCEMEND_FLEET_DAY_KEEP";

/// Why this build cannot play a game, if it cannot.
fn without_etcd() -> Option<&'static str> {
    (!cfg!(feature = "etcd")).then_some(
        "this rocemend was built without etcd support, and every daemon of the game is this executable \
         (cargo build --features etcd)",
    )
}

/// `rocemend chaos fleet SCENARIO`.
pub fn run(scenario: &Path, out: &Path, quiet: bool) -> anyhow::Result<Exit> {
    // The file is checked first: a wrong one is an error wherever it runs.
    let plan = fleet_day::load(scenario)?;
    if let Some(why) = without_etcd().map(str::to_string).or_else(fleet_day::missing_part) {
        eprintln!("chaos fleet: {} ({})", plan.name, scenario.display());
        eprintln!("  skipped: {why}");
        return Ok(Exit::Ok);
    }
    let options = Options {
        binary: std::env::current_exe().context("finding this executable, to run it as each daemon")?,
        attach: Arc::new(|socket: &Path| Arc::new(ControlSocket(socket.to_path_buf())) as Arc<dyn AttachedDaemon>),
        progress: !quiet,
        keep_dir: std::env::var_os(KEEP_ENV).is_some(),
    };
    eprintln!(
        "chaos fleet: {} ({}): {} node daemons and a switch aggregator, etcd of {} members, wall clock",
        plan.name,
        scenario.display(),
        plan.topology.node_count(),
        plan.etcd.members
    );
    let report = super::runtime()?.block_on(fleet_day::run(&plan, &options))?;
    write(&report, out)?;
    print!("{}", table::table(std::slice::from_ref(&report)));
    print!("{}", report.fleet.as_ref().map(fleet::console::lines).unwrap_or_default());
    Ok(if report.failed == 0 { Exit::Ok } else { Exit::Findings })
}

/// Writes `<name>.json` (the chaos report with the fleet's figures) and
/// `<name>.html` into `out`.
fn write(report: &Report, out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let name = &report.scenario;
    let json = out.join(format!("{name}.json"));
    let page = out.join(format!("{name}.html"));
    std::fs::write(&json, serde_json::to_vec(report)?).with_context(|| format!("writing {}", json.display()))?;
    std::fs::write(&page, html::render(report)).with_context(|| format!("writing {}", page.display()))?;
    eprintln!(
        "  {} in {:.1} s; report {} and {}",
        if report.failed == 0 { "passed" } else { "FAILED" },
        report.elapsed_ms / 1e3,
        json.display(),
        page.display()
    );
    Ok(())
}
