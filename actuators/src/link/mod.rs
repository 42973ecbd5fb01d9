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
use engine::{Action, Actuator, ActuatorError, Outcome, Plan, Verification};
use net::link::Handle;
pub use net::link::LinkState;
use net::NetError;
use serde_json::json;

use crate::LabelError;

/// Takes host links down and up, built from a [`LinkConfig`].
#[derive(Debug)]
pub struct LinkActuator {
    name: String,
    node: String,
    netdevs: Vec<String>,
    timeout: Duration,
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

impl LinkActuator {
    fn new(name: &str, node: String, netdevs: Vec<String>, timeout: Duration) -> LinkActuator {
        LinkActuator { name: name.to_string(), node, netdevs, timeout }
    }

    /// How long one netlink request may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The netdev `action` is about, checked against the node and the allow list.
    fn netdev<'a>(&self, action: &'a Action) -> Result<&'a str, ActuatorError> {
        if action.verb() != "isolate" {
            return Err(ActuatorError::NotSupported(format!(
                "the link actuator only carries out link.isolate, not {}",
                action.kind
            )));
        }
        let label = |name: &str| {
            action
                .target
                .get(name)
                .ok_or_else(|| ActuatorError::Invalid(format!("the target {} has no label {name:?}", action.target)))
        };
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

fn up_down(up: bool) -> &'static str {
    if up {
        "up"
    } else {
        "down"
    }
}

/// An isolation's prior: the link's admin state before and after (down),
/// and its operational state before, for people.
fn prior(state: &LinkState) -> serde_json::Value {
    json!({
        "before": { "admin": up_down(state.admin_up) },
        "after": { "admin": "down" },
        "oper": up_down(state.oper_up),
    })
}

/// Whether the outcome of an isolate says the link was administratively up
/// before (`before.admin`; records of older versions kept it at the top).
fn was_up(applied: &Outcome) -> bool {
    let prior = applied.prior.as_ref();
    let admin = prior.and_then(|p| p.pointer("/before/admin").or_else(|| p.get("admin")));
    admin.and_then(|a| a.as_str()) == Some("up")
}

#[async_trait]
impl Actuator for LinkActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn cannot(&self, kind: &str) -> Option<String> {
        crate::target::cannot(kind, "link", &["isolate"], |_| Ok(()))
    }

    async fn dry_run(&self, action: &Action) -> Result<Plan, ActuatorError> {
        let netdev = self.netdev(action)?;
        Ok(Plan { actuator: self.name.clone(), requests: vec![Self::request(netdev, false)] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prior = self.prepare(action).await?.expect("the link actuator always reads the link");
        self.apply(action, &prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<serde_json::Value>, ActuatorError> {
        let netdev = self.netdev(action)?;
        let state = self.read(netdev).await?.ok_or_else(|| ActuatorError::Invalid(format!("no link {netdev}")))?;
        Ok(Some(prior(&state)))
    }

    async fn apply(&self, action: &Action, prior: &serde_json::Value) -> Result<Outcome, ActuatorError> {
        let netdev = self.netdev(action)?;
        tracing::info!(message = "Taking link down.", actuator = %self.name, netdev, action = %action);
        let before = self.set(netdev, false).await?;
        let was = prior.pointer("/before/admin").and_then(|a| a.as_str()).unwrap_or(up_down(before.admin_up));
        Ok(Outcome {
            summary: format!("took {netdev} down (was admin {was})"),
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

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<Plan, ActuatorError> {
        let netdev = self.netdev(action)?;
        let requests = if was_up(applied) { vec![Self::request(netdev, true)] } else { Vec::new() };
        Ok(Plan { actuator: self.name.clone(), requests })
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let netdev = self.netdev(action)?;
        if !was_up(applied) {
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
            prior: Some(prior(&before)),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use engine::Labels;

    use super::*;

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
            prior: Some(json!({ "admin": admin })),
        };
        assert_eq!(link.dry_run_undo(&action, &was("up")).await.unwrap().requests, ["rtnetlink RTM_SETLINK eth2 up"]);
        assert!(link.dry_run_undo(&action, &was("down")).await.unwrap().requests.is_empty());
        assert!(link.undo(&action, &was("down")).await.unwrap().requests.is_empty());
    }
}
