//! The settings of an `ecmp` actuator: the switches whose hash it may change.

use serde::{Deserialize, Serialize};

use super::EcmpActuator;
use crate::sonic::SonicConfig;
use crate::ActuatorConfigError;

/// An `ecmp` actuator's settings.
///
/// ```toml
/// [gnmi]
/// switches = ["leaf-su0-rail0", "leaf-su0-rail1"]   # named in the inventory, or "*"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcmpConfig {
    /// How the switches are reached (as for `pfcwd` and `ecn`).
    pub gnmi: SonicConfig,
}

impl EcmpConfig {
    /// Validates the settings and builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<EcmpActuator, ActuatorConfigError> {
        self.build_in(name, None)
    }

    /// [`Self::build`], with the inventory that names the switches.
    pub fn build_in(
        &self,
        name: &str,
        inventory: Option<&engine::Topology>,
    ) -> Result<EcmpActuator, ActuatorConfigError> {
        Ok(EcmpActuator::new(name, self.gnmi.build(inventory)?))
    }
}
