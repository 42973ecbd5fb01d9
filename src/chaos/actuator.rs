//! The simulated fabric's actuator: what the playbook's switch, host and
//! scheduler actuators do on a real cluster, done to the simulator.
//!
//! Switch-side actions go through the simulated switch's gNMI Set handler
//! ([`chaos::switch::tree::set`]) with the same `SetRequest` a gNMI
//! actuator sends (`sonic-db:CONFIG_DB/PFC_WD/<port>/action`,
//! `…/WRED_PROFILE/AZURE_LOSSLESS/<field>`), so SONiC's validation applies
//! and the fabric reacts to CONFIG_DB exactly as it does when a real gNMI
//! client writes it. Host and scheduler actions (`link.isolate`,
//! `rail.drain`, `node.cordon`) change the fabric directly, as
//! `ip link set down`, the scheduler's drain and a cordon would.
//!
//! Every action reports its prior state and can be undone and verified,
//! so the dispatcher's undo-on-resolve and verification run for real.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chaos::fabric::{Fabric, LOSSLESS_PROFILE};
use chaos::switch::tree;
use engine::{Action, Actuator, ActuatorError, Outcome, Plan, Verification};
use gnmi_proto::gnmi::{SetRequest, Update};
use serde_json::json;

/// The fabric, shared by the lockstep loop and the actuator.
pub type SharedFabric = Arc<Mutex<Fabric>>;

/// Locks the fabric; a panic elsewhere does not make it unreadable.
pub fn lock(fabric: &SharedFabric) -> std::sync::MutexGuard<'_, Fabric> {
    fabric.lock().unwrap_or_else(|p| p.into_inner())
}

/// Acts on the simulated fabric.
pub struct FabricActuator {
    name: String,
    fabric: SharedFabric,
}

impl FabricActuator {
    /// The actuator `name` (as the playbook calls it) on `fabric`.
    pub fn new(name: &str, fabric: SharedFabric) -> FabricActuator {
        FabricActuator { name: name.to_string(), fabric }
    }
}

fn target<'a>(action: &'a Action, key: &str) -> Result<&'a str, ActuatorError> {
    action
        .target
        .get(key)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ActuatorError::Invalid(format!("{} needs target label {key:?}", action.kind)))
}

/// One CONFIG_DB field write, as a gNMI Set.
fn config_set(fields: &[(String, String)]) -> SetRequest {
    let update = fields
        .iter()
        .map(|(path, value)| Update {
            path: Some(gnmi_proto::path::parse_path(path).expect("the paths built here parse")),
            val: Some(gnmi_proto::value::string(value.clone())),
            ..Default::default()
        })
        .collect();
    SetRequest { update, ..Default::default() }
}

/// What one action changes: `(gNMI path, new value)` on a switch, or a host
/// or scheduler change.
enum Change {
    Switch { switch: String, fields: Vec<(String, String)> },
    Admin { node: String, netdev: String, up: bool },
    Drain { node: String, rail: u32, drained: bool },
    Cordon { node: String, cordoned: bool },
}

impl Change {
    fn requests(&self) -> Vec<String> {
        match self {
            Change::Switch { switch, fields } => {
                fields.iter().map(|(p, v)| format!("gNMI Set {switch} update {p} = {v:?}")).collect()
            }
            Change::Admin { node, netdev, up } => {
                vec![format!("{node}: ip link set {netdev} {}", if *up { "up" } else { "down" })]
            }
            Change::Drain { node, rail, drained } => {
                vec![format!("scheduler: {} rail {rail} on {node}", if *drained { "drain" } else { "restore" })]
            }
            Change::Cordon { node, cordoned } => {
                vec![format!("scheduler: {} {node}", if *cordoned { "cordon" } else { "uncordon" })]
            }
        }
    }
}

fn pfc_wd_path(port: &str, field: &str) -> String {
    format!("/sonic-db:CONFIG_DB/PFC_WD/{port}/{field}")
}

fn wred_path(field: &str) -> String {
    format!("/sonic-db:CONFIG_DB/WRED_PROFILE/{LOSSLESS_PROFILE}/{field}")
}

impl FabricActuator {
    /// The change `action` makes, given the fabric as it is, and the state
    /// it replaces (for undo).
    fn plan(&self, action: &Action) -> Result<(Change, serde_json::Value), ActuatorError> {
        let fabric = lock(&self.fabric);
        match action.kind.as_str() {
            "pfcwd.escalate" => {
                let switch = target(action, "switch")?;
                let port = target(action, "port")?;
                let leaf =
                    fabric.leaf(switch).ok_or_else(|| ActuatorError::Invalid(format!("no switch {switch:?}")))?;
                let mode = action.params.get("action").map(String::as_str).unwrap_or("drop");
                let prior = leaf.model.config_entry("PFC_WD", port).and_then(|e| e.get("action").cloned());
                Ok((
                    Change::Switch { switch: switch.into(), fields: vec![(pfc_wd_path(port, "action"), mode.into())] },
                    json!({ "action": prior }),
                ))
            }
            "ecn.lower" => {
                let switch = target(action, "switch")?;
                let leaf =
                    fabric.leaf(switch).ok_or_else(|| ActuatorError::Invalid(format!("no switch {switch:?}")))?;
                let entry = leaf.model.config_entry("WRED_PROFILE", LOSSLESS_PROFILE).unwrap_or_default();
                let factor: f64 = action.params.get("factor").and_then(|f| f.parse().ok()).unwrap_or(0.5);
                if !(0.05..1.0).contains(&factor) {
                    return Err(ActuatorError::Invalid(format!("factor {factor} is not in [0.05, 1)")));
                }
                let mut fields = Vec::new();
                let mut prior = serde_json::Map::new();
                for field in ["green_min_threshold", "green_max_threshold"] {
                    let now: u64 = entry.get(field).and_then(|v| v.parse().ok()).unwrap_or(0);
                    prior.insert(field.into(), json!(now.to_string()));
                    fields.push((wred_path(field), ((now as f64 * factor) as u64).to_string()));
                }
                Ok((Change::Switch { switch: switch.into(), fields }, serde_json::Value::Object(prior)))
            }
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
            other => Err(ActuatorError::NotSupported(format!("the simulated fabric has no {other}"))),
        }
    }

    /// The change that restores `prior`.
    fn restore(&self, action: &Action, prior: &serde_json::Value) -> Result<Change, ActuatorError> {
        let (change, _) = self.plan(action)?;
        let s = |k: &str| prior.get(k).and_then(|v| v.as_str()).map(String::from);
        Ok(match change {
            Change::Switch { switch, fields } if action.kind == "pfcwd.escalate" => {
                let old = s("action").unwrap_or_else(|| "alert".into());
                Change::Switch { switch, fields: fields.into_iter().map(|(p, _)| (p, old.clone())).collect() }
            }
            Change::Switch { switch, fields } => Change::Switch {
                switch,
                fields: fields
                    .into_iter()
                    .filter_map(|(p, _)| {
                        let field = p.rsplit('/').next()?.to_string();
                        Some((p, s(&field)?))
                    })
                    .collect(),
            },
            Change::Admin { node, netdev, .. } => Change::Admin { node, netdev, up: true },
            Change::Drain { node, rail, .. } => Change::Drain { node, rail, drained: false },
            Change::Cordon { node, .. } => {
                Change::Cordon { node, cordoned: prior.get("cordoned").and_then(|v| v.as_bool()).unwrap_or(false) }
            }
        })
    }

    fn apply(&self, change: &Change) -> Result<(), ActuatorError> {
        let mut fabric = lock(&self.fabric);
        match change {
            Change::Switch { switch, fields } => {
                let leaf =
                    fabric.leaf(switch).ok_or_else(|| ActuatorError::Invalid(format!("no switch {switch:?}")))?;
                let request = config_set(fields);
                leaf.model
                    .write(|s| tree::set(s, &request))
                    .map(|_| ())
                    .map_err(|status| ActuatorError::Invalid(format!("{switch} refused the Set: {}", status.message())))
            }
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
        }
    }

    fn in_effect(&self, change: &Change) -> bool {
        let fabric = lock(&self.fabric);
        match change {
            Change::Switch { switch, fields } => fabric.leaf(switch).is_some_and(|leaf| {
                fields.iter().all(|(path, value)| {
                    let mut parts = path.trim_start_matches("/sonic-db:CONFIG_DB/").split('/');
                    let (Some(table), Some(key), Some(field)) = (parts.next(), parts.next(), parts.next()) else {
                        return false;
                    };
                    leaf.model.config_entry(table, key).and_then(|e| e.get(field).cloned()).as_deref() == Some(value)
                })
            }),
            Change::Admin { node, netdev, up } => {
                fabric.nic_index(node, netdev).is_some_and(|i| fabric.nics[i].admin_up == *up)
            }
            Change::Drain { node, rail, drained } => {
                fabric.nics.iter().filter(|n| &n.node == node && n.rail == *rail).all(|n| n.drained == *drained)
            }
            Change::Cordon { node, cordoned } => fabric.cordoned.contains(node) == *cordoned,
        }
    }
}

#[async_trait]
impl Actuator for FabricActuator {
    fn name(&self) -> &str {
        &self.name
    }

    async fn dry_run(&self, action: &Action) -> Result<Plan, ActuatorError> {
        let (change, _) = self.plan(action)?;
        Ok(Plan { actuator: self.name.clone(), requests: change.requests() })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let (change, prior) = self.plan(action)?;
        self.apply(&change)?;
        let requests = change.requests();
        Ok(Outcome { summary: format!("{action} on the simulated fabric"), requests, prior: Some(prior) })
    }

    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let (mut change, _) = self.plan(action)?;
        // Lowered thresholds are relative to what was there before: compare
        // with the prior values the execution reported, scaled.
        if let (Change::Switch { fields, .. }, Some(prior), "ecn.lower") =
            (&mut change, applied.and_then(|a| a.prior.as_ref()), action.kind.as_str())
        {
            let factor: f64 = action.params.get("factor").and_then(|f| f.parse().ok()).unwrap_or(0.5);
            for (path, value) in fields.iter_mut() {
                let field = path.rsplit('/').next().unwrap_or_default();
                if let Some(old) = prior.get(field).and_then(|v| v.as_str()).and_then(|v| v.parse::<u64>().ok()) {
                    *value = ((old as f64 * factor) as u64).to_string();
                }
            }
        }
        Ok(if self.in_effect(&change) { Verification::InEffect } else { Verification::NotInEffect })
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<Plan, ActuatorError> {
        let prior = applied.prior.clone().unwrap_or_default();
        Ok(Plan { actuator: self.name.clone(), requests: self.restore(action, &prior)?.requests() })
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let prior = applied.prior.clone().unwrap_or_default();
        let change = self.restore(action, &prior)?;
        self.apply(&change)?;
        Ok(Outcome {
            summary: format!("undid {action} on the simulated fabric"),
            requests: change.requests(),
            prior: None,
        })
    }
}
