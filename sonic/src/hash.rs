//! SONiC's generic hash (`SWITCH_HASH|GLOBAL` in CONFIG_DB, sonic-swss `switchorch`): the
//! packet fields ECMP and LAG hash on, as CONFIG_DB lists them, and what a switch says it can
//! hash on (STATE_DB `SWITCH_CAPABILITY|switch`).
//!
//! - CONFIG_DB `SWITCH_HASH|GLOBAL`: `ecmp_hash@` and `lag_hash@` are comma-separated field
//!   lists (a `name@` field is how SONiC's databases hold a list), `ecmp_hash_algorithm` one of
//!   `CRC`, `XOR`, `RANDOM`, `CRC_32LO`, `CRC_32HI`, `CRC_CCITT`, `CRC_XOR`.
//! - switchorch applies a SET of the entry after checking every field against the switch's
//!   capability, and refuses (logs and ignores) the removal of a field or of the entry: a
//!   change is undone by writing the earlier list back, never by deleting it.
//! - STATE_DB `SWITCH_CAPABILITY|switch` `HASH|NATIVE_HASH_FIELD_LIST`: the fields this ASIC's
//!   SAI can hash on (`RDMA_BTH_DEST_QP`, the RoCE destination QP, only on some).
//!
//! (The SONiC "Generic Hash" design, `doc/hash/hash-design.md`.)

use std::fmt;
use std::str::FromStr;

/// CONFIG_DB's table of the switch's hash.
pub const SWITCH_HASH: &str = "SWITCH_HASH";
/// Its one key.
pub const GLOBAL: &str = "GLOBAL";
/// The ECMP field list, as the Redis field holds it (a list: `name@`).
pub const ECMP_HASH_FIELD: &str = "ecmp_hash@";
/// STATE_DB's capability table and key.
pub const SWITCH_CAPABILITY_KEY: &str = "SWITCH_CAPABILITY|switch";
/// The capability field listing the fields the ASIC can hash on.
pub const NATIVE_HASH_FIELD_LIST: &str = "HASH|NATIVE_HASH_FIELD_LIST";

/// A field of SONiC's generic hash (`SWITCH_HASH|GLOBAL|ecmp_hash`), by the
/// name CONFIG_DB and STATE_DB's `SWITCH_CAPABILITY|switch` use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HashField {
    /// The ingress port.
    InPort,
    /// Destination MAC.
    DstMac,
    /// Source MAC.
    SrcMac,
    /// Ethertype.
    Ethertype,
    /// VLAN id.
    VlanId,
    /// IP protocol.
    IpProtocol,
    /// Destination IP.
    DstIp,
    /// Source IP.
    SrcIp,
    /// L4 destination port.
    L4DstPort,
    /// L4 source port: where a RoCEv2 NIC puts a QP's entropy.
    L4SrcPort,
    /// Inner fields of a tunnelled packet: zero for RoCEv2 between NICs.
    Inner(InnerField),
    /// The IPv6 flow label.
    Ipv6FlowLabel,
    /// The InfiniBand BTH opcode.
    RdmaBthOpcode,
    /// The InfiniBand BTH destination QP.
    RdmaBthDestQp,
}

/// The inner (tunnelled) fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InnerField {
    /// INNER_DST_MAC.
    DstMac,
    /// INNER_SRC_MAC.
    SrcMac,
    /// INNER_ETHERTYPE.
    Ethertype,
    /// INNER_IP_PROTOCOL.
    IpProtocol,
    /// INNER_DST_IP.
    DstIp,
    /// INNER_SRC_IP.
    SrcIp,
    /// INNER_L4_DST_PORT.
    L4DstPort,
    /// INNER_L4_SRC_PORT.
    L4SrcPort,
}

const NAMES: &[(&str, HashField)] = &[
    ("IN_PORT", HashField::InPort),
    ("DST_MAC", HashField::DstMac),
    ("SRC_MAC", HashField::SrcMac),
    ("ETHERTYPE", HashField::Ethertype),
    ("VLAN_ID", HashField::VlanId),
    ("IP_PROTOCOL", HashField::IpProtocol),
    ("DST_IP", HashField::DstIp),
    ("SRC_IP", HashField::SrcIp),
    ("L4_DST_PORT", HashField::L4DstPort),
    ("L4_SRC_PORT", HashField::L4SrcPort),
    ("INNER_DST_MAC", HashField::Inner(InnerField::DstMac)),
    ("INNER_SRC_MAC", HashField::Inner(InnerField::SrcMac)),
    ("INNER_ETHERTYPE", HashField::Inner(InnerField::Ethertype)),
    ("INNER_IP_PROTOCOL", HashField::Inner(InnerField::IpProtocol)),
    ("INNER_DST_IP", HashField::Inner(InnerField::DstIp)),
    ("INNER_SRC_IP", HashField::Inner(InnerField::SrcIp)),
    ("INNER_L4_DST_PORT", HashField::Inner(InnerField::L4DstPort)),
    ("INNER_L4_SRC_PORT", HashField::Inner(InnerField::L4SrcPort)),
    ("IPV6_FLOW_LABEL", HashField::Ipv6FlowLabel),
    ("RDMA_BTH_OPCODE", HashField::RdmaBthOpcode),
    ("RDMA_BTH_DEST_QP", HashField::RdmaBthDestQp),
];

impl HashField {
    /// Every field, in SONiC's order.
    pub const ALL: [HashField; 21] = {
        let mut all = [HashField::InPort; 21];
        let mut i = 0;
        while i < NAMES.len() {
            all[i] = NAMES[i].1;
            i += 1;
        }
        all
    };

    /// Its name in CONFIG_DB.
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(_, f)| *f == self).map(|(n, _)| *n).expect("every field is named")
    }
}

impl fmt::Display for HashField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for HashField {
    type Err = String;

    fn from_str(s: &str) -> Result<HashField, String> {
        NAMES.iter().find(|(n, _)| *n == s).map(|(_, f)| *f).ok_or_else(|| {
            let known: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
            format!("unknown hash field {s:?} (known: {})", known.join(", "))
        })
    }
}

/// A hash field list as CONFIG_DB holds it (`ecmp_hash@` = `"DST_IP,SRC_IP"`).
pub fn parse_fields(list: &str) -> Result<Vec<HashField>, String> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::parse).collect()
}

/// The list written back, comma-separated.
pub fn format_fields(fields: &[HashField]) -> String {
    fields.iter().map(|f| f.name()).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_lists_read_and_write_as_config_db_holds_them() {
        let fields = parse_fields("SRC_IP,DST_IP, L4_SRC_PORT,RDMA_BTH_DEST_QP").unwrap();
        assert_eq!(fields, [HashField::SrcIp, HashField::DstIp, HashField::L4SrcPort, HashField::RdmaBthDestQp]);
        assert_eq!(format_fields(&fields), "SRC_IP,DST_IP,L4_SRC_PORT,RDMA_BTH_DEST_QP");
        let err = parse_fields("SRC_IP,hash_roce_qpn").unwrap_err();
        assert!(err.contains("unknown hash field \"hash_roce_qpn\"") && err.contains("RDMA_BTH_DEST_QP"), "{err}");
        for (name, field) in NAMES {
            assert_eq!(name.parse::<HashField>().unwrap(), *field);
            assert_eq!(field.to_string(), *name);
        }
    }
}
