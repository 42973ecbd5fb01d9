//! The switch side of `ecn`: lowering the ECN marking thresholds of a SONiC
//! WRED profile (`WRED_PROFILE|<name>`), and, with `lowers = "profile"`,
//! doing it to the named profile itself through one gNMI Set. (The
//! default, `lowers = "queue"`, lowers a copy bound to one queue:
//! [`super::queue`].)
//!
//! The green thresholds are multiplied by the factor (0.05 ≤ f < 1), never
//! below the floor, so a repeated lowering converges instead of reaching
//! zero (a queue that marks every packet). `green_drop_probability` and
//! `ecn` change only when the action asks. Everything is validated as
//! `sonic-wred-profile.yang` does (thresholds in bytes, max ≥ min,
//! probability 0–100 %, a known `ecn` mode, the profile's name) before
//! anything is sent; the values read before the Set are the outcome's
//! prior, which undo restores.
//!
//! A profile serves every queue bound to it: on SONiC, AZURE_LOSSLESS is
//! every lossless queue of every port. So a profile-scope lowering says so
//! in its target: `port` (and `queue`), when present, must be `"*"`. Its
//! target is then the same for every proposal on that switch, and the
//! dispatcher's de-duplication and per-target cooldown count one lowering
//! of the switch, not one per port ([`check_switch_wide`]).

use engine::{Action, ActuatorError};
use gnmi_proto::sonic as sonic_schema;

use crate::sonic::{self, Fields, Sonic};
use crate::target::{integer, label};

/// The CONFIG_DB table of WRED/ECN profiles.
pub const TABLE: &str = sonic_schema::WRED_PROFILE;

const MIN: &str = "green_min_threshold";
const MAX: &str = "green_max_threshold";
const PROBABILITY: &str = "green_drop_probability";

/// Checks a stepping factor: 0.05 ≤ f < 1 (a lowering that lowers, by at
/// most twenty times).
pub fn check_factor(text: &str) -> Result<f64, ActuatorError> {
    match text.trim().parse::<f64>() {
        Ok(f) if (0.05..1.0).contains(&f) => Ok(f),
        _ => Err(ActuatorError::Invalid(format!("factor {text:?} is not a number from 0.05 up to (not including) 1"))),
    }
}

/// What a lowering needs: where, by how much, the floor, and optional
/// probability and ECN mode.
#[derive(Debug, Clone)]
pub struct Lowering<'a> {
    /// The switch.
    pub switch: &'a str,
    /// The profile.
    pub profile: String,
    /// The factor.
    pub factor: f64,
    /// The lowest threshold, in bytes.
    pub floor: u64,
    /// `green_drop_probability` to set, if any.
    pub probability: Option<u64>,
    /// `ecn` to set, if any.
    pub ecn: Option<String>,
}

/// Checks a WRED profile name: safe as a path element ([`sonic::check_name`])
/// and one `sonic-wred-profile.yang` accepts.
pub fn check_profile(what: &str, name: &str) -> Result<(), ActuatorError> {
    sonic::check_name(what, name)?;
    sonic_schema::check_profile_name(what, name).map_err(|e| ActuatorError::Invalid(e.to_string()))
}

/// Reads a profile-scope `ecn.lower` action, checking every value it
/// carries: the profile is its `profile` parameter, else `profile`.
pub fn lowering<'a>(action: &'a Action, profile: &str, factor: f64, floor: u64) -> Result<Lowering<'a>, ActuatorError> {
    let switch = label(action, "switch")?;
    let profile = action.params.get("profile").cloned().unwrap_or_else(|| profile.to_string());
    check_profile("profile", &profile)?;
    values(action, switch, profile, factor, floor)
}

/// A profile-scope lowering changes every queue bound to the profile: its
/// target must not name one port or queue (they may be absent, or `"*"`).
pub fn check_switch_wide(action: &Action) -> Result<(), ActuatorError> {
    for name in ["port", "queue"] {
        if let Some(value) = action.target.get(name).filter(|v| *v != "*") {
            return Err(ActuatorError::Invalid(format!(
                "{} with lowers = \"profile\" changes the profile every queue bound to it uses (on SONiC, every \
                 lossless queue of the switch), not {name} {value:?} alone: give the target {name} = \"*\", or \
                 use an ecn actuator with lowers = \"queue\"",
                action.kind
            )));
        }
    }
    Ok(())
}

/// The factor, floor, probability and ECN mode of `action`, checked, for
/// `profile` on `switch`.
pub fn values<'a>(
    action: &'a Action,
    switch: &'a str,
    profile: String,
    factor: f64,
    floor: u64,
) -> Result<Lowering<'a>, ActuatorError> {
    let factor = match action.params.get("factor") {
        Some(text) => check_factor(text)?,
        None => factor,
    };
    let probability =
        action.params.get("drop_probability").map(|p| integer(PROBABILITY, p, 0, 100, " percent")).transpose()?;
    let ecn = action.params.get("ecn").cloned();
    if let Some(mode) = &ecn {
        sonic_schema::check_field(TABLE, "ecn", mode).map_err(|e| ActuatorError::Invalid(e.to_string()))?;
    }
    Ok(Lowering { switch, profile, factor, floor, probability, ecn })
}

/// The fields a lowering reads and may set.
pub fn fields(l: &Lowering<'_>) -> Vec<&'static str> {
    let mut fields = vec![MIN, MAX];
    if l.probability.is_some() {
        fields.push(PROBABILITY);
    }
    if l.ecn.is_some() {
        fields.push("ecn");
    }
    fields
}

/// The new values from the current ones, validated.
pub fn lowered(l: &Lowering<'_>, now: &Fields) -> Result<Fields, ActuatorError> {
    let read = |field: &str| -> Result<u64, ActuatorError> {
        let text =
            now.get(field).cloned().flatten().ok_or_else(|| {
                ActuatorError::Invalid(format!("{TABLE}|{} on {} has no {field}", l.profile, l.switch))
            })?;
        text.parse().map_err(|_| ActuatorError::Failed(format!("{field} on {} is {text:?}, not bytes", l.switch)))
    };
    let (min, max) = (read(MIN)?, read(MAX)?);
    // A value already at or below the floor stays where it is.
    let step = |n: u64| if n <= l.floor { n } else { ((n as f64 * l.factor).round() as u64).max(l.floor) };
    let new_min = step(min);
    let new_max = step(max).max(new_min);
    if new_max < new_min {
        return Err(ActuatorError::Invalid(format!("{MAX} {new_max} would be below {MIN} {new_min}")));
    }
    if new_min == min && new_max == max && l.probability.is_none() && l.ecn.is_none() {
        return Err(ActuatorError::Invalid(format!(
            "{TABLE}|{} on {} is already at the floor ({MIN} {min}, {MAX} {max}, floor {})",
            l.profile, l.switch, l.floor
        )));
    }
    let mut out = Fields::new();
    out.insert(MIN.into(), Some(new_min.to_string()));
    out.insert(MAX.into(), Some(new_max.to_string()));
    if let Some(p) = l.probability {
        out.insert(PROBABILITY.into(), Some(p.to_string()));
    }
    if let Some(mode) = &l.ecn {
        out.insert("ecn".into(), Some(mode.clone()));
    }
    Ok(out)
}

/// Reads the profile and computes the Set: the values before and the new ones.
pub async fn plan(sonic: &Sonic, l: &Lowering<'_>) -> Result<(Fields, Fields), ActuatorError> {
    sonic.address(l.switch)?;
    let before = sonic.get(l.switch, TABLE, &l.profile, &fields(l)).await?;
    let after = lowered(l, &before)?;
    Ok((before, after))
}

#[cfg(test)]
mod tests {
    use engine::Labels;

    use super::*;

    fn profile(min: &str, max: &str) -> Fields {
        [(MIN.to_string(), Some(min.to_string())), (MAX.to_string(), Some(max.to_string()))].into()
    }

    fn action(params: &[(&str, &str)]) -> Action {
        Action {
            kind: "ecn.lower".into(),
            target: Labels::from_pairs([("switch", "leaf-rail1"), ("port", "Ethernet4")]),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    #[test]
    fn thresholds_step_down_by_the_factor_and_stop_at_the_floor() {
        let a = action(&[("factor", "0.5")]);
        let l = lowering(&a, "AZURE_LOSSLESS", 0.5, 262144).unwrap();
        let new = lowered(&l, &profile("1048576", "2097152")).unwrap();
        assert_eq!(new, profile("524288", "1048576"));
        let new = lowered(&l, &profile("300000", "400000")).unwrap();
        assert_eq!(new, profile("262144", "262144"));
        let err = lowered(&l, &profile("262144", "262144")).unwrap_err();
        assert!(err.to_string().contains("already at the floor"), "{err}");
        // A profile configured below the floor is never raised by a lowering.
        let new = lowered(&l, &profile("100000", "600000")).unwrap();
        assert_eq!(new, profile("100000", "300000"));
    }

    #[test]
    fn a_profile_lowering_names_no_single_port() {
        let mut a = action(&[]);
        let err = check_switch_wide(&a).unwrap_err().to_string();
        assert!(err.contains("not port \"Ethernet4\" alone") && err.contains("port = \"*\""), "{err}");
        a.target = Labels::from_pairs([("switch", "leaf-rail1"), ("port", "*")]);
        assert_eq!(check_switch_wide(&a), Ok(()));
        a.target = Labels::from_pairs([("switch", "leaf-rail1")]);
        assert_eq!(check_switch_wide(&a), Ok(()));
        a.target = Labels::from_pairs([("switch", "leaf-rail1"), ("port", "*"), ("queue", "3")]);
        assert!(check_switch_wide(&a).unwrap_err().to_string().contains("not queue \"3\" alone"));
    }

    #[test]
    fn bad_values_are_refused_before_anything_is_read() {
        for (params, expected) in [
            (vec![("factor", "1")], "factor \"1\" is not a number"),
            (vec![("factor", "0.01")], "factor \"0.01\""),
            (vec![("drop_probability", "150")], "green_drop_probability 150 is out of range 0..100 percent"),
            (vec![("ecn", "ecn_blue")], "ecn \"ecn_blue\" is not one of"),
            (vec![("profile", "A/B")], "profile \"A/B\" is refused"),
            (vec![("profile", "A.B")], "profile \"A.B\" is not a WRED profile name"),
            (vec![("profile", "PPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPP")], "is not a WRED profile name"),
        ] {
            let err = lowering(&action(&params), "AZURE_LOSSLESS", 0.5, 0).unwrap_err();
            assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains(expected)), "{params:?}: {err:?}");
        }
    }
}
