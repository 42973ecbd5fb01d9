//! The Slurm step of a rail drain: node features, through `scontrol`.
//!
//! A drained rail `N` takes the feature `railN` off the node (jobs that ask
//! for the rail with `--constraint=railN` no longer land there) and adds
//! `railN_drained` (visible in `sinfo -o %f`, and to prologs). Undo does the
//! reverse for this rail only: it removes `railN_drained` and gives `railN`
//! back if the node had it, leaving other rails' features alone.
//!
//! `scontrol update NodeName=<node> AvailableFeatures=<list> ActiveFeatures=<list>`
//! sets both lists (Slurm requires active ⊆ available); they are read back
//! from `scontrol show node`.

use engine::{ActuatorError, Verification};

use crate::cordon::slurm::Slurm;
use crate::error::excerpt;
use crate::exec::template::display;
use crate::ParseError;

/// A node's feature lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    /// `AvailableFeatures=`.
    pub available: Vec<String>,
    /// `ActiveFeatures=`.
    pub active: Vec<String>,
}

fn list(output: &str, key: &str) -> Vec<String> {
    let value = output.split_whitespace().find_map(|w| w.strip_prefix(key)).unwrap_or("");
    if value == "(null)" {
        return Vec::new();
    }
    value.split(',').filter(|f| !f.is_empty()).map(str::to_string).collect()
}

/// Parses the feature lists of `scontrol show node`.
pub fn parse(output: &str) -> Result<Features, ParseError> {
    if !output.contains("NodeName=") {
        return Err(ParseError::MissingField { command: "scontrol", field: "NodeName=", excerpt: excerpt(output) });
    }
    // Older Slurm prints `Features=` for the available list.
    let mut available = list(output, "AvailableFeatures=");
    if available.is_empty() {
        available = list(output, "Features=");
    }
    Ok(Features { available, active: list(output, "ActiveFeatures=") })
}

/// The feature a rail's drain removes.
pub fn rail_feature(rail: &str) -> String {
    format!("rail{rail}")
}

/// The feature a rail's drain adds.
pub fn drained_feature(rail: &str) -> String {
    format!("rail{rail}_drained")
}

fn change(list: &[String], remove: &str, add: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = list.iter().filter(|f| f.as_str() != remove).cloned().collect();
    if let Some(add) = add {
        if !out.iter().any(|f| f == add) {
            out.push(add.to_string());
        }
    }
    out
}

impl Features {
    /// The lists after draining `rail`.
    pub fn drained(&self, rail: &str) -> Features {
        let (feature, drained) = (rail_feature(rail), drained_feature(rail));
        Features {
            available: change(&change(&self.available, &feature, None), "", Some(&drained)),
            active: change(&change(&self.active, &feature, None), "", Some(&drained)),
        }
    }

    /// The lists after un-draining `rail`; `had` says whether the node had
    /// `railN` (available, active) before the drain.
    pub fn undrained(&self, rail: &str, had: (bool, bool)) -> Features {
        let (feature, drained) = (rail_feature(rail), drained_feature(rail));
        let back = |list: &[String], had: bool| change(list, &drained, had.then_some(feature.as_str()));
        Features { available: back(&self.available, had.0), active: back(&self.active, had.1) }
    }
}

/// The argv that sets `features` on `node`.
pub fn update_argv(slurm: &Slurm, node: &str, features: &Features) -> Vec<String> {
    slurm.argv(&[
        "update".into(),
        format!("NodeName={node}"),
        format!("AvailableFeatures={}", features.available.join(",")),
        format!("ActiveFeatures={}", features.active.join(",")),
    ])
}

/// Reads the node's features.
pub async fn show(slurm: &Slurm, node: &str) -> Result<Features, ActuatorError> {
    let out = slurm.run(&slurm.argv(&["show".into(), "node".into(), node.into()])).await?;
    parse(&out).map_err(|e| ActuatorError::Failed(e.to_string()))
}

/// Sets `features` on `node`; the request text.
pub async fn set(slurm: &Slurm, node: &str, features: &Features) -> Result<String, ActuatorError> {
    let argv = update_argv(slurm, node, features);
    slurm.run(&argv).await?;
    Ok(display(&argv))
}

/// In effect when `railN_drained` is active and `railN` is gone.
pub fn verify(now: &Features, rail: &str) -> Verification {
    let has = |f: &str| now.active.iter().any(|x| x == f);
    match (has(&drained_feature(rail)), has(&rail_feature(rail))) {
        (true, false) => Verification::InEffect,
        (false, _) => Verification::NotInEffect,
        (true, true) => {
            Verification::Changed(format!("the node has both {} and {}", rail_feature(rail), drained_feature(rail)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_are_read_changed_for_one_rail_and_given_back() {
        let out = "NodeName=n Arch=x86_64\n   AvailableFeatures=gpu,rail1,rail3\n   ActiveFeatures=gpu,rail1,rail3\n";
        let f = parse(out).unwrap();
        assert_eq!(f.available, ["gpu", "rail1", "rail3"]);
        let d = f.drained("3");
        assert_eq!(d.available, ["gpu", "rail1", "rail3_drained"]);
        assert_eq!(verify(&d, "3"), Verification::InEffect);
        assert_eq!(d.undrained("3", (true, true)).available, ["gpu", "rail1", "rail3"]);
        let none = parse("NodeName=n\n   AvailableFeatures=(null)\n   ActiveFeatures=(null)\n").unwrap();
        assert!(none.available.is_empty() && none.active.is_empty());
        assert_eq!(none.drained("0").active, ["rail0_drained"]);
        assert!(none.drained("0").undrained("0", (false, false)).active.is_empty());
        assert_eq!(verify(&none, "0"), Verification::NotInEffect);
        let err = parse("Node n not found").unwrap_err();
        assert!(matches!(err, ParseError::MissingField { command: "scontrol", field: "NodeName=", .. }), "{err:?}");
        assert_eq!(err.to_string(), "no NodeName= in scontrol's output \"Node n not found\"");
    }
}
