//! The host side of `pfcwd`: the NIC's PFC storm prevention, the ethtool
//! tunable `pfc-prevention-tout` (`ethtool --set-tunable <if>
//! pfc-prevention-tout <ms>|auto`), through `ETHTOOL_GTUNABLE` /
//! `ETHTOOL_STUNABLE` on the sensors' ethtool socket.
//!
//! mlx5 accepts 80 to 8000 ms, `0` to disable, and `0xffff` for "auto"
//! (its default, 100 ms). A driver without tunables (veth, most virtual
//! NICs) answers `EOPNOTSUPP`, which becomes a clear "not supported".
//! The ioctl acts in the network namespace of the calling thread, so it runs
//! on that thread (it takes microseconds), never moved to a blocking pool.

use std::io;

use engine::ActuatorError;
use net::ethtool::EthtoolSocket;

use crate::ParseError;

const ETHTOOL_GTUNABLE: u32 = 0x48;
const ETHTOOL_STUNABLE: u32 = 0x49;
/// `enum tunable_id`: `ETHTOOL_PFC_PREVENTION_TOUT`.
const ETHTOOL_PFC_PREVENTION_TOUT: u32 = 3;
/// `enum tunable_type_id`: `ETHTOOL_TUNABLE_U16`.
const ETHTOOL_TUNABLE_U16: u32 = 2;
/// `PFC_STORM_PREVENTION_AUTO`.
const AUTO: u16 = 0xffff;

/// A `pfc-prevention-tout` value; recorded as `ethtool` spells it (`auto`,
/// `0`, milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prevention {
    /// The driver's default (100 ms on mlx5).
    Auto,
    /// Storm prevention off.
    Off,
    /// Milliseconds, 80 to 8000.
    Ms(u16),
}

impl Prevention {
    /// `auto`, `off` or milliseconds (80 to 8000).
    pub fn parse(text: &str) -> Result<Prevention, ParseError> {
        match text.trim() {
            "auto" => Ok(Prevention::Auto),
            "off" | "0" => Ok(Prevention::Off),
            ms => match ms.parse::<u16>() {
                Ok(n) if (80..=8000).contains(&n) => Ok(Prevention::Ms(n)),
                _ => Err(ParseError::Value {
                    what: "pfc-prevention-tout",
                    value: text.to_string(),
                    expected: "auto, off, or 80 to 8000 ms",
                }),
            },
        }
    }

    fn raw(self) -> u16 {
        match self {
            Prevention::Auto => AUTO,
            Prevention::Off => 0,
            Prevention::Ms(n) => n,
        }
    }

    fn from_raw(raw: u16) -> Prevention {
        match raw {
            AUTO => Prevention::Auto,
            0 => Prevention::Off,
            n => Prevention::Ms(n),
        }
    }
}

impl std::fmt::Display for Prevention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Prevention::Auto => f.write_str("auto"),
            Prevention::Off => f.write_str("0"),
            Prevention::Ms(n) => write!(f, "{n}"),
        }
    }
}

impl serde::Serialize for Prevention {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Prevention {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Prevention, D::Error> {
        let text = String::deserialize(d)?;
        Prevention::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The host side's settings, checked.
#[derive(Debug, Clone)]
pub struct Host {
    /// The node this daemon runs on.
    pub node: String,
    /// The netdevs it may change; empty allows any.
    pub netdevs: Vec<String>,
    /// The value set when the action gives none.
    pub prevention: Prevention,
}

/// `struct ethtool_tunable` with one u16 of data right after its 16-byte header.
#[repr(C)]
struct Tunable {
    cmd: u32,
    id: u32,
    type_id: u32,
    len: u32,
    data: u16,
    pad: [u8; 6],
}

fn call(netdev: &str, cmd: u32, value: u16) -> io::Result<u16> {
    let socket = EthtoolSocket::open()?;
    let mut t = Tunable {
        cmd,
        id: ETHTOOL_PFC_PREVENTION_TOUT,
        type_id: ETHTOOL_TUNABLE_U16,
        len: 2,
        data: value,
        pad: [0; 6],
    };
    // SAFETY: the buffer is a `struct ethtool_tunable` header followed by
    // the 2 bytes `len` announces; the kernel reads or writes only those.
    unsafe { socket.ethtool(netdev, (&mut t as *mut Tunable).cast())? };
    Ok(t.data)
}

fn error(netdev: &str, what: &str, e: io::Error) -> ActuatorError {
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) => ActuatorError::NotSupported(format!(
            "{netdev} does not support the ethtool tunable pfc-prevention-tout (its driver has no PFC storm \
             prevention; mlx5 NICs have it)"
        )),
        Some(libc::ENODEV) => ActuatorError::Invalid(format!("there is no netdev {netdev:?} on this host")),
        Some(libc::EPERM) => {
            ActuatorError::Failed(format!("{what} pfc-prevention-tout on {netdev}: needs CAP_NET_ADMIN ({e})"))
        }
        _ => ActuatorError::Failed(format!("{what} pfc-prevention-tout on {netdev}: {e}")),
    }
}

/// Reads `pfc-prevention-tout` of `netdev`.
pub fn get(netdev: &str) -> Result<Prevention, ActuatorError> {
    call(netdev, ETHTOOL_GTUNABLE, 0).map(Prevention::from_raw).map_err(|e| error(netdev, "reading", e))
}

/// Sets `pfc-prevention-tout` of `netdev`.
pub fn set(netdev: &str, value: Prevention) -> Result<(), ActuatorError> {
    call(netdev, ETHTOOL_STUNABLE, value.raw()).map(|_| ()).map_err(|e| error(netdev, "setting", e))
}

/// The request text of a set, as `ethtool` would spell it.
pub fn request(netdev: &str, value: Prevention) -> String {
    format!("ethtool ETHTOOL_STUNABLE {netdev} pfc-prevention-tout {value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_the_mlx5_range() {
        assert_eq!(Prevention::parse("auto"), Ok(Prevention::Auto));
        assert_eq!(Prevention::parse("off"), Ok(Prevention::Off));
        assert_eq!(Prevention::parse("80"), Ok(Prevention::Ms(80)));
        assert_eq!(Prevention::parse("8000"), Ok(Prevention::Ms(8000)));
        assert_eq!(
            Prevention::parse("79").unwrap_err().to_string(),
            "pfc-prevention-tout \"79\" is not auto, off, or 80 to 8000 ms"
        );
        assert!(Prevention::parse("8001").is_err());
        assert_eq!(Prevention::from_raw(0xffff), Prevention::Auto);
        assert_eq!(Prevention::Ms(300).raw(), 300);
        assert_eq!(request("eth3", Prevention::Auto), "ethtool ETHTOOL_STUNABLE eth3 pfc-prevention-tout auto");
        assert_eq!(std::mem::offset_of!(Tunable, data), 16);
    }

    #[test]
    fn loopback_has_no_storm_prevention() {
        // `lo` exists in every namespace and has no ethtool tunables.
        match get("lo") {
            Err(ActuatorError::NotSupported(m)) => assert!(m.contains("lo does not support"), "{m}"),
            other => panic!("expected not supported, got {other:?}"),
        }
    }
}
