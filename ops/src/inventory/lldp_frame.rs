//! One LLDP frame read by hand (IEEE 802.1AB): the Ethernet header, then the LLDPDU's TLVs —
//! chassis id (1), port id (2) with its subtype, TTL (3), port description (4), system name
//! (5), end (0). Everything else is skipped. A frame too short for what it claims, or without
//! the three mandatory TLVs, is an error naming the offset: it is counted and skipped by the
//! listener ([`lldp_raw`](crate::inventory::lldp_raw)), never trusted in part.

use crate::inventory::lldp::{Neighbor, Via};

/// LLDP's ethertype.
pub const ETHERTYPE_LLDP: u16 = 0x88cc;
/// 802.1Q's, when the switch tags its LLDP frames.
const ETHERTYPE_VLAN: u16 = 0x8100;

/// What one LLDPDU says about the sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lldpdu {
    /// The chassis id, as text (a MAC as `aa:bb:…`).
    pub chassis_id: String,
    /// The port id, as text.
    pub port_id: String,
    /// The port id's subtype by lldpd's name (`ifname`, `local`, `mac`, …).
    pub port_id_type: String,
    /// Seconds the sender's facts hold; 0 is a shutdown (the neighbour is gone).
    pub ttl: u16,
    /// The port description TLV, when sent.
    pub port_descr: Option<String>,
    /// The system name TLV, when sent.
    pub sys_name: Option<String>,
}

impl Lldpdu {
    /// As a neighbour of `local`, heard in a frame there.
    pub fn neighbor(self, local: &str) -> Neighbor {
        Neighbor {
            local: local.to_string(),
            sys_name: self.sys_name,
            port_id: self.port_id,
            port_id_type: self.port_id_type,
            port_descr: self.port_descr,
            via: Via::Frame,
        }
    }
}

/// Reads a whole Ethernet frame carrying an LLDPDU (an 802.1Q tag is allowed).
pub fn parse_frame(frame: &[u8]) -> Result<Lldpdu, String> {
    let ethertype = |at: usize| frame.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let (kind, body) = match ethertype(12) {
        Some(ETHERTYPE_VLAN) => (ethertype(16), 18),
        other => (other, 14),
    };
    match kind {
        Some(ETHERTYPE_LLDP) => parse_lldpdu(&frame[body..]),
        Some(other) => Err(format!("ethertype {other:#06x}, not LLDP's")),
        None => Err(format!("{} bytes: shorter than an Ethernet header", frame.len())),
    }
}

/// Reads the TLVs of an LLDPDU (the frame's payload).
pub fn parse_lldpdu(pdu: &[u8]) -> Result<Lldpdu, String> {
    let (mut chassis_id, mut port, mut ttl, mut port_descr, mut sys_name) = (None, None, None, None, None);
    let mut at = 0;
    while at < pdu.len() {
        let header = pdu.get(at..at + 2).ok_or_else(|| format!("a TLV header cut at byte {at}"))?;
        let (kind, len) = (header[0] >> 1, (usize::from(header[0] & 1) << 8) | usize::from(header[1]));
        let value = pdu
            .get(at + 2..at + 2 + len)
            .ok_or_else(|| format!("TLV type {kind} at byte {at} claims {len} bytes, {} remain", pdu.len() - at - 2))?;
        match kind {
            0 => break,
            1 => chassis_id = Some(subtyped(value, kind, at)?.1),
            2 => port = Some(subtyped(value, kind, at)?),
            3 if len == 2 => ttl = Some(u16::from_be_bytes([value[0], value[1]])),
            3 => return Err(format!("TTL TLV at byte {at} of {len} bytes, not 2")),
            4 => port_descr = Some(String::from_utf8_lossy(value).into_owned()),
            5 => sys_name = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
        at += 2 + len;
    }
    let missing = |what: &str| format!("no {what} TLV");
    let (port_id_type, port_id) = port.ok_or_else(|| missing("port id"))?;
    Ok(Lldpdu {
        chassis_id: chassis_id.ok_or_else(|| missing("chassis id"))?,
        port_id,
        port_id_type,
        ttl: ttl.ok_or_else(|| missing("TTL"))?,
        port_descr,
        sys_name,
    })
}

/// A chassis or port id: its subtype's name and its value as text.
fn subtyped(value: &[u8], kind: u8, at: usize) -> Result<(String, String), String> {
    let Some((&subtype, id)) = value.split_first().filter(|(_, id)| !id.is_empty()) else {
        return Err(format!("TLV type {kind} at byte {at} has no id after its subtype"));
    };
    let mac = |id: &[u8]| id.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
    let text = |id: &[u8]| String::from_utf8_lossy(id).into_owned();
    // Chassis subtypes: 4 MAC, 5 network address, 6 ifname, 7 local; port: 3 MAC, 4 address, 5 ifname, 7 local.
    let named = match (kind, subtype) {
        (1, 4) | (2, 3) => ("mac", mac(id)),
        (1, 5) | (2, 4) => ("ip", mac(id)),
        (1, 6) | (2, 5) => ("ifname", text(id)),
        (1, 7) | (2, 7) => ("local", text(id)),
        (2, 1) => ("ifalias", text(id)),
        (1, 1) | (2, 2) => ("component", text(id)),
        _ => ("unhandled", text(id)),
    };
    Ok((named.0.to_string(), named.1))
}

/// An LLDP frame as lldpd sends it, for the tests: `tlvs` are `(type, value)`.
#[cfg(test)]
pub(crate) fn frame(tlvs: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e, 2, 0, 0, 0, 0, 1, 0x88, 0xcc];
    for (kind, value) in tlvs {
        let len = value.len() as u16;
        out.extend_from_slice(&((u16::from(*kind) << 9) | len).to_be_bytes());
        out.extend_from_slice(value);
    }
    out.extend_from_slice(&[0, 0]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sonic_leaf() -> Vec<u8> {
        frame(&[
            (1, [&[4u8][..], &[0xde, 0x41, 0x18, 0x6c, 0x99, 0x18]].concat()),
            (2, [&[5u8][..], b"Ethernet8"].concat()),
            (3, vec![0, 120]),
            (4, b"to node-3".to_vec()),
            (5, b"leaf-rail0".to_vec()),
            (8, vec![5, 1, 10, 0, 0, 1, 2, 0, 0, 0, 1, 0]),
        ])
    }

    #[test]
    fn a_sonic_leafs_frame_names_its_system_and_port() {
        let pdu = parse_frame(&sonic_leaf()).unwrap();
        assert_eq!(pdu.chassis_id, "de:41:18:6c:99:18");
        assert_eq!((pdu.port_id_type.as_str(), pdu.port_id.as_str(), pdu.ttl), ("ifname", "Ethernet8", 120));
        let n = pdu.neighbor("eth0");
        assert_eq!((n.sys_name.as_deref(), n.port_name(), n.via), (Some("leaf-rail0"), "Ethernet8", Via::Frame));
    }

    #[test]
    fn a_mac_port_id_gives_way_to_the_port_description() {
        let f = frame(&[
            (1, vec![4, 1, 2, 3, 4, 5, 6]),
            (2, vec![3, 1, 2, 3, 4, 5, 7]),
            (3, vec![0, 30]),
            (4, b"Ethernet12".to_vec()),
        ]);
        let pdu = parse_frame(&f).unwrap();
        assert_eq!((pdu.port_id.as_str(), pdu.sys_name.as_deref()), ("01:02:03:04:05:07", None));
        let n = pdu.neighbor("eth1");
        assert_eq!(n.port_name(), "Ethernet12");
        assert_eq!(n.port_field(), "port description TLV (the port id is a mac)");
    }

    #[test]
    fn a_vlan_tagged_frame_is_read() {
        let mut f = sonic_leaf();
        f.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
        assert_eq!(parse_frame(&f).unwrap().sys_name.as_deref(), Some("leaf-rail0"));
    }

    /// Every cut of a good frame, and frames of the wrong shape: each an error that says why.
    #[test]
    fn truncated_and_garbage_frames_are_errors_not_panics() {
        let good = sonic_leaf();
        // A cut at a TLV's end after the TTL is a shorter but whole LLDPDU: the header (14),
        // chassis (2+7), port (2+10), TTL (2+2) end at 39, the description at 50, the name
        // at 62, TLV 8 at 76; End at 78. Every other cut falls inside a TLV, or before the TTL.
        let whole = [39, 50, 62, 76, 78];
        for cut in 0..=good.len() {
            let parsed = parse_frame(&good[..cut]);
            assert_eq!(parsed.is_ok(), whole.contains(&cut), "cut at {cut}: {parsed:?}");
        }
        assert_eq!(parse_frame(&good[..50]).unwrap().sys_name, None, "the name TLV was cut off");
        let cases: [(&[u8], &str); 6] = [
            (&[0x01, 0x80], "shorter than an Ethernet header"),
            (&[0u8; 14], "ethertype 0x0000"),
            (&[&good[..14], &[0x02, 0x07, 4, 1, 2][..]].concat(), "claims 7 bytes, 3 remain"),
            (&[&good[..14], &[0x02, 0x01, 4][..]].concat(), "no id after its subtype"),
            (&[&good[..14], &[0x06, 0x01, 9, 0, 0][..]].concat(), "TTL TLV at byte 0 of 1 bytes"),
            (&[&good[..14], &[0x02, 0x02, 4, 1, 0, 0][..]].concat(), "no port id TLV"),
        ];
        for (bytes, why) in cases {
            let err = parse_frame(bytes).unwrap_err();
            assert!(err.contains(why), "{bytes:?}: {err}");
        }
    }

    proptest::proptest! {
        /// Any bytes after an LLDP header, and any cut of a good frame: an answer, never a panic.
        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600), cut in 0usize..80) {
            let good = sonic_leaf();
            let _ = parse_frame(&[&good[..14], &tail[..]].concat());
            let _ = parse_frame(&[&good[..cut.min(good.len())], &tail[..]].concat());
        }
    }
}
