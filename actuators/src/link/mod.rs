//! The `link` actuator: takes a host link down (`link.isolate`) through
//! rtnetlink, and back up as its undo.
//!
//! The action's target names the link: `node` (which must be the node this
//! daemon runs on) and `netdev`. The actuator looks the netdev's index up by
//! name, then clears `IFF_UP` on it (`RTM_SETLINK`); it records whether the
//! link was administratively up before, and the undo raises it again only if
//! it was. Verify reads the flags and `IFLA_OPERSTATE` back: admin-down is
//! the action in effect, admin-up is not.
//!
//! Each call opens its own netlink socket on the calling task's runtime, so
//! it acts in the network namespace of the thread that calls it — the
//! daemon's own, or a test's namespace.
//!
//! - [`config`]: [`LinkConfig`], the user's settings;
//! - [`LinkActuator`]: the actuator.

pub mod config;

pub use config::LinkConfig;

use std::time::Duration;

use async_trait::async_trait;
use engine::{
    Action, ActionKindDecl, Actuator, ActuatorError, LimitClass, Outcome, Prepared, Prior, RequestPlan, Verification,
};
use net::link::Handle;
use net::NetError;
use serde::{Deserialize, Serialize};

pub use crate::target::{check_netdev, MAX_NETDEV_LEN};
use crate::target::{label, unsupported};
pub use net::link::LinkState;

/// The action kinds the `link` actuator carries out.
pub fn kinds() -> Vec<ActionKindDecl> {
    // A host link down takes the switch port at its other end out too:
    // counted against the ports of that switch isolated at once.
    vec![ActionKindDecl::new("link.isolate", &["node", "netdev"]).limited_by(LimitClass::SwitchPortIsolation)]
}

/// Takes host links down and up, built from a [`LinkConfig`].
#[derive(Debug)]
pub struct LinkActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    node: String,
    netdevs: Vec<String>,
    timeout: Duration,
}

impl LinkActuator {
    fn new(name: &str, node: String, netdevs: Vec<String>, timeout: Duration) -> LinkActuator {
        LinkActuator { name: name.to_string(), kinds: kinds(), node, netdevs, timeout }
    }

    /// How long one netlink request may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The one place an action is read: the netdev a `link.isolate` is
    /// about, checked against the node and the allow list.
    fn netdev<'a>(&self, action: &'a Action) -> Result<&'a str, ActuatorError> {
        if action.kind != "link.isolate" {
            return Err(unsupported(&self.kinds, &action.kind));
        }
        let label = |name: &str| label(action, name);
        let node = label("node")?;
        if node != self.node {
            return Err(ActuatorError::NotSupported(format!(
                "{} is for node {node:?}, but {} runs on {:?} and changes only its own links",
                action.kind, self.name, self.node
            )));
        }
        let netdev = label("netdev")?;
        check_netdev(netdev).map_err(|e| ActuatorError::Invalid(format!("netdev {netdev:?} is refused: {e}")))?;
        if !self.netdevs.is_empty() && !self.netdevs.iter().any(|n| n == netdev) {
            return Err(ActuatorError::Invalid(format!(
                "netdev {netdev:?} is not one {} may change ({})",
                self.name,
                self.netdevs.join(", ")
            )));
        }
        Ok(netdev)
    }

    fn request(netdev: &str, up: bool) -> String {
        format!("rtnetlink RTM_SETLINK {netdev} {}", if up { "up" } else { "down" })
    }

    fn ms(&self) -> u64 {
        u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX)
    }

    /// Runs `f` with a fresh netlink handle, within the timeout.
    async fn with_handle<T, F>(&self, f: impl FnOnce(Handle) -> F) -> Result<T, ActuatorError>
    where
        F: std::future::Future<Output = Result<T, NetError>>,
    {
        let handle = net::link::connect().map_err(|e| ActuatorError::Failed(e.to_string()))?;
        match tokio::time::timeout(self.timeout, f(handle)).await {
            Err(_) => Err(ActuatorError::Timeout(self.ms())),
            Ok(result) => result.map_err(|e| ActuatorError::Failed(e.to_string())),
        }
    }

    /// Reads the link `netdev`; `None` if there is no such link.
    pub async fn read(&self, netdev: &str) -> Result<Option<LinkState>, ActuatorError> {
        self.with_handle(|handle| async move { net::link::read(&handle, netdev).await }).await
    }

    async fn set(&self, netdev: &str, up: bool) -> Result<LinkState, ActuatorError> {
        self.with_handle(|handle| async move { net::link::set(&handle, netdev, up).await }).await
    }
}

/// A link's administrative state, as a prior records it (`"up"`, `"down"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Admin {
    /// Up.
    Up,
    /// Down.
    Down,
}

impl Admin {
    fn of(up: bool) -> Admin {
        if up {
            Admin::Up
        } else {
            Admin::Down
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Admin::Up => "up",
            Admin::Down => "down",
        }
    }
}

/// One side of an isolation's prior: `{"admin": "up"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminState {
    /// The administrative state.
    pub admin: Admin,
}

/// What an isolation reads and records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LinkPrior {
    /// The link's admin state before and after (down), and its operational
    /// state before, for people.
    Isolated {
        /// Before.
        before: AdminState,
        /// After: down.
        after: AdminState,
        /// The operational state before.
        oper: Admin,
    },
    /// What older versions recorded: the admin state before, alone.
    Before {
        /// The administrative state before.
        admin: Admin,
    },
}

impl LinkPrior {
    /// The prior of an isolation of a link found in `state`.
    fn isolating(state: &LinkState) -> LinkPrior {
        LinkPrior::Isolated {
            before: AdminState { admin: Admin::of(state.admin_up) },
            after: AdminState { admin: Admin::Down },
            oper: Admin::of(state.oper_up),
        }
    }

    /// Whether the link was administratively up before.
    fn was_up(&self) -> bool {
        let before = match self {
            LinkPrior::Isolated { before, .. } => before.admin,
            LinkPrior::Before { admin } => *admin,
        };
        before == Admin::Up
    }

    fn prepared(&self) -> Result<Prepared, ActuatorError> {
        match self {
            LinkPrior::Isolated { before, after, .. } => Prepared::from_record(self, before, after),
            LinkPrior::Before { .. } => Err(ActuatorError::Invalid("an isolation records the state after too".into())),
        }
    }
}

/// Whether the outcome of an isolate says the link was administratively up
/// before; an outcome without a prior says it was not.
fn was_up(applied: &Outcome) -> Result<bool, ActuatorError> {
    applied.prior.as_ref().map(|p| p.read::<LinkPrior>().map(|p| p.was_up())).transpose().map(|up| up.unwrap_or(false))
}

#[async_trait]
impl Actuator for LinkActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        let netdev = self.netdev(action)?;
        Ok(RequestPlan { actuator: self.name.clone(), requests: vec![Self::request(netdev, false)] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prepared = self.prepare(action).await?.expect("the link actuator always reads the link");
        self.apply(action, &prepared.prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<Prepared>, ActuatorError> {
        let netdev = self.netdev(action)?;
        let state = self.read(netdev).await?.ok_or_else(|| ActuatorError::Invalid(format!("no link {netdev}")))?;
        LinkPrior::isolating(&state).prepared().map(Some)
    }

    async fn apply(&self, action: &Action, prior: &Prior) -> Result<Outcome, ActuatorError> {
        let netdev = self.netdev(action)?;
        let recorded: Option<LinkPrior> = prior.read().ok();
        tracing::info!(message = "Taking link down.", actuator = %self.name, netdev, action = %action);
        let before = self.set(netdev, false).await?;
        let was = match recorded {
            Some(LinkPrior::Isolated { before, .. }) => before.admin,
            _ => Admin::of(before.admin_up),
        };
        Ok(Outcome {
            summary: format!("took {netdev} down (was admin {})", was.as_str()),
            requests: vec![Self::request(netdev, false)],
            prior: Some(prior.clone()),
        })
    }

    async fn verify(&self, action: &Action, _applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let netdev = self.netdev(action)?;
        Ok(match self.read(netdev).await? {
            None => Verification::Changed(format!("link {netdev} no longer exists")),
            Some(link) if !link.admin_up => Verification::InEffect,
            Some(_) => Verification::NotInEffect,
        })
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        let netdev = self.netdev(action)?;
        let requests = if was_up(applied)? { vec![Self::request(netdev, true)] } else { Vec::new() };
        Ok(RequestPlan { actuator: self.name.clone(), requests })
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let netdev = self.netdev(action)?;
        if !was_up(applied)? {
            // It was down before we took it down: down is its previous state.
            return Ok(Outcome {
                summary: format!("{netdev} was down before the isolate; left down"),
                requests: Vec::new(),
                prior: None,
            });
        }
        tracing::info!(message = "Bringing link up.", actuator = %self.name, netdev, action = %action);
        let before = self.set(netdev, true).await?;
        Ok(Outcome {
            summary: format!("brought {netdev} up"),
            requests: vec![Self::request(netdev, true)],
            prior: Some(Prior::of(&LinkPrior::isolating(&before))?),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use engine::Labels;

    use super::*;
    use crate::LabelError;

    fn actuator() -> LinkActuator {
        LinkConfig { node: Some("gpu-07".into()), netdevs: vec!["eth2".into()], ..Default::default() }
            .build("link")
            .unwrap()
    }

    fn isolate(node: &str, netdev: &str) -> Action {
        Action {
            kind: "link.isolate".into(),
            target: Labels::from_pairs([("node", node), ("netdev", netdev)]),
            params: BTreeMap::new(),
        }
    }

    #[test]
    fn netdev_names_are_checked_like_the_kernel_does() {
        assert_eq!(check_netdev("ens1f0np0"), Ok(()));
        assert_eq!(check_netdev(""), Err(LabelError::Empty));
        assert_eq!(check_netdev("averyveryverylongname"), Err(LabelError::TooLong { len: 21, max: 15 }));
        assert!(matches!(check_netdev("a/b"), Err(LabelError::Char { found: '/', .. })));
        assert!(matches!(check_netdev("a b"), Err(LabelError::Char { found: ' ', .. })));
        assert_eq!(check_netdev(".."), Err(LabelError::Dots));
    }

    #[tokio::test]
    async fn only_allowed_links_of_this_node_are_planned() {
        let link = actuator();
        let plan = link.dry_run(&isolate("gpu-07", "eth2")).await.unwrap();
        assert_eq!(plan.requests, ["rtnetlink RTM_SETLINK eth2 down"]);
        let err = link.dry_run(&isolate("gpu-08", "eth2")).await.unwrap_err();
        assert!(matches!(err, ActuatorError::NotSupported(_)), "{err:?}");
        let err = link.execute(&isolate("gpu-07", "eth0")).await.unwrap_err();
        assert_eq!(err, ActuatorError::Invalid("netdev \"eth0\" is not one link may change (eth2)".into()));
        let err = link.dry_run(&isolate("gpu-07", "../x")).await.unwrap_err();
        assert!(matches!(err, ActuatorError::Invalid(_)), "{err:?}");
    }

    #[tokio::test]
    async fn the_undo_raises_only_a_link_that_was_up() {
        let link = actuator();
        let action = isolate("gpu-07", "eth2");
        let was = |admin: &str| Outcome {
            summary: String::new(),
            requests: Vec::new(),
            prior: Some(Prior::from_json(serde_json::json!({ "admin": admin }))),
        };
        assert_eq!(link.dry_run_undo(&action, &was("up")).await.unwrap().requests, ["rtnetlink RTM_SETLINK eth2 up"]);
        assert!(link.dry_run_undo(&action, &was("down")).await.unwrap().requests.is_empty());
        assert!(link.undo(&action, &was("down")).await.unwrap().requests.is_empty());
    }
}
