//! gNMI path strings ⇄ [`Path`].
//!
//! The string form follows the gNMI path-string convention
//! (`/a/b[key=value]/c`), extended with an origin and a target:
//!
//! ```text
//! [target@][origin:]/elem[key=value]/elem
//! ```
//!
//! - `openconfig:/interfaces/interface[name=Ethernet0]/state` has origin
//!   `openconfig`;
//! - SONiC writes the origin into the first element,
//!   `/sonic-db:CONFIG_DB/PFC_WD/Ethernet0/action`; that parses to origin
//!   `sonic-db` and first element `CONFIG_DB`;
//! - `COUNTERS_DB@/COUNTERS/Ethernet0` has target `COUNTERS_DB` (SONiC's
//!   virtual database paths name the database in the target).
//!
//! In key values `]` and `\` are escaped with a backslash; in element names
//! `/`, `[` and `\` are.

// `Path::element` is deprecated by the spec but old targets still send it;
// it is read and printed for them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::fmt::Write;

use crate::gnmi::{Path, PathElem};

/// A path string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("gNMI path {path:?} at byte {at}: {problem}")]
pub struct PathError {
    /// The path as given.
    pub path: String,
    /// Where it went wrong.
    pub at: usize,
    /// What was wrong.
    pub problem: &'static str,
}

/// Parses a path string (see the module doc).
pub fn parse_path(text: &str) -> Result<Path, PathError> {
    let err = |at: usize, problem: &'static str| PathError { path: text.to_string(), at, problem };
    let mut path = Path::default();
    let mut rest = text;
    let mut offset = 0;
    // A target and an origin come before the first '/'.
    if let Some(slash) = rest.find('/') {
        let head = &rest[..slash];
        let (target, origin) = match head.split_once('@') {
            Some((t, o)) => (Some(t), o),
            None => (None, head),
        };
        if let Some(t) = target {
            if t.is_empty() {
                return Err(err(0, "empty target before '@'"));
            }
            path.target = t.to_string();
        }
        if !origin.is_empty() {
            let Some(origin) = origin.strip_suffix(':') else {
                return Err(err(slash, "expected '/' at the start, or an origin ending in ':'"));
            };
            if origin.is_empty() {
                return Err(err(slash, "empty origin"));
            }
            path.origin = origin.to_string();
        }
        offset = slash;
        rest = &rest[slash..];
    } else if !rest.is_empty() {
        return Err(err(0, "a path starts with '/'"));
    }
    let bytes: Vec<char> = rest.chars().collect();
    let mut i = 0;
    // Byte positions for error messages.
    let pos = |i: usize| offset + bytes[..i.min(bytes.len())].iter().map(|c| c.len_utf8()).sum::<usize>();
    while i < bytes.len() {
        if bytes[i] != '/' {
            return Err(err(pos(i), "expected '/'"));
        }
        i += 1;
        if i == bytes.len() {
            break; // a trailing '/' (or the root path "/")
        }
        let mut name = String::new();
        let mut keys = HashMap::new();
        while i < bytes.len() && bytes[i] != '/' && bytes[i] != '[' {
            if bytes[i] == '\\' && i + 1 < bytes.len() {
                i += 1;
            }
            name.push(bytes[i]);
            i += 1;
        }
        while i < bytes.len() && bytes[i] == '[' {
            i += 1;
            let mut key = String::new();
            while i < bytes.len() && bytes[i] != '=' && bytes[i] != ']' {
                key.push(bytes[i]);
                i += 1;
            }
            if i == bytes.len() || bytes[i] != '=' {
                return Err(err(pos(i), "expected '=' in a key"));
            }
            if key.is_empty() {
                return Err(err(pos(i), "empty key name"));
            }
            i += 1;
            let mut value = String::new();
            loop {
                match bytes.get(i) {
                    None => return Err(err(pos(i), "unclosed '['")),
                    Some('\\') if i + 1 < bytes.len() => {
                        value.push(bytes[i + 1]);
                        i += 2;
                    }
                    Some(']') => {
                        i += 1;
                        break;
                    }
                    Some(c) => {
                        value.push(*c);
                        i += 1;
                    }
                }
            }
            keys.insert(key, value);
        }
        if name.is_empty() {
            return Err(err(pos(i), "empty element name"));
        }
        path.elem.push(PathElem { name, key: keys });
    }
    // SONiC's form: the origin is written into the first element.
    if path.origin.is_empty() {
        if let Some(first) = path.elem.first_mut() {
            if let Some((origin, name)) = first.name.split_once(':') {
                if !origin.is_empty() && !name.is_empty() {
                    path.origin = origin.to_string();
                    first.name = name.to_string();
                }
            }
        }
    }
    Ok(path)
}

/// Prints a path in the canonical string form, `[target@][origin:]/…`,
/// keys sorted by name so equal paths print alike.
pub fn path_to_string(path: &Path) -> String {
    let mut out = String::new();
    if !path.target.is_empty() {
        out.push_str(&path.target);
        out.push('@');
    }
    if !path.origin.is_empty() {
        out.push_str(&path.origin);
        out.push(':');
    }
    if path.elem.is_empty() && path.element.is_empty() {
        out.push('/');
    }
    for elem in &path.elem {
        out.push('/');
        push_elem(&mut out, elem);
    }
    // Deprecated string elements, for old targets.
    if path.elem.is_empty() {
        for element in &path.element {
            out.push('/');
            out.push_str(element);
        }
    }
    out
}

fn push_elem(out: &mut String, elem: &PathElem) {
    for c in elem.name.chars() {
        if matches!(c, '/' | '[' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    let mut keys: Vec<_> = elem.key.iter().collect();
    keys.sort();
    for (k, v) in keys {
        let _ = write!(out, "[{k}=");
        for c in v.chars() {
            if matches!(c, ']' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
        out.push(']');
    }
}

/// `prefix` + `path`: the elements of both, the prefix's origin and target
/// unless the path has its own.
pub fn join(prefix: Option<&Path>, path: &Path) -> Path {
    let Some(prefix) = prefix else { return path.clone() };
    let mut out = prefix.clone();
    out.elem.extend(path.elem.iter().cloned());
    out.element.extend(path.element.iter().cloned());
    if !path.origin.is_empty() {
        out.origin = path.origin.clone();
    }
    if !path.target.is_empty() {
        out.target = path.target.clone();
    }
    out
}

/// A path of plain element names (no keys): `elems(&["COUNTERS", "Ethernet0"])`.
pub fn elems(names: &[&str]) -> Path {
    Path {
        elem: names.iter().map(|n| PathElem { name: n.to_string(), key: HashMap::new() }).collect(),
        ..Path::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) {
        let path = parse_path(text).unwrap();
        assert_eq!(path_to_string(&path), text, "print(parse({text:?}))");
        assert_eq!(parse_path(&path_to_string(&path)).unwrap(), path);
    }

    #[test]
    fn openconfig_paths_with_keys_round_trip() {
        round_trip("/interfaces/interface[name=Ethernet0]/state/counters");
        round_trip("openconfig:/interfaces/interface[name=Ethernet0]/state/oper-status");
        round_trip("/qos/interfaces/interface[interface-id=Ethernet8]/output/queues/queue[name=3]/state");
        round_trip("/network-instances/network-instance[name=default]/protocols/protocol[identifier=BGP][name=bgp]");
        round_trip("/");
    }

    #[test]
    fn keys_and_origin_are_parsed() {
        let path = parse_path("openconfig:/interfaces/interface[name=Ethernet0]/state/counters").unwrap();
        assert_eq!(path.origin, "openconfig");
        assert_eq!(path.target, "");
        let names: Vec<_> = path.elem.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["interfaces", "interface", "state", "counters"]);
        assert_eq!(path.elem[1].key.get("name").map(String::as_str), Some("Ethernet0"));
        assert!(path.elem[0].key.is_empty());
    }

    #[test]
    fn sonic_origin_in_the_first_element_is_split_off() {
        let path = parse_path("/sonic-db:CONFIG_DB/WRED_PROFILE/AZURE_LOSSLESS/green_min_threshold").unwrap();
        assert_eq!(path.origin, "sonic-db");
        assert_eq!(path.elem[0].name, "CONFIG_DB");
        assert_eq!(path.elem.len(), 4);
        assert_eq!(path_to_string(&path), "sonic-db:/CONFIG_DB/WRED_PROFILE/AZURE_LOSSLESS/green_min_threshold");
    }

    #[test]
    fn a_target_before_at_is_kept() {
        let path = parse_path("COUNTERS_DB@/COUNTERS/Ethernet*/Queues").unwrap();
        assert_eq!(path.target, "COUNTERS_DB");
        assert_eq!(path.elem[1].name, "Ethernet*");
        round_trip("COUNTERS_DB@/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_3_RX_PKTS");
        round_trip("sw1@openconfig:/interfaces");
    }

    #[test]
    fn escaped_brackets_and_slashes_in_keys_round_trip() {
        let path = parse_path(r"/a/b[k=x/y\]z]/c").unwrap();
        assert_eq!(path.elem[1].key["k"], "x/y]z");
        round_trip(r"/a/b[k=x/y\]z]/c");
        round_trip(r"/a/b[k=back\\slash]");
    }

    #[test]
    fn malformed_paths_name_the_place() {
        let e = parse_path("/a/b[k=v").unwrap_err();
        assert_eq!(e.problem, "unclosed '['");
        let e = parse_path("/a/b[=v]").unwrap_err();
        assert_eq!(e.problem, "empty key name");
        let e = parse_path("a/b").unwrap_err();
        assert_eq!(e.problem, "expected '/' at the start, or an origin ending in ':'");
        let e = parse_path("/a//b").unwrap_err();
        assert_eq!((e.problem, e.at), ("empty element name", 3));
        assert!(parse_path("abc").is_err());
    }

    #[test]
    fn join_keeps_the_prefix_target_and_appends_elements() {
        let prefix = parse_path("COUNTERS_DB@/COUNTERS").unwrap();
        let joined = join(Some(&prefix), &elems(&["Ethernet0", "Queues"]));
        assert_eq!(path_to_string(&joined), "COUNTERS_DB@/COUNTERS/Ethernet0/Queues");
    }
}
