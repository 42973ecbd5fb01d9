//! What the simulated switch's answers are made of, shared by the tree of
//! its paths ([`super::tree`]) and its counters ([`super::counters`]):
//! concrete paths and their elements, typed values, `*`-globs over names,
//! and the NotFound status.

use std::collections::HashMap;

use gnmi_proto::gnmi::typed_value::Value as TV;
use gnmi_proto::gnmi::{Encoding, Path, PathElem, TypedValue};
use gnmi_proto::path::path_to_string;
use serde_json::Value as Json;
use tonic::Status;

/// NotFound at `path`, saying why.
pub(super) fn not_found(path: &Path, why: &str) -> Status {
    Status::not_found(format!("{}: {why}", path_to_string(path)))
}

/// `*`-globs, as sonic-gnmi matches port names.
pub(super) fn glob(pattern: &str, name: &str) -> bool {
    let Some((head, tail)) = pattern.split_once('*') else { return pattern == name };
    let Some(rest) = name.strip_prefix(head) else { return false };
    tail.is_empty() || (0..=rest.len()).filter(|i| rest.is_char_boundary(*i)).any(|i| glob(tail, &rest[i..]))
}

/// `query`'s origin and target, with `elems`: a path the answer names.
pub(super) fn concrete(query: &Path, elems: Vec<PathElem>) -> Path {
    Path { origin: query.origin.clone(), target: query.target.clone(), elem: elems, ..Path::default() }
}

/// One element, without keys.
pub(super) fn elem(name: &str) -> PathElem {
    PathElem { name: name.to_string(), key: HashMap::new() }
}

/// `json` in the encoding the request asked for.
pub(super) fn json_value(json: &Json, encoding: Encoding) -> TypedValue {
    let bytes = json.to_string().into_bytes();
    let value = if encoding == Encoding::Json { TV::JsonVal(bytes) } else { TV::JsonIetfVal(bytes) };
    TypedValue { value: Some(value) }
}

/// A string value.
pub(super) fn string(s: String) -> TypedValue {
    TypedValue { value: Some(TV::StringVal(s)) }
}
