//! `rocemend check`: every problem of a configuration and the files it
//! names, at once, each at `file:line:col` (`ops::plan::check`). Without
//! arguments it checks the default locations.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use engine::Actuator;
use ops::config::{Overrides, DEFAULT_CONFIG};
use ops::plan::check::Checked;
use ops::plan::Blueprint;

use super::Exit;
use crate::wiring::Wiring;

/// `rocemend check`.
pub fn check(
    config: Option<&Path>,
    rules: Option<&Path>,
    playbook: Option<&Path>,
    inventory: Option<&Path>,
) -> anyhow::Result<Exit> {
    let overrides = Overrides {
        rules: rules.map(Path::to_path_buf),
        playbook: playbook.map(Path::to_path_buf),
        inventory: inventory.map(Path::to_path_buf),
    };
    let given = config.is_some() || rules.is_some() || playbook.is_some() || inventory.is_some();
    let config = match config {
        Some(path) => Some(path.to_path_buf()),
        None if !given && Path::new(DEFAULT_CONFIG).exists() => Some(PathBuf::from(DEFAULT_CONFIG)),
        None => None,
    };
    let report = match &config {
        Some(path) => Checked::config(path, &overrides, &Wiring),
        None => Checked::files(if given { overrides } else { default_files()? }, &Wiring),
    };
    print!("{}", report.passed());
    eprint!("{}", report.problems());
    if report.errors.is_empty() {
        Ok(Exit::Ok)
    } else {
        anyhow::bail!("{} problem(s) found", report.errors.len())
    }
}

/// The files checked without arguments when there is no
/// [`DEFAULT_CONFIG`]: `./rules` and `./playbooks/default.toml`.
fn default_files() -> anyhow::Result<Overrides> {
    let rules = Path::new("rules").is_dir().then(|| PathBuf::from("rules"));
    let playbook = Path::new("playbooks/default.toml").is_file().then(|| PathBuf::from("playbooks/default.toml"));
    if rules.is_none() && playbook.is_none() {
        anyhow::bail!(
            "nothing to check: no {DEFAULT_CONFIG}, ./rules or ./playbooks/default.toml; \
             give --config, --rules, --playbook or --inventory"
        );
    }
    Ok(Overrides { rules, playbook, inventory: None })
}

/// `rocemend check --probe`: every target the configured actuators may change, reached now
/// ([`Actuator::check_targets`]: each switch probed, whether it can be written), one line each.
pub fn probe(config: Option<&Path>) -> anyhow::Result<Exit> {
    let path = match config {
        Some(path) => path.to_path_buf(),
        None if Path::new(DEFAULT_CONFIG).exists() => PathBuf::from(DEFAULT_CONFIG),
        None => anyhow::bail!("--probe reaches the switches of a daemon configuration: give --config"),
    };
    let plan = Blueprint::build(&path, &Overrides::default(), &Wiring)
        .map_err(|problems| anyhow::anyhow!("{} problem(s) in {}", problems.0.len(), path.display()))?;
    let actuators = distinct(plan.part.routes.iter().map(|r| r.actuator.clone()));
    let found = super::runtime()?.block_on(targets(&actuators));
    let mut failed = 0;
    for (actuator, target, result) in &found {
        match result {
            Ok(summary) => println!("ok   actuator {actuator}: {summary}"),
            Err(error) => {
                failed += 1;
                eprintln!("FAIL actuator {actuator}: {target}: {error}");
            }
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} target(s) cannot be changed")
    }
    Ok(Exit::Ok)
}

/// Each actuator once (several routes share one).
pub(crate) fn distinct(actuators: impl Iterator<Item = Arc<dyn Actuator>>) -> Vec<Arc<dyn Actuator>> {
    let mut out: Vec<Arc<dyn Actuator>> = Vec::new();
    for actuator in actuators {
        if !out.iter().any(|a| Arc::ptr_eq(a, &actuator)) {
            out.push(actuator);
        }
    }
    out
}

/// What each actuator finds about its targets: (actuator, target, result).
pub(crate) async fn targets(
    actuators: &[Arc<dyn Actuator>],
) -> Vec<(String, String, Result<String, engine::ActuatorError>)> {
    let mut out = Vec::new();
    for actuator in actuators {
        for (target, result) in actuator.check_targets().await {
            out.push((actuator.name().to_string(), target, result));
        }
    }
    out
}
