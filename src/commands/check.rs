//! `rocemend check`: every problem of a configuration and the files it
//! names, at once, each at `file:line:col` (`ops::plan::check`). Without
//! arguments it checks the default locations.

use std::path::{Path, PathBuf};

use ops::config::{Overrides, DEFAULT_CONFIG};
use ops::plan::check::Checked;

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
