//! The `rail` actuator: drains one rail of one node (`rail.drain`) and, as
//! its undo, gives it back.
//!
//! A drain is up to four steps, each turned on by its settings table, run
//! in this order and undone in the reverse one:
//!
//! 1. switch ([`crate::sonic`]): admin-down of the leaf port facing the NIC,
//!    `PORT|<port>` `admin_status = down`, one gNMI Set; undo restores the
//!    value it found;
//! 2. NCCL ([`nccl`]): the NIC's RDMA device added to `NCCL_IB_HCA=^…` in
//!    the environment file job launchers source; running jobs keep their NICs;
//! 3. Slurm ([`slurm`]): node feature `railN` removed, `railN_drained` added;
//! 4. Kubernetes ([`kubernetes`]): label `rocemend.io/rail-N=drained` and
//!    taint `rocemend.io/rail-N-drained:NoSchedule`.
//!
//! When a step fails, the steps already done are undone (newest first)
//! before the error is returned, so a drain is all or nothing.
//!
//! The target carries `node`, `rail` and `plane` (required: the safety
//! policy limits drained rails per plane, and a drain without its plane
//! could slip past it), plus `switch` and `port` for the switch step and
//! `rdma_dev` for the NCCL step.
//!
//! - [`config`]: [`RailConfig`], the user's settings.

pub mod config;
pub mod kubernetes;
pub mod nccl;
pub mod slurm;

pub use config::RailConfig;

use std::path::PathBuf;

use async_trait::async_trait;
use engine::{Action, ActionKindDecl, Actuator, ActuatorError, LimitClass, Outcome, Prior, RequestPlan, Verification};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cordon::check_node;
use crate::cordon::slurm::Slurm;
use crate::sonic::{self, Fields, Sonic};
use crate::target::{label, unsupported};
use kubernetes::Kube;

/// The action kinds the `rail` actuator carries out.
pub fn kinds() -> Vec<ActionKindDecl> {
    // A rail is the fleet's: every node's NIC on it, and the switch ports
    // a switch restarted with its saved configuration brings back up.
    vec![ActionKindDecl::new("rail.drain", &["node", "rail", "plane", "switch", "port", "rdma_dev"])
        .fleet()
        .limited_by(LimitClass::RailDrain)
        .lost_on_switch_restart()]
}

/// The CONFIG_DB table of ports.
pub const PORT_TABLE: &str = "PORT";

/// Drains rails, built from a [`RailConfig`].
#[derive(Debug)]
pub struct RailActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    sonic: Option<Sonic>,
    /// The file and the node it is on.
    nccl: Option<(PathBuf, String)>,
    slurm: Option<Slurm>,
    kube: Option<Kube>,
}

/// The steps of a drain, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Switch,
    Nccl,
    Slurm,
    Kubernetes,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::Switch => "switch",
            Step::Nccl => "nccl",
            Step::Slurm => "slurm",
            Step::Kubernetes => "kubernetes",
        }
    }
}

/// A drain, read from its action.
#[derive(Debug)]
struct Drain<'a> {
    node: &'a str,
    rail: &'a str,
    incident: String,
    action: &'a Action,
}

/// What one step of a drain found before it ran: the drain's prior holds
/// one per step run, in order (`{"step": "switch", "before": …}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", content = "before", rename_all = "lowercase")]
enum Found {
    /// The port's `admin_status` (null when absent).
    Switch(Fields),
    /// The devices the NCCL file excluded.
    Nccl(Vec<String>),
    /// The node's features, and whether it had the rail's feature
    /// (available, active).
    Slurm(SlurmFound),
    /// The rail's label and the node's taints.
    Kubernetes(KubeFound),
}

/// What the Slurm step found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SlurmFound {
    available: Vec<String>,
    active: Vec<String>,
    had: [bool; 2],
}

/// What the Kubernetes step found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct KubeFound {
    label: Option<String>,
    taints: Vec<Value>,
}

impl Found {
    fn step(&self) -> Step {
        match self {
            Found::Switch(_) => Step::Switch,
            Found::Nccl(_) => Step::Nccl,
            Found::Slurm(_) => Step::Slurm,
            Found::Kubernetes(_) => Step::Kubernetes,
        }
    }
}

/// A drain's prior: what each step found, in the order they ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct DrainPrior {
    steps: Vec<Found>,
}

/// A step ready to run: its request, what it found, and what to write.
enum Change {
    Switch { switch: String, port: String, fields: Fields },
    Nccl(nccl::EnvFile),
    Slurm(slurm::Features),
    Kubernetes(Value),
}

impl RailActuator {
    fn steps(&self) -> Vec<Step> {
        let mut steps = Vec::new();
        if self.sonic.is_some() {
            steps.push(Step::Switch);
        }
        if self.nccl.is_some() {
            steps.push(Step::Nccl);
        }
        if self.slurm.is_some() {
            steps.push(Step::Slurm);
        }
        if self.kube.is_some() {
            steps.push(Step::Kubernetes);
        }
        steps
    }

    /// The one place an action is read: a `rail.drain`'s node, rail,
    /// plane and incident, checked.
    fn drain<'a>(&self, action: &'a Action) -> Result<Drain<'a>, ActuatorError> {
        if action.kind != "rail.drain" {
            return Err(unsupported(&self.kinds, &action.kind));
        }
        let node = label(action, "node")?;
        check_node(node).map_err(|e| ActuatorError::Invalid(format!("node name {node:?} is refused: {e}")))?;
        let rail = label(action, "rail")?;
        if rail.is_empty() || rail.len() > 3 || !rail.chars().all(|c| c.is_ascii_digit()) {
            return Err(ActuatorError::Invalid(format!("rail {rail:?} is not a rail number")));
        }
        label(action, "plane").map_err(|_| {
            ActuatorError::Invalid(format!(
                "the target {} has no label \"plane\": a drain must carry its plane so the one-rail-per-plane \
                 limit applies",
                action.target
            ))
        })?;
        let incident = action.params.get("incident").cloned().unwrap_or_else(|| "true".into());
        check_node(&incident)
            .map_err(|e| ActuatorError::Invalid(format!("incident id {incident:?} is refused: {e}")))?;
        Ok(Drain { node, rail, incident, action })
    }

    fn rdma_dev<'a>(&self, d: &Drain<'a>) -> Result<&'a str, ActuatorError> {
        let dev = label(d.action, "rdma_dev")?;
        if dev.is_empty() || dev.len() > 32 || !dev.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(ActuatorError::Invalid(format!("rdma_dev {dev:?} is not an RDMA device name")));
        }
        Ok(dev)
    }

    fn nccl_file(&self, d: &Drain<'_>) -> Result<&PathBuf, ActuatorError> {
        let (path, node) = self.nccl.as_ref().ok_or_else(|| ActuatorError::NotSupported("no [nccl]".into()))?;
        if d.node != node {
            return Err(ActuatorError::NotSupported(format!(
                "{} is for node {:?}, but the NCCL file {} is on {node:?}",
                d.action.kind,
                d.node,
                path.display()
            )));
        }
        Ok(path)
    }

    fn switch_port<'a>(&self, d: &Drain<'a>) -> Result<(&'a str, &'a str), ActuatorError> {
        let (switch, port) = (label(d.action, "switch")?, label(d.action, "port")?);
        sonic::check_name("port", port)?;
        Ok((switch, port))
    }

    /// Reads what `step` would change; the change and what it found.
    async fn prepare(&self, step: Step, d: &Drain<'_>) -> Result<(Change, Found), ActuatorError> {
        match step {
            Step::Switch => {
                let (switch, port) = self.switch_port(d)?;
                let sonic = self.sonic.as_ref().ok_or_else(|| ActuatorError::NotSupported("no [gnmi]".into()))?;
                sonic.address(switch)?;
                let before = sonic.get(switch, PORT_TABLE, port, &["admin_status"]).await?;
                let fields: Fields = [("admin_status".to_string(), Some("down".to_string()))].into();
                let change = Change::Switch { switch: switch.into(), port: port.into(), fields };
                Ok((change, Found::Switch(before)))
            }
            Step::Nccl => {
                let dev = self.rdma_dev(d)?;
                let path = self.nccl_file(d)?;
                let mut file = nccl::read(path)?;
                let before = Found::Nccl(file.excluded.clone());
                if !file.excluded.iter().any(|x| x == dev) {
                    file.excluded.push(dev.to_string());
                }
                Ok((Change::Nccl(file), before))
            }
            Step::Slurm => {
                let slurm = self.slurm.as_ref().ok_or_else(|| ActuatorError::NotSupported("no [slurm]".into()))?;
                let now = slurm::show(slurm, d.node).await?;
                let feature = slurm::rail_feature(d.rail);
                let had = [now.available.contains(&feature), now.active.contains(&feature)];
                let before =
                    Found::Slurm(SlurmFound { available: now.available.clone(), active: now.active.clone(), had });
                Ok((Change::Slurm(now.drained(d.rail)), before))
            }
            Step::Kubernetes => {
                let kube = self.kube.as_ref().ok_or_else(|| ActuatorError::NotSupported("no [kubernetes]".into()))?;
                let view = kube.node(d.node, d.rail).await?;
                let before = Found::Kubernetes(KubeFound { label: view.label.clone(), taints: view.taints.clone() });
                Ok((Change::Kubernetes(Kube::patch(&view, d.rail, Some(&d.incident))), before))
            }
        }
    }

    /// What undoing a step would change, from the current state and what
    /// the drain found.
    async fn prepare_undo(&self, found: &Found, d: &Drain<'_>) -> Result<Change, ActuatorError> {
        match found {
            Found::Switch(before) => {
                let (switch, port) = self.switch_port(d)?;
                Ok(Change::Switch { switch: switch.into(), port: port.into(), fields: before.clone() })
            }
            Found::Nccl(before) => {
                let dev = self.rdma_dev(d)?;
                let mut file = nccl::read(self.nccl_file(d)?)?;
                // Excluded before the drain: someone else's, and it stays.
                if !before.iter().any(|x| x == dev) {
                    file.excluded.retain(|x| x != dev);
                }
                Ok(Change::Nccl(file))
            }
            Found::Slurm(before) => {
                let slurm = self.slurm.as_ref().ok_or_else(|| ActuatorError::NotSupported("no [slurm]".into()))?;
                let now = slurm::show(slurm, d.node).await?;
                Ok(Change::Slurm(now.undrained(d.rail, (before.had[0], before.had[1]))))
            }
            Found::Kubernetes(_) => {
                let kube = self.kube.as_ref().ok_or_else(|| ActuatorError::NotSupported("no [kubernetes]".into()))?;
                let view = kube.node(d.node, d.rail).await?;
                Ok(Change::Kubernetes(Kube::patch(&view, d.rail, None)))
            }
        }
    }

    fn describe(&self, d: &Drain<'_>, change: &Change) -> Result<String, ActuatorError> {
        Ok(match change {
            Change::Switch { switch, port, fields } => self
                .sonic
                .as_ref()
                .map(|s| s.describe(switch, PORT_TABLE, port, fields))
                .transpose()?
                .unwrap_or_default(),
            Change::Nccl(file) => nccl::request(self.nccl_file(d)?, file),
            Change::Slurm(features) => match &self.slurm {
                Some(slurm) => crate::exec::template::display(&slurm::update_argv(slurm, d.node, features)),
                None => String::new(),
            },
            Change::Kubernetes(patch) => self.kube.as_ref().map(|k| k.describe(d.node, patch)).unwrap_or_default(),
        })
    }

    async fn apply(&self, d: &Drain<'_>, change: &Change) -> Result<String, ActuatorError> {
        let missing = || ActuatorError::NotSupported("step not configured".into());
        match change {
            Change::Switch { switch, port, fields } => {
                self.sonic.as_ref().ok_or_else(missing)?.set(switch, PORT_TABLE, port, fields).await
            }
            Change::Nccl(file) => {
                let path = self.nccl_file(d)?;
                nccl::write(path, file)?;
                Ok(nccl::request(path, file))
            }
            Change::Slurm(features) => slurm::set(self.slurm.as_ref().ok_or_else(missing)?, d.node, features).await,
            Change::Kubernetes(patch) => self.kube.as_ref().ok_or_else(missing)?.send(d.node, patch).await,
        }
    }

    async fn verify_step(&self, step: Step, d: &Drain<'_>) -> Result<Verification, ActuatorError> {
        Ok(match step {
            Step::Switch => {
                let (switch, port) = self.switch_port(d)?;
                let sonic = self.sonic.as_ref().ok_or_else(|| ActuatorError::NotSupported("no [gnmi]".into()))?;
                let now = sonic.get(switch, PORT_TABLE, port, &["admin_status"]).await?;
                match now.get("admin_status").cloned().flatten().as_deref() {
                    Some("down") => Verification::InEffect,
                    _ => Verification::NotInEffect,
                }
            }
            Step::Nccl => {
                let dev = self.rdma_dev(d)?;
                let file = nccl::read(self.nccl_file(d)?)?;
                if file.excluded.iter().any(|x| x == dev) {
                    Verification::InEffect
                } else {
                    Verification::NotInEffect
                }
            }
            Step::Slurm => {
                let slurm = self.slurm.as_ref().ok_or_else(|| ActuatorError::NotSupported("no [slurm]".into()))?;
                slurm::verify(&slurm::show(slurm, d.node).await?, d.rail)
            }
            Step::Kubernetes => {
                let kube = self.kube.as_ref().ok_or_else(|| ActuatorError::NotSupported("no [kubernetes]".into()))?;
                kubernetes::verify(&kube.node(d.node, d.rail).await?, d.rail)
            }
        })
    }

    /// The steps a drain's outcome recorded, with what each found, in the order they ran.
    fn recorded(applied: &Outcome) -> Result<Vec<Found>, ActuatorError> {
        let prior = applied.prior.as_ref();
        let prior = prior.ok_or_else(|| ActuatorError::Invalid("the applied outcome records no drain steps".into()))?;
        Ok(prior.read::<DrainPrior>()?.steps)
    }

    /// Undoes `done` (what each step found), newest first; the requests sent.
    async fn undo_steps(&self, d: &Drain<'_>, done: &[Found]) -> Result<Vec<String>, ActuatorError> {
        let mut requests = Vec::new();
        for found in done.iter().rev() {
            let change = self.prepare_undo(found, d).await?;
            requests.push(self.apply(d, &change).await?);
        }
        Ok(requests)
    }
}

#[async_trait]
impl Actuator for RailActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn check_targets(&self) -> Vec<(String, Result<String, ActuatorError>)> {
        match &self.sonic {
            Some(sonic) => sonic.check_switches().await,
            None => Vec::new(),
        }
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        let d = self.drain(action)?;
        let mut requests = Vec::new();
        for step in self.steps() {
            let (change, _) = self.prepare(step, &d).await?;
            requests.push(self.describe(&d, &change)?);
        }
        Ok(RequestPlan { actuator: self.name.clone(), requests })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let d = self.drain(action)?;
        let mut done: Vec<Found> = Vec::new();
        let mut requests = Vec::new();
        for step in self.steps() {
            let result = match self.prepare(step, &d).await {
                Ok((change, before)) => self.apply(&d, &change).await.map(|r| (r, before)),
                Err(e) => Err(e),
            };
            match result {
                Ok((request, before)) => {
                    requests.push(request);
                    done.push(before);
                }
                Err(e) => {
                    let rolled = match self.undo_steps(&d, &done).await {
                        Ok(_) if done.is_empty() => "nothing had been changed".to_string(),
                        Ok(_) => format!("the {} step(s) before it were undone", done.len()),
                        Err(undo) => format!("undoing the steps before it failed too: {undo}"),
                    };
                    let text = format!("rail drain step {}: {e}; {rolled}", step.name());
                    return Err(match e {
                        ActuatorError::Invalid(_) => ActuatorError::Invalid(text),
                        ActuatorError::NotSupported(_) => ActuatorError::NotSupported(text),
                        _ => ActuatorError::Failed(text),
                    });
                }
            }
        }
        let summary = format!(
            "drained rail {} of {} ({})",
            d.rail,
            d.node,
            done.iter().map(|f| f.step().name()).collect::<Vec<_>>().join(", ")
        );
        Ok(Outcome { summary, requests, prior: Some(Prior::of(&DrainPrior { steps: done })?) })
    }

    async fn verify(&self, action: &Action, _applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let d = self.drain(action)?;
        let mut states = Vec::new();
        for step in self.steps() {
            states.push((step, self.verify_step(step, &d).await?));
        }
        if states.iter().all(|(_, v)| *v == Verification::InEffect) {
            return Ok(Verification::InEffect);
        }
        if states.iter().all(|(_, v)| *v == Verification::NotInEffect) {
            return Ok(Verification::NotInEffect);
        }
        let parts: Vec<String> = states.iter().map(|(s, v)| format!("{}: {v:?}", s.name())).collect();
        Ok(Verification::Changed(format!("the drain is only partly in effect ({})", parts.join(", "))))
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        let d = self.drain(action)?;
        let mut requests = Vec::new();
        for found in Self::recorded(applied)?.iter().rev() {
            let change = self.prepare_undo(found, &d).await?;
            requests.push(self.describe(&d, &change)?);
        }
        Ok(RequestPlan { actuator: self.name.clone(), requests })
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let d = self.drain(action)?;
        let done = Self::recorded(applied)?;
        let requests = self.undo_steps(&d, &done).await?;
        Ok(Outcome { summary: format!("gave rail {} of {} back", d.rail, d.node), requests, prior: None })
    }
}
