//! The `log` actuator: writes each action to the daemon's log and changes
//! nothing. For trying a playbook on a live fabric before giving it a real
//! actuator, and as the safe default in examples.

use async_trait::async_trait;
use engine::{Action, Actuator, ActuatorError, Outcome, Plan};
use serde::{Deserialize, Serialize};

/// The `log` actuator's settings: there are none, and any given is an error
/// (a typo must not pass silently).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {}

impl LogConfig {
    /// Builds the actuator `name`.
    pub fn build(&self, name: &str) -> LogActuator {
        LogActuator::new(name)
    }
}

/// Logs each action at info level, with structured fields.
#[derive(Debug, Clone)]
pub struct LogActuator {
    name: String,
}

impl LogActuator {
    /// A log actuator called `name`.
    pub fn new(name: &str) -> LogActuator {
        LogActuator { name: name.to_string() }
    }

    fn request(action: &Action) -> String {
        format!("log {action}")
    }
}

#[async_trait]
impl Actuator for LogActuator {
    fn name(&self) -> &str {
        &self.name
    }

    async fn dry_run(&self, action: &Action) -> Result<Plan, ActuatorError> {
        Ok(Plan { actuator: self.name.clone(), requests: vec![Self::request(action)] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        tracing::info!(
            message = "Action.",
            actuator = %self.name,
            kind = %action.kind,
            verb = action.verb(),
            target = %action.target,
            params = ?action.params,
        );
        Ok(Outcome { summary: format!("logged {action}"), requests: vec![Self::request(action)], prior: None })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use engine::Labels;

    use super::*;

    fn action() -> Action {
        Action {
            kind: "pfcwd.escalate".into(),
            target: Labels::from_pairs([("switch", "leaf-rail3"), ("port", "Ethernet8"), ("queue", "3")]),
            params: BTreeMap::from([("level".to_string(), "1".to_string())]),
        }
    }

    #[tokio::test]
    async fn the_plan_is_one_line_describing_the_action() {
        let plan = LogActuator::new("audit").dry_run(&action()).await.unwrap();
        assert_eq!(plan.actuator, "audit");
        assert_eq!(
            plan.requests,
            ["log pfcwd.escalate {port=\"Ethernet8\",queue=\"3\",switch=\"leaf-rail3\"} (level=1)"]
        );
    }

    #[tokio::test]
    async fn execute_reports_what_the_plan_said() {
        let actuator = LogActuator::new("audit");
        let plan = actuator.dry_run(&action()).await.unwrap();
        let outcome = actuator.execute(&action()).await.unwrap();
        assert_eq!(outcome.requests, plan.requests);
        assert_eq!(
            outcome.summary,
            "logged pfcwd.escalate {port=\"Ethernet8\",queue=\"3\",switch=\"leaf-rail3\"} (level=1)"
        );
        assert_eq!(outcome.prior, None);
    }
}
