//! What a generic actuator (`exec`, `webhook`, `log`) declares about the
//! action kinds it carries out, from its settings.
//!
//! The typed actuators declare their own kinds ([`crate::declared`]). A
//! command, a webhook or the log can be pointed at any kind, so the
//! playbook says how the safety policy counts what they carry out:
//!
//! ```toml
//! [[actuator]]
//! name = "drain-rail"
//! type = "exec"
//! handles = ["rail.drain"]
//! argv = ["/usr/local/sbin/drain-rail", "--node={target.node}", "--rail={target.rail}"]
//! [actuator.kinds."rail.drain"]
//! target = ["node", "rail", "plane"]
//! scope = "fleet"              # local | fleet: needs a token from the fleet's budget
//! limit = "rail-drain"         # none | node-cordon | rail-drain | switch-port-isolation | switch-ecn-queue | switch-hash
//! reapply_reverted = true      # a switch restart loses it: re-applied when found reverted
//! ```
//!
//! or, to count its actions as typed actuators count their own (a `log`
//! standing in for the real cordon while a playbook is tried out):
//! `like = "cordon"`, or several, `like = ["pfcwd", "ecn"]`. Every other
//! kind takes the defaults: local, counted by no topology limit,
//! destructive, not re-applied when reverted, and undoable when the
//! actuator can undo.

use std::collections::BTreeMap;

use engine::{ActionKindDecl, LimitClass, Scope};
use serde::{Deserialize, Serialize};

use crate::ActuatorConfigError;

/// How the safety policy counts one action kind a generic actuator carries
/// out (`[actuator.kinds."<kind>"]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindSettings {
    /// The target labels it reads, for people and `check`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target: Vec<String>,
    /// `"fleet"` when it changes something many nodes share and takes a
    /// token from the fleet's budget. Default `"local"`.
    #[serde(default = "local")]
    pub scope: Scope,
    /// The blast-radius limit that counts it. Default `"none"`.
    #[serde(default)]
    pub limit: LimitClass,
    /// Whether it changes the fabric (the breaker and the limits apply).
    /// Default true.
    #[serde(default = "yes")]
    pub destructive: bool,
    /// Whether the actuator can undo it. Default: whether it can undo at
    /// all (an `exec` with `undo_argv`, every `webhook` and `log`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoable: Option<bool>,
    /// Whether a switch restart loses it, so that it is re-applied when
    /// found reverted while its incident fires. Default false.
    #[serde(default)]
    pub reapply_reverted: bool,
}

fn local() -> Scope {
    Scope::Local
}

fn yes() -> bool {
    true
}

/// The actuator types a generic actuator's kinds are counted like: one
/// (`like = "cordon"`) or several (`like = ["pfcwd", "ecn"]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "OneOrMany", into = "OneOrMany")]
pub struct Like(pub Vec<String>);

impl Like {
    /// Whether it names none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl From<OneOrMany> for Like {
    fn from(value: OneOrMany) -> Like {
        match value {
            OneOrMany::One(one) => Like(vec![one]),
            OneOrMany::Many(many) => Like(many),
        }
    }
}

impl From<Like> for OneOrMany {
    fn from(like: Like) -> OneOrMany {
        match <[String; 1]>::try_from(like.0) {
            Ok([one]) => OneOrMany::One(one),
            Err(many) => OneOrMany::Many(many),
        }
    }
}

/// The declarations of a generic actuator whose settings say `like` and
/// `kinds`, and which can undo if `undoable`: the typed actuators' kinds
/// `like` names, then `kinds`, then every other kind with the defaults.
pub fn declarations(
    like: &Like,
    kinds: &BTreeMap<String, KindSettings>,
    undoable: bool,
) -> Result<Vec<ActionKindDecl>, ActuatorConfigError> {
    let mut out = Vec::new();
    for name in &like.0 {
        let declared = crate::declared(name).ok_or_else(|| ActuatorConfigError::Invalid {
            setting: "like".into(),
            value: name.to_string(),
            reason:
                "names no actuator type that declares its action kinds (cordon, link, pfcwd, ecn, rail, nccl, ecmp)",
        })?;
        // Counted like the typed actuator's, undone only if this one can.
        out.extend(declared.into_iter().map(|d| ActionKindDecl { undoable: d.undoable && undoable, ..d }));
    }
    for (kind, settings) in kinds {
        if !well_formed(kind) {
            return Err(ActuatorConfigError::Entry {
                setting: "kinds".into(),
                key: kind.clone(),
                reason: "is not an action kind: write \"actuator.verb\", \"actuator.*\" or \"*\"".into(),
            });
        }
        out.retain(|d| d.kind != *kind);
        out.push(ActionKindDecl {
            kind: kind.clone(),
            target_labels: settings.target.clone(),
            scope: settings.scope,
            limit: settings.limit,
            destructive: settings.destructive,
            undoable: settings.undoable.unwrap_or(undoable),
            reapply_reverted: settings.reapply_reverted,
        });
    }
    let mut rest = ActionKindDecl::new("*", &[]);
    rest.undoable = undoable;
    out.push(rest);
    Ok(out)
}

/// Whether `kind` is written as an action kind or a pattern of them.
fn well_formed(kind: &str) -> bool {
    let word = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    match kind.split_once('.') {
        None => kind == "*",
        Some((family, "*")) => word(family),
        Some((family, verb)) => word(family) && word(verb),
    }
}

#[cfg(test)]
mod tests {
    use engine::contracts::kinds::declaration;

    use super::*;

    #[test]
    fn a_command_says_how_its_kinds_count_and_the_rest_take_the_defaults() {
        let kinds: BTreeMap<String, KindSettings> = toml::from_str(
            "[\"rail.drain\"]\ntarget = [\"node\", \"rail\"]\nscope = \"fleet\"\nlimit = \"rail-drain\"\n\
             reapply_reverted = true\n",
        )
        .unwrap();
        let declared = declarations(&Like::default(), &kinds, false).unwrap();
        let drain = declaration(&declared, "rail.drain").unwrap();
        assert_eq!(
            (drain.scope, drain.limit, drain.destructive, drain.undoable, drain.reapply_reverted),
            (Scope::Fleet, LimitClass::RailDrain, true, false, true)
        );
        let other = declaration(&declared, "webhook.notify").unwrap();
        assert_eq!((other.kind.as_str(), other.scope, other.limit), ("*", Scope::Local, LimitClass::None));
    }

    #[test]
    fn like_takes_a_typed_actuators_declarations_and_a_table_overrides_them() {
        let kinds: BTreeMap<String, KindSettings> = toml::from_str("[\"node.cordon\"]\nscope = \"local\"\n").unwrap();
        let like: Like = toml::from_str::<BTreeMap<String, Like>>("like = \"cordon\"").unwrap()["like"].clone();
        assert_eq!(like, Like(vec!["cordon".into()]));
        let declared = declarations(&like, &kinds, true).unwrap();
        let cordon = declaration(&declared, "node.cordon").unwrap();
        assert_eq!((cordon.scope, cordon.limit), (Scope::Local, LimitClass::None));
        let declared = declarations(&Like(vec!["cordon".into(), "rail".into()]), &BTreeMap::new(), true).unwrap();
        assert_eq!(declaration(&declared, "node.cordon").unwrap().limit, LimitClass::NodeCordon);
        assert_eq!(declaration(&declared, "rail.drain").unwrap().limit, LimitClass::RailDrain);
        let err = declarations(&Like(vec!["teleport".into()]), &BTreeMap::new(), true).unwrap_err().to_string();
        assert!(err.starts_with("like \"teleport\" names no actuator type"), "{err}");
        let bad: BTreeMap<String, KindSettings> = toml::from_str("[\"rail\"]\n").unwrap();
        let err = declarations(&Like::default(), &bad, true).unwrap_err().to_string();
        assert!(err.contains("\"rail\" is not an action kind"), "{err}");
    }
}
