//! The read-back printed after each switch action of `rocemend demo`: the
//! actuator's own verify, and the CONFIG_DB fields it changed, read over
//! gNMI from the simulated leaves.

use std::sync::Arc;

use actuators::sonic::config::SwitchList;
use actuators::sonic::{Sonic, SonicConfig};
use engine::dispatch::ActuatorRoute;
use engine::policy::kind_matches;
use engine::{Action, Outcome, Topology};

/// What is read back after a switch action: the actuator's own verify, and
/// the CONFIG_DB fields it changed, read over gNMI.
pub struct ReadBack {
    routes: Vec<ActuatorRoute>,
    sonic: Sonic,
}

impl ReadBack {
    /// Read-backs through `routes` (the playbook's actuators) and `sonic`.
    pub fn new(routes: Vec<ActuatorRoute>, sonic: Sonic) -> Arc<ReadBack> {
        Arc::new(ReadBack { routes, sonic })
    }

    /// A gNMI client of every switch of `inventory` (the served leaves),
    /// for the read-backs.
    pub fn client(inventory: &Topology) -> anyhow::Result<Sonic> {
        let config = SonicConfig {
            switches: SwitchList::Names(vec!["*".into()]),
            timeout: std::time::Duration::from_secs(2),
            credentials_file: None,
            tls: None,
            path_style: None,
            redis: Vec::new(),
        };
        config.build(Some(inventory)).map_err(|e| anyhow::anyhow!(e))
    }

    /// The table, key and fields a switch action changes; `None` for other actions.
    fn entry(action: &Action) -> Option<(&'static str, String, Vec<&'static str>)> {
        let port = || action.target.get("port").map(str::to_string);
        match action.kind.as_str() {
            "pfcwd.escalate" => Some(("PFC_WD", port()?, vec!["action", "detection_time", "restoration_time"])),
            "rail.drain" => Some(("PORT", port()?, vec!["admin_status"])),
            "ecn.lower" => {
                // A queue's lowering is a copy of its profile bound to it; a
                // switch-wide one (port "*" or none) is the profile itself.
                let profile = match (action.target.get("port"), action.params.get("profile")) {
                    (Some(port), None) if port != "*" => actuators::ecn::queue::copy_name(
                        port,
                        action.target.get("queue").and_then(|q| q.parse().ok()).unwrap_or(3),
                    ),
                    (_, profile) => profile.cloned().unwrap_or_else(|| "AZURE_LOSSLESS".into()),
                };
                Some((
                    "WRED_PROFILE",
                    profile,
                    vec!["green_min_threshold", "green_max_threshold", "green_drop_probability", "ecn"],
                ))
            }
            _ => None,
        }
    }

    /// One line: the actuator's verification against `applied` (when given)
    /// and the values now on the switch; `None` for actions off the switches.
    pub async fn line(&self, action: &Action, applied: Option<&Outcome>) -> Option<String> {
        let (table, key, fields) = Self::entry(action)?;
        let switch = action.target.get("switch")?;
        let values = match self.sonic.get(switch, table, &key, &fields).await {
            Ok(values) => actuators::sonic::show(&values),
            Err(e) => format!("read failed: {e}"),
        };
        let Some(applied) = applied else {
            return Some(format!("read back after undo: {table}|{key} on {switch}: {values}"));
        };
        let route = self.routes.iter().find(|r| kind_matches(&r.pattern, &action.kind))?;
        let verified = match route.actuator.verify(action, Some(applied)).await {
            Ok(v) => format!("{v:?}"),
            Err(e) => format!("verify failed: {e}"),
        };
        Some(format!("read back: {verified}; {table}|{key} on {switch}: {values}"))
    }
}
