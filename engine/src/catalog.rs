//! The action kinds a playbook's actuators carry out: its routes (which
//! actuator handles which kinds) and what each actuator declares about
//! them, built once from the configured actuators.
//!
//! The safety policy asks it which limit counts a kind, the fleet
//! coordination whether a kind needs a token, re-verification whether a
//! kind lost to a switch restart is re-applied, the dispatcher which
//! actuator acts and whether its actions are destructive, and `check`
//! whether the actuator a rule's kind is routed to carries it out at all.
//! None of them names a kind: the declarations ([`ActionKindDecl`]) do.

use std::sync::Arc;

use crate::contracts::kinds::{declaration, undeclared};
use crate::contracts::{kind_matches, ActionKindDecl, Actuator, LimitClass, Scope};

/// Which actuator handles which action kinds: `pfcwd.escalate` exactly,
/// `pfcwd.*` for every verb, or `*` for everything.
#[derive(Clone)]
pub struct ActuatorRoute {
    /// The pattern.
    pub pattern: String,
    /// The actuator.
    pub actuator: Arc<dyn Actuator>,
    /// Whether the playbook lets its actions count against blast-radius
    /// limits and stop when the breaker trips (false for notifications). A
    /// kind the actuator declares harmless is never destructive.
    pub destructive: bool,
}

impl ActuatorRoute {
    /// What the routed actuator declares about `kind`, if it carries it out.
    pub fn declaration(&self, kind: &str) -> Option<&ActionKindDecl> {
        declaration(self.actuator.kinds(), kind)
    }

    /// Why the routed actuator cannot carry out `kind`: it does not declare
    /// it, or it lacks the settings for it. `None`: it can.
    pub fn cannot(&self, kind: &str) -> Option<String> {
        undeclared(self.actuator.kinds(), kind).or_else(|| self.actuator.cannot(kind))
    }
}

/// The routes of a playbook, first match wins, and what their actuators
/// declare.
#[derive(Clone, Default)]
pub struct Catalog {
    routes: Vec<ActuatorRoute>,
}

impl Catalog {
    /// The catalog of `routes`, in the playbook's order.
    pub fn new(routes: Vec<ActuatorRoute>) -> Catalog {
        Catalog { routes }
    }

    /// The routes, in order.
    pub fn routes(&self) -> &[ActuatorRoute] {
        &self.routes
    }

    /// The route that takes `kind`: the first whose pattern matches.
    pub fn route(&self, kind: &str) -> Option<&ActuatorRoute> {
        self.routes.iter().find(|r| kind_matches(&r.pattern, kind))
    }

    /// What the actuator `kind` is routed to declares about it.
    pub fn declaration(&self, kind: &str) -> Option<&ActionKindDecl> {
        self.route(kind)?.declaration(kind)
    }

    /// The blast-radius limit that counts `kind`; none for a kind no
    /// actuator declares (it is never sent).
    pub fn limit(&self, kind: &str) -> LimitClass {
        self.declaration(kind).map_or(LimitClass::None, |d| d.limit)
    }

    /// Whether `kind` needs a fleet token, as its actuator declares it
    /// (the playbook may say otherwise; the dispatcher asks it first).
    pub fn scope(&self, kind: &str) -> Scope {
        self.declaration(kind).map_or(Scope::Local, |d| d.scope)
    }

    /// Whether `kind`, found reverted, is re-applied by default.
    pub fn reapply_reverted(&self, kind: &str) -> bool {
        self.declaration(kind).is_some_and(|d| d.reapply_reverted)
    }

    /// Whether `kind` is destructive: the playbook does not mark its route
    /// otherwise and its actuator does not declare it harmless. A kind no
    /// actuator takes counts as destructive, so it is never let through for
    /// being unknown.
    pub fn destructive(&self, kind: &str) -> bool {
        match self.route(kind) {
            None => true,
            Some(route) => route.destructive && route.declaration(kind).is_none_or(|d| d.destructive),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Knobs;

    fn route(pattern: &str, destructive: bool, kinds: Vec<ActionKindDecl>) -> ActuatorRoute {
        ActuatorRoute { pattern: pattern.into(), actuator: Arc::new(Knobs::declaring(kinds)), destructive }
    }

    #[test]
    fn a_kind_is_counted_as_its_routed_actuator_declares_it() {
        let catalog = Catalog::new(vec![
            route(
                "rail.*",
                true,
                vec![ActionKindDecl::new("rail.drain", &["node", "rail"]).fleet().limited_by(LimitClass::RailDrain)],
            ),
            route("*", false, vec![ActionKindDecl::new("*", &[])]),
        ]);
        assert_eq!(catalog.limit("rail.drain"), LimitClass::RailDrain);
        assert_eq!(catalog.scope("rail.drain"), Scope::Fleet);
        assert!(catalog.destructive("rail.drain"));
        // Routed to the rail actuator, which does not declare it.
        assert_eq!(catalog.limit("rail.undrain"), LimitClass::None);
        assert_eq!(
            catalog.route("rail.undrain").and_then(|r| r.cannot("rail.undrain")).as_deref(),
            Some("this actuator carries out rail.drain, not rail.undrain")
        );
        // The catch-all: local, no limit, and the playbook says not destructive.
        assert_eq!((catalog.scope("webhook.notify"), catalog.destructive("webhook.notify")), (Scope::Local, false));
        assert!(Catalog::default().destructive("node.cordon"));
    }

    #[test]
    fn a_harmless_declaration_is_never_destructive() {
        let catalog = Catalog::new(vec![route("*", true, vec![ActionKindDecl::new("*", &[]).harmless()])]);
        assert!(!catalog.destructive("webhook.notify"));
    }
}
