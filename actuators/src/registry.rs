//! A playbook's actuators, built and routed: the dispatcher a daemon, a
//! replay or a chaos run acts through.
//!
//! Each `[[actuator]]` entry is built by its kind ([`crate::build`]) and
//! becomes one route per pattern it `handles`, in the playbook's order
//! (first match wins). Every entry that fails to build is reported, with
//! the playbook's safety policy if that is refused too: `rocemend check`
//! shows them all at once.

use std::sync::Arc;

use engine::dispatch::{ActuatorRoute, DispatchConfig, Dispatcher};
use engine::ledger::Ledger;
use engine::playbook::{covers, ActuatorEntry, Playbook};
use engine::policy::{PolicyError, PolicySettings};
use engine::{ActionKindDecl, Actuator, BuildError, Component, Errors, Scope, Topology};

/// Why a playbook's dispatcher could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlaybookError {
    /// An actuator could not be built.
    #[error("playbook {playbook:?}: {error}")]
    Actuator {
        /// The playbook's name.
        playbook: String,
        /// What was wrong with the actuator.
        error: BuildError,
    },
    /// The safety policy (limits, breaker, approvals, undo, retry) was refused.
    #[error("playbook {playbook:?}: {error}")]
    Policy {
        /// The playbook's name.
        playbook: String,
        /// What was wrong.
        error: PolicyError,
    },
}

/// Builds an actuator of a playbook entry.
pub type Builder<'a> = dyn FnMut(&ActuatorEntry) -> Result<Arc<dyn Actuator>, BuildError> + 'a;

/// The actuator an entry asks for, by its kind ([`crate::build_in`]), its
/// switches named from `inventory`.
pub fn build_entry(entry: &ActuatorEntry, inventory: Option<&Topology>) -> Result<Arc<dyn Actuator>, BuildError> {
    crate::build_in(&entry.kind, &entry.name, entry.settings.clone(), inventory)
}

/// What the actuator an entry asks for declares about the action kinds it
/// carries out, without building it: its type's own kinds, or, for a
/// generic actuator, what its settings say. For an actuator standing in
/// for the entry's (the chaos runner's simulated fabric, the preview's
/// planner), so the safety policy counts its actions as the real one's.
pub fn declarations(entry: &ActuatorEntry) -> Result<Vec<ActionKindDecl>, BuildError> {
    if let Some(kinds) = crate::declared(&entry.kind) {
        return Ok(kinds);
    }
    let it = Component { component: "actuator", name: &entry.name, kind: &entry.kind };
    let settings = entry.settings.clone();
    match entry.kind.as_str() {
        "log" => it.build(settings, |c: crate::LogConfig| c.declarations()),
        "exec" => it.build(settings, |c: crate::ExecConfig| c.declarations()),
        "webhook" => it.build(settings, |c: crate::WebhookConfig| c.declarations()),
        _ => Err(it.unknown(crate::KINDS)),
    }
}

/// The scopes of the action kinds `playbook` routes, as (action-kind
/// pattern, scope) in its order, first match wins: the scope an
/// `[[actuator]]` sets for every kind it handles, else the scope its
/// actuator declares for each kind. For a plan of what will take a fleet
/// token, made without building the actuators.
pub fn scopes(playbook: &Playbook) -> Result<Vec<(String, Scope)>, Errors<PlaybookError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for entry in &playbook.actuator {
        let declared = match declarations(entry) {
            Ok(declared) => declared,
            Err(error) => {
                errors.push(PlaybookError::Actuator { playbook: playbook.name.clone(), error });
                continue;
            }
        };
        for pattern in &entry.handles {
            if let Some(scope) = entry.scope {
                out.push((pattern.clone(), scope));
                continue;
            }
            for d in &declared {
                if covers(pattern, &d.kind) {
                    out.push((d.kind.clone(), d.scope));
                } else if covers(&d.kind, pattern) {
                    out.push((pattern.clone(), d.scope));
                }
            }
        }
    }
    Errors::or_ok(errors, out)
}

/// The routes of `playbook`'s actuators, in its order, their switches
/// named from `inventory`.
pub fn routes(playbook: &Playbook, inventory: Option<&Topology>) -> Result<Vec<ActuatorRoute>, Errors<PlaybookError>> {
    routes_with(playbook, &mut |entry| build_entry(entry, inventory))
}

/// The routes of `playbook`'s actuators, each built by `build` (the chaos
/// runner substitutes the simulated fabric's for host actuators).
pub fn routes_with(playbook: &Playbook, build: &mut Builder<'_>) -> Result<Vec<ActuatorRoute>, Errors<PlaybookError>> {
    let mut routes = Vec::new();
    let mut errors = Vec::new();
    for entry in &playbook.actuator {
        match build(entry) {
            Ok(actuator) => routes.extend(entry.handles.iter().map(|pattern| ActuatorRoute {
                pattern: pattern.clone(),
                actuator: actuator.clone(),
                destructive: entry.destructive,
            })),
            Err(error) => errors.push(PlaybookError::Actuator { playbook: playbook.name.clone(), error }),
        }
    }
    Errors::or_ok(errors, routes)
}

/// Builds `playbook`'s actuators and the dispatcher that routes to them,
/// with its safety policy and, if given, the ledger it records to.
pub fn dispatcher(
    playbook: &Playbook,
    topology: Option<Arc<Topology>>,
    ledger: Option<Ledger>,
) -> Result<Dispatcher, Errors<PlaybookError>> {
    let inventory = topology.clone();
    dispatcher_with(playbook, topology, ledger, &mut |entry| build_entry(entry, inventory.as_deref()))
}

/// [`dispatcher`], with each actuator built by `build`.
pub fn dispatcher_with(
    playbook: &Playbook,
    topology: Option<Arc<Topology>>,
    ledger: Option<Ledger>,
    build: &mut Builder<'_>,
) -> Result<Dispatcher, Errors<PlaybookError>> {
    let policy = playbook.policy();
    let (routes, policy) = match (routes_with(playbook, build), policy) {
        (Ok(routes), Ok(policy)) => (routes, policy),
        (routes, policy) => {
            let mut errors = routes.err().map(|e| e.0).unwrap_or_default();
            if let Err(error) = policy {
                errors.push(PlaybookError::Policy { playbook: playbook.name.clone(), error });
            }
            return Err(Errors(errors));
        }
    };
    Ok(Dispatcher::new(dispatch_config(playbook, routes, policy, topology), ledger))
}

/// The dispatcher's configuration from a playbook whose routes and policy
/// are already built and checked.
pub fn dispatch_config(
    playbook: &Playbook,
    routes: Vec<ActuatorRoute>,
    policy: PolicySettings,
    topology: Option<Arc<Topology>>,
) -> DispatchConfig {
    DispatchConfig {
        mode: playbook.mode,
        rule_modes: playbook.rule_modes(),
        routes,
        timeout: playbook.timeout(),
        policy,
        topology,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn playbook(text: &str) -> Playbook {
        Playbook::parse(text, "p.toml").unwrap()
    }

    #[test]
    fn every_broken_actuator_and_the_policy_are_reported_together() {
        let mut p = playbook(
            "name = \"p\"\n\
             [[actuator]]\nname = \"a\"\ntype = \"teleport\"\nhandles = [\"x.*\"]\n\
             [[actuator]]\nname = \"b\"\ntype = \"log\"\nhandles = [\"y.*\"]\nlevel = 3\n",
        );
        // Parsing refuses a bad policy too; one made in code reaches here.
        p.retry.attempts = 0;
        let errors = dispatcher(&p, None, None).err().expect("refused");
        let text = errors.to_string();
        assert_eq!(errors.len(), 3, "{text}");
        assert!(text.contains("actuator \"a\": unknown kind \"teleport\""), "{text}");
        assert!(text.contains("actuator \"b\" (kind \"log\")"), "{text}");
        assert!(matches!(errors[2], PlaybookError::Policy { .. }), "{text}");
    }

    #[test]
    fn one_route_per_pattern_in_order() {
        let p =
            playbook("name = \"p\"\n[[actuator]]\nname = \"a\"\ntype = \"log\"\nhandles = [\"link.*\", \"node.*\"]\n");
        let routes = routes(&p, None).unwrap();
        assert_eq!(routes.iter().map(|r| r.pattern.as_str()).collect::<Vec<_>>(), ["link.*", "node.*"]);
    }
}
