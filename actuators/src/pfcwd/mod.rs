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
use engine::{Action, Actuator, ActuatorError, Outcome, Plan, Verification};
use serde_json::json;

use crate::sonic::Sonic;
use crate::target::{cannot, host_netdev, no_host, verb};
use host::{Host, Prevention};
use switch::Level;

/// Escalates PFC watchdogs and NIC storm prevention, built from a [`PfcwdConfig`].
#[derive(Debug)]
pub struct PfcwdActuator {
    name: String,
    sonic: Option<Sonic>,
    levels: BTreeMap<String, Level>,
    host: Option<Host>,
}

impl PfcwdActuator {
    fn sonic(&self) -> Result<&Sonic, ActuatorError> {
        self.sonic.as_ref().ok_or_else(|| {
            ActuatorError::NotSupported(format!("{} has no [gnmi] settings, so it cannot change switches", self.name))
        })
    }

    /// The host settings and the netdev and value a `pfcwd.prevent` asks for.
    fn prevention<'a>(&self, action: &'a Action) -> Result<(&'a str, Prevention), ActuatorError> {
        let host = self.host.as_ref().ok_or_else(|| no_host(&self.name))?;
        let netdev = host_netdev(action, &self.name, &host.node, &host.netdevs)?;
        let value = match action.params.get("timeout") {
            Some(text) => Prevention::parse(text).map_err(|e| ActuatorError::Invalid(e.to_string()))?,
            None => host.prevention,
        };
        Ok((netdev, value))
    }

    fn plan(&self, requests: Vec<String>) -> Plan {
        Plan { actuator: self.name.clone(), requests }
    }
}

fn prior_prevention(applied: &Outcome) -> Result<Prevention, ActuatorError> {
    let text = applied.prior.as_ref().and_then(|p| p.get("before")).and_then(|v| v.as_str());
    let text =
        text.ok_or_else(|| ActuatorError::Invalid("the applied outcome has no prior pfc-prevention-tout".into()))?;
    Prevention::parse(text).map_err(|e| ActuatorError::Invalid(e.to_string()))
}

#[async_trait]
impl Actuator for PfcwdActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn cannot(&self, kind: &str) -> Option<String> {
        cannot(kind, "pfcwd", &["escalate", "prevent"], |verb| match verb {
            "escalate" => self.sonic().map(drop),
            _ => self.host.as_ref().map(drop).ok_or_else(|| no_host(&self.name)),
        })
    }

    async fn dry_run(&self, action: &Action) -> Result<Plan, ActuatorError> {
        if verb(action, "pfcwd", &["escalate", "prevent"])? == "prevent" {
            let (netdev, value) = self.prevention(action)?;
            return Ok(self.plan(vec![host::request(netdev, value)]));
        }
        let e = switch::escalation(action, &self.levels)?;
        Ok(self.plan(vec![self.sonic()?.describe(e.switch, switch::TABLE, e.port, &e.fields)?]))
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prior = self.prepare(action).await?.expect("pfcwd always reads its target");
        self.apply(action, &prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<serde_json::Value>, ActuatorError> {
        if verb(action, "pfcwd", &["escalate", "prevent"])? == "prevent" {
            let (netdev, value) = self.prevention(action)?;
            let before = host::get(netdev)?;
            return Ok(Some(json!({ "before": before.to_string(), "after": value.to_string() })));
        }
        let e = switch::escalation(action, &self.levels)?;
        Ok(Some(switch::prepare(self.sonic()?, &e).await?))
    }

    async fn apply(&self, action: &Action, prior: &serde_json::Value) -> Result<Outcome, ActuatorError> {
        if verb(action, "pfcwd", &["escalate", "prevent"])? == "prevent" {
            let (netdev, value) = self.prevention(action)?;
            let before = prior.get("before").and_then(|b| b.as_str()).unwrap_or("unknown");
            host::set(netdev, value)?;
            return Ok(Outcome {
                summary: format!("set pfc-prevention-tout of {netdev} to {value} (was {before})"),
                requests: vec![host::request(netdev, value)],
                prior: Some(prior.clone()),
            });
        }
        let e = switch::escalation(action, &self.levels)?;
        switch::escalate(self.sonic()?, &e, prior).await
    }

    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        if verb(action, "pfcwd", &["escalate", "prevent"])? == "prevent" {
            let (netdev, value) = self.prevention(action)?;
            let now = host::get(netdev)?;
            let before = applied.map(prior_prevention).transpose()?;
            return Ok(if now == value {
                Verification::InEffect
            } else if before.is_none_or(|b| b == now) {
                Verification::NotInEffect
            } else {
                Verification::Changed(format!("pfc-prevention-tout of {netdev} is now {now}"))
            });
        }
        let e = switch::escalation(action, &self.levels)?;
        let (wanted, before) = match applied {
            Some(applied) => {
                let (before, after) = crate::sonic::before_after(applied)?;
                (after, Some(before))
            }
            None => (e.fields.clone(), None),
        };
        crate::sonic::verify(self.sonic()?, switch::TABLE, e.switch, e.port, &wanted, before.as_ref()).await
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<Plan, ActuatorError> {
        if verb(action, "pfcwd", &["escalate", "prevent"])? == "prevent" {
            let (netdev, _) = self.prevention(action)?;
            return Ok(self.plan(vec![host::request(netdev, prior_prevention(applied)?)]));
        }
        let e = switch::escalation(action, &self.levels)?;
        let (before, _) = crate::sonic::before_after(applied)?;
        Ok(self.plan(vec![self.sonic()?.describe(e.switch, switch::TABLE, e.port, &before)?]))
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        if verb(action, "pfcwd", &["escalate", "prevent"])? == "prevent" {
            let (netdev, _) = self.prevention(action)?;
            let before = prior_prevention(applied)?;
            let now = host::get(netdev)?;
            host::set(netdev, before)?;
            return Ok(Outcome {
                summary: format!("restored pfc-prevention-tout of {netdev} to {before}"),
                requests: vec![host::request(netdev, before)],
                prior: Some(json!({ "before": now.to_string(), "after": before.to_string() })),
            });
        }
        let e = switch::escalation(action, &self.levels)?;
        let (before, after) = crate::sonic::before_after(applied)?;
        let sonic = self.sonic()?;
        let request = sonic.set(e.switch, switch::TABLE, e.port, &before).await?;
        Ok(Outcome {
            summary: format!("restored the PFC watchdog of {} {} to {}", e.switch, e.port, crate::sonic::show(&before)),
            requests: vec![request],
            prior: Some(json!({ "before": crate::sonic::to_json(&after), "after": crate::sonic::to_json(&before) })),
        })
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
            ["gNMI Set to leaf-rail3 (127.0.0.1:1): update CONFIG_DB@/PFC_WD/Ethernet4/action = \"drop\", \
              update CONFIG_DB@/PFC_WD/Ethernet4/detection_time = \"100\""]
        );
        let plan = pfcwd.dry_run(&escalate(&[("restoration_time", "400")])).await.unwrap();
        assert!(plan.requests[0].ends_with("restoration_time = \"400\""), "{:?}", plan.requests);
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
        assert!(matches!(&err, crate::ConfigError::Action { setting, .. } if setting == "levels.1"), "{err:?}");
        assert!(err.to_string().contains("levels.1: invalid action: detection_time 6000 is out of range"), "{err}");
    }
}
