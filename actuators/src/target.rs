//! Reading an action's target labels and parameters, with errors that name
//! the action and what is missing, shared by the actuators.

use engine::contracts::kinds::undeclared;
use engine::{Action, ActionKindDecl, ActuatorError, Change, Outcome};

use crate::LabelError;

/// The target label `name`; invalid when the target lacks it.
pub fn label<'a>(action: &'a Action, name: &str) -> Result<&'a str, ActuatorError> {
    action.target.get(name).ok_or_else(|| {
        ActuatorError::Invalid(format!("{}: the target {} has no label {name:?}", action.kind, action.target))
    })
}

/// The refusal of `kind` by an actuator that declares `kinds` and not it.
pub fn unsupported(kinds: &[ActionKindDecl], kind: &str) -> ActuatorError {
    ActuatorError::NotSupported(undeclared(kinds, kind).unwrap_or_else(|| format!("{kind} is not carried out here")))
}

/// The change (values before and after) an applied outcome recorded, for
/// the actuators whose prior is a [`Change`].
pub fn recorded<T: serde::de::DeserializeOwned>(applied: &Outcome) -> Result<Change<T>, ActuatorError> {
    applied
        .prior
        .as_ref()
        .ok_or_else(|| ActuatorError::Invalid("the applied outcome carries no prior values to restore".into()))?
        .read()
}

/// [`engine::Actuator::cannot`]'s answer from the refusal of a side (no
/// `[gnmi]`, no `[host]`) the kind needs: its reason, if any.
pub fn side_missing(side: Result<(), ActuatorError>) -> Option<String> {
    side.err().map(|e| match e {
        ActuatorError::NotSupported(why) => why,
        other => other.to_string(),
    })
}

/// The longest netdev name, in bytes: `IFNAMSIZ` − 1.
pub const MAX_NETDEV_LEN: usize = 15;

/// Checks a netdev name: 1 to 15 bytes (`IFNAMSIZ` − 1), no `/`, `:`, white
/// space or control characters, not `.` or `..`.
pub fn check_netdev(name: &str) -> Result<(), LabelError> {
    if name.is_empty() {
        return Err(LabelError::Empty);
    }
    if name.len() > MAX_NETDEV_LEN {
        return Err(LabelError::TooLong { len: name.len(), max: MAX_NETDEV_LEN });
    }
    if let Some(found) = name.chars().find(|c| matches!(c, '/' | ':') || c.is_whitespace() || c.is_control()) {
        return Err(LabelError::Char {
            found,
            allowed: "a netdev name has no '/', ':', white space or control characters",
        });
    }
    if name == "." || name == ".." {
        return Err(LabelError::Dots);
    }
    Ok(())
}

/// Checks that `node` is the node a host-side actuator runs on: it changes
/// only its own host.
pub fn this_node(action: &Action, actuator: &str, own: &str) -> Result<(), ActuatorError> {
    let node = label(action, "node")?;
    if node == own {
        Ok(())
    } else {
        Err(ActuatorError::NotSupported(format!(
            "{} is for node {node:?}, but {actuator} runs on {own:?} and changes only its own host",
            action.kind
        )))
    }
}

/// The netdev a host-side action of `actuator` may change: the action is
/// for this node (`own`), its `netdev` label is a valid name, and it is one
/// of `allowed` (empty allows any).
pub fn host_netdev<'a>(
    action: &'a Action,
    actuator: &str,
    own: &str,
    allowed: &[String],
) -> Result<&'a str, ActuatorError> {
    this_node(action, actuator, own)?;
    let netdev = label(action, "netdev")?;
    check_netdev(netdev).map_err(|e| ActuatorError::Invalid(format!("netdev {netdev:?} is refused: {e}")))?;
    if !allowed.is_empty() && !allowed.iter().any(|n| n == netdev) {
        return Err(ActuatorError::Invalid(format!("netdev {netdev:?} is not one {actuator} may change")));
    }
    Ok(netdev)
}

/// The refusal of a host-side action by an actuator without `[host]`.
pub fn no_host(actuator: &str) -> ActuatorError {
    ActuatorError::NotSupported(format!("{actuator} has no [host] settings, so it cannot change NICs"))
}

/// Parses an integer parameter or setting, naming it in the error.
pub fn integer(what: &str, value: &str, lo: u64, hi: u64, unit: &str) -> Result<u64, ActuatorError> {
    match value.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        Ok(n) => Err(ActuatorError::Invalid(format!("{what} {n} is out of range {lo}..{hi}{unit}"))),
        Err(_) => Err(ActuatorError::Invalid(format!("{what} {value:?} is not an integer"))),
    }
}
