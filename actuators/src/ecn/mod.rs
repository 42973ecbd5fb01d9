//! The `ecn` actuator: lowers the ECN marking thresholds of a switch queue
//! (`ecn.lower`) and sets a NIC's DCQCN knobs (`ecn.dcqcn`), and restores
//! the exact previous values as its undo.
//!
//! - `ecn.lower`, by the actuator's `lowers` setting:
//!   - `"queue"` (the default): target `switch`, `port` and `queue` (the
//!     configured lossless queue, 3, when the target has none); the queue
//!     gets its own copy of its WRED profile, lowered, and nothing else
//!     changes. Parameters `factor`, `drop_probability`, `ecn`. See [`queue`].
//!   - `"profile"`: target `switch` (`port` and `queue` absent or `"*"`);
//!     the profile itself is lowered, and with it every queue bound to it
//!     (on SONiC, every lossless queue of the switch). Parameters `factor`,
//!     `profile`, `drop_probability`, `ecn`. See [`switch`].
//!
//!   Verify and undo follow the scope the applied outcome's prior was made
//!   with, so changing `lowers` never strands a lowering already made.
//! - `ecn.dcqcn`, target `node`, `netdev`: parameters `prio`, `np`, `rp`
//!   (`0`/`1`, default `1`) and `np.<param>`, `rp.<param>`. See [`host`].
//!
//! - [`config`]: [`EcnConfig`], the user's settings.

pub mod config;
pub mod host;
pub mod queue;
pub mod switch;

pub use config::{EcnConfig, Scope};

use std::path::PathBuf;

use async_trait::async_trait;
use engine::{Action, Actuator, ActuatorError, Outcome, Plan, Verification};
use serde_json::json;

use crate::sonic::{self, Sonic};
use crate::target::{cannot, host_netdev, label, no_host, verb};
use queue::QueuePrior;

/// Lowers ECN thresholds and sets DCQCN knobs, built from an [`EcnConfig`].
#[derive(Debug)]
pub struct EcnActuator {
    name: String,
    sonic: Option<Sonic>,
    scope: Scope,
    queue: u64,
    profile: String,
    factor: f64,
    floor: u64,
    host: Option<HostSide>,
}

#[derive(Debug)]
struct HostSide {
    node: String,
    root: PathBuf,
    netdevs: Vec<String>,
}

const VERBS: &[&str] = &["lower", "dcqcn"];

impl EcnActuator {
    fn sonic(&self) -> Result<&Sonic, ActuatorError> {
        self.sonic.as_ref().ok_or_else(|| {
            ActuatorError::NotSupported(format!("{} has no [gnmi] settings, so it cannot change switches", self.name))
        })
    }

    fn lowering<'a>(&self, action: &'a Action) -> Result<switch::Lowering<'a>, ActuatorError> {
        switch::lowering(action, &self.profile, self.factor, self.floor)
    }

    fn queue_lowering<'a>(&self, action: &'a Action) -> Result<queue::QueueLowering<'a>, ActuatorError> {
        queue::lowering(action, self.queue, self.factor, self.floor)
    }

    /// A queue lowering's prior, from an applied outcome, checked against
    /// the action; `None` for a profile-scope outcome. What was applied
    /// decides, not the settings now: a lowering made before `lowers` or
    /// `queue` changed is verified and undone as it was made.
    fn queue_prior(&self, action: &Action, applied: &Outcome) -> Result<Option<QueuePrior>, ActuatorError> {
        let Some(prior) = QueuePrior::from_json(applied.prior.as_ref())? else { return Ok(None) };
        prior.check_for(action)?;
        Ok(Some(prior))
    }

    fn knobs(&self, action: &Action) -> Result<(String, Vec<host::Knob>), ActuatorError> {
        let host = self.host.as_ref().ok_or_else(|| no_host(&self.name))?;
        let netdev = host_netdev(action, &self.name, &host.node, &host.netdevs)?;
        Ok((netdev.to_string(), host::knobs(&host.root, netdev, action)?))
    }

    fn plan(&self, requests: Vec<String>) -> Plan {
        Plan { actuator: self.name.clone(), requests }
    }
}

/// The knob values before and after, from an applied `ecn.dcqcn`.
fn knob_values(applied: &Outcome, which: &str, n: usize) -> Result<Vec<String>, ActuatorError> {
    let values: Option<Vec<String>> = applied
        .prior
        .as_ref()
        .and_then(|p| p.get(which))
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect());
    match values {
        Some(v) if v.len() == n => Ok(v),
        _ => Err(ActuatorError::Invalid(format!("the applied outcome has no {which} values of the {n} knob(s)"))),
    }
}

#[async_trait]
impl Actuator for EcnActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn cannot(&self, kind: &str) -> Option<String> {
        cannot(kind, "ecn", VERBS, |verb| match verb {
            "lower" => self.sonic().map(drop),
            _ => self.host.as_ref().map(drop).ok_or_else(|| no_host(&self.name)),
        })
    }

    async fn dry_run(&self, action: &Action) -> Result<Plan, ActuatorError> {
        if verb(action, "ecn", VERBS)? == "dcqcn" {
            let (_, knobs) = self.knobs(action)?;
            return Ok(self.plan(knobs.iter().map(host::request).collect()));
        }
        let sonic = self.sonic()?;
        if self.scope == Scope::Queue {
            let l = self.queue_lowering(action)?;
            let prior = queue::plan(sonic, &l).await?;
            return Ok(self.plan(vec![sonic.describe_changes(l.switch(), &prior.apply_changes())?]));
        }
        switch::check_switch_wide(action)?;
        let l = self.lowering(action)?;
        let (_, after) = switch::plan(sonic, &l).await?;
        Ok(self.plan(vec![sonic.describe(l.switch, switch::TABLE, &l.profile, &after)?]))
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prior = self.prepare(action).await?.expect("ecn always reads its target");
        self.apply(action, &prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<serde_json::Value>, ActuatorError> {
        if verb(action, "ecn", VERBS)? == "dcqcn" {
            let (netdev, knobs) = self.knobs(action)?;
            let before = host::read(&netdev, &knobs)?;
            let after: Vec<String> = knobs.iter().map(|k| k.value.clone()).collect();
            return Ok(Some(json!({ "before": before, "after": after })));
        }
        if self.scope == Scope::Queue {
            let l = self.queue_lowering(action)?;
            return Ok(Some(queue::plan(self.sonic()?, &l).await?.to_json()));
        }
        switch::check_switch_wide(action)?;
        let l = self.lowering(action)?;
        let (before, after) = switch::plan(self.sonic()?, &l).await?;
        Ok(Some(json!({ "before": sonic::to_json(&before), "after": sonic::to_json(&after) })))
    }

    /// Sets exactly what `prepare` computed (`prior["after"]`): a lowering
    /// relative to the values read then, not to whatever the profile holds now.
    async fn apply(&self, action: &Action, prior: &serde_json::Value) -> Result<Outcome, ActuatorError> {
        let applied = Outcome { summary: String::new(), requests: vec![], prior: Some(prior.clone()) };
        if verb(action, "ecn", VERBS)? == "dcqcn" {
            let (netdev, knobs) = self.knobs(action)?;
            let before = knob_values(&applied, "before", knobs.len())?;
            let after = knob_values(&applied, "after", knobs.len())?;
            host::write(&knobs, &after, &before)?;
            return Ok(Outcome {
                summary: format!("set {} DCQCN knob(s) of {netdev}", knobs.len()),
                requests: knobs.iter().map(host::request).collect(),
                prior: Some(prior.clone()),
            });
        }
        if let Some(prior) = self.queue_prior(action, &applied)? {
            let switch = label(action, "switch")?;
            let request = self.sonic()?.set_changes(switch, &prior.apply_changes()).await?;
            return Ok(Outcome {
                summary: prior.applied_summary(switch),
                requests: vec![request],
                prior: Some(prior.to_json()),
            });
        }
        let l = self.lowering(action)?;
        let (_, after) = sonic::before_after(&applied)?;
        let request = self.sonic()?.set(l.switch, switch::TABLE, &l.profile, &after).await?;
        Ok(Outcome {
            summary: format!("lowered {}|{} on {} to {}", switch::TABLE, l.profile, l.switch, sonic::show(&after)),
            requests: vec![request],
            prior: Some(prior.clone()),
        })
    }

    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        if verb(action, "ecn", VERBS)? == "dcqcn" {
            let (netdev, knobs) = self.knobs(action)?;
            let now = host::read(&netdev, &knobs)?;
            let after: Vec<String> = knobs.iter().map(|k| k.value.clone()).collect();
            let before = applied.map(|a| knob_values(a, "before", knobs.len())).transpose()?;
            return Ok(if now == after {
                Verification::InEffect
            } else if before.is_none_or(|b| b == now) {
                Verification::NotInEffect
            } else {
                Verification::Changed(format!("the DCQCN knobs of {netdev} now hold {}", now.join(", ")))
            });
        }
        // Without the applied outcome there is no knowing what "lowered" was.
        let Some(applied) = applied else { return Ok(Verification::Unknown) };
        if let Some(prior) = self.queue_prior(action, applied)? {
            return queue::verify(self.sonic()?, label(action, "switch")?, &prior).await;
        }
        let l = self.lowering(action)?;
        let (before, after) = sonic::before_after(applied)?;
        sonic::verify(self.sonic()?, switch::TABLE, l.switch, &l.profile, &after, Some(&before)).await
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<Plan, ActuatorError> {
        if verb(action, "ecn", VERBS)? == "dcqcn" {
            let (_, mut knobs) = self.knobs(action)?;
            let before = knob_values(applied, "before", knobs.len())?;
            for (k, v) in knobs.iter_mut().zip(before) {
                k.value = v;
            }
            return Ok(self.plan(knobs.iter().rev().map(host::request).collect()));
        }
        if let Some(prior) = self.queue_prior(action, applied)? {
            let switch = label(action, "switch")?;
            return Ok(self.plan(vec![self.sonic()?.describe_changes(switch, &prior.undo_changes())?]));
        }
        let l = self.lowering(action)?;
        let (before, _) = sonic::before_after(applied)?;
        Ok(self.plan(vec![self.sonic()?.describe(l.switch, switch::TABLE, &l.profile, &before)?]))
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        if verb(action, "ecn", VERBS)? == "dcqcn" {
            let (netdev, knobs) = self.knobs(action)?;
            let before = knob_values(applied, "before", knobs.len())?;
            let now = host::read(&netdev, &knobs)?;
            // Restored newest first, the reverse of the order they were set in.
            let mut reversed: Vec<host::Knob> = knobs.iter().rev().cloned().collect();
            for (k, v) in reversed.iter_mut().zip(before.iter().rev()) {
                k.value = v.clone();
            }
            let values: Vec<String> = reversed.iter().map(|k| k.value.clone()).collect();
            let now_reversed: Vec<String> = now.iter().rev().cloned().collect();
            host::write(&reversed, &values, &now_reversed)?;
            return Ok(Outcome {
                summary: format!("restored {} DCQCN knob(s) of {netdev}", knobs.len()),
                requests: reversed.iter().map(host::request).collect(),
                prior: Some(json!({ "before": now, "after": before })),
            });
        }
        if let Some(prior) = self.queue_prior(action, applied)? {
            let switch = label(action, "switch")?;
            let request = self.sonic()?.set_changes(switch, &prior.undo_changes()).await?;
            return Ok(Outcome {
                summary: prior.undone_summary(switch),
                requests: vec![request],
                prior: Some(json!({ "before": prior.after, "after": prior.before })),
            });
        }
        let l = self.lowering(action)?;
        let (before, after) = sonic::before_after(applied)?;
        let request = self.sonic()?.set(l.switch, switch::TABLE, &l.profile, &before).await?;
        Ok(Outcome {
            summary: format!("restored {}|{} on {} to {}", switch::TABLE, l.profile, l.switch, sonic::show(&before)),
            requests: vec![request],
            prior: Some(json!({ "before": sonic::to_json(&after), "after": sonic::to_json(&before) })),
        })
    }
}
