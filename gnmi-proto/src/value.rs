//! [`TypedValue`] → numbers and text.
//!
//! Targets disagree on how they type a counter: SONiC sends strings
//! (`"12345"`) or JSON (`{"SAI_…":"12345"}`), OpenConfig targets send
//! `uint_val`, some send `json_ietf_val` holding a quoted number (RFC 7951
//! quotes 64-bit integers). These helpers accept every reasonable form and
//! name the value when they cannot.

use crate::gnmi::typed_value::Value;
use crate::gnmi::TypedValue;

/// A value could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{found} cannot be read as {wanted}")]
pub struct ValueError {
    /// What was wanted (`an unsigned integer`, `a number`).
    pub wanted: &'static str,
    /// The value, shortened.
    pub found: String,
}

fn fail(wanted: &'static str, value: &TypedValue) -> ValueError {
    let mut found = describe(value);
    if found.len() > 80 {
        let mut cut = 77;
        while !found.is_char_boundary(cut) {
            cut -= 1;
        }
        found.truncate(cut);
        found.push_str("...");
    }
    ValueError { wanted, found }
}

/// The value as a `u64`: unsigned, non-negative signed, booleans (1/0), and
/// strings or JSON holding a non-negative integer.
pub fn to_u64(value: &TypedValue) -> Result<u64, ValueError> {
    let wanted = "an unsigned integer";
    match &value.value {
        Some(Value::UintVal(n)) => Ok(*n),
        Some(Value::IntVal(n)) if *n >= 0 => Ok(*n as u64),
        Some(Value::BoolVal(b)) => Ok(u64::from(*b)),
        Some(Value::StringVal(s)) | Some(Value::AsciiVal(s)) => s.trim().parse().map_err(|_| fail(wanted, value)),
        Some(Value::JsonVal(b)) | Some(Value::JsonIetfVal(b)) => match serde_json::from_slice(b) {
            Ok(serde_json::Value::Number(n)) => n.as_u64().ok_or_else(|| fail(wanted, value)),
            Ok(serde_json::Value::String(s)) => s.trim().parse().map_err(|_| fail(wanted, value)),
            _ => Err(fail(wanted, value)),
        },
        _ => Err(fail(wanted, value)),
    }
}

/// The value as an `f64`: any number, booleans (1/0), decimals, strings or
/// JSON holding a number.
pub fn to_f64(value: &TypedValue) -> Result<f64, ValueError> {
    let wanted = "a number";
    let parse = |s: &str| s.trim().parse::<f64>().ok().filter(|x| x.is_finite());
    match &value.value {
        Some(Value::UintVal(n)) => Ok(*n as f64),
        Some(Value::IntVal(n)) => Ok(*n as f64),
        Some(Value::BoolVal(b)) => Ok(f64::from(u8::from(*b))),
        #[allow(deprecated)]
        Some(Value::FloatVal(x)) => Ok(f64::from(*x)),
        Some(Value::DoubleVal(x)) => Ok(*x),
        #[allow(deprecated)]
        Some(Value::DecimalVal(d)) => Ok(d.digits as f64 / 10f64.powi(d.precision.min(300) as i32)),
        Some(Value::StringVal(s)) | Some(Value::AsciiVal(s)) => parse(s).ok_or_else(|| fail(wanted, value)),
        Some(Value::JsonVal(b)) | Some(Value::JsonIetfVal(b)) => match serde_json::from_slice(b) {
            Ok(serde_json::Value::Number(n)) => n.as_f64().ok_or_else(|| fail(wanted, value)),
            Ok(serde_json::Value::String(s)) => parse(&s).ok_or_else(|| fail(wanted, value)),
            _ => Err(fail(wanted, value)),
        },
        _ => Err(fail(wanted, value)),
    }
}

/// The value as text: strings as they are, numbers printed, JSON strings
/// unquoted, other JSON as its text.
pub fn to_text(value: &TypedValue) -> Result<String, ValueError> {
    match &value.value {
        Some(Value::StringVal(s)) | Some(Value::AsciiVal(s)) => Ok(s.clone()),
        Some(Value::UintVal(n)) => Ok(n.to_string()),
        Some(Value::IntVal(n)) => Ok(n.to_string()),
        Some(Value::BoolVal(b)) => Ok(b.to_string()),
        Some(Value::DoubleVal(x)) => Ok(x.to_string()),
        #[allow(deprecated)]
        Some(Value::FloatVal(x)) => Ok(x.to_string()),
        Some(Value::JsonVal(b)) | Some(Value::JsonIetfVal(b)) => match serde_json::from_slice(b) {
            Ok(serde_json::Value::String(s)) => Ok(s),
            Ok(other) => Ok(other.to_string()),
            Err(_) => Err(fail("text", value)),
        },
        _ => Err(fail("text", value)),
    }
}

/// The value as JSON, when it is JSON (`json_val`, `json_ietf_val`).
pub fn to_json(value: &TypedValue) -> Option<Result<serde_json::Value, ValueError>> {
    match &value.value {
        Some(Value::JsonVal(b)) | Some(Value::JsonIetfVal(b)) => {
            Some(serde_json::from_slice(b).map_err(|_| fail("JSON", value)))
        }
        _ => None,
    }
}

/// A short description of a value for errors: its type and content.
pub fn describe(value: &TypedValue) -> String {
    match &value.value {
        None => "an empty value".into(),
        Some(Value::StringVal(s)) => format!("string {s:?}"),
        Some(Value::AsciiVal(s)) => format!("ascii {s:?}"),
        Some(Value::UintVal(n)) => format!("uint {n}"),
        Some(Value::IntVal(n)) => format!("int {n}"),
        Some(Value::BoolVal(b)) => format!("bool {b}"),
        Some(Value::DoubleVal(x)) => format!("double {x}"),
        #[allow(deprecated)]
        Some(Value::FloatVal(x)) => format!("float {x}"),
        #[allow(deprecated)]
        Some(Value::DecimalVal(d)) => format!("decimal {}e-{}", d.digits, d.precision),
        Some(Value::JsonVal(b)) => format!("json {}", String::from_utf8_lossy(b)),
        Some(Value::JsonIetfVal(b)) => format!("json_ietf {}", String::from_utf8_lossy(b)),
        Some(Value::BytesVal(b)) => format!("{} bytes", b.len()),
        Some(Value::ProtoBytes(b)) => format!("{} proto bytes", b.len()),
        Some(Value::LeaflistVal(a)) => format!("a leaf-list of {}", a.element.len()),
        Some(Value::AnyVal(a)) => format!("an Any of {}", a.type_url),
    }
}

/// A `string_val`.
pub fn string(s: impl Into<String>) -> TypedValue {
    TypedValue { value: Some(Value::StringVal(s.into())) }
}

/// A `uint_val`.
pub fn uint(n: u64) -> TypedValue {
    TypedValue { value: Some(Value::UintVal(n)) }
}

/// A `json_ietf_val` holding `json`.
pub fn json_ietf(json: &serde_json::Value) -> TypedValue {
    TypedValue { value: Some(Value::JsonIetfVal(json.to_string().into_bytes())) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> TypedValue {
        TypedValue { value: Some(Value::JsonIetfVal(text.as_bytes().to_vec())) }
    }

    #[test]
    fn counters_read_from_every_form_targets_send() {
        assert_eq!(to_u64(&uint(7)), Ok(7));
        assert_eq!(to_u64(&string(" 18446744073709551615")), Ok(u64::MAX));
        assert_eq!(to_u64(&json("\"12345\"")), Ok(12345));
        assert_eq!(to_u64(&json("99")), Ok(99));
        assert_eq!(to_u64(&TypedValue { value: Some(Value::IntVal(3)) }), Ok(3));
    }

    #[test]
    fn garbage_is_named_in_the_error() {
        let e = to_u64(&string("12a")).unwrap_err();
        assert_eq!(e.to_string(), "string \"12a\" cannot be read as an unsigned integer");
        assert!(to_u64(&TypedValue { value: Some(Value::IntVal(-1)) }).is_err());
        assert!(to_f64(&string("NaN")).is_err());
        assert_eq!(to_text(&TypedValue { value: None }).unwrap_err().found, "an empty value");
    }

    #[test]
    fn floats_and_text() {
        assert_eq!(to_f64(&string("2.5")), Ok(2.5));
        #[allow(deprecated)]
        let d = TypedValue { value: Some(Value::DecimalVal(crate::gnmi::Decimal64 { digits: 125, precision: 2 })) };
        assert_eq!(to_f64(&d), Ok(1.25));
        assert_eq!(to_text(&json("\"drop\"")), Ok("drop".to_string()));
        assert_eq!(to_text(&uint(5)), Ok("5".to_string()));
    }
}
