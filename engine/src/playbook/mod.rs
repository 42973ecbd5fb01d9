//! Playbooks: which rules run, in which mode, and which actuator carries
//! out each kind of action.
//!
//! ```toml
//! name = "default"
//! mode = "dry-run"            # enforce | dry-run | shadow
//! rules = "../rules"          # rule directory, relative to this file
//! action_timeout = "10s"
//!
//! [rule.gpu-xid]
//! mode = "shadow"             # enforce | dry-run | shadow | off
//!
//! [[actuator]]
//! name = "journal"
//! type = "log"
//! handles = ["*"]             # action kinds: "node.cordon", "pfcwd.*", "*"
//! scope = "local"             # local | fleet; default: as the actuator declares each kind
//! ```
//!
//! `[kubernetes_condition]` keeps a node condition on the daemon's
//! Kubernetes Node ([`node_condition`]).
//!
//! An actuator's `scope` says whether its actions need a token from the
//! fleet's shared budget ([`Scope::Fleet`]) or only this daemon's policy
//! ([`Scope::Local`]). Without it, each action kind takes the scope its
//! actuator declares for it ([`ActionKindDecl`](crate::contracts::ActionKindDecl)).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::config::{parse_toml, Key, Locator, TomlError};
use crate::errors::Errors;

mod checks;
pub mod node_condition;

use crate::contracts::Scope;
use crate::mode::Mode;
use crate::policy::{
    ApprovalRule, BreakerConfig, CanaryRule, ExpectRule, LadderRule, Limits, OutcomesConfig, PolicySettings,
    RetryConfig, TargetLimits, UndoConfig, VerifyConfig,
};
pub use checks::{covers, overlaps, NamedKind, ALLOW_UNSAFE_HINT};
pub use node_condition::KubernetesCondition;

/// A playbook file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Playbook {
    /// Name, shown in decisions.
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: String,
    /// The playbook's mode; rules can only be made more conservative.
    #[serde(default = "default_mode")]
    pub mode: Mode,
    /// The rule directory, relative to the playbook file.
    #[serde(default)]
    pub rules: Option<PathBuf>,
    /// How long one actuator call may take.
    #[serde(default = "default_timeout", with = "crate::config::duration")]
    pub action_timeout: std::time::Duration,
    /// Per-rule policy, by rule name.
    #[serde(default)]
    pub rule: BTreeMap<String, RulePolicy>,
    /// The actuators and the action kinds each handles (first match wins).
    #[serde(default)]
    pub actuator: Vec<ActuatorEntry>,
    /// Blast-radius limits.
    #[serde(default)]
    pub limits: Limits,
    /// The circuit breaker.
    #[serde(default)]
    pub breaker: BreakerConfig,
    /// Per-target cooldown and rate limit.
    #[serde(default)]
    pub target: TargetLimits,
    /// Actions that wait for a human.
    #[serde(default)]
    pub approval: Vec<ApprovalRule>,
    /// Kinds rolled out through a canary, one place of a plane first.
    #[serde(default)]
    pub canary: Vec<CanaryRule>,
    /// Whether and by when executed actions are checked for their effect.
    #[serde(default)]
    pub outcomes: OutcomesConfig,
    /// What actions of some kinds must achieve.
    #[serde(default)]
    pub expect: Vec<ExpectRule>,
    /// Escalation ladders: a rule's remedies one at a time.
    #[serde(default)]
    pub ladder: Vec<LadderRule>,
    /// `[canary_groups.NAME]`: the inventory labels of the nodes or switches
    /// a rule or ladder with `enforce_on = "NAME"` is enforced on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub canary_groups: crate::policy::CanaryGroupTables,
    /// Actions undone when their rule resolves.
    #[serde(default)]
    pub undo: UndoConfig,
    /// Retries of failed actuator calls.
    #[serde(default)]
    pub retry: RetryConfig,
    /// How actions in effect are read back.
    #[serde(default)]
    pub verify: VerifyConfig,
    /// Accept limits that switch a safety off or contradict themselves
    /// (`trip_after = 0`, a cooldown longer than its window, …). `check`
    /// lists each one it lets through.
    #[serde(default)]
    pub allow_unsafe: bool,
    /// The node condition `RoceFabricHealthy` kept on this daemon's
    /// Kubernetes Node; off when absent ([`node_condition`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_condition: Option<KubernetesCondition>,
    /// Where the playbook came from, for errors found after parsing.
    #[serde(skip)]
    pub source: Source,
}

/// The text a playbook was parsed from, to place errors found later.
#[derive(Debug, Clone, Default)]
pub struct Source(Option<Arc<Locator>>);

impl PartialEq for Source {
    /// Playbooks compare by their settings, not by where they came from.
    fn eq(&self, _: &Source) -> bool {
        true
    }
}

fn default_mode() -> Mode {
    Mode::DryRun
}

fn destructive_default() -> bool {
    true
}

fn default_timeout() -> std::time::Duration {
    std::time::Duration::from_secs(10)
}

/// What the playbook says about one rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulePolicy {
    /// The rule's mode in this playbook.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// The canary group it is enforced on; shadowed elsewhere
    /// (`policy::CanaryGroupSettings`). Promotion deletes this line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforce_on: Option<String>,
}

/// One actuator of the playbook. Settings other than `name`, `type` and
/// `handles` belong to the actuator type and are checked when it is built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActuatorEntry {
    /// Its name in decisions.
    pub name: String,
    /// Its type (`log`, `exec`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// The action kinds it handles.
    pub handles: Vec<String>,
    /// Whether its actions change the fabric (blast-radius limits and the
    /// breaker apply). Set false for notifications; a kind its actuator
    /// declares harmless is not destructive either way.
    #[serde(default = "destructive_default")]
    pub destructive: bool,
    /// Whether its actions take a fleet token; `None`: as its actuator
    /// declares each kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// Type-specific settings.
    #[serde(flatten)]
    pub settings: toml::Table,
}

impl Playbook {
    /// Parses and checks playbook TOML; `origin` names it in errors. Every
    /// problem is reported, each at its line and column.
    pub fn parse(text: &str, origin: &str) -> Result<Playbook, Errors<TomlError>> {
        let mut playbook: Playbook = parse_toml(text, origin)?;
        playbook.source = Source(Some(Arc::new(Locator::new(text, origin))));
        let checked = checks::check(&playbook);
        Errors::or_ok(checked.errors, playbook)
    }

    /// Reads and checks a playbook file.
    /// Relative files in actuator settings are resolved against the
    /// playbook's directory.
    pub fn load(path: &Path) -> Result<Playbook, Errors<TomlError>> {
        let mut playbook = Playbook::parse(&crate::config::read_text(path)?, &path.display().to_string())?;
        let base = path.parent().unwrap_or(Path::new("."));
        for entry in &mut playbook.actuator {
            crate::config::resolve_paths(&mut entry.settings, base);
        }
        if let Some(condition) = &mut playbook.kubernetes_condition {
            condition.resolve_paths(base);
        }
        Ok(playbook)
    }

    /// The unsafe settings `allow_unsafe = true` lets through, each with
    /// its place and why it is unsafe (empty without `allow_unsafe`: they
    /// are errors then).
    pub fn allowed_unsafe(&self) -> Vec<TomlError> {
        if self.allow_unsafe {
            checks::check(self).unsafe_settings
        } else {
            Vec::new()
        }
    }

    /// An error about the value at `path` of the playbook file.
    pub fn error(&self, path: &[Key<'_>], message: impl Into<String>) -> TomlError {
        match &self.source.0 {
            Some(at) => at.error(path, message),
            None => {
                TomlError { path: format!("playbook {:?}", self.name), line: 0, column: 0, message: message.into() }
            }
        }
    }

    /// The string the playbook file gives its top-level key `name`, as
    /// written (a duration as the user spelled it, for messages).
    pub fn written(&self, name: &str) -> Option<&str> {
        self.source.0.as_ref()?.string_at(name)
    }

    /// The rule directory, resolved against the playbook's own directory.
    pub fn rules_dir(&self, playbook_path: &Path) -> Option<PathBuf> {
        let dir = self.rules.as_ref()?;
        Some(match playbook_path.parent() {
            Some(parent) if dir.is_relative() => parent.join(dir),
            _ => dir.clone(),
        })
    }

    /// Rules the playbook switches off.
    pub fn disabled_rules(&self) -> Vec<&str> {
        self.rule.iter().filter(|(_, p)| p.mode == Some(Mode::Off)).map(|(n, _)| n.as_str()).collect()
    }

    /// `(rule, canary group)` of every `enforce_on`: a rule's own, then its ladder's.
    pub fn enforced_on(&self) -> Vec<(&str, &str)> {
        let own = self.rule.iter().filter_map(|(r, p)| Some((r.as_str(), p.enforce_on.as_deref()?)));
        let laddered = self.ladder.iter().filter_map(|l| Some((l, l.enforce_on.as_deref()?)));
        own.chain(laddered.flat_map(|(l, g)| l.rules.iter().map(move |r| (r.as_str(), g)))).collect()
    }

    /// Per-rule dispatch modes.
    pub fn rule_modes(&self) -> std::collections::HashMap<String, Mode> {
        self.rule.iter().filter_map(|(name, p)| Some((name.clone(), p.mode?))).collect()
    }

    /// The action timeout. [`Playbook::parse`] refuses one that is not
    /// above 0, so `check` and `run` agree; the default here only serves a
    /// playbook built in code.
    pub fn timeout(&self) -> std::time::Duration {
        Some(self.action_timeout).filter(|t| !t.is_zero()).unwrap_or_else(default_timeout)
    }

    /// The safety policy settings, durations parsed.
    pub fn policy(&self) -> Result<PolicySettings, crate::policy::PolicyError> {
        PolicySettings::new(&self.limits, &self.breaker, &self.target, &self.approval, &self.undo, &self.retry)?
            .verified(&self.verify)
            .with_canaries(&self.canary)?
            .with_outcomes(&self.outcomes, &self.expect)?
            .with_ladders(&self.ladder)?
            .with_canary_groups(&self.canary_groups, self.enforced_on())
    }

    /// The scopes the playbook sets, as (action-kind pattern, scope), in
    /// actuator order: the dispatcher takes the first match, else the scope
    /// the kind's actuator declares.
    pub fn scopes(&self) -> Vec<(String, Scope)> {
        self.actuator
            .iter()
            .filter_map(|a| a.scope.map(|s| (a, s)))
            .flat_map(|(a, s)| a.handles.iter().map(move |h| (h.clone(), s)))
            .collect()
    }

    /// Names in `rule` tables that are not rules of `known`.
    pub fn unknown_rules<'a>(&'a self, known: &[&str]) -> Vec<&'a str> {
        self.rule.keys().map(String::as_str).filter(|n| !known.contains(n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_modes_rules_and_actuators() {
        let text = r#"
name = "t"
mode = "enforce"
rules = "../rules"
[rule.a]
mode = "off"
[rule.b]
mode = "dry-run"
[[actuator]]
name = "hook"
type = "exec"
handles = ["node.*"]
argv = ["/bin/true"]
"#;
        let p = Playbook::parse(text, "p.toml").unwrap();
        assert_eq!(p.mode, Mode::Enforce);
        assert_eq!(p.disabled_rules(), vec!["a"]);
        assert_eq!(p.rule_modes().get("b"), Some(&Mode::DryRun));
        assert_eq!(p.actuator[0].settings.get("argv").and_then(|v| v.as_array()).map(|a| a.len()), Some(1));
        assert_eq!(
            p.rules_dir(Path::new("/etc/rocemend/playbooks/p.toml")),
            Some(PathBuf::from("/etc/rocemend/playbooks/../rules"))
        );
    }

    #[test]
    fn a_typo_is_reported_with_its_line() {
        let err = Playbook::parse("name = \"t\"\nmdoe = \"enforce\"\n", "p.toml").unwrap_err();
        let err = &err[0];
        assert_eq!((err.line, err.column), (2, 1));
        assert!(err.message.contains("mdoe"), "{err}");
    }

    #[test]
    fn an_actuator_may_set_its_scope() {
        let text = r#"
name = "t"
[[actuator]]
name = "sched"
type = "log"
handles = ["node.cordon", "node.drain"]
scope = "local"
[[actuator]]
name = "rail"
type = "log"
handles = ["rail.*"]
"#;
        let p = Playbook::parse(text, "p.toml").unwrap();
        assert_eq!(
            p.scopes(),
            vec![("node.cordon".to_string(), Scope::Local), ("node.drain".to_string(), Scope::Local)]
        );
        assert!(!p.actuator[0].settings.contains_key("scope"), "scope is not an actuator setting");
        let err = Playbook::parse(
            "name = \"t\"\n[[actuator]]\nname = \"a\"\ntype = \"log\"\nhandles = [\"*\"]\nscope = \"planet\"\n",
            "p.toml",
        )
        .unwrap_err();
        assert!(err[0].message.contains("planet"), "{err}");
    }

    #[test]
    fn the_default_mode_is_dry_run() {
        assert_eq!(Playbook::parse("name = \"t\"\n", "p.toml").unwrap().mode, Mode::DryRun);
    }
}
