//! The rules and playbook a scenario runs with: read from disk, as the
//! daemon finds them, or built in (the chaos playbook here, the standard
//! rules from the `rocemend-rules` crate) for a scenario run away from the
//! repository.

use std::path::{Path, PathBuf};

use engine::playbook::Playbook;

use crate::scenario::plan::DEFAULT_PLAYBOOK;
use crate::scenario::Loaded;
use crate::ChaosError;

/// The scenarios' playbook, `playbooks/chaos.toml`, built in.
pub const PLAYBOOK: &str = include_str!("../../../playbooks/chaos.toml");

/// Where the built-in standard rules say they come from.
const BUILT_IN_RULES: &str = "built-in rules/";

/// The rules of a rule directory, `(path, text)`, in name order.
fn read_rules(dir: &Path) -> Result<Vec<(String, String)>, ChaosError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| ChaosError::io(format!("rule directory {}", dir.display()), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rhai"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).map_err(|e| ChaosError::io(format!("reading {}", p.display()), e))?;
            Ok((p.display().to_string(), text))
        })
        .collect()
}

/// What a scenario runs with: its rules and playbook, read from disk or
/// built in.
pub struct Sources {
    /// Rule sources.
    pub rules: Vec<(String, String)>,
    /// Where the rules were read from (a directory, or "built-in rules/").
    pub rules_origin: String,
    /// The playbook.
    pub playbook: Playbook,
    /// Where the playbook was read from.
    pub playbook_origin: String,
}

impl Sources {
    /// The rules and playbook `loaded` runs with. The playbook: `playbook`,
    /// else the scenario's, else the built-in `playbooks/chaos.toml`. The
    /// rules: `rules`, else the scenario's `rules`, else the playbook's
    /// `rules` (as the daemon finds them), else, with the built-in
    /// playbook, the built-in standard rules.
    pub fn read(loaded: &Loaded, rules: Option<&Path>, playbook: Option<&Path>) -> Result<Sources, ChaosError> {
        let playbook_path = playbook.map(Path::to_path_buf).or_else(|| loaded.plan.playbook.clone());
        let (parsed, playbook_origin) = match &playbook_path {
            Some(path) => (Playbook::load(path)?, path.display().to_string()),
            None => {
                let built_in = Sources::built_in()?;
                (built_in.playbook, built_in.playbook_origin)
            }
        };
        let dir = rules
            .map(Path::to_path_buf)
            .or_else(|| loaded.plan.rules_dir.clone())
            .or_else(|| playbook_path.as_deref().and_then(|p| parsed.rules_dir(p)));
        let (rules, rules_origin) = match (dir, &playbook_path) {
            (Some(dir), _) => (read_rules(&dir)?, dir.display().to_string()),
            (None, None) => (rules::sources(), BUILT_IN_RULES.to_string()),
            (None, Some(path)) => {
                return Err(ChaosError::Daemon(format!(
                    "no rules: the playbook {} names no `rules` directory, and neither the scenario nor --rules does",
                    path.display()
                )))
            }
        };
        Ok(Sources { rules, rules_origin, playbook: parsed, playbook_origin })
    }

    /// The built-in chaos playbook ([`PLAYBOOK`]) and standard rules:
    /// what a scenario runs with away from the repository.
    pub fn built_in() -> Result<Sources, ChaosError> {
        Ok(Sources {
            rules: rules::sources(),
            rules_origin: BUILT_IN_RULES.into(),
            playbook: Playbook::parse(PLAYBOOK, DEFAULT_PLAYBOOK)?,
            playbook_origin: format!("built-in {DEFAULT_PLAYBOOK}"),
        })
    }
}
