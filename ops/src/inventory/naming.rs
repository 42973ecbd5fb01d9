//! A leaf's rail and plane from its name: sites name leaves after what they serve
//! (`leaf-rail3`, `su1-p1-rail3`), and LLDP gives the name.
//!
//! - the rail: a regex with a group named `rail` (default `rail(?P<rail>\d+)`);
//! - the plane, first that applies: a regex with a group named `plane` (`--plane-pattern
//!   'p(?P<plane>\d+)-'`), a map from rail to plane (`--plane-of-rail 0-3=0,4-7=1`), else plane 0
//!   (one plane), and the fragment says so.

use std::collections::BTreeMap;

use regex::Regex;

use crate::inventory::DiscoverError;

/// The default rail pattern.
pub const DEFAULT_RAIL_PATTERN: &str = r"rail(?P<rail>\d+)";

/// How rails and planes are read from leaf names.
#[derive(Debug, Clone)]
pub struct Naming {
    rail: Regex,
    plane: Option<Regex>,
    plane_of_rail: BTreeMap<u32, u32>,
}

/// A number read from a name, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The number.
    pub value: u32,
    /// How it was found, for the fragment's comment.
    pub how: String,
}

impl Naming {
    /// A naming from the rail pattern, an optional plane pattern and a plane-of-rail map
    /// (`0-3=0,4-7=1`, or single rails `0=0,1=1`).
    pub fn new(rail: &str, plane: Option<&str>, plane_of_rail: Option<&str>) -> Result<Naming, DiscoverError> {
        let compile = |flag: &str, text: &str, group: &str| {
            let re = Regex::new(text).map_err(|e| DiscoverError::Pattern(format!("{flag} {text:?}: {e}")))?;
            if !re.capture_names().flatten().any(|n| n == group) {
                return Err(DiscoverError::Pattern(format!(
                    "{flag} {text:?} has no group named {group:?}: write (?P<{group}>\\d+)"
                )));
            }
            Ok(re)
        };
        Ok(Naming {
            rail: compile("--rail-pattern", rail, "rail")?,
            plane: plane.map(|p| compile("--plane-pattern", p, "plane")).transpose()?,
            plane_of_rail: plane_of_rail.map(parse_map).transpose()?.unwrap_or_default(),
        })
    }

    /// The rail of leaf `name`.
    pub fn rail(&self, name: &str) -> Result<Read, DiscoverError> {
        let value = number(&self.rail, "rail", name).ok_or_else(|| {
            DiscoverError::Pattern(format!(
                "leaf {name:?} does not match the rail pattern {:?}: set --rail-pattern to how this site names leaves",
                self.rail.as_str()
            ))
        })?;
        Ok(Read { value, how: format!("rail pattern {:?} on {name:?}", self.rail.as_str()) })
    }

    /// The plane of leaf `name`, which serves `rail`.
    pub fn plane(&self, name: &str, rail: u32) -> Result<Read, DiscoverError> {
        if let Some(re) = &self.plane {
            let value = number(re, "plane", name).ok_or_else(|| {
                DiscoverError::Pattern(format!("leaf {name:?} does not match the plane pattern {:?}", re.as_str()))
            })?;
            return Ok(Read { value, how: format!("plane pattern {:?} on {name:?}", re.as_str()) });
        }
        if !self.plane_of_rail.is_empty() {
            let value = *self.plane_of_rail.get(&rail).ok_or_else(|| {
                DiscoverError::Pattern(format!("--plane-of-rail does not say the plane of rail {rail} (leaf {name:?})"))
            })?;
            return Ok(Read { value, how: format!("--plane-of-rail: rail {rail} is on plane {value}") });
        }
        Ok(Read { value: 0, how: "no plane pattern or map: one plane, 0".to_string() })
    }
}

fn number(re: &Regex, group: &str, name: &str) -> Option<u32> {
    re.captures(name)?.name(group)?.as_str().parse().ok()
}

/// `0-3=0,4-7=1` → {0:0, 1:0, 2:0, 3:0, 4:1, …}.
fn parse_map(text: &str) -> Result<BTreeMap<u32, u32>, DiscoverError> {
    let bad = |part: &str, why: &str| DiscoverError::Pattern(format!("--plane-of-rail {text:?}: {part:?} {why}"));
    let mut map = BTreeMap::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (rails, plane) = part.split_once('=').ok_or_else(|| bad(part, "is not RAILS=PLANE"))?;
        let plane: u32 = plane.trim().parse().map_err(|_| bad(part, "has no plane number"))?;
        let (lo, hi) = rails.split_once('-').unwrap_or((rails, rails));
        let (lo, hi): (u32, u32) = match (lo.trim().parse(), hi.trim().parse()) {
            (Ok(lo), Ok(hi)) if lo <= hi => (lo, hi),
            _ => return Err(bad(part, "has no rail or rail range (0-3)")),
        };
        for rail in lo..=hi {
            if map.insert(rail, plane).is_some_and(|p| p != plane) {
                return Err(bad(part, &format!("puts rail {rail} on a second plane")));
            }
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pattern_reads_the_rail_and_plane_0() {
        let n = Naming::new(DEFAULT_RAIL_PATTERN, None, None).unwrap();
        assert_eq!(n.rail("leaf-rail12").unwrap().value, 12);
        assert_eq!(n.plane("leaf-rail12", 12).unwrap().value, 0);
        let err = n.rail("spine-1").unwrap_err().to_string();
        assert!(err.contains("--rail-pattern"), "{err}");
    }

    #[test]
    fn a_plane_comes_from_its_pattern_or_the_rail_map() {
        let n = Naming::new(r"r(?P<rail>\d+)", Some(r"p(?P<plane>\d+)"), None).unwrap();
        assert_eq!((n.rail("su1-p1-r5").unwrap().value, n.plane("su1-p1-r5", 5).unwrap().value), (5, 1));
        let m = Naming::new(DEFAULT_RAIL_PATTERN, None, Some("0-3=0, 4-7=1")).unwrap();
        assert_eq!(m.plane("leaf-rail6", 6).unwrap().value, 1);
        assert!(m.plane("leaf-rail9", 9).unwrap_err().to_string().contains("rail 9"));
    }

    #[test]
    fn patterns_without_their_group_and_bad_maps_are_refused() {
        assert!(Naming::new(r"rail\d+", None, None).unwrap_err().to_string().contains("(?P<rail>"));
        assert!(Naming::new(DEFAULT_RAIL_PATTERN, None, Some("0-3=0,3=1"))
            .unwrap_err()
            .to_string()
            .contains("second plane"));
        assert!(Naming::new(DEFAULT_RAIL_PATTERN, None, Some("3-0=1")).is_err());
    }
}
