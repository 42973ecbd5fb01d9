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
//! The `target@` notation is a convenience of this crate's strings, not
//! of gNMI: a target is only valid in a request's or a notification's
//! *prefix* (spec 2.2.2.1), and a target ignores one anywhere else.
//! [`parse_path`] keeps the target on the path it returns; the caller
//! decides where it goes, normally with [`split_target`] (the target into
//! the prefix) or [`split_at`] (target, origin and leading elements into
//! the prefix) before building a request:
//!
//! ```
//! use gnmi_proto::path::{parse_path, path_to_string, split_target};
//!
//! let (prefix, path) = split_target(parse_path("COUNTERS_DB@/COUNTERS/Ethernet0").unwrap());
//! assert_eq!(prefix.unwrap().target, "COUNTERS_DB");
//! assert_eq!(path.target, "");
//! assert_eq!(path_to_string(&path), "/COUNTERS/Ethernet0");
//! ```
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
    // A target and an origin come before the first '/'.
    let offset = match text.find('/') {
        Some(slash) => {
            parse_head(&text[..slash], &mut path).map_err(|(at, problem)| err(at, problem))?;
            slash
        }
        None if text.is_empty() => 0,
        None => return Err(err(0, "a path starts with '/'")),
    };
    let mut elems = Elems { chars: text[offset..].chars().collect(), i: 0, offset };
    while let Some(elem) = elems.next_elem().map_err(|(at, problem)| err(at, problem))? {
        path.elem.push(elem);
    }
    sonic_origin_from_first_elem(&mut path);
    Ok(path)
}

/// Reads `[target@][origin:]`, the part before the first '/', into `path`;
/// an error is its byte offset and what was wrong.
fn parse_head(head: &str, path: &mut Path) -> Result<(), (usize, &'static str)> {
    let (target, origin) = match head.split_once('@') {
        Some((t, o)) => (Some(t), o),
        None => (None, head),
    };
    if let Some(t) = target {
        if t.is_empty() {
            return Err((0, "empty target before '@'"));
        }
        path.target = t.to_string();
    }
    if !origin.is_empty() {
        let Some(origin) = origin.strip_suffix(':') else {
            return Err((head.len(), "expected '/' at the start, or an origin ending in ':'"));
        };
        if origin.is_empty() {
            return Err((head.len(), "empty origin"));
        }
        path.origin = origin.to_string();
    }
    Ok(())
}

/// SONiC's form writes the origin into the first element
/// (`/sonic-db:CONFIG_DB/…`): it becomes the path's origin.
fn sonic_origin_from_first_elem(path: &mut Path) {
    if !path.origin.is_empty() {
        return;
    }
    if let Some(first) = path.elem.first_mut() {
        if let Some((origin, name)) = first.name.split_once(':') {
            if !origin.is_empty() && !name.is_empty() {
                path.origin = origin.to_string();
                first.name = name.to_string();
            }
        }
    }
}

/// A cursor over the `/elem[key=value]…` part of a path string.
struct Elems {
    chars: Vec<char>,
    i: usize,
    /// The byte offset of `chars[0]` in the whole string, for errors.
    offset: usize,
}

type Problem = (usize, &'static str);

impl Elems {
    /// The byte offset of the cursor in the whole string.
    fn pos(&self) -> usize {
        self.offset + self.chars[..self.i.min(self.chars.len())].iter().map(|c| c.len_utf8()).sum::<usize>()
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.i).copied()
    }

    /// The next element, or `None` at the end (a trailing '/' included).
    fn next_elem(&mut self) -> Result<Option<PathElem>, Problem> {
        match self.peek() {
            None => return Ok(None),
            Some('/') => self.i += 1,
            Some(_) => return Err((self.pos(), "expected '/'")),
        }
        if self.peek().is_none() {
            return Ok(None); // a trailing '/' (or the root path "/")
        }
        let mut name = String::new();
        while let Some(c) = self.peek().filter(|c| *c != '/' && *c != '[') {
            if c == '\\' && self.i + 1 < self.chars.len() {
                self.i += 1;
            }
            name.push(self.chars[self.i]);
            self.i += 1;
        }
        let mut key = HashMap::new();
        while self.peek() == Some('[') {
            self.i += 1;
            let (k, v) = self.key_value()?;
            key.insert(k, v);
        }
        if name.is_empty() {
            return Err((self.pos(), "empty element name"));
        }
        Ok(Some(PathElem { name, key }))
    }

    /// `key=value]`, the cursor just past the '['.
    fn key_value(&mut self) -> Result<(String, String), Problem> {
        let mut key = String::new();
        while let Some(c) = self.peek().filter(|c| *c != '=' && *c != ']') {
            key.push(c);
            self.i += 1;
        }
        if self.peek() != Some('=') {
            return Err((self.pos(), "expected '=' in a key"));
        }
        if key.is_empty() {
            return Err((self.pos(), "empty key name"));
        }
        self.i += 1;
        let mut value = String::new();
        loop {
            match self.peek() {
                None => return Err((self.pos(), "unclosed '['")),
                Some('\\') if self.i + 1 < self.chars.len() => {
                    value.push(self.chars[self.i + 1]);
                    self.i += 2;
                }
                Some(']') => {
                    self.i += 1;
                    return Ok((key, value));
                }
                Some(c) => {
                    value.push(c);
                    self.i += 1;
                }
            }
        }
    }
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
    let mut out = Path::default();
    join_into(prefix, path, &mut out);
    out
}

/// [`join`] into `out`, reusing its allocations: a receiver joining every
/// update of a stream to its prefix keeps one `out` and, once it has held
/// a path of that shape, allocates nothing for element names or the
/// origin and target (keys still copy their strings).
pub fn join_into(prefix: Option<&Path>, path: &Path, out: &mut Path) {
    let empty = Path::default();
    let prefix = prefix.unwrap_or(&empty);
    let elems = prefix.elem.iter().chain(&path.elem);
    out.elem.truncate(prefix.elem.len() + path.elem.len());
    for (i, elem) in elems.enumerate() {
        match out.elem.get_mut(i) {
            Some(slot) => {
                slot.name.clone_from(&elem.name);
                slot.key.clone_from(&elem.key);
            }
            None => out.elem.push(elem.clone()),
        }
    }
    out.element.truncate(prefix.element.len() + path.element.len());
    for (i, name) in prefix.element.iter().chain(&path.element).enumerate() {
        match out.element.get_mut(i) {
            Some(slot) => slot.clone_from(name),
            None => out.element.push(name.clone()),
        }
    }
    // The path's own origin and target win over the prefix's.
    out.origin.clone_from(if path.origin.is_empty() { &prefix.origin } else { &path.origin });
    out.target.clone_from(if path.target.is_empty() { &prefix.target } else { &path.target });
}

/// `prefix` + `path` as a gNMI target reads a request: the elements of
/// both, the origin of the path or else of the prefix, and the target of
/// the prefix only — a target outside the prefix is ignored (spec 2.2.2.1).
pub fn resolve(prefix: Option<&Path>, path: &Path) -> Path {
    let mut out = join(prefix, &without_target(path));
    out.target = prefix.map(|p| p.target.clone()).unwrap_or_default();
    out
}

/// `path` without its target.
pub fn without_target(path: &Path) -> Path {
    Path { target: String::new(), ..path.clone() }
}

/// Splits a parsed path for a request: its target (from `target@`) goes to
/// a prefix, the only place a gNMI target is read; the path keeps its
/// origin and elements. The prefix is `None` when there is no target.
pub fn split_target(mut path: Path) -> (Option<Path>, Path) {
    if path.target.is_empty() {
        return (None, path);
    }
    let prefix = Path { target: std::mem::take(&mut path.target), ..Path::default() };
    (Some(prefix), path)
}

/// Splits `path` after its first `n` elements (all of them when it has
/// fewer): the prefix takes the target, the origin and those elements; the
/// path keeps the rest, with neither target nor origin. `join(Some(&prefix),
/// &path)` is `path` again.
pub fn split_at(mut path: Path, n: usize) -> (Path, Path) {
    let n = n.min(path.elem.len());
    let rest = path.elem.split_off(n);
    let prefix = Path {
        target: std::mem::take(&mut path.target),
        origin: std::mem::take(&mut path.origin),
        elem: path.elem,
        ..Path::default()
    };
    (prefix, Path { elem: rest, ..Path::default() })
}

/// Whether `path` is at or below `pattern`: every element of the pattern
/// matches the path's element in the same place, where a `*` in a name or
/// a key value matches any run of characters (`Ethernet*`,
/// `interface[name=*]`) and a key the pattern does not name matches any
/// value. Origins and targets are not compared.
pub fn matches(pattern: &Path, path: &Path) -> bool {
    pattern.elem.len() <= path.elem.len()
        && pattern.elem.iter().zip(&path.elem).all(|(p, e)| {
            glob(&p.name, &e.name) && p.key.iter().all(|(k, v)| e.key.get(k).is_some_and(|value| glob(v, value)))
        })
}

/// `*`-globs over a name.
fn glob(pattern: &str, name: &str) -> bool {
    let Some((head, tail)) = pattern.split_once('*') else { return pattern == name };
    let Some(rest) = name.strip_prefix(head) else { return false };
    tail.is_empty() || (0..=rest.len()).filter(|i| rest.is_char_boundary(*i)).any(|i| glob(tail, &rest[i..]))
}

/// A path of plain element names (no keys): `elems(&["COUNTERS", "Ethernet0"])`.
pub fn elems(names: &[&str]) -> Path {
    Path {
        elem: names.iter().map(|n| PathElem { name: n.to_string(), key: HashMap::new() }).collect(),
        ..Path::default()
    }
}

/// Go's `%v` of a `*gnmipb.Path` (protobuf's compact text format, fields in number order), as
/// sonic-gnmi prints a path into its messages ("No valid entry found for path …"):
/// `origin:"sonic-db" elem:{name:"CONFIG_DB"} elem:{name:"PFC_WD" key:{key:"k" value:"v"}}`.
pub fn go_path(path: &Path) -> String {
    let quote = |s: &str| format!("{s:?}");
    let mut parts = Vec::new();
    if !path.origin.is_empty() {
        parts.push(format!("origin:{}", quote(&path.origin)));
    }
    for elem in &path.elem {
        let mut inner = vec![format!("name:{}", quote(&elem.name))];
        let keys: std::collections::BTreeMap<&String, &String> = elem.key.iter().collect();
        for (k, v) in keys {
            inner.push(format!("key:{{key:{} value:{}}}", quote(k), quote(v)));
        }
        parts.push(format!("elem:{{{}}}", inner.join(" ")));
    }
    if !path.target.is_empty() {
        parts.push(format!("target:{}", quote(&path.target)));
    }
    parts.join(" ")
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
    fn a_parsed_target_goes_to_the_prefix_and_a_path_target_is_ignored() {
        let (prefix, path) = split_target(parse_path("COUNTERS_DB@/COUNTERS/Ethernet*").unwrap());
        let prefix = prefix.unwrap();
        assert_eq!((prefix.target.as_str(), prefix.elem.len()), ("COUNTERS_DB", 0));
        assert_eq!(path_to_string(&path), "/COUNTERS/Ethernet*");
        assert_eq!(split_target(parse_path("openconfig:/interfaces").unwrap()).0, None);

        let (prefix, path) = split_at(parse_path("sonic-db:/CONFIG_DB/PFC_WD/Ethernet0").unwrap(), 1);
        assert_eq!(path_to_string(&prefix), "sonic-db:/CONFIG_DB");
        assert_eq!(path_to_string(&path), "/PFC_WD/Ethernet0");
        assert_eq!(path_to_string(&join(Some(&prefix), &path)), "sonic-db:/CONFIG_DB/PFC_WD/Ethernet0");
        let (prefix, path) = split_at(parse_path("X@/a").unwrap(), 5);
        assert_eq!((path_to_string(&prefix), path_to_string(&path)), ("X@/a".to_string(), "/".to_string()));

        // A target reads the target from the prefix only.
        let full = resolve(None, &parse_path("COUNTERS_DB@/COUNTERS/Ethernet0").unwrap());
        assert_eq!(path_to_string(&full), "/COUNTERS/Ethernet0");
        let prefix = parse_path("COUNTERS_DB@/").unwrap();
        let full = resolve(Some(&prefix), &parse_path("OTHER@/COUNTERS").unwrap());
        assert_eq!(path_to_string(&full), "COUNTERS_DB@/COUNTERS");
    }

    #[test]
    fn patterns_match_paths_at_and_below_them() {
        let pattern = parse_path("/interfaces/interface[name=*]/state/oper-status").unwrap();
        assert!(matches(&pattern, &parse_path("/interfaces/interface[name=Ethernet0]/state/oper-status").unwrap()));
        assert!(!matches(&pattern, &parse_path("/interfaces/interface[name=Ethernet0]/state/counters").unwrap()));
        assert!(!matches(&pattern, &parse_path("/interfaces/interface[name=Ethernet0]/state").unwrap()));
        let pattern = parse_path("/COUNTERS/Ethernet*").unwrap();
        assert!(matches(&pattern, &parse_path("/COUNTERS/Ethernet8/Queues").unwrap()));
        assert!(!matches(&pattern, &parse_path("/COUNTERS/PortChannel1").unwrap()));
        let pattern = parse_path("/interfaces/interface/state").unwrap();
        assert!(matches(&pattern, &parse_path("/interfaces/interface[name=Ethernet4]/state/x").unwrap()));
    }

    #[test]
    fn join_keeps_the_prefix_target_and_appends_elements() {
        let prefix = parse_path("COUNTERS_DB@/COUNTERS").unwrap();
        let joined = join(Some(&prefix), &elems(&["Ethernet0", "Queues"]));
        assert_eq!(path_to_string(&joined), "COUNTERS_DB@/COUNTERS/Ethernet0/Queues");
    }

    #[test]
    fn join_into_a_used_path_gives_what_join_gives() {
        let cases = [
            ("COUNTERS_DB@/COUNTERS", "/Ethernet0/Queues"),
            ("openconfig:/interfaces/interface[name=Ethernet4]", "/state/counters/in-errors"),
            ("/a", "other:/b[k=v]"),
            ("", "/x"),
        ];
        // One buffer through every case, in both orders: longer, shorter,
        // with and without keys, origin and target left from the last.
        let mut out = Path::default();
        for (prefix, path) in cases.iter().chain(cases.iter().rev()) {
            let prefix = (!prefix.is_empty()).then(|| parse_path(prefix).unwrap());
            let path = parse_path(path).unwrap();
            join_into(prefix.as_ref(), &path, &mut out);
            assert_eq!(out, join(prefix.as_ref(), &path), "{prefix:?} + {path:?}");
        }
        let mut old_style = Path { element: vec!["a".into(), "b".into()], ..Path::default() };
        join_into(None, &Path { element: vec!["c".into()], ..Path::default() }, &mut old_style);
        assert_eq!(old_style.element, ["c"]);
    }
}
