//! Label values checked at intake, by what they name. A label value ends
//! up in action targets, command lines, gNMI paths and log lines: one that
//! no Linux netdev, SONiC port or host could carry (a quote, a slash, a
//! newline, `..`) is a sensor gone wrong or a forged recording, and its
//! samples are refused (counted, reported) before any rule sees them.
//!
//! - `netdev`: Linux's `dev_valid_name`: 1 to 15 bytes, not `.` or `..`,
//!   no `/`, `:` or whitespace (and, here, printable ASCII only);
//! - `port`: SONiC port names (`Ethernet0`, `Ethernet1/1`, `etp1`,
//!   `PortChannel0001`): letters, digits, `/`, `_`, `.`, `-`, at most 64
//!   bytes, no `..`;
//! - `switch`, `node`: host names: letters, digits, `.`, `-`, `_`, at most
//!   253 bytes, no `..`;
//! - any other label: no control character, quote or backslash.

/// A label whose value its kind does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("label {kind}: {why}")]
pub struct BadLabel {
    /// Which label (`netdev`, `port`, `switch`, `node`, or `other`).
    pub kind: &'static str,
    /// What is wrong with its value.
    pub why: &'static str,
}

/// The longest netdev name Linux allows (`IFNAMSIZ` − 1).
pub const NETDEV_MAX: usize = 15;
/// The longest SONiC port name accepted.
pub const PORT_MAX: usize = 64;
/// The longest host name (RFC 1035).
pub const HOST_MAX: usize = 253;

/// Checks one label `name = value`.
pub fn check(name: &str, value: &str) -> Result<(), BadLabel> {
    let bad = |kind: &'static str, why: &'static str| Err(BadLabel { kind, why });
    if let Some(why) = unprintable(value) {
        let kind = match name {
            "netdev" | "port" | "switch" | "node" => kind_name(name),
            _ => "other",
        };
        return bad(kind, why);
    }
    match name {
        "netdev" => {
            if value.is_empty() || value.len() > NETDEV_MAX {
                return bad("netdev", "a Linux netdev name is 1 to 15 bytes");
            }
            if value == "." || value == ".." {
                return bad("netdev", "`.` and `..` are not netdev names");
            }
            if value.contains(['/', ':']) || value.contains(char::is_whitespace) {
                return bad("netdev", "a Linux netdev name has no `/`, `:` or whitespace");
            }
        }
        "port" => name_of("port", value, PORT_MAX, |c| c.is_ascii_alphanumeric() || "/_.-".contains(c))?,
        "switch" | "node" => {
            name_of(kind_name(name), value, HOST_MAX, |c| c.is_ascii_alphanumeric() || "._-".contains(c))?
        }
        _ => {}
    }
    Ok(())
}

fn kind_name(name: &str) -> &'static str {
    match name {
        "netdev" => "netdev",
        "port" => "port",
        "switch" => "switch",
        _ => "node",
    }
}

/// What no label value may hold: control characters, quotes, backslashes.
fn unprintable(value: &str) -> Option<&'static str> {
    if value.chars().any(char::is_control) {
        return Some("a control character (newline, tab, escape…)");
    }
    if value.contains(['"', '\'', '`', '\\']) {
        return Some("a quote or a backslash");
    }
    None
}

/// A name of `kind` made of the characters `allowed`, at most `max` bytes,
/// without `..`.
fn name_of(kind: &'static str, value: &str, max: usize, allowed: impl Fn(char) -> bool) -> Result<(), BadLabel> {
    let why = if value.is_empty() {
        "an empty name"
    } else if value.len() > max {
        match kind {
            "port" => "a SONiC port name is at most 64 bytes",
            _ => "a host name is at most 253 bytes",
        }
    } else if value.contains("..") {
        "`..` in a name"
    } else if !value.chars().all(allowed) {
        match kind {
            "port" => "a SONiC port name is letters, digits, `/`, `_`, `.` and `-`",
            _ => "a host name is letters, digits, `.`, `-` and `_`",
        }
    } else {
        return Ok(());
    };
    Err(BadLabel { kind, why })
}

/// Checks every label of a series; the first bad one.
pub fn check_all<'a>(labels: impl IntoIterator<Item = (&'a String, &'a String)>) -> Result<(), BadLabel> {
    labels.into_iter().try_for_each(|(name, value)| check(name, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_names_pass() {
        for (name, value) in [
            ("netdev", "eth6"),
            ("netdev", "enp65s0f0np0"),
            ("netdev", "mlx5_0.1"),
            ("port", "Ethernet0"),
            ("port", "Ethernet1/1"),
            ("port", "etp1"),
            ("port", "PortChannel0001"),
            ("switch", "leaf-rail0"),
            ("switch", "spine01.dc1.example.com"),
            ("node", "gpu-node-017"),
            ("job", "train_llm/run 7"),
        ] {
            assert_eq!(check(name, value), Ok(()), "{name}={value:?}");
        }
    }

    #[test]
    fn the_forged_netdev_and_its_kin_are_refused() {
        let forged = "eth6\",\"switch=\"leaf-rail0|x/../y --help\n{node}";
        assert_eq!(check("netdev", forged).unwrap_err().kind, "netdev");
        for (name, value, why) in [
            ("netdev", "eth6/../x", "`/`"),
            ("netdev", "eth:6", "`:`"),
            ("netdev", "eth 6", "whitespace"),
            ("netdev", "a-very-long-netdev", "1 to 15 bytes"),
            ("netdev", "..", "`..`"),
            ("port", "Ethernet0/../1", "`..`"),
            ("port", "Ethernet0|x", "letters, digits"),
            ("switch", "leaf-rail0|x/../y", "`..`"),
            ("switch", "leaf/rail0", "letters, digits"),
            ("node", "", "empty"),
            ("job", "a\nb", "control character"),
            ("job", "a\"b", "quote"),
        ] {
            let err = check(name, value).unwrap_err().to_string();
            assert!(err.contains(why), "{name}={value:?}: {err}");
        }
    }
}
