//! How far a rule's findings may go: one mode for the global switch, the
//! playbook's per-rule setting and the rule's own declaration. The most
//! conservative of the three applies.

use serde::{Deserialize, Serialize};

/// How far decisions may go, from the boldest to the most conservative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Carry actions out.
    Enforce,
    /// Ask the actuator exactly what it would send, and record that.
    DryRun,
    /// Decide and record; never touch an actuator.
    Shadow,
    /// Do not evaluate the rule at all (a rule or a playbook's setting; as
    /// a dispatch mode it records only, like `shadow`).
    Off,
}

impl Mode {
    /// The more conservative of two modes.
    pub fn at_most(self, other: Mode) -> Mode {
        self.max(other)
    }

    /// The mode a decision is made in: `off` reaches the dispatcher only
    /// from a global setting, and records like `shadow`.
    pub fn for_dispatch(self) -> Mode {
        self.min(Mode::Shadow)
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::DryRun => "dry-run",
            Mode::Shadow => "shadow",
            Mode::Off => "off",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that names no mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode {0:?}: expected enforce, dry-run, shadow or off")]
pub struct UnknownMode(pub String);

impl std::str::FromStr for Mode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Mode, UnknownMode> {
        match s {
            "enforce" => Ok(Mode::Enforce),
            "dry-run" => Ok(Mode::DryRun),
            "shadow" => Ok(Mode::Shadow),
            "off" => Ok(Mode::Off),
            other => Err(UnknownMode(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_conservative_mode_wins_and_off_records_like_shadow() {
        assert_eq!(Mode::Enforce.at_most(Mode::DryRun), Mode::DryRun);
        assert_eq!(Mode::Shadow.at_most(Mode::DryRun), Mode::Shadow);
        assert_eq!(Mode::Off.at_most(Mode::Enforce).for_dispatch(), Mode::Shadow);
        assert_eq!(Mode::DryRun.for_dispatch(), Mode::DryRun);
        for m in [Mode::Enforce, Mode::DryRun, Mode::Shadow, Mode::Off] {
            assert_eq!(m.as_str().parse::<Mode>(), Ok(m));
            assert_eq!(serde_json::to_value(m).unwrap(), serde_json::json!(m.as_str()));
        }
    }
}
