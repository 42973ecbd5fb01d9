//! `rocemend check`: every problem of a configuration and the files it
//! names, at once, each at `file:line:col`. With a daemon config it builds
//! the very [`Plan`] `run` starts from, so what `check` passes `run`
//! accepts. Without arguments it checks the default locations.

use std::path::{Path, PathBuf};

use engine::config::TomlError;
use engine::{Labels, SeriesTable};

use crate::plan::{inventory, Overrides, Plan, PlaybookInputs, PlaybookPart};
use crate::Exit;

/// The daemon config `check` looks for first with no arguments.
pub const DEFAULT_CONFIG: &str = "/etc/rocemend/rocemend.toml";

/// What `check` found: what passed, what is allowed only by
/// `allow_unsafe`, and every problem.
#[derive(Default)]
struct Report {
    checked: Vec<String>,
    unsafe_allowed: Vec<TomlError>,
    errors: Vec<TomlError>,
}

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
        Some(path) => check_config(path, &overrides),
        None => check_files(if given { overrides } else { default_files()? }),
    };
    print(&report);
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

/// A daemon config and every file it names, built as `run` builds them.
fn check_config(path: &Path, overrides: &Overrides) -> Report {
    let mut report = Report::default();
    match Plan::build(path, overrides) {
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
            describe(&plan.part, &mut report);
            if let Some(listen) = plan.settings.metrics_listen {
                report.checked.push(format!("metrics on {listen}"));
            }
        }
        Err(problems) => report.errors = problems.0,
    }
    report
}

/// A playbook, a rule directory and an inventory given on their own:
/// checked as far as they go without a daemon config (no node, no sensors).
fn check_files(files: Overrides) -> Report {
    let mut report = Report::default();
    let topology = inventory(files.inventory.as_deref(), &mut report.errors);
    if let (Some(path), Some(t)) = (&files.inventory, &topology) {
        report.checked.push(format!("inventory {} ({} nodes)", path.display(), t.node_count()));
    }
    let series = SeriesTable::new(topology.clone(), Labels::default());
    match (files.playbook, files.rules) {
        (Some(path), rules) => {
            let inputs = PlaybookInputs { path, rules, node: None, topology, series };
            if let Some(part) = PlaybookPart::build(inputs, &mut report.errors) {
                describe(&part, &mut report);
            }
        }
        (None, Some(dir)) => match engine::rule::load_dir(&dir, engine::rule::Helpers::new(Some(series), topology)) {
            Ok(set) => {
                report.checked.push(format!("rules {} ({} rules)", dir.display(), set.rules.len()));
                report.checked.extend(on_rhai(&set.rules));
            }
            Err(errors) => report.errors.extend(errors.into_iter().map(|e| TomlError {
                path: e.path,
                line: e.line,
                column: e.column,
                message: e.message,
            })),
        },
        (None, None) => {}
    }
    report
}

/// What a checked playbook holds.
fn describe(part: &PlaybookPart, report: &mut Report) {
    let playbook = &part.playbook;
    let actuators = playbook.actuator.len();
    report.checked.push(format!(
        "playbook {} (mode {}, {actuators} actuators)",
        part.path.display(),
        playbook.mode.as_str()
    ));
    let off = part.rules_in_dir - part.rules.rules.len();
    report.checked.push(format!("rules {} ({} rules, {off} off)", part.rules_dir.display(), part.rules.rules.len()));
    report.checked.extend(on_rhai(&part.rules.rules));
    report.unsafe_allowed.extend(part.allowed_unsafe.iter().cloned());
}

/// How the rules' conditions run: one line for those compiled to native
/// predicates, and one per rule with a condition left on Rhai, saying why,
/// so an SRE sees which rule costs a script call per moving subject.
fn on_rhai(rules: &[std::sync::Arc<engine::rule::Rule>]) -> Vec<String> {
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

fn print(report: &Report) {
    for line in &report.checked {
        println!("ok     {line}");
    }
    for e in &report.unsafe_allowed {
        println!("unsafe {e} (allowed by allow_unsafe = true)");
    }
    for e in &report.errors {
        eprintln!("error  {e}");
    }
}
