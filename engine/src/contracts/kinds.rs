//! Action kinds as their actuators declare them.
//!
//! Every actuator says which action kinds it carries out and, for each,
//! what the safety policy needs to know about it ([`ActionKindDecl`]): the
//! target labels it reads, whether it changes something this node alone
//! owns or something many nodes share ([`Scope`]), which of the playbook's
//! blast-radius limits counts it ([`LimitClass`]), whether it changes the
//! fabric at all, whether it can be undone, and whether a switch restart
//! loses it. The engine reads these declarations and names no verb itself:
//! adding an action kind touches only the actuator that carries it out.

use serde::{Deserialize, Serialize};

use super::action::kind_matches;

/// Where an action's limits are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// This daemon's policy alone decides: what the action changes belongs
    /// to this node alone (one of its host links, a setting of its own NIC).
    Local,
    /// A token from the fleet's shared budget is needed as well: what the
    /// action changes is shared by many nodes (a node's place in the
    /// scheduler, a rail, a switch's configuration).
    Fleet,
}

impl Scope {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Local => "local",
            Scope::Fleet => "fleet",
        }
    }
}

/// Which of the playbook's blast-radius limits (`[limits]`) counts an
/// action, in topology terms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitClass {
    /// None of the topology limits (the per-kind limits, the breaker and the
    /// per-target cooldown still apply).
    #[default]
    None,
    /// A node taken out of the scheduler's hands: `max_cordons` per window,
    /// `max_cordon_percent` of the fleet at once.
    NodeCordon,
    /// A rail of a plane drained: `max_rails_per_plane` at once.
    RailDrain,
    /// A port of a switch isolated (the switch end of a host link):
    /// `max_isolated_ports_per_switch` at once.
    SwitchPortIsolation,
    /// A queue of a switch with its ECN thresholds lowered:
    /// `max_ecn_queues_per_switch` at once. An action whose target names no
    /// `port` (or port `"*"`) changes the switch's shared profile and counts
    /// as all of them.
    SwitchEcnQueue,
    /// A leaf's ECMP hash changed (every flow of the leaf moves):
    /// `max_hash_changes_per_plane` leaves of a plane at once, so the first is
    /// a canary for the rest.
    SwitchHash,
}

impl LimitClass {
    /// Its name, as a generic actuator's settings spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitClass::None => "none",
            LimitClass::NodeCordon => "node-cordon",
            LimitClass::RailDrain => "rail-drain",
            LimitClass::SwitchPortIsolation => "switch-port-isolation",
            LimitClass::SwitchEcnQueue => "switch-ecn-queue",
            LimitClass::SwitchHash => "switch-hash",
        }
    }
}

/// One action kind an actuator carries out, and how the safety policy
/// counts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionKindDecl {
    /// The kind, `<family>.<verb>` (`pfcwd.escalate`). A generic actuator
    /// (a command, a webhook, the log) may declare a pattern (`*`,
    /// `node.*`) for the kinds it takes without a declaration of their own.
    pub kind: String,
    /// The target labels it reads (`switch`, `port`), for people and `check`.
    pub target_labels: Vec<String>,
    /// Whether it needs a token from the fleet's shared budget.
    pub scope: Scope,
    /// Which blast-radius limit counts it.
    pub limit: LimitClass,
    /// Whether it changes the fabric: the breaker and the limits apply.
    /// False for a notification.
    pub destructive: bool,
    /// Whether the actuator can undo it.
    pub undoable: bool,
    /// A switch that restarts with its saved configuration loses it: when
    /// found reverted while its incident fires, it is re-applied, unless
    /// the playbook's `[verify] reapply_reverted` lists other kinds.
    pub reapply_reverted: bool,
}

impl ActionKindDecl {
    /// `kind`, reading `target_labels`: local, counted by no topology
    /// limit, destructive, undoable, not re-applied when reverted. The
    /// builder methods below say otherwise.
    pub fn new(kind: &str, target_labels: &[&str]) -> ActionKindDecl {
        ActionKindDecl {
            kind: kind.to_string(),
            target_labels: target_labels.iter().map(|l| l.to_string()).collect(),
            scope: Scope::Local,
            limit: LimitClass::None,
            destructive: true,
            undoable: true,
            reapply_reverted: false,
        }
    }

    /// Needs a fleet token: it changes something many nodes share.
    pub fn fleet(mut self) -> ActionKindDecl {
        self.scope = Scope::Fleet;
        self
    }

    /// Counted by `limit`.
    pub fn limited_by(mut self, limit: LimitClass) -> ActionKindDecl {
        self.limit = limit;
        self
    }

    /// Lost when its switch restarts: re-applied when found reverted.
    pub fn lost_on_switch_restart(mut self) -> ActionKindDecl {
        self.reapply_reverted = true;
        self
    }

    /// Cannot be undone.
    pub fn not_undoable(mut self) -> ActionKindDecl {
        self.undoable = false;
        self
    }

    /// Changes nothing in the fabric (a notification).
    pub fn harmless(mut self) -> ActionKindDecl {
        self.destructive = false;
        self
    }

    /// Whether this declaration is for `kind`.
    pub fn covers(&self, kind: &str) -> bool {
        kind_matches(&self.kind, kind)
    }
}

/// The declaration of `kind` among `declared`: the one for exactly that
/// kind, else the first pattern that covers it.
pub fn declaration<'a>(declared: &'a [ActionKindDecl], kind: &str) -> Option<&'a ActionKindDecl> {
    declared.iter().find(|d| d.kind == kind).or_else(|| declared.iter().find(|d| d.covers(kind)))
}

/// Why an actuator declaring `declared` does not carry out `kind`, in the
/// words `check` shows: `this actuator carries out a and b, not c`.
pub fn undeclared(declared: &[ActionKindDecl], kind: &str) -> Option<String> {
    if declaration(declared, kind).is_some() {
        return None;
    }
    let kinds: Vec<&str> = declared.iter().map(|d| d.kind.as_str()).collect();
    let list = match kinds.as_slice() {
        [] => "no action kind".to_string(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    Some(format!("this actuator carries out {list}, not {kind}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_declaration_wins_over_a_pattern() {
        let declared = [
            ActionKindDecl::new("*", &[]),
            ActionKindDecl::new("rail.drain", &["node", "rail"]).fleet().limited_by(LimitClass::RailDrain),
        ];
        assert_eq!(declaration(&declared, "rail.drain").map(|d| d.limit), Some(LimitClass::RailDrain));
        assert_eq!(declaration(&declared, "node.cordon").map(|d| d.kind.as_str()), Some("*"));
        assert_eq!(undeclared(&declared, "node.cordon"), None);
    }

    #[test]
    fn an_undeclared_kind_is_named_with_the_declared_ones() {
        let declared = [ActionKindDecl::new("pfcwd.escalate", &[]), ActionKindDecl::new("pfcwd.prevent", &[])];
        assert_eq!(
            undeclared(&declared, "pfcwd.relax").as_deref(),
            Some("this actuator carries out pfcwd.escalate and pfcwd.prevent, not pfcwd.relax")
        );
        assert_eq!(
            undeclared(&declared[..1], "link.isolate").as_deref(),
            Some("this actuator carries out pfcwd.escalate, not link.isolate")
        );
    }

    #[test]
    fn names_read_as_the_settings_spell_them() {
        assert_eq!(serde_json::to_string(&LimitClass::SwitchEcnQueue).unwrap(), "\"switch-ecn-queue\"");
        assert_eq!(LimitClass::SwitchPortIsolation.as_str(), "switch-port-isolation");
        assert_eq!(serde_json::to_string(&Scope::Fleet).unwrap(), "\"fleet\"");
    }
}
