//! The `pfcwd` actuator: escalates the PFC watchdog of the switch port that
//! faces a storming NIC (`pfcwd.escalate`), and turns on the NIC's own PFC
//! storm prevention (`pfcwd.prevent`). Both are undone by restoring the
//! exact values they found.
//!
//! - `pfcwd.escalate`, target `switch`, `port` (and `queue`, informative:
//!   SONiC's watchdog is configured per port): parameters `level` (a level
//!   of the playbook's `levels`) and optionally `action`, `detection_time`,
//!   `restoration_time` overriding it. See [`switch`].
//! - `pfcwd.prevent`, target `node`, `netdev`: parameter `timeout`
//!   (`auto` or 80–8000 ms; default from `host.prevention`). See [`host`].
//!
//! - [`config`]: [`PfcwdConfig`], the user's settings.

pub mod config;
pub mod host;
pub mod switch;

pub use config::PfcwdConfig;

use std::collections::BTreeMap;

use async_trait::async_trait;
use engine::{
    Action, ActionKindDecl, Actuator, ActuatorError, Change, Outcome, Prepared, Prior, RequestPlan, Verification,
};

use crate::sonic::Sonic;
use crate::target::{host_netdev, no_host, recorded, side_missing, unsupported};
use host::{Host, Prevention};
use switch::{Escalation, Level, WatchdogChange};

/// The action kinds the `pfcwd` actuator carries out.
pub fn kinds() -> Vec<ActionKindDecl> {
    vec![
        // A switch port's watchdog is shared by every node behind the port,
        // and a switch restarted with its saved configuration loses it.
        ActionKindDecl::new("pfcwd.escalate", &["switch", "port", "queue"]).fleet().lost_on_switch_restart(),
        // The NIC's own storm prevention: this node alone.
        ActionKindDecl::new("pfcwd.prevent", &["node", "netdev"]),
    ]
}

/// Escalates PFC watchdogs and NIC storm prevention, built from a [`PfcwdConfig`].
#[derive(Debug)]
pub struct PfcwdActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    sonic: Option<Sonic>,
    levels: BTreeMap<String, Level>,
    host: Option<Host>,
}

/// A `pfcwd` action, parsed once from its kind, target and parameters.
#[derive(Debug)]
enum Command<'a> {
    /// `pfcwd.escalate`.
    Escalate(Escalation<'a>),
    /// `pfcwd.prevent`: the netdev and the value to set.
    Prevent(&'a str, Prevention),
}

/// What a `pfcwd.prevent` reads and records: the tunable before, and the
/// value it sets.
type PreventionChange = Change<Prevention>;

impl PfcwdActuator {
    pub(crate) fn new(name: &str, sonic: Option<Sonic>, levels: BTreeMap<String, Level>, host: Option<Host>) -> Self {
        PfcwdActuator { name: name.to_string(), kinds: kinds(), sonic, levels, host }
    }

    fn sonic(&self) -> Result<&Sonic, ActuatorError> {
        self.sonic.as_ref().ok_or_else(|| {
            ActuatorError::NotSupported(format!("{} has no [gnmi] settings, so it cannot change switches", self.name))
        })
    }

    /// The one place an action is read: its kind, target and parameters.
    fn parse<'a>(&'a self, action: &'a Action) -> Result<Command<'a>, ActuatorError> {
        match action.kind.as_str() {
            "pfcwd.escalate" => Ok(Command::Escalate(switch::escalation(action, &self.levels)?)),
            "pfcwd.prevent" => {
                let host = self.host.as_ref().ok_or_else(|| no_host(&self.name))?;
                let netdev = host_netdev(action, &self.name, &host.node, &host.netdevs)?;
                let value = match action.params.get("timeout") {
                    Some(text) => Prevention::parse(text).map_err(|e| ActuatorError::Invalid(e.to_string()))?,
                    None => host.prevention,
                };
                Ok(Command::Prevent(netdev, value))
            }
            other => Err(unsupported(&self.kinds, other)),
        }
    }

    fn plan(&self, requests: Vec<String>) -> RequestPlan {
        RequestPlan { actuator: self.name.clone(), requests }
    }
}

#[async_trait]
impl Actuator for PfcwdActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    fn cannot(&self, kind: &str) -> Option<String> {
        side_missing(match kind {
            "pfcwd.escalate" => self.sonic().map(drop),
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
        Ok(self.plan(vec![match self.parse(action)? {
            Command::Prevent(netdev, value) => host::request(netdev, value),
            Command::Escalate(e) => switch::describe(self.sonic()?, &e)?,
        }]))
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prepared = self.prepare(action).await?.expect("pfcwd always reads its target");
        self.apply(action, &prepared.prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<Prepared>, ActuatorError> {
        let prepared = match self.parse(action)? {
            Command::Prevent(netdev, value) => Change { before: host::get(netdev)?, after: value }.prepared()?,
            Command::Escalate(e) => switch::prepare(self.sonic()?, &e).await?.prepared()?,
        };
        Ok(Some(prepared))
    }

    async fn apply(&self, action: &Action, prior: &Prior) -> Result<Outcome, ActuatorError> {
        match self.parse(action)? {
            Command::Prevent(netdev, _) => {
                let change: PreventionChange = prior.read()?;
                host::set(netdev, change.after)?;
                Ok(Outcome {
                    summary: format!("set pfc-prevention-tout of {netdev} to {} (was {})", change.after, change.before),
                    requests: vec![host::request(netdev, change.after)],
                    prior: Some(prior.clone()),
                })
            }
            Command::Escalate(e) => switch::escalate(self.sonic()?, &e, &prior.read()?, prior).await,
        }
    }

    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        match self.parse(action)? {
            Command::Prevent(netdev, value) => {
                let now = host::get(netdev)?;
                let before = applied.map(recorded::<Prevention>).transpose()?.map(|c| c.before);
                Ok(if now == value {
                    Verification::InEffect
                } else if before.is_none_or(|b| b == now) {
                    Verification::NotInEffect
                } else {
                    Verification::Changed(format!("pfc-prevention-tout of {netdev} is now {now}"))
                })
            }
            Command::Escalate(e) => {
                let sonic = self.sonic()?;
                let change: WatchdogChange = match applied {
                    Some(applied) => recorded(applied)?,
                    // Not applied by us: what the escalation would write now.
                    None => switch::prepare(sonic, &e).await?,
                };
                switch::verify(sonic, e.switch, &change.after, applied.map(|_| &change.before)).await
            }
        }
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        Ok(self.plan(vec![match self.parse(action)? {
            Command::Prevent(netdev, _) => host::request(netdev, recorded::<Prevention>(applied)?.before),
            Command::Escalate(e) => switch::describe_undo(self.sonic()?, &e, &recorded(applied)?)?,
        }]))
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        match self.parse(action)? {
            Command::Prevent(netdev, _) => {
                let before = recorded::<Prevention>(applied)?.before;
                let now = host::get(netdev)?;
                host::set(netdev, before)?;
                Ok(Outcome {
                    summary: format!("restored pfc-prevention-tout of {netdev} to {before}"),
                    requests: vec![host::request(netdev, before)],
                    prior: Some(Prior::of(&Change { before: now, after: before })?),
                })
            }
            Command::Escalate(e) => switch::restore(self.sonic()?, &e, recorded(applied)?).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use engine::Labels;

    use super::*;

    fn actuator(levels: &str) -> PfcwdActuator {
        let text = format!("[gnmi]\nswitches = {{ leaf-rail3 = \"127.0.0.1:1\" }}\n{levels}");
        toml::from_str::<PfcwdConfig>(&text).unwrap().build("pfcwd").unwrap()
    }

    fn escalate(params: &[(&str, &str)]) -> Action {
        Action {
            kind: "pfcwd.escalate".into(),
            target: Labels::from_pairs([("switch", "leaf-rail3"), ("port", "Ethernet4"), ("queue", "3")]),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    #[tokio::test]
    async fn levels_and_parameters_become_one_set_and_bad_values_are_refused_before_sending() {
        let pfcwd = actuator("[levels.1]\naction = \"drop\"\n[levels.2]\naction = \"drop\"\ndetection_time = 100\n");
        let plan = pfcwd.dry_run(&escalate(&[("level", "2")])).await.unwrap();
        assert_eq!(
            plan.requests,
            ["gNMI Set to leaf-rail3 (127.0.0.1:1): delete sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4; \
              then gNMI Set to leaf-rail3 (127.0.0.1:1): update sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4 = \
              {\"action\":\"drop\",\"detection_time\":\"100\"}"],
            "the entry replaced as `pfcwd start` does: deleted, then written"
        );
        let plan = pfcwd.dry_run(&escalate(&[("restoration_time", "400")])).await.unwrap();
        assert!(plan.requests[0].ends_with("\"restoration_time\":\"400\"}"), "{:?}", plan.requests);
        for (params, expected) in [
            (vec![("level", "9")], "escalation level \"9\" is not defined"),
            (vec![("detection_time", "50")], "detection_time 50 is out of range 100..5000 ms"),
            (vec![("action", "shout")], "action \"shout\" is not one of"),
        ] {
            let err = pfcwd.execute(&escalate(&params)).await.unwrap_err();
            assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains(expected)), "{params:?}: {err:?}");
        }
        let other =
            Action { target: Labels::from_pairs([("switch", "spine-0"), ("port", "Ethernet0")]), ..escalate(&[]) };
        assert!(matches!(pfcwd.execute(&other).await.unwrap_err(), ActuatorError::Invalid(m) if m.contains("spine-0")));
    }

    #[test]
    fn bad_levels_are_refused_when_built() {
        let text = "[levels.1]\ndetection_time = 6000\n";
        let err = toml::from_str::<PfcwdConfig>(text).unwrap().build("p").unwrap_err();
        assert!(matches!(&err, crate::ActuatorConfigError::Action { setting, .. } if setting == "levels.1"), "{err:?}");
        assert!(err.to_string().contains("levels.1: invalid action: detection_time 6000 is out of range"), "{err}");
    }
}
