//! `rocemend check`: every error in a configuration, at once.

use std::path::Path;

use engine::playbook::Playbook;
use engine::rule::{self, Helpers};
use engine::Topology;

use crate::config::DaemonConfig;
use crate::wiring;
use crate::Exit;

pub fn check(
    config: Option<&Path>,
    rules: Option<&Path>,
    playbook: Option<&Path>,
    inventory: Option<&Path>,
) -> anyhow::Result<Exit> {
    let mut errors: Vec<String> = Vec::new();
    let mut checked: Vec<String> = Vec::new();
    let mut rules_dir = rules.map(Path::to_path_buf);
    let mut playbook_path = playbook.map(Path::to_path_buf);
    let mut inventory_path = inventory.map(Path::to_path_buf);

    if let Some(path) = config {
        match DaemonConfig::load(path) {
            Ok(cfg) => {
                checked.push(format!("config {}", path.display()));
                playbook_path.get_or_insert(cfg.playbook.clone());
                if let Some(inv) = &cfg.inventory {
                    inventory_path.get_or_insert(inv.clone());
                }
                if let Some(r) = &cfg.rules {
                    rules_dir.get_or_insert(r.clone());
                }
                if let Err(e) = wiring::sensors(&cfg) {
                    errors.extend(e.into_iter().map(|e| format!("{}: {e}", path.display())));
                }
                for (what, value) in
                    [("engine.tick", &cfg.engine.tick), ("engine.reload_poll", &cfg.engine.reload_poll)]
                {
                    if let Err(e) = engine::time::parse_duration(value) {
                        errors.push(format!("{}: {what}: {e}", path.display()));
                    }
                }
                if !["wall", "samples"].contains(&cfg.engine.clock.as_str()) {
                    errors.push(format!(
                        "{}: engine.clock {:?}: expected wall or samples",
                        path.display(),
                        cfg.engine.clock
                    ));
                }
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if let Some(path) = &inventory_path {
        match Topology::load(path) {
            Ok(t) => checked.push(format!("inventory {} ({} nodes)", path.display(), t.node_count())),
            Err(e) => errors.push(e.to_string()),
        }
    }
    let mut loaded_playbook = None;
    if let Some(path) = &playbook_path {
        match Playbook::load(path) {
            Ok(p) => {
                checked.push(format!("playbook {} (mode {})", path.display(), p.mode.as_str()));
                if rules_dir.is_none() {
                    rules_dir = p.rules_dir(path);
                }
                if let Err(e) = actuators::registry::dispatcher(&p, None, None) {
                    errors.extend(e.into_iter().map(|e| e.to_string()));
                }
                loaded_playbook = Some((path.clone(), p));
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if let Some(dir) = &rules_dir {
        match rule::load_dir(dir, Helpers::default()) {
            Ok(set) => {
                checked.push(format!("rules {} ({} rules)", dir.display(), set.rules.len()));
                if let Some((path, p)) = &loaded_playbook {
                    let names: Vec<&str> = set.rules.iter().map(|r| r.name.as_str()).collect();
                    for unknown in p.unknown_rules(&names) {
                        errors.push(format!("{}: [rule.{unknown}] names no rule of {}", path.display(), dir.display()));
                    }
                }
            }
            Err(errs) => errors.extend(errs.iter().map(ToString::to_string)),
        }
    }
    if checked.is_empty() && errors.is_empty() {
        anyhow::bail!("nothing to check: give --config, --rules, --playbook or --inventory");
    }
    for line in &checked {
        println!("ok     {line}");
    }
    for e in &errors {
        eprintln!("error  {e}");
    }
    if errors.is_empty() {
        Ok(Exit::Ok)
    } else {
        anyhow::bail!("{} error(s) found", errors.len())
    }
}
