//! The errors the front answers with, in sonic-gnmi's words.
//!
//! sonic-gnmi builds most of its refusals from Go errors: a plain `fmt.Errorf` text that a
//! handler wraps into a status (`status.Error(codes.NotFound, err.Error())`, `server.go:1053`),
//! or a status error that gets wrapped a second time, whose text then reads
//! `rpc error: code = Unimplemented desc = …` under another code. rocemend decides "absent"
//! from these texts, so [`GoError`] keeps both kinds apart and renders them as Go would
//! ([`GoError::text`]). The helpers below print values the way Go's `%v` does where sonic-gnmi
//! interpolates them (durations, `[]string`, maps, path messages).

use std::collections::BTreeMap;
use std::time::Duration;

use tonic::{Code, Status};

/// An error as sonic-gnmi's Go code carries it before a handler turns it into a status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GoError {
    /// A plain error (`fmt.Errorf`): the handler chooses the code.
    #[error("{0}")]
    Plain(String),
    /// A status error (`status.Error(code, …)`): passed through as it is, or rendered as
    /// `rpc error: code = … desc = …` when a handler wraps it again.
    #[error("rpc error: code = {} desc = {}", code_name(*.0), .1)]
    Status(Code, String),
}

impl GoError {
    /// A plain error of `text`.
    pub fn plain(text: impl Into<String>) -> Self {
        GoError::Plain(text.into())
    }

    /// A status error.
    pub fn status(code: Code, text: impl Into<String>) -> Self {
        GoError::Status(code, text.into())
    }

    /// `err.Error()`.
    pub fn text(&self) -> String {
        self.to_string()
    }

    /// What `status.Error(code, err.Error())` makes of it: the code given, the Go text.
    pub fn wrapped(&self, code: Code) -> Status {
        Status::new(code, self.text())
    }

    /// What a handler that passes status errors through and wraps others in `code` returns
    /// (`server.go:1066-1072`: `status.FromError` first, `codes.NotFound` otherwise). A plain Go
    /// error returned straight from a handler becomes `Unknown` (grpc-go's rule).
    pub fn passed_or(&self, code: Code) -> Status {
        match self {
            GoError::Status(c, text) => Status::new(*c, text.clone()),
            GoError::Plain(text) => Status::new(code, text.clone()),
        }
    }
}

/// A status of `code` and `text`.
pub fn status(code: Code, text: impl Into<String>) -> Status {
    Status::new(code, text.into())
}

/// grpc-go's name of a code (`codes.Code.String()`), as `rpc error: code = …` prints it.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "Canceled",
        Code::Unknown => "Unknown",
        Code::InvalidArgument => "InvalidArgument",
        Code::DeadlineExceeded => "DeadlineExceeded",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::PermissionDenied => "PermissionDenied",
        Code::ResourceExhausted => "ResourceExhausted",
        Code::FailedPrecondition => "FailedPrecondition",
        Code::Aborted => "Aborted",
        Code::OutOfRange => "OutOfRange",
        Code::Unimplemented => "Unimplemented",
        Code::Internal => "Internal",
        Code::Unavailable => "Unavailable",
        Code::DataLoss => "DataLoss",
        Code::Unauthenticated => "Unauthenticated",
    }
}

/// Go's `time.Duration.String()`: `200ms`, `1s`, `1.5s`, `2m0s`, `1h0m0s`, `500µs`, `0s`.
pub fn go_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0s".into();
    }
    // Below a second: the largest unit that keeps the integer part non-zero.
    if ns < 1_000_000_000 {
        let (unit, per) = match ns {
            n if n < 1_000 => ("ns", 1),
            n if n < 1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{}{unit}", decimal(ns, per));
    }
    let total_s = ns / 1_000_000_000;
    let (h, m) = (total_s / 3600, (total_s % 3600) / 60);
    let s = decimal(ns % 60_000_000_000, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// `n / per` with the fraction's trailing zeros cut, as Go prints it.
fn decimal(n: u128, per: u128) -> String {
    let (int, frac) = (n / per, n % per);
    if frac == 0 {
        return int.to_string();
    }
    let width = per.to_string().len() - 1;
    let digits = format!("{frac:0width$}");
    format!("{int}.{}", digits.trim_end_matches('0'))
}

/// Go's `%v` of a `[]string`: `[COUNTERS_DB COUNTERS Ethernet0]`.
pub fn go_slice(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// Go's `%v` of a `map[string]interface{}` decoded from JSON: `map[a:1 b:map[c:d]]`, keys
/// sorted, lists as `[x y]`.
pub fn go_value(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            let items: Vec<String> = sorted.iter().map(|(k, v)| format!("{k}:{}", go_value(v))).collect();
            format!("map[{}]", items.join(" "))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(go_value).collect::<Vec<_>>().join(" ")),
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        other => other.to_string(),
    }
}

/// Python's `repr` of a JSON value (what `config apply-patch` prints of the config it
/// refused): `{'action': 'drop'}`.
pub fn py_repr(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let items: Vec<String> = map.iter().map(|(k, v)| format!("'{k}': {}", py_repr(v))).collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::String(s) => format!("'{s}'"),
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Number(n) => n.to_string(),
    }
}

/// Go's `%v` of a `*gnmipb.Path` (one copy, shared with the clients that compare the texts
/// holding it).
pub use crate::gnmi::texts::go_path;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go_prints_them() {
        let ms = Duration::from_millis;
        assert_eq!(go_duration(ms(200)), "200ms");
        assert_eq!(go_duration(ms(1000)), "1s");
        assert_eq!(go_duration(ms(1500)), "1.5s");
        assert_eq!(go_duration(ms(999)), "999ms");
        assert_eq!(go_duration(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(go_duration(Duration::from_micros(500)), "500µs");
        assert_eq!(go_duration(Duration::from_nanos(7)), "7ns");
        assert_eq!(go_duration(Duration::from_secs(120)), "2m0s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(go_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn a_status_error_wrapped_again_reads_as_grpc_go_prints_it() {
        let e = GoError::status(Code::Unimplemented, "Invalid elem length");
        assert_eq!(e.text(), "rpc error: code = Unimplemented desc = Invalid elem length");
        let s = e.wrapped(Code::NotFound);
        assert_eq!(
            (s.code(), s.message()),
            (Code::NotFound, "rpc error: code = Unimplemented desc = Invalid elem length")
        );
        assert_eq!(e.passed_or(Code::NotFound).code(), Code::Unimplemented);
        assert_eq!(GoError::plain("redis: nil").passed_or(Code::NotFound).code(), Code::NotFound);
    }

    #[test]
    fn values_print_as_go_and_python_print_them() {
        let v = serde_json::json!({"b": {"x": "1"}, "a": ["p", "q"]});
        assert_eq!(go_value(&v), "map[a:[p q] b:map[x:1]]");
        assert_eq!(py_repr(&serde_json::json!({"action": "drop"})), "{'action': 'drop'}");
        assert_eq!(go_slice(&["COUNTERS_DB".into(), "X".into()]), "[COUNTERS_DB X]");
        let path = gnmi_proto::parse_path("sonic-db:/CONFIG_DB/localhost/PFC_WD[k=v]").unwrap();
        assert_eq!(
            go_path(&path),
            r#"origin:"sonic-db" elem:{name:"CONFIG_DB"} elem:{name:"localhost"} elem:{name:"PFC_WD" key:{key:"k" value:"v"}}"#
        );
    }
}
