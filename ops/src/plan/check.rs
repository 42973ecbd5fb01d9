//! What `rocemend check` found: what passed (and what it holds), what is
//! allowed only by `allow_unsafe`, and every problem. With a daemon config
//! it builds the very [`Blueprint`] `run` starts from, so what `check`
//! passes `run` accepts.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use engine::config::TomlError;
use engine::rule::Rule;
use engine::{Labels, SeriesTable};

use super::{inventory, rule_error, Blueprint, Components, PlaybookInputs, PlaybookPart};
use crate::config::Overrides;

/// What `check` found.
#[derive(Debug, Default)]
pub struct Checked {
    /// What passed, one line each.
    pub checked: Vec<String>,
    /// Unsafe settings `allow_unsafe = true` lets through.
    pub unsafe_allowed: Vec<TomlError>,
    /// Every problem.
    pub errors: Vec<TomlError>,
}

impl Checked {
    /// A daemon config and every file it names, built as `run` builds them.
    pub fn config(path: &Path, overrides: &Overrides, components: &dyn Components) -> Checked {
        let mut report = Checked::default();
        match Blueprint::build(path, overrides, components) {
            Ok(plan) => {
                report.checked.push(format!(
                    "config {} (node {}, {} sensors)",
                    path.display(),
                    plan.node,
                    plan.sensors.len()
                ));
                if let (Some(path), Some(topology)) = (&plan.config.inventory, &plan.topology) {
                    report.checked.push(format!("inventory {} ({} nodes)", path.display(), topology.node_count()));
                }
                report.describe(&plan.part);
                if let Some(listen) = plan.settings.metrics_listen {
                    report.checked.push(format!("metrics on {listen}"));
                }
                // The file was just read whole; read again only for positions.
                if let Ok(text) = engine::config::read_text(path) {
                    let at = engine::config::Locator::new(&text, &path.display().to_string());
                    let in_use = super::taken::in_use(&plan.config, &plan.settings.socket, &at);
                    report.errors.extend(in_use.errors);
                    if let Some(pid) = in_use.own_daemon {
                        let state = plan.config.state_dir.display();
                        report.checked.push(format!("state_dir {state}: its daemon runs (pid {pid})"));
                    }
                }
            }
            Err(problems) => report.errors = problems.0,
        }
        report
    }

    /// A playbook, a rule directory and an inventory given on their own:
    /// checked as far as they go without a daemon config (no node, no sensors).
    pub fn files(files: Overrides, components: &dyn Components) -> Checked {
        let mut report = Checked::default();
        let topology = inventory(files.inventory.as_deref(), &mut report.errors);
        if let (Some(path), Some(t)) = (&files.inventory, &topology) {
            report.checked.push(format!("inventory {} ({} nodes)", path.display(), t.node_count()));
        }
        let series = SeriesTable::new(topology.clone(), Labels::default());
        match (files.playbook, files.rules) {
            (Some(path), rules) => {
                let inputs = PlaybookInputs { path, rules, node: None, topology, series };
                if let Some(part) = PlaybookPart::build(inputs, components, &mut report.errors) {
                    report.describe(&part);
                }
            }
            (None, Some(dir)) => {
                match engine::rule::load_dir(&dir, engine::rule::Helpers::new(Some(series), topology)) {
                    Ok(set) => {
                        report.checked.push(format!("rules {} ({} rules)", dir.display(), set.rules.len()));
                        report.checked.extend(on_rhai(&set.rules));
                    }
                    Err(errors) => report.errors.extend(errors.into_iter().map(rule_error)),
                }
            }
            (None, None) => {}
        }
        report
    }

    /// What a checked playbook holds.
    fn describe(&mut self, part: &PlaybookPart) {
        let playbook = &part.playbook;
        let actuators = playbook.actuator.len();
        self.checked.push(format!(
            "playbook {} (mode {}, {actuators} actuators)",
            part.path.display(),
            playbook.mode.as_str()
        ));
        let off = part.rules_in_dir - part.rules.rules.len();
        self.checked.push(format!("rules {} ({} rules, {off} off)", part.rules_dir.display(), part.rules.rules.len()));
        self.checked.extend(on_rhai(&part.rules.rules));
        self.unsafe_allowed.extend(part.allowed_unsafe.iter().cloned());
    }

    /// What passed and what is allowed unsafe, for stdout.
    pub fn passed(&self) -> String {
        let mut out = String::new();
        for line in &self.checked {
            let _ = writeln!(out, "ok     {line}");
        }
        for e in &self.unsafe_allowed {
            let _ = writeln!(out, "unsafe {e} (allowed by allow_unsafe = true)");
        }
        out
    }

    /// Every problem, for stderr.
    pub fn problems(&self) -> String {
        self.errors.iter().map(|e| format!("error  {e}\n")).collect()
    }
}

/// How the rules' conditions run: one line for those compiled to native
/// predicates, and one per rule with a condition left on Rhai, saying why,
/// so an SRE sees which rule costs a script call per moving subject.
fn on_rhai(rules: &[Arc<Rule>]) -> Vec<String> {
    let native = rules.iter().filter(|r| r.runs_natively()).count();
    let mut lines = vec![format!("conditions: {native} of {} rules run natively", rules.len())];
    for rule in rules.iter().filter(|r| !r.runs_natively()) {
        let runs = [("fire", &rule.fire_runs), ("clear", &rule.clear_runs)];
        let why: Vec<String> =
            runs.iter().filter(|(_, r)| !r.is_native()).map(|(cond, r)| format!("{cond} {r}")).collect();
        lines.push(format!("rule {}: {}", rule.name, why.join("; ")));
    }
    lines
}
