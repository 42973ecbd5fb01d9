//! The `cordon` actuator: takes a node out of the scheduler's hands
//! (`node.cordon`) and, as its undo, gives it back.
//!
//! Which scheduler is a setting (`scheduler = "slurm" | "kubernetes"`):
//!
//! - [`slurm`]: `scontrol update NodeName=<node> State=DRAIN Reason="rocemend: …"`,
//!   read back with `scontrol show node`, undone with `State=RESUME`, but only
//!   while the node's reason is still ours;
//! - [`kubernetes`]: a strategic-merge PATCH of the Node object
//!   (`spec.unschedulable`, a `rocemend.io/cordoned` taint and a
//!   `rocemend.io/incident` annotation), read back with GET, undone by removing
//!   only what rocemend added; optionally the node's pods are evicted through
//!   the Eviction API, which honours PodDisruptionBudgets.
//!
//! The action's target label `node` names the node. Its parameters may carry
//! `reason` (why, e.g. `xid`), `rule` (the rule that asked) and `incident`
//! (an id to find the decision again); the scheduler records them as
//! `rocemend: <reason or rule> <incident>`. Only the prefix `rocemend:` marks
//! the cordon as ours: a node cordoned or drained by anyone else is never
//! resumed, and never re-cordoned over their reason either.
//!
//! - [`config`]: [`CordonConfig`], the user's settings;
//! - [`CordonActuator`]: the actuator, one backend per scheduler.

pub mod config;
pub mod kubernetes;
pub mod slurm;

pub use config::{CordonConfig, KubernetesConfig, Scheduler, SlurmConfig};

use async_trait::async_trait;
use engine::{Action, ActionKindDecl, Actuator, ActuatorError, LimitClass, Outcome, RequestPlan, Verification};

use crate::target::unsupported;
use crate::LabelError;

/// The action kinds the `cordon` actuator carries out.
pub fn kinds() -> Vec<ActionKindDecl> {
    // The scheduler is the fleet's: a node out of it is a node fewer for
    // every job, counted against the cordons per window and the share of
    // the fleet. A node resumed by hand is an operator's doing.
    vec![ActionKindDecl::new("node.cordon", &["node"]).fleet().limited_by(LimitClass::NodeCordon)]
}

/// What marks a drain reason, a taint or an annotation as rocemend's own.
pub const REASON_PREFIX: &str = "rocemend:";

/// The longest reason text accepted, in bytes. Slurm keeps reasons as free
/// text; a long one is a sign of a template gone wrong, and it is shown in
/// every `sinfo -R`.
pub const MAX_REASON_LEN: usize = 200;

/// The longest node name (or incident id) accepted, in bytes: a DNS label's
/// limit, which Kubernetes node names and Slurm host names keep to.
pub const MAX_NODE_LEN: usize = 63;

/// Takes nodes out of scheduling, built from a [`CordonConfig`].
#[derive(Debug)]
pub struct CordonActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    backend: Backend,
}

/// The schedulers a cordon can go through: a closed set.
#[derive(Debug)]
enum Backend {
    Slurm(slurm::Slurm),
    Kubernetes(kubernetes::Kubernetes),
}

impl CordonActuator {
    pub(crate) fn slurm(name: &str, slurm: slurm::Slurm) -> CordonActuator {
        CordonActuator { name: name.to_string(), kinds: kinds(), backend: Backend::Slurm(slurm) }
    }

    pub(crate) fn kubernetes(name: &str, kube: kubernetes::Kubernetes) -> CordonActuator {
        CordonActuator { name: name.to_string(), kinds: kinds(), backend: Backend::Kubernetes(kube) }
    }

    fn plan(&self, requests: Vec<String>) -> RequestPlan {
        RequestPlan { actuator: self.name.clone(), requests }
    }
}

/// The cordon an action asks for: which node, and the text that records why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The node, checked by [`check_node`].
    pub node: String,
    /// `rocemend: <reason or rule> <incident>`.
    pub reason: String,
    /// The incident id, if the action carries one (params `incident`).
    pub incident: Option<String>,
}

impl Request {
    /// Reads `action`: only `node.cordon` is accepted, with a valid `node`
    /// target label and printable parameters.
    pub fn from_action(action: &Action) -> Result<Request, ActuatorError> {
        if action.kind != "node.cordon" {
            return Err(unsupported(&kinds(), &action.kind));
        }
        let node = action
            .target
            .get("node")
            .ok_or_else(|| ActuatorError::Invalid(format!("the target {} has no label \"node\"", action.target)))?;
        check_node(node).map_err(|e| ActuatorError::Invalid(format!("node name {node:?} is refused: {e}")))?;
        let why = action.params.get("reason").or_else(|| action.params.get("rule")).map(String::as_str);
        let incident = action.params.get("incident").cloned();
        if let Some(incident) = &incident {
            check_node(incident)
                .map_err(|e| ActuatorError::Invalid(format!("incident id {incident:?} is refused: {e}")))?;
        }
        let mut reason = REASON_PREFIX.to_string();
        for part in [why.unwrap_or("cordon"), incident.as_deref().unwrap_or("")] {
            if !part.is_empty() {
                reason.push(' ');
                reason.push_str(part);
            }
        }
        if reason.len() > MAX_REASON_LEN {
            return Err(ActuatorError::Invalid(format!(
                "the reason {reason:?} is {} bytes long, above the limit of {MAX_REASON_LEN}",
                reason.len()
            )));
        }
        // Slurm shows the reason on one line and reads `"` specially; a
        // Kubernetes taint value is stricter still (it carries only the incident).
        if let Some(c) = reason.chars().find(|c| c.is_control() || matches!(c, '"' | '\'' | '\\')) {
            return Err(ActuatorError::Invalid(format!("the reason {reason:?} contains {c:?}")));
        }
        Ok(Request { node: node.to_string(), reason, incident })
    }
}

/// Checks a node name (or an incident id) before it reaches a command line
/// or a URL path: 1 to 63 bytes of `A-Z a-z 0-9 . _ -`, not starting with
/// `-` or `.` (which would read as an option or a relative path).
pub fn check_node(name: &str) -> Result<(), LabelError> {
    if name.is_empty() {
        return Err(LabelError::Empty);
    }
    if name.len() > MAX_NODE_LEN {
        return Err(LabelError::TooLong { len: name.len(), max: MAX_NODE_LEN });
    }
    if let Some(found) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        return Err(LabelError::Char { found, allowed: "only A-Z a-z 0-9 . _ - are allowed" });
    }
    if let Some(found) = name.chars().next().filter(|c| matches!(c, '-' | '.')) {
        return Err(LabelError::Leading { found });
    }
    Ok(())
}

#[async_trait]
impl Actuator for CordonActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        let request = Request::from_action(action)?;
        Ok(self.plan(match &self.backend {
            Backend::Slurm(s) => s.plan_cordon(&request),
            Backend::Kubernetes(k) => k.plan_cordon(&request),
        }))
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let request = Request::from_action(action)?;
        match &self.backend {
            Backend::Slurm(s) => s.cordon(&request).await,
            Backend::Kubernetes(k) => k.cordon(&request).await,
        }
    }

    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let request = Request::from_action(action)?;
        match &self.backend {
            Backend::Slurm(s) => s.verify(&request).await,
            Backend::Kubernetes(k) => k.verify(&request, applied).await,
        }
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        let request = Request::from_action(action)?;
        Ok(self.plan(match &self.backend {
            Backend::Slurm(s) => s.plan_resume(&request),
            Backend::Kubernetes(k) => k.plan_uncordon(&request, applied)?,
        }))
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let request = Request::from_action(action)?;
        match &self.backend {
            Backend::Slurm(s) => s.resume(&request).await,
            Backend::Kubernetes(k) => k.uncordon(&request, applied).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use engine::Labels;

    use super::*;

    fn action(node: &str, params: &[(&str, &str)]) -> Action {
        Action {
            kind: "node.cordon".into(),
            target: Labels::from_pairs([("node", node)]),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn the_reason_names_the_cause_and_the_incident() {
        let r = Request::from_action(&action("gpu-07", &[("reason", "xid"), ("incident", "inc-42")])).unwrap();
        assert_eq!(r.reason, "rocemend: xid inc-42");
        let r = Request::from_action(&action("gpu-07", &[("rule", "gpu_xid")])).unwrap();
        assert_eq!(r.reason, "rocemend: gpu_xid");
        assert_eq!(r.incident, None);
        let r = Request::from_action(&action("gpu-07", &[])).unwrap();
        assert_eq!(r.reason, "rocemend: cordon");
    }

    #[test]
    fn node_names_are_refused_with_what_is_wrong() {
        assert_eq!(check_node("gpu-07.rack3"), Ok(()));
        assert_eq!(check_node(""), Err(LabelError::Empty));
        assert_eq!(check_node(&"n".repeat(64)), Err(LabelError::TooLong { len: 64, max: MAX_NODE_LEN }));
        assert!(matches!(check_node("$(id)"), Err(LabelError::Char { found: '$', .. })));
        assert_eq!(check_node("-x"), Err(LabelError::Leading { found: '-' }));
        assert_eq!(check_node(".x"), Err(LabelError::Leading { found: '.' }));
        assert_eq!(check_node("a;b").unwrap_err().to_string(), "it contains ';'; only A-Z a-z 0-9 . _ - are allowed");
    }

    #[test]
    fn bad_node_names_and_reasons_are_refused() {
        for node in ["", "-x", ".x", "a b", "a/b", "$(id)", "a;b", &"n".repeat(64)] {
            let err = Request::from_action(&action(node, &[])).unwrap_err();
            assert!(matches!(err, ActuatorError::Invalid(_)), "{node:?}: {err:?}");
        }
        let err = Request::from_action(&action("gpu-07", &[("reason", "a\"b")])).unwrap_err();
        assert!(err.to_string().contains("contains '\"'"), "{err}");
        let err = Request::from_action(&action("gpu-07", &[("incident", "a b")])).unwrap_err();
        assert!(err.to_string().starts_with("invalid action: incident id \"a b\" is refused"), "{err}");
        let other = Action { kind: "link.isolate".into(), ..action("gpu-07", &[]) };
        assert!(matches!(Request::from_action(&other), Err(ActuatorError::NotSupported(_))));
    }
}
