//! The simulated fabric's host and scheduler side: what `ip link set
//! down` (`link.isolate`), the scheduler's drain (`rail.drain` without a
//! switch side), a cordon (`node.cordon`) and a job's NCCL settings for its
//! next launch (`nccl.qps`, the job's environment file) do on a real
//! cluster, done to the simulator. A notification (`webhook.notify`) has no one to page in
//! the simulator: it is recorded as sent and changes nothing.
//!
//! Switch-side actions are not here: actuators with a `[gnmi]` table run
//! for real against the leaves' gNMI servers ([`super::switches`]).
//!
//! Every action reports its prior state and can be undone and verified,
//! so the dispatcher's undo-on-resolve and verification run for real.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use engine::{Action, ActionKindDecl, Actuator, ActuatorError, Outcome, Prior, RequestPlan, Verification};
use serde_json::json;
use sim::fabric::ecmp::QpUse;
use sim::fabric::Fabric;

/// The fabric, shared by the lockstep loop and the actuator.
pub type SharedFabric = Arc<Mutex<Fabric>>;

/// Locks the fabric; a panic elsewhere does not make it unreadable.
pub fn lock(fabric: &SharedFabric) -> std::sync::MutexGuard<'_, Fabric> {
    fabric.lock().unwrap_or_else(|p| p.into_inner())
}

/// Acts on the simulated fabric.
pub struct FabricActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    fabric: SharedFabric,
}

impl FabricActuator {
    /// The actuator `name` (as the playbook calls it) on `fabric`,
    /// declaring the `kinds` of the actuator it stands in for.
    pub fn new(name: &str, kinds: Vec<ActionKindDecl>, fabric: SharedFabric) -> FabricActuator {
        FabricActuator { name: name.to_string(), kinds, fabric }
    }
}

fn target<'a>(action: &'a Action, key: &str) -> Result<&'a str, ActuatorError> {
    action
        .target
        .get(key)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ActuatorError::Invalid(format!("{} needs target label {key:?}", action.kind)))
}

/// The index of job `name`; invalid when the fabric runs no such job.
fn job_index(fabric: &Fabric, name: &str) -> Result<usize, ActuatorError> {
    fabric.job_index(name).ok_or_else(|| ActuatorError::Invalid(format!("no job {name:?}")))
}

/// The settings after `action` (an `nccl.qps`): raised as the `nccl` actuator raises a
/// job's file (at least its `qps`; its `split` when given).
fn raised(prior: QpUse, action: &Action) -> Result<QpUse, ActuatorError> {
    let (qps, split) = actuators::nccl::requested(action)?;
    Ok(QpUse { qps_per_connection: prior.qps_per_connection.max(qps), split: split.unwrap_or(prior.split) })
}

/// What one action changes on a host or in the scheduler.
enum Change {
    Admin { node: String, netdev: String, up: bool },
    Drain { node: String, rail: u32, drained: bool },
    Cordon { node: String, cordoned: bool },
    NextLaunch { job: String, qps: QpUse },
    Notify { text: String },
}

impl Change {
    fn requests(&self) -> Vec<String> {
        match self {
            Change::Admin { node, netdev, up } => {
                vec![format!("{node}: ip link set {netdev} {}", if *up { "up" } else { "down" })]
            }
            Change::Drain { node, rail, drained } => {
                vec![format!("scheduler: {} rail {rail} on {node}", if *drained { "drain" } else { "restore" })]
            }
            Change::Cordon { node, cordoned } => {
                vec![format!("scheduler: {} {node}", if *cordoned { "cordon" } else { "uncordon" })]
            }
            Change::NextLaunch { job, qps } => vec![format!(
                "job {job}'s NCCL environment: NCCL_IB_QPS_PER_CONNECTION={} NCCL_IB_SPLIT_DATA_ON_QPS={} \
                 for its next launch",
                qps.qps_per_connection,
                u8::from(qps.split)
            )],
            Change::Notify { text } => {
                vec![format!("notify: {text}")]
            }
        }
    }
}

impl FabricActuator {
    /// The change `action` makes, given the fabric as it is, and the state
    /// it replaces (for undo).
    fn plan(&self, action: &Action) -> Result<(Change, serde_json::Value), ActuatorError> {
        let fabric = lock(&self.fabric);
        match action.kind.as_str() {
            "link.isolate" => {
                let node = target(action, "node")?;
                let netdev = target(action, "netdev")?;
                let i = fabric
                    .nic_index(node, netdev)
                    .ok_or_else(|| ActuatorError::Invalid(format!("no link {netdev} on {node}")))?;
                let prior = fabric.nics[i].admin_up;
                Ok((
                    Change::Admin { node: node.into(), netdev: netdev.into(), up: false },
                    json!({ "admin_up": prior }),
                ))
            }
            "rail.drain" => {
                let node = target(action, "node")?;
                let rail: u32 = target(action, "rail")?.parse().map_err(|_| {
                    ActuatorError::Invalid(format!("rail {:?} is not a number", action.target.get("rail")))
                })?;
                Ok((Change::Drain { node: node.into(), rail, drained: true }, json!({ "drained": false })))
            }
            "node.cordon" => {
                let node = target(action, "node")?;
                let prior = fabric.cordoned.contains(node);
                Ok((Change::Cordon { node: node.into(), cordoned: true }, json!({ "cordoned": prior })))
            }
            "nccl.qps" => {
                let job = target(action, "job")?;
                let prior = fabric.jobs[job_index(&fabric, job)?].next_launch;
                let qps = raised(prior, action)?;
                Ok((Change::NextLaunch { job: job.into(), qps }, json!(prior)))
            }
            "webhook.notify" => Ok((Change::Notify { text: action.to_string() }, serde_json::Value::Null)),
            other => Err(ActuatorError::NotSupported(format!(
                "the simulated fabric's hosts and scheduler have no {other}; switch actions need an actuator \
                 with a [gnmi] table (pfcwd, ecn, rail), which the harness points at the simulated leaves"
            ))),
        }
    }

    /// The change that restores `prior`.
    fn restore(&self, action: &Action, prior: &serde_json::Value) -> Result<Change, ActuatorError> {
        let (change, _) = self.plan(action)?;
        Ok(match change {
            Change::Admin { node, netdev, .. } => Change::Admin { node, netdev, up: true },
            Change::Drain { node, rail, .. } => Change::Drain { node, rail, drained: false },
            Change::Cordon { node, .. } => {
                Change::Cordon { node, cordoned: prior.get("cordoned").and_then(|v| v.as_bool()).unwrap_or(false) }
            }
            Change::NextLaunch { job, .. } => Change::NextLaunch {
                job,
                qps: serde_json::from_value(prior.clone()).map_err(|e| {
                    ActuatorError::Invalid(format!("the prior of {action} is not a job's QP settings: {e}"))
                })?,
            },
            notify @ Change::Notify { .. } => notify,
        })
    }

    fn apply(&self, change: &Change) -> Result<(), ActuatorError> {
        let mut fabric = lock(&self.fabric);
        match change {
            Change::Admin { node, netdev, up } => fabric
                .set_admin(node, netdev, *up)
                .map(|_| ())
                .ok_or_else(|| ActuatorError::Invalid(format!("no link {netdev} on {node}"))),
            Change::Drain { node, rail, drained } => {
                fabric.drain(node, *rail, *drained);
                Ok(())
            }
            Change::Cordon { node, cordoned } => fabric
                .cordon(node, *cordoned)
                .map(|_| ())
                .ok_or_else(|| ActuatorError::Invalid(format!("no node {node:?}"))),
            Change::NextLaunch { job, qps } => {
                let j = job_index(&fabric, job)?;
                fabric.jobs[j].next_launch = *qps;
                Ok(())
            }
            Change::Notify { .. } => Ok(()),
        }
    }

    fn in_effect(&self, change: &Change) -> bool {
        let fabric = lock(&self.fabric);
        match change {
            Change::Admin { node, netdev, up } => {
                fabric.nic_index(node, netdev).is_some_and(|i| fabric.nics[i].admin_up == *up)
            }
            Change::Drain { node, rail, drained } => {
                fabric.nics.iter().filter(|n| &n.node == node && n.rail == *rail).all(|n| n.drained == *drained)
            }
            Change::Cordon { node, cordoned } => fabric.cordoned.contains(node) == *cordoned,
            Change::NextLaunch { job, qps } => {
                fabric.job_index(job).is_some_and(|j| fabric.jobs[j].next_launch == *qps)
            }
            Change::Notify { .. } => true,
        }
    }
}

#[async_trait]
impl Actuator for FabricActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        let (change, _) = self.plan(action)?;
        Ok(RequestPlan { actuator: self.name.clone(), requests: change.requests() })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let (change, prior) = self.plan(action)?;
        self.apply(&change)?;
        let requests = change.requests();
        Ok(Outcome {
            summary: format!("{action} on the simulated fabric"),
            requests,
            prior: Some(Prior::from_json(prior)),
        })
    }

    async fn verify(&self, action: &Action, _applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let (change, _) = self.plan(action)?;
        Ok(if self.in_effect(&change) { Verification::InEffect } else { Verification::NotInEffect })
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        let prior = applied.prior.as_ref().map(|p| p.as_json().clone()).unwrap_or_default();
        Ok(RequestPlan { actuator: self.name.clone(), requests: self.restore(action, &prior)?.requests() })
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let prior = applied.prior.as_ref().map(|p| p.as_json().clone()).unwrap_or_default();
        let change = self.restore(action, &prior)?;
        self.apply(&change)?;
        Ok(Outcome {
            summary: format!("undid {action} on the simulated fabric"),
            requests: change.requests(),
            prior: None,
        })
    }
}
