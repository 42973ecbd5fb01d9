//! The host side of `ecn`: the mlx5 DCQCN knobs in sysfs (OFED / DOCA
//! drivers), under `<root>/<netdev>/ecn/`:
//!
//! - `roce_np/enable/<prio>` and `roce_rp/enable/<prio>`: the notification
//!   point (sends CNPs) and the reaction point (slows down on CNPs) for one
//!   priority, `0` or `1`;
//! - `roce_np/<param>` and `roce_rp/<param>`: their parameters
//!   (`cnp_dscp`, `min_time_between_cnps`, `rpg_gd`, …), unsigned integers.
//!
//! The root is `/sys/class/net` on a real node and a temporary directory in
//! tests. Every file's value is read before anything is written; a write
//! that fails rolls the earlier ones back, so the NIC is never left half
//! configured.

use std::path::{Path, PathBuf};

use engine::{Action, ActuatorError};

use crate::target::integer;

/// One knob: its file and the value to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knob {
    /// The file, under the root.
    pub path: PathBuf,
    /// The value.
    pub value: String,
}

/// The request text of a write.
pub fn request(knob: &Knob) -> String {
    format!("write {} = {}", knob.path.display(), knob.value)
}

fn check_param(name: &str) -> Result<(), ActuatorError> {
    if !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        Ok(())
    } else {
        Err(ActuatorError::Invalid(format!("DCQCN parameter {name:?} is refused: only a-z 0-9 _ are allowed")))
    }
}

/// The knobs an `ecn.dcqcn` action sets on `netdev`, in order: the enables,
/// then the parameters (`np.<name>` and `rp.<name>` params).
pub fn knobs(root: &Path, netdev: &str, action: &Action) -> Result<Vec<Knob>, ActuatorError> {
    let prio = action
        .params
        .get("prio")
        .ok_or_else(|| ActuatorError::Invalid(format!("{} needs the parameter prio (0 to 7)", action.kind)))?;
    let prio = integer("prio", prio, 0, 7, "")?;
    let ecn = root.join(netdev).join("ecn");
    let mut out = Vec::new();
    for (param, dir) in [("np", "roce_np"), ("rp", "roce_rp")] {
        let enable = action.params.get(param).map(String::as_str).unwrap_or("1");
        if !matches!(enable, "0" | "1") {
            return Err(ActuatorError::Invalid(format!("{param} {enable:?} is not 0 or 1")));
        }
        out.push(Knob { path: ecn.join(dir).join("enable").join(prio.to_string()), value: enable.to_string() });
    }
    for (key, value) in &action.params {
        let Some((side, name)) = key.split_once('.') else { continue };
        let dir = match side {
            "np" => "roce_np",
            "rp" => "roce_rp",
            _ => return Err(ActuatorError::Invalid(format!("parameter {key:?} is not np.<name> or rp.<name>"))),
        };
        check_param(name)?;
        integer(key, value, 0, u64::from(u32::MAX), "")?;
        out.push(Knob { path: ecn.join(dir).join(name), value: value.trim().to_string() });
    }
    Ok(out)
}

/// Reads each knob's current value.
pub fn read(netdev: &str, knobs: &[Knob]) -> Result<Vec<String>, ActuatorError> {
    knobs
        .iter()
        .map(|k| match std::fs::read_to_string(&k.path) {
            Ok(text) => Ok(text.trim().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ActuatorError::NotSupported(format!(
                "{netdev} has no {} (DCQCN sysfs needs an mlx5 NIC with the OFED/DOCA driver)",
                k.path.display()
            ))),
            Err(e) => Err(ActuatorError::Failed(format!("reading {}: {e}", k.path.display()))),
        })
        .collect()
}

/// Writes `values` to the knobs in order. When one fails, the ones written
/// before it get `before` back, newest first, and the error says both.
pub fn write(knobs: &[Knob], values: &[String], before: &[String]) -> Result<(), ActuatorError> {
    for (i, (knob, value)) in knobs.iter().zip(values).enumerate() {
        if let Err(e) = std::fs::write(&knob.path, format!("{value}\n")) {
            let mut rollback = Vec::new();
            for (k, old) in knobs[..i].iter().zip(before).rev() {
                if let Err(e) = std::fs::write(&k.path, format!("{old}\n")) {
                    rollback.push(format!("{}: {e}", k.path.display()));
                }
            }
            let rolled = if rollback.is_empty() {
                format!("the {i} knob(s) written before it were restored")
            } else {
                format!("restoring the earlier knobs failed too: {}", rollback.join("; "))
            };
            let why = if e.kind() == std::io::ErrorKind::PermissionDenied { " (sysfs needs root)" } else { "" };
            return Err(ActuatorError::Failed(format!("writing {}: {e}{why}; {rolled}", knob.path.display())));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use engine::Labels;

    use super::*;

    fn action(params: &[(&str, &str)]) -> Action {
        Action {
            kind: "ecn.dcqcn".into(),
            target: Labels::from_pairs([("node", "n"), ("netdev", "eth3")]),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn knobs_are_the_enables_then_the_parameters() {
        let root = Path::new("/sys/class/net");
        let knobs = knobs(root, "eth3", &action(&[("prio", "3"), ("np.cnp_dscp", "48"), ("rp", "0")])).unwrap();
        let texts: Vec<String> = knobs.iter().map(request).collect();
        assert_eq!(
            texts,
            [
                "write /sys/class/net/eth3/ecn/roce_np/enable/3 = 1",
                "write /sys/class/net/eth3/ecn/roce_rp/enable/3 = 0",
                "write /sys/class/net/eth3/ecn/roce_np/cnp_dscp = 48",
            ]
        );
        for (params, expected) in [
            (vec![], "needs the parameter prio"),
            (vec![("prio", "8")], "prio 8 is out of range"),
            (vec![("prio", "3"), ("np", "2")], "np \"2\" is not 0 or 1"),
            (vec![("prio", "3"), ("np.../x", "1")], "is refused"),
            (vec![("prio", "3"), ("xx.y", "1")], "is not np.<name>"),
            (vec![("prio", "3"), ("rp.rpg_gd", "-1")], "is not an integer"),
        ] {
            let err = super::knobs(root, "eth3", &action(&params)).unwrap_err();
            assert!(err.to_string().contains(expected), "{params:?}: {err}");
        }
    }
}
