//! `rocemend check`: every error in a configuration, at once.

use std::path::{Path, PathBuf};

use engine::playbook::Playbook;
use engine::rule::{self, Helpers};
use engine::Topology;

use crate::config::DaemonConfig;
use crate::wiring;
use crate::Exit;

/// What `check` found: the files that passed, and every error.
#[derive(Default)]
struct Report {
    checked: Vec<String>,
    errors: Vec<String>,
}

/// The files to check: given on the command line, or named by the config.
struct Files {
    rules: Option<PathBuf>,
    playbook: Option<PathBuf>,
    inventory: Option<PathBuf>,
    /// The daemon's node, when a config is checked: the playbook's host
    /// actuators must act on it.
    node: Option<String>,
}

/// `rocemend check`.
pub fn check(
    config: Option<&Path>,
    rules: Option<&Path>,
    playbook: Option<&Path>,
    inventory: Option<&Path>,
) -> anyhow::Result<Exit> {
    let mut report = Report::default();
    let mut files = Files {
        rules: rules.map(Path::to_path_buf),
        playbook: playbook.map(Path::to_path_buf),
        inventory: inventory.map(Path::to_path_buf),
        node: None,
    };
    if let Some(path) = config {
        check_config(path, &mut files, &mut report);
    }
    if let Some(path) = &files.inventory {
        match Topology::load(path) {
            Ok(t) => report.checked.push(format!("inventory {} ({} nodes)", path.display(), t.node_count())),
            Err(e) => report.errors.push(e.to_string()),
        }
    }
    let playbook =
        files.playbook.clone().and_then(|path| check_playbook(&path, &mut files, &mut report));
    if let Some(dir) = &files.rules {
        check_rules(dir, playbook.as_ref().map(|p| (files.playbook.as_deref().unwrap_or(dir), p)), &mut report);
    }
    if report.checked.is_empty() && report.errors.is_empty() {
        anyhow::bail!("nothing to check: give --config, --rules, --playbook or --inventory");
    }
    for line in &report.checked {
        println!("ok     {line}");
    }
    for e in &report.errors {
        eprintln!("error  {e}");
    }
    if report.errors.is_empty() {
        Ok(Exit::Ok)
    } else {
        anyhow::bail!("{} error(s) found", report.errors.len())
    }
}

/// Checks the daemon config at `path`: its sensors and engine settings;
/// the files it names are checked next unless the command line named them.
fn check_config(path: &Path, files: &mut Files, report: &mut Report) {
    let cfg = match DaemonConfig::load(path) {
        Ok(cfg) => cfg,
        Err(e) => return report.errors.push(e.to_string()),
    };
    report.checked.push(format!("config {}", path.display()));
    files.playbook.get_or_insert(cfg.playbook.clone());
    if let Some(inv) = &cfg.inventory {
        files.inventory.get_or_insert(inv.clone());
    }
    if let Some(r) = &cfg.rules {
        files.rules.get_or_insert(r.clone());
    }
    match wiring::node(&cfg) {
        Ok(node) => files.node = Some(node),
        Err(e) => report.errors.push(format!("{}: {e:#}", path.display())),
    }
    if let Err(e) = wiring::sensors(&cfg) {
        report.errors.extend(e.into_iter().map(|e| format!("{}: {e}", path.display())));
    }
    let durations = [
        ("engine.tick", &cfg.engine.tick),
        ("engine.reload_poll", &cfg.engine.reload_poll),
        ("engine.max_ahead", &cfg.engine.max_ahead),
    ];
    for (what, value) in durations {
        if let Err(e) = engine::time::parse_duration(value) {
            report.errors.push(format!("{}: {what}: {e}", path.display()));
        }
    }
    let budget = cfg.engine.rule_cost_budget;
    if !(budget > 0.0 && budget <= 1.0) {
        let file = path.display();
        report.errors.push(format!("{file}: engine.rule_cost_budget = {budget}: expected a share of a core, above 0 and at most 1"));
    }
    if !["wall", "samples"].contains(&cfg.engine.clock.as_str()) {
        let clock = &cfg.engine.clock;
        report.errors.push(format!("{}: engine.clock {clock:?}: expected wall or samples", path.display()));
    }
}

/// Checks the playbook at `path` and builds its actuators (acting on the
/// config's node, if a config is checked); returns it loaded, and takes its
/// rule directory when none was given.
fn check_playbook(path: &Path, files: &mut Files, report: &mut Report) -> Option<Playbook> {
    let mut playbook = match Playbook::load(path) {
        Ok(p) => p,
        Err(e) => {
            report.errors.push(e.to_string());
            return None;
        }
    };
    report.checked.push(format!("playbook {} (mode {})", path.display(), playbook.mode.as_str()));
    if files.rules.is_none() {
        files.rules = playbook.rules_dir(path);
    }
    if let Some(node) = &files.node {
        if let Err(errors) = wiring::one_node(&mut playbook, node) {
            report.errors.extend(errors.into_iter().map(|e| format!("{}: {e}", path.display())));
        }
    }
    if let Err(e) = actuators::registry::dispatcher(&playbook, None, None) {
        report.errors.extend(e.into_iter().map(|e| e.to_string()));
    }
    Some(playbook)
}

/// Loads the rules of `dir`; with a playbook (and its path), also checks
/// that every `[rule.NAME]` of the playbook names one of them.
fn check_rules(dir: &Path, playbook: Option<(&Path, &Playbook)>, report: &mut Report) {
    let set = match rule::load_dir(dir, Helpers::default()) {
        Ok(set) => set,
        Err(errs) => return report.errors.extend(errs.iter().map(ToString::to_string)),
    };
    report.checked.push(format!("rules {} ({} rules)", dir.display(), set.rules.len()));
    if let Some((path, p)) = playbook {
        let names: Vec<&str> = set.rules.iter().map(|r| r.name.as_str()).collect();
        for unknown in p.unknown_rules(&names) {
            report.errors.push(format!("{}: [rule.{unknown}] names no rule of {}", path.display(), dir.display()));
        }
    }
}
