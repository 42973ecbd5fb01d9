//! `rocemend replay`: backtest a rule set on a recording, or diff two
//! (`ops::replay`).

use std::path::Path;

use super::Exit;

/// `rocemend replay`: with `--diff`, exit 1 when a proposal differs, 0 when
/// none does (errors are 2), as `diff` does.
pub fn replay(
    recording: &Path,
    rules: &Path,
    diff: Option<&Path>,
    inventory: Option<&Path>,
    json: bool,
) -> anyhow::Result<Exit> {
    let replayed = ops::replay::replay(&ops::replay::Request { recording, rules, diff, inventory, json })?;
    print!("{}", replayed.text);
    Ok(if replayed.differs { Exit::Findings } else { Exit::Ok })
}
