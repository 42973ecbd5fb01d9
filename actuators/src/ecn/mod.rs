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

pub use config::{EcnConfig, Lowers};

use std::path::PathBuf;

use async_trait::async_trait;
use engine::{
    Action, ActionKindDecl, Actuator, ActuatorError, Change, LimitClass, Outcome, Prepared, Prior, RequestPlan,
    Verification,
};

use crate::sonic::{self, Fields, Sonic};
use crate::target::{host_netdev, label, no_host, recorded, side_missing, unsupported};
use queue::QueuePrior;

/// The action kinds the `ecn` actuator carries out.
pub fn kinds() -> Vec<ActionKindDecl> {
    vec![
        // A switch queue's thresholds are shared by every flow through it,
        // and a switch restarted with its saved configuration loses them.
        ActionKindDecl::new("ecn.lower", &["switch", "port", "queue"])
            .fleet()
            .limited_by(LimitClass::SwitchEcnQueue)
            .lost_on_switch_restart(),
        // The NIC's own DCQCN knobs: this node alone.
        ActionKindDecl::new("ecn.dcqcn", &["node", "netdev"]),
    ]
}

/// Lowers ECN thresholds and sets DCQCN knobs, built from an [`EcnConfig`].
#[derive(Debug)]
pub struct EcnActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    sonic: Option<Sonic>,
    lowers: Lowers,
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

/// An `ecn` action, parsed once from its kind, target and parameters.
enum Command<'a> {
    /// `ecn.lower` (the values; how it is made depends on the settings now,
    /// or, once made, on its prior).
    Lower(&'a Action),
    /// `ecn.dcqcn`: the netdev and the knobs to write.
    Dcqcn(String, Vec<host::Knob>),
}

/// What an `ecn.dcqcn` reads and records: the knobs' values before and
/// those it writes, in the knobs' order.
type KnobChange = Change<Vec<String>>;

/// What a profile-scope `ecn.lower` reads and records.
type ProfileChange = Change<Fields>;

impl EcnActuator {
    fn sonic(&self) -> Result<&Sonic, ActuatorError> {
        self.sonic.as_ref().ok_or_else(|| {
            ActuatorError::NotSupported(format!("{} has no [gnmi] settings, so it cannot change switches", self.name))
        })
    }

    /// The one place an action's kind is read.
    fn parse<'a>(&self, action: &'a Action) -> Result<Command<'a>, ActuatorError> {
        match action.kind.as_str() {
            "ecn.lower" => Ok(Command::Lower(action)),
            "ecn.dcqcn" => {
                let host = self.host.as_ref().ok_or_else(|| no_host(&self.name))?;
                let netdev = host_netdev(action, &self.name, &host.node, &host.netdevs)?;
                Ok(Command::Dcqcn(netdev.to_string(), host::knobs(&host.root, netdev, action)?))
            }
            other => Err(unsupported(&self.kinds, other)),
        }
    }

    fn lowering<'a>(&self, action: &'a Action) -> Result<switch::Lowering<'a>, ActuatorError> {
        switch::lowering(action, &self.profile, self.factor, self.floor)
    }

    fn queue_lowering<'a>(&self, action: &'a Action) -> Result<queue::QueueLowering<'a>, ActuatorError> {
        queue::lowering(action, self.queue, self.factor, self.floor)
    }

    /// A queue lowering's plan, on the port's SONiC name: an action naming an alias (`etp2`)
    /// lowers `QUEUE|Ethernet4|<q>` and its copy `ROCEMEND_Ethernet4_<q>`, and its prior keeps
    /// the alias so the same action verifies and undoes it.
    async fn plan_queue(&self, action: &Action) -> Result<(String, QueuePrior), ActuatorError> {
        // Everything the action says is checked before the switch is asked anything.
        self.queue_lowering(action)?;
        let sonic = self.sonic()?;
        let (switch, given) = (label(action, "switch")?, label(action, "port")?);
        let port = sonic.port_name(switch, given).await?;
        let mut named = action.clone();
        named.target.insert("port", port.clone());
        let mut prior = queue::plan(sonic, &self.queue_lowering(&named)?).await?;
        prior.given_port = (port != given).then(|| given.to_string());
        Ok((switch.to_string(), prior))
    }

    /// A queue lowering's prior, from a record, checked against the action;
    /// `None` for a profile-scope record. What was applied decides, not the
    /// settings now: a lowering made before `lowers` or `queue` changed is
    /// verified and undone as it was made.
    fn queue_prior(&self, action: &Action, prior: Option<&Prior>) -> Result<Option<QueuePrior>, ActuatorError> {
        let Some(prior) = QueuePrior::from_prior(prior)? else { return Ok(None) };
        prior.check_for(action)?;
        Ok(Some(prior))
    }

    fn plan(&self, requests: Vec<String>) -> RequestPlan {
        RequestPlan { actuator: self.name.clone(), requests }
    }

    /// Reads a lowering's target as the settings now say to lower it.
    async fn prepare_lowering(&self, action: &Action) -> Result<Prepared, ActuatorError> {
        if self.lowers == Lowers::Queue {
            return self.plan_queue(action).await?.1.prepared();
        }
        switch::check_switch_wide(action)?;
        let l = self.lowering(action)?;
        let (before, after) = switch::plan(self.sonic()?, &l).await?;
        Change { before, after }.prepared()
    }

    /// Sets exactly what the prior says a lowering sets: relative to the
    /// values read then, not to whatever the profile holds now.
    async fn apply_lowering(&self, action: &Action, prior: &Prior) -> Result<Outcome, ActuatorError> {
        if let Some(queue_prior) = self.queue_prior(action, Some(prior))? {
            let switch = label(action, "switch")?;
            let request = self.sonic()?.set_changes(switch, &queue_prior.apply_changes()).await?;
            return Ok(Outcome {
                summary: queue_prior.applied_summary(switch),
                requests: vec![request],
                prior: Some(prior.clone()),
            });
        }
        let l = self.lowering(action)?;
        let change: ProfileChange = prior.read()?;
        let request = self.sonic()?.set(l.switch, switch::TABLE, &l.profile, &change.after).await?;
        Ok(Outcome {
            summary: format!(
                "lowered {}|{} on {} to {}",
                switch::TABLE,
                l.profile,
                l.switch,
                sonic::show(&change.after)
            ),
            requests: vec![request],
            prior: Some(prior.clone()),
        })
    }

    async fn verify_lowering(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        // Without the applied outcome there is no knowing what "lowered" was.
        let Some(applied) = applied else { return Ok(Verification::Unknown) };
        if let Some(prior) = self.queue_prior(action, applied.prior.as_ref())? {
            return queue::verify(self.sonic()?, label(action, "switch")?, &prior).await;
        }
        let l = self.lowering(action)?;
        let change: ProfileChange = recorded(applied)?;
        sonic::verify(self.sonic()?, switch::TABLE, l.switch, &l.profile, &change.after, Some(&change.before)).await
    }

    async fn plan_undo_lowering(&self, action: &Action, applied: &Outcome) -> Result<String, ActuatorError> {
        if let Some(prior) = self.queue_prior(action, applied.prior.as_ref())? {
            return self.sonic()?.describe_changes(label(action, "switch")?, &prior.undo_changes());
        }
        let l = self.lowering(action)?;
        let change: ProfileChange = recorded(applied)?;
        self.sonic()?.describe(l.switch, switch::TABLE, &l.profile, &change.before)
    }

    async fn undo_lowering(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        if let Some(prior) = self.queue_prior(action, applied.prior.as_ref())? {
            let switch = label(action, "switch")?;
            let request = self.sonic()?.set_changes(switch, &prior.undo_changes()).await?;
            let undone = Change { before: prior.after.clone(), after: prior.before.clone() };
            return Ok(Outcome {
                summary: prior.undone_summary(switch),
                requests: vec![request],
                prior: Some(Prior::of(&undone)?),
            });
        }
        let l = self.lowering(action)?;
        let change: ProfileChange = recorded(applied)?;
        let request = self.sonic()?.set(l.switch, switch::TABLE, &l.profile, &change.before).await?;
        Ok(Outcome {
            summary: format!(
                "restored {}|{} on {} to {}",
                switch::TABLE,
                l.profile,
                l.switch,
                sonic::show(&change.before)
            ),
            requests: vec![request],
            prior: Some(Prior::of(&change.reversed())?),
        })
    }
}

/// The knob values an applied `ecn.dcqcn` recorded, checked against the
/// knobs the action sets.
fn knob_change(applied: &Outcome, n: usize) -> Result<KnobChange, ActuatorError> {
    match recorded::<Vec<String>>(applied) {
        Ok(change) if change.before.len() == n && change.after.len() == n => Ok(change),
        _ => Err(ActuatorError::Invalid(format!(
            "the applied outcome has no before and after values of the {n} knob(s)"
        ))),
    }
}

#[async_trait]
impl Actuator for EcnActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    fn cannot(&self, kind: &str) -> Option<String> {
        side_missing(match kind {
            "ecn.lower" => self.sonic().map(drop),
            _ => self.host.as_ref().map(drop).ok_or_else(|| no_host(&self.name)),
        })
    }

    async fn check_targets(&self) -> Vec<(String, Result<String, ActuatorError>)> {
        match &self.sonic {
            Some(sonic) => sonic.check_switches().await,
            None => Vec::new(),
        }
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        let (_, knobs) = match self.parse(action)? {
            Command::Dcqcn(netdev, knobs) => (netdev, knobs),
            Command::Lower(action) => {
                let sonic = self.sonic()?;
                if self.lowers == Lowers::Queue {
                    let (switch, prior) = self.plan_queue(action).await?;
                    return Ok(self.plan(vec![sonic.describe_changes(&switch, &prior.apply_changes())?]));
                }
                switch::check_switch_wide(action)?;
                let l = self.lowering(action)?;
                let (_, after) = switch::plan(sonic, &l).await?;
                return Ok(self.plan(vec![sonic.describe(l.switch, switch::TABLE, &l.profile, &after)?]));
            }
        };
        Ok(self.plan(knobs.iter().map(host::request).collect()))
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prepared = self.prepare(action).await?.expect("ecn always reads its target");
        self.apply(action, &prepared.prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<Prepared>, ActuatorError> {
        let prepared = match self.parse(action)? {
            Command::Dcqcn(netdev, knobs) => {
                let before = host::read(&netdev, &knobs)?;
                Change { before, after: knobs.iter().map(|k| k.value.clone()).collect() }.prepared()?
            }
            Command::Lower(action) => self.prepare_lowering(action).await?,
        };
        Ok(Some(prepared))
    }

    async fn apply(&self, action: &Action, prior: &Prior) -> Result<Outcome, ActuatorError> {
        let (netdev, knobs) = match self.parse(action)? {
            Command::Dcqcn(netdev, knobs) => (netdev, knobs),
            Command::Lower(action) => return self.apply_lowering(action, prior).await,
        };
        let applied = Outcome { summary: String::new(), requests: vec![], prior: Some(prior.clone()) };
        let change = knob_change(&applied, knobs.len())?;
        host::write(&knobs, &change.after, &change.before)?;
        Ok(Outcome {
            summary: format!("set {} DCQCN knob(s) of {netdev}", knobs.len()),
            requests: knobs.iter().map(host::request).collect(),
            prior: Some(prior.clone()),
        })
    }

    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let (netdev, knobs) = match self.parse(action)? {
            Command::Dcqcn(netdev, knobs) => (netdev, knobs),
            Command::Lower(action) => return self.verify_lowering(action, applied).await,
        };
        let now = host::read(&netdev, &knobs)?;
        let after: Vec<String> = knobs.iter().map(|k| k.value.clone()).collect();
        let before = applied.map(|a| knob_change(a, knobs.len())).transpose()?.map(|c| c.before);
        Ok(if now == after {
            Verification::InEffect
        } else if before.is_none_or(|b| b == now) {
            Verification::NotInEffect
        } else {
            Verification::Changed(format!("the DCQCN knobs of {netdev} now hold {}", now.join(", ")))
        })
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        let mut knobs = match self.parse(action)? {
            Command::Dcqcn(_, knobs) => knobs,
            Command::Lower(action) => return Ok(self.plan(vec![self.plan_undo_lowering(action, applied).await?])),
        };
        let before = knob_change(applied, knobs.len())?.before;
        for (k, v) in knobs.iter_mut().zip(before) {
            k.value = v;
        }
        Ok(self.plan(knobs.iter().rev().map(host::request).collect()))
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let (netdev, knobs) = match self.parse(action)? {
            Command::Dcqcn(netdev, knobs) => (netdev, knobs),
            Command::Lower(action) => return self.undo_lowering(action, applied).await,
        };
        let before = knob_change(applied, knobs.len())?.before;
        let now = host::read(&netdev, &knobs)?;
        // Restored newest first, the reverse of the order they were set in.
        let mut reversed: Vec<host::Knob> = knobs.iter().rev().cloned().collect();
        for (k, v) in reversed.iter_mut().zip(before.iter().rev()) {
            k.value = v.clone();
        }
        let values: Vec<String> = reversed.iter().map(|k| k.value.clone()).collect();
        let now_reversed: Vec<String> = now.iter().rev().cloned().collect();
        host::write(&reversed, &values, &now_reversed)?;
        Ok(Outcome {
            summary: format!("restored {} DCQCN knob(s) of {netdev}", knobs.len()),
            requests: reversed.iter().map(host::request).collect(),
            prior: Some(Prior::of(&Change { before: now, after: before })?),
        })
    }
}
