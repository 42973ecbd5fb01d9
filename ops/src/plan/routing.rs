//! Every action a loaded rule can propose reaches exactly one actuator
//! that can carry it out, and every `[rule.NAME]` of the playbook names a
//! rule. A mistake here is a remediation that silently never happens (a
//! `handles = ["lnk.*"]` typo leaves link-flap unrouted), so each is
//! refused with the rule and the action named, at the playbook line to fix.

use engine::config::{Key, TomlError};
use engine::dispatch::ActuatorRoute;
use engine::names::{closest, did_you_mean};
use engine::playbook::Playbook;
use engine::policy::kind_matches;
use engine::rule::RuleSet;

/// Where the playbook writes the `j`th pattern of its `i`th actuator.
fn handle_at(i: usize, j: usize) -> [Key<'static>; 4] {
    ["actuator".into(), i.into(), "handles".into(), j.into()]
}

/// What the playbook's rule directory holds, `off` rules included.
pub struct RuleDirectory<'a> {
    /// The rules' names.
    pub names: Vec<&'a str>,
    /// Every action kind a rule can propose.
    pub kinds: Vec<&'a str>,
}

impl<'a> RuleDirectory<'a> {
    /// The names and action kinds of `all`.
    pub fn of(all: &'a RuleSet) -> RuleDirectory<'a> {
        let names = all.rules.iter().map(|r| r.name.as_str()).collect();
        let mut kinds: Vec<&str> = all.rules.iter().flat_map(|r| r.actions.iter().map(|a| a.kind.as_str())).collect();
        kinds.sort_unstable();
        kinds.dedup();
        RuleDirectory { names, kinds }
    }
}

/// Checks the routes of `playbook` (its actuators built, in order, as
/// `routes`) against the rules it runs (`rules`, its `off` rules left out)
/// and every rule of its directory (`dir`).
pub fn check(
    playbook: &Playbook,
    rules: &RuleSet,
    dir: &RuleDirectory<'_>,
    routes: &[ActuatorRoute],
) -> Vec<TomlError> {
    let mut errors = Vec::new();
    for name in playbook.unknown_rules(&dir.names) {
        let hint = did_you_mean(name, dir.names.iter().copied());
        errors.push(playbook.error(
            &["rule".into(), Key::Name(name)],
            format!("[rule.{name}] names no rule of the rule directory{hint}"),
        ));
    }
    errors.extend(kinds_no_rule_proposes(playbook, &dir.kinds));
    // The routes are the actuators' patterns in the playbook's order; the
    // first match wins, as in the dispatcher.
    let places: Vec<(usize, usize)> =
        playbook.actuator.iter().enumerate().flat_map(|(i, a)| (0..a.handles.len()).map(move |j| (i, j))).collect();
    debug_assert_eq!(places.len(), routes.len(), "one route per pattern");
    let patterns: Vec<&str> = routes.iter().map(|r| r.pattern.as_str()).collect();
    for rule in &rules.rules {
        for action in &rule.actions {
            let kind = action.kind.as_str();
            let proposes = format!("rule {:?} ({}) proposes {kind:?}", rule.name, rule.path);
            match routes.iter().zip(&places).find(|(r, _)| kind_matches(&r.pattern, kind)) {
                None => errors.push(unrouted(playbook, &proposes, kind, &patterns, &places)),
                Some((route, &(i, j))) => {
                    if let Some(why) = route.cannot(kind) {
                        let message = format!(
                            "{proposes}, routed to actuator {:?} (handles {:?}), which cannot carry it out: {why}",
                            route.actuator.name(),
                            route.pattern
                        );
                        errors.push(playbook.error(&handle_at(i, j), message));
                    }
                }
            }
        }
    }
    errors.extend(canary_signals(playbook, rules));
    errors.extend(ladder_rungs(playbook, rules));
    errors.extend(playbook.undo_refusals(&engine::catalog::Catalog::new(routes.to_vec())));
    errors.sort_by_key(|e| (e.line, e.column));
    errors.dedup_by(|a, b| a.message == b.message && a.line == b.line);
    errors
}

/// `[[approval]]`, `[undo]` and `[verify]` kinds that no rule of the
/// directory proposes. A misspelt approval kind is worse than a dead line:
/// the action it meant to hold for a human goes ahead without one.
fn kinds_no_rule_proposes(playbook: &Playbook, proposed: &[&str]) -> Vec<TomlError> {
    playbook
        .named_kinds()
        .into_iter()
        .filter(|named| !proposed.iter().any(|kind| kind_matches(named.pattern, kind)))
        .map(|named| {
            let hint = did_you_mean(named.pattern, proposed.iter().copied());
            let listed = if proposed.is_empty() { "none".to_string() } else { proposed.join(", ") };
            let message =
                format!("{}: no rule proposes {:?} (the rules propose: {listed}){hint}", named.what, named.pattern);
            playbook.error(&named.at, message)
        })
        .collect()
}

/// `[[canary]] worse` and `[[expect]] worse` name window values every rule
/// proposing their kinds has (or, for `[[expect]]`, a job signal): the
/// change is judged by them, and a name the rule does not have would never
/// be read (every canary kept, none promoted; no outcome ever harmful).
fn canary_signals(playbook: &Playbook, rules: &RuleSet) -> Vec<TomlError> {
    let canaries = playbook.canary.iter().enumerate().map(|(i, c)| ("canary", i, &c.actions, vec![(None, &c.worse)]));
    let expects = playbook.expect.iter().enumerate().map(|(i, e)| {
        let worse = e.worse.iter().enumerate().map(|(k, w)| (Some(k), w)).collect();
        ("expect", i, &e.actions, worse)
    });
    let mut errors = Vec::new();
    for (table, i, kinds, worse) in canaries.chain(expects) {
        let proposing: Vec<_> = rules
            .rules
            .iter()
            .filter(|r| r.actions.iter().any(|a| kinds.iter().any(|p| kind_matches(p, &a.kind))))
            .collect();
        for (k, name) in worse {
            if table == "expect" && engine::evaluator::is_job_signal(name) {
                continue;
            }
            for rule in proposing.iter().filter(|r| !r.windows.iter().any(|(n, _)| n == name)) {
                let windows: Vec<&str> = rule.windows.iter().map(|(n, _)| n.as_str()).collect();
                let (what, also) = match table {
                    "canary" => ("this canary rolls out", String::new()),
                    _ => ("this expectation covers", format!("; or a job signal: {}", job_signals())),
                };
                let message = format!(
                    "{table}.worse: rule {:?} ({}) proposes a kind {what} and has no window {name:?} (its windows: {}{also})",
                    rule.name,
                    rule.path,
                    windows.join(", ")
                );
                let mut at: Vec<engine::config::Key> = vec![table.into(), i.into(), "worse".into()];
                at.extend(k.map(engine::config::Key::from));
                errors.push(playbook.error(&at, message));
            }
        }
    }
    errors
}

/// The job signals an `[[expect]]` may watch, for messages.
fn job_signals() -> String {
    engine::evaluator::JOB_SIGNALS.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

/// Each `[[ladder]]` names rules of the directory, and each of them has an
/// action on every rung: a rung its rule cannot propose would end the climb
/// there, with the fault still on.
fn ladder_rungs(playbook: &Playbook, rules: &RuleSet) -> Vec<TomlError> {
    let mut errors = Vec::new();
    for (i, ladder) in playbook.ladder.iter().enumerate() {
        for (k, name) in ladder.rules.iter().enumerate() {
            let Some(rule) = rules.rules.iter().find(|r| &r.name == name) else {
                let at = ["ladder".into(), i.into(), "rules".into(), k.into()];
                errors.push(playbook.error(&at, format!("ladder.rules: no enabled rule {name:?} to climb it")));
                continue;
            };
            for (j, rung) in ladder.rungs.iter().enumerate() {
                if rule.actions.iter().any(|a| kind_matches(rung, &a.kind)) {
                    continue;
                }
                let kinds: Vec<&str> = rule.actions.iter().map(|a| a.kind.as_str()).collect();
                let message = format!(
                    "ladder.rungs: rule {name:?} ({}) has no action for rung {rung:?} (its actions: {})",
                    rule.path,
                    kinds.join(", ")
                );
                errors.push(playbook.error(&["ladder".into(), i.into(), "rungs".into(), j.into()], message));
            }
        }
    }
    errors
}

/// A kind no actuator handles: placed at the pattern it was probably meant
/// to match (a typo of the kind's family), else at the first actuator.
fn unrouted(
    playbook: &Playbook,
    proposes: &str,
    kind: &str,
    patterns: &[&str],
    places: &[(usize, usize)],
) -> TomlError {
    let handled = if patterns.is_empty() { "none".to_string() } else { patterns.join(", ") };
    let family = kind.split_once('.').map_or(kind, |(f, _)| f);
    let wanted = [format!("{family}.*"), kind.to_string()];
    let typo = patterns
        .iter()
        .enumerate()
        .find_map(|(n, p)| wanted.iter().find(|w| closest(p, [w.as_str()]).is_some()).map(|w| (n, *p, w)));
    match typo {
        Some((n, pattern, meant)) => {
            let (i, j) = places[n];
            let message = format!("{proposes}, which no actuator handles: is {pattern:?} meant to be {meant:?}?");
            playbook.error(&handle_at(i, j), message)
        }
        None => {
            let at: &[Key<'_>] = if playbook.actuator.is_empty() { &[] } else { &["actuator".into()] };
            playbook.error(at, format!("{proposes}, which no actuator handles (actuators handle: {handled}); add an actuator for it or set the rule's mode to off"))
        }
    }
}
