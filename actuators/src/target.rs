//! Reading an action's target labels and parameters, with errors that name
//! the action and what is missing, shared by the actuators.

use engine::{Action, ActuatorError};

/// The target label `name`; invalid when the target lacks it.
pub fn label<'a>(action: &'a Action, name: &str) -> Result<&'a str, ActuatorError> {
    action.target.get(name).ok_or_else(|| {
        ActuatorError::Invalid(format!("{}: the target {} has no label {name:?}", action.kind, action.target))
    })
}

/// Refuses an action whose verb is not one of `verbs`.
pub fn verb<'a>(action: &'a Action, family: &str, verbs: &[&str]) -> Result<&'a str, ActuatorError> {
    verb_of(&action.kind, family, verbs)
}

/// The verb of `kind` (`pfcwd.escalate` → `escalate`), refused when it is
/// not one of `verbs` of the kinds' `family` (`pfcwd`, `node`, …).
pub fn verb_of<'a>(kind: &'a str, family: &str, verbs: &[&str]) -> Result<&'a str, ActuatorError> {
    let verb = kind.split_once('.').map_or(kind, |(_, v)| v);
    if verbs.contains(&verb) {
        Ok(verb)
    } else {
        let kinds: Vec<String> = verbs.iter().map(|v| format!("{family}.{v}")).collect();
        Err(ActuatorError::NotSupported(format!("this actuator carries out {}, not {kind}", kinds.join(" and "))))
    }
}

/// [`engine::Actuator::cannot`] for an actuator that carries out `verbs` of
/// `family`: why it cannot carry out `kind`, a verb it does not know or
/// what `side` says the verb lacks.
pub fn cannot(
    kind: &str,
    family: &str,
    verbs: &[&str],
    side: impl Fn(&str) -> Result<(), ActuatorError>,
) -> Option<String> {
    verb_of(kind, family, verbs).and_then(side).err().map(|e| match e {
        ActuatorError::NotSupported(why) => why,
        other => other.to_string(),
    })
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
    crate::link::check_netdev(netdev)
        .map_err(|e| ActuatorError::Invalid(format!("netdev {netdev:?} is refused: {e}")))?;
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
