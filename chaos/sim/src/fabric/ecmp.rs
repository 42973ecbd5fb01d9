//! ECMP: how a leaf spreads RoCEv2 flows over the uplinks of one ECMP group,
//! hashing the header fields its `SWITCH_HASH|GLOBAL` `ecmp_hash` lists
//! ([`sonic::hash`]).
//!
//! A collective's traffic is few, large, long flows: one per queue pair
//! (QP) of each connection between two NICs. Every packet of a QP carries
//! the same 5-tuple: UDP to port 4791, from a source port the NIC derives
//! from the QP numbers of both ends (the kernel's flow label, folded into
//! the 0xC000–0xFFFF range: [`udp_source_port`]). With one QP per
//! connection (`NCCL_IB_QPS_PER_CONNECTION=1`, NCCL's default) a leaf with
//! 8 uplinks sees a handful of elephant flows, and a hash puts several on
//! one uplink while others carry none: a collision. More QPs per
//! connection, or more fields in the hash (the L4 source port above all; the
//! BTH destination QP where the switch can hash on it), spread them.
//!
//! The hash is a seeded CRC-32 over the listed fields' bytes, as switch
//! ASICs compute their CRC variants, then mixed (a 32-bit finalizer) before
//! it picks a member: a CRC is linear, so its low bits alone would spread
//! the simulator's consecutive addresses perfectly evenly, which real
//! member-selection tables with their offsets and hash-bit choices do not.
//! A given seed and field list always choose the same uplink for the same
//! flow.
//! What it does not model: hash polarization between tiers, resilient
//! hashing, and adaptive routing.

use std::collections::BTreeMap;

use sonic::hash::HashField;

use super::{Fabric, Nic};

/// RoCEv2's UDP destination port.
pub const ROCE_UDP_PORT: u16 = 4791;
/// The lowest UDP source port a RoCEv2 NIC uses (IB_ROCE_UDP_ENCAP_VALID_PORT_MIN).
pub const ROCE_SOURCE_PORT_MIN: u16 = 0xC000;
/// IP protocol number of UDP.
const UDP: u8 = 17;
/// The BTH opcode of an RC RDMA WRITE (middle): what a collective's data packets carry.
const RC_RDMA_WRITE_MIDDLE: u8 = 0x07;

/// The `ecmp_hash` a SONiC leaf starts with in the simulator: the outer
/// 5-tuple without the L4 source port, the common "L3 plus destination
/// port" profile under which every QP between two NICs hashes alike.
pub const FACTORY_ECMP_HASH: &[HashField] =
    &[HashField::SrcIp, HashField::DstIp, HashField::IpProtocol, HashField::L4DstPort];

/// The UDP source port a RoCEv2 NIC stamps on the packets of its QP
/// `local_qpn` connected to `remote_qpn`: Linux's flow label of the pair
/// (`rdma_calc_flow_label`: the product of the QP numbers, folded to 20
/// bits) folded to 14 bits and put in the 0xC000 range
/// (`rdma_flow_label_to_udp_sport`).
pub fn udp_source_port(local_qpn: u32, remote_qpn: u32) -> u16 {
    let mut v = u64::from(local_qpn) * u64::from(remote_qpn);
    v ^= v >> 20;
    v ^= v >> 40;
    let label = (v & 0xF_FFFF) as u32;
    let low = (label & 0x3FFF) ^ ((label & 0xF_C000) >> 14);
    low as u16 | ROCE_SOURCE_PORT_MIN
}

/// One RoCEv2 flow: the packets of one QP from one NIC to another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flow {
    /// The sending NIC's IPv4 address.
    pub src_ip: u32,
    /// The receiving NIC's.
    pub dst_ip: u32,
    /// The UDP source port ([`udp_source_port`]).
    pub src_port: u16,
    /// The destination QP number (BTH).
    pub dst_qp: u32,
    /// The leaf port it arrives on.
    pub in_port: u16,
    /// Its share of the sending NIC's traffic to that receiver.
    pub share: f64,
}

impl Fabric {
    /// A configuration push of `switch`'s ECMP hash fields to CONFIG_DB: switchorch applies it.
    pub(super) fn push_hash(&mut self, switch: &str, fields: &[HashField]) {
        let Some(leaf) = self.leaves.get(switch) else { return };
        let list = sonic::hash::format_fields(fields);
        let fields = [(sonic::hash::ECMP_HASH_FIELD, list)];
        if let Err(error) = leaf.model.set_config(sonic::hash::SWITCH_HASH, sonic::hash::GLOBAL, fields) {
            tracing::warn!(message = "The hash push was refused.", %switch, %error);
        }
    }
}

impl Flow {
    /// The bytes of `field` as the ASIC feeds them to its hash; zero for a
    /// field the packet does not have (inner fields, the VLAN of an
    /// untagged port), as SONiC's generic hash documents.
    fn field_bytes(&self, field: HashField, out: &mut Vec<u8>) {
        match field {
            HashField::InPort => out.extend_from_slice(&self.in_port.to_be_bytes()),
            // Every NIC's MAC is derived from its IP (the simulator has no
            // other); the leaf rewrites the MACs at each routed hop, so a
            // leaf's uplinks see the leaf's own MAC as source.
            HashField::DstMac => out.extend_from_slice(&mac(self.dst_ip)),
            HashField::SrcMac => out.extend_from_slice(&mac(self.src_ip)),
            HashField::Ethertype => out.extend_from_slice(&0x0800u16.to_be_bytes()),
            HashField::VlanId => out.extend_from_slice(&[0, 0]),
            HashField::IpProtocol => out.push(UDP),
            HashField::DstIp => out.extend_from_slice(&self.dst_ip.to_be_bytes()),
            HashField::SrcIp => out.extend_from_slice(&self.src_ip.to_be_bytes()),
            HashField::L4DstPort => out.extend_from_slice(&ROCE_UDP_PORT.to_be_bytes()),
            HashField::L4SrcPort => out.extend_from_slice(&self.src_port.to_be_bytes()),
            HashField::Inner(_) | HashField::Ipv6FlowLabel => out.extend_from_slice(&[0, 0, 0, 0]),
            HashField::RdmaBthOpcode => out.push(RC_RDMA_WRITE_MIDDLE),
            HashField::RdmaBthDestQp => out.extend_from_slice(&self.dst_qp.to_be_bytes()),
        }
    }
}

/// MurmurHash3's 32-bit finalizer: every output bit depends on every
/// input bit.
fn mix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

fn mac(ip: u32) -> [u8; 6] {
    let b = ip.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// A leaf's ECMP hash: its fields and its seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcmpHash {
    /// The fields hashed, sorted and each once: the order CONFIG_DB lists
    /// them in does not change the choice.
    fields: Vec<HashField>,
    /// The ASIC's hash seed.
    seed: u32,
}

impl EcmpHash {
    /// The hash over `fields` (in any order, repeats ignored) with `seed`.
    pub fn new(fields: &[HashField], seed: u32) -> EcmpHash {
        let mut fields = fields.to_vec();
        fields.sort_unstable();
        fields.dedup();
        EcmpHash { fields, seed }
    }

    /// The member of a group of `members` uplinks `flow` goes out of.
    pub fn member(&self, flow: &Flow, members: usize) -> usize {
        let mut bytes = self.seed.to_be_bytes().to_vec();
        for &field in &self.fields {
            flow.field_bytes(field, &mut bytes);
        }
        (mix(crc32fast::hash(&bytes)) as usize) % members.max(1)
    }

    /// What each of `members` uplinks carries of `flows` (in the flows'
    /// share unit).
    pub fn loads(&self, flows: &[Flow], members: usize) -> Vec<f64> {
        let mut loads = vec![0.0; members.max(1)];
        for flow in flows {
            loads[self.member(flow, members)] += flow.share;
        }
        loads
    }
}

/// How NCCL uses the QPs of a connection (`NCCL_IB_SPLIT_DATA_ON_QPS`).
/// Over a step both spread a connection's bytes evenly over its QPs: split
/// mode cuts every message in equal parts; round-robin mode sends whole
/// messages on each QP in turn, and a collective sends many messages. The
/// difference is latency, which the simulator does not model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QpUse {
    /// `NCCL_IB_QPS_PER_CONNECTION`.
    pub qps_per_connection: u32,
    /// `NCCL_IB_SPLIT_DATA_ON_QPS`.
    pub split: bool,
}

impl Default for QpUse {
    /// NCCL's defaults: one QP, round-robin.
    fn default() -> QpUse {
        QpUse { qps_per_connection: 1, split: false }
    }
}

/// The flows of one connection from the NIC at `src_ip` to the one at
/// `dst_ip`, arriving on leaf port `in_port`: one per QP. The QP numbers
/// come from `qpn_base`, where each end numbers the QPs it creates for the
/// connection (`NCCL` creates a connection's QPs together).
pub fn connection_flows(
    (src_ip, dst_ip): (u32, u32),
    in_port: u16,
    (local_qpn_base, remote_qpn_base): (u32, u32),
    qps: QpUse,
) -> Vec<Flow> {
    let n = qps.qps_per_connection.max(1);
    (0..n)
        .map(|q| {
            let (local, remote) = ((local_qpn_base + q) & 0xFF_FFFF, (remote_qpn_base + q) & 0xFF_FFFF);
            Flow {
                src_ip,
                dst_ip,
                src_port: udp_source_port(local, remote),
                dst_qp: remote,
                in_port,
                share: 1.0 / f64::from(n),
            }
        })
        .collect()
}

/// A connection of a job's communicator: NIC `from` sends to NIC `to` (fabric indices) on QPs
/// numbered from `qpn` at each end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Connection {
    /// The sending NIC.
    pub from: usize,
    /// The receiving NIC.
    pub to: usize,
    /// The first QP number at the sender and at the receiver.
    pub qpn: (u32, u32),
    /// How many QPs, and how they are used.
    pub qps: QpUse,
}

/// The ring a job's communicator builds on each rail: each of its nodes' NIC of a rail sends
/// to the same rail's NIC of the next node in the job's order, the last node to the first
/// (NCCL's ring in rank order, one rank per node here). Each end numbers the connection's QPs
/// from a random 24-bit base drawn from `rng`.
pub fn ring_connections(
    nics: &[Nic],
    nodes: &[String],
    job_nodes: &[usize],
    qps: QpUse,
    rng: &mut fastrand::Rng,
) -> Vec<Connection> {
    if job_nodes.len() < 2 {
        return Vec::new();
    }
    let nic_of = |node: usize, rail: u32| nics.iter().position(|n| n.node == nodes[node] && n.rail == rail);
    let mut rails: Vec<u32> = nics.iter().filter(|n| n.node == nodes[job_nodes[0]]).map(|n| n.rail).collect();
    rails.sort_unstable();
    rails.dedup();
    let mut out = Vec::new();
    for rail in rails {
        for (k, &node) in job_nodes.iter().enumerate() {
            let next = job_nodes[(k + 1) % job_nodes.len()];
            let (Some(from), Some(to)) = (nic_of(node, rail), nic_of(next, rail)) else { continue };
            let qpn = (rng.u32(0x100..0xFF_0000), rng.u32(0x100..0xFF_0000));
            out.push(Connection { from, to, qpn, qps });
        }
    }
    out
}

/// The IPv4 address of the NIC at fabric index `i` on `rail`: 10.<rail>.<i / 256>.<i % 256>.
pub fn nic_ip(i: usize, rail: u32) -> u32 {
    0x0A00_0000 | (rail & 0xFF) << 16 | (i as u32 & 0xFFFF)
}

/// Where a step's flows between leaves go.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    /// Per leaf: each uplink's utilisation by the jobs' flows (offered over what it carries).
    pub utilisation: BTreeMap<String, Vec<f64>>,
    /// Per NIC (fabric order): the (leaf, uplink) its flows to other leaves leave by.
    pub out: Vec<Vec<(String, usize)>>,
    /// Per NIC: the (leaf, uplink) the flows it receives from other leaves left theirs by.
    pub into: Vec<Vec<(String, usize)>>,
}

impl Routes {
    /// The routes of every job's connections between leaves, each NIC offering `offered`
    /// (fabric order, fraction of line rate): each QP's flow hashed by its leaf's ECMP hash in
    /// force onto one of its uplinks. An uplink carries its share of the leaf's NIC ports'
    /// width: all of it for a single uplink, one NIC's for each of a non-blocking group's.
    pub fn of(fabric: &Fabric, offered: &[f64]) -> Routes {
        let n = fabric.nics.len();
        let mut routes = Routes { utilisation: BTreeMap::new(), out: vec![Vec::new(); n], into: vec![Vec::new(); n] };
        let mut hashes: BTreeMap<&str, (EcmpHash, usize, f64)> = BTreeMap::new();
        for connection in fabric.jobs.iter().flat_map(|j| &j.connections) {
            let (src, dst) = (&fabric.nics[connection.from], &fabric.nics[connection.to]);
            let rate = offered.get(connection.from).copied().unwrap_or(0.0);
            if src.switch == dst.switch || rate <= 0.0 || !dst.usable() {
                continue;
            }
            let Some(leaf) = fabric.leaves.get(&src.switch) else { continue };
            let (hash, members, capacity) = hashes.entry(leaf.name.as_str()).or_insert_with(|| {
                let state = leaf.model.read();
                let hash = EcmpHash::new(&state.ecmp_hash.fields, state.ecmp_hash.seed);
                let width = fabric.nics.iter().filter(|x| x.switch == leaf.name).count().max(1) as f64;
                let members = leaf.uplinks.len().max(1);
                (hash, members, width / members as f64)
            });
            let ips = (nic_ip(connection.from, src.rail), nic_ip(connection.to, dst.rail));
            let in_port = src.switch_port.strip_prefix("Ethernet").and_then(|p| p.parse().ok()).unwrap_or(0);
            let loads = routes.utilisation.entry(leaf.name.clone()).or_insert_with(|| vec![0.0; *members]);
            for flow in connection_flows(ips, in_port, connection.qpn, connection.qps) {
                let m = hash.member(&flow, *members);
                loads[m] += rate * flow.share / *capacity;
                let route = (leaf.name.clone(), m);
                if !routes.out[connection.from].contains(&route) {
                    routes.out[connection.from].push(route.clone());
                }
                if !routes.into[connection.to].contains(&route) {
                    routes.into[connection.to].push(route);
                }
            }
        }
        routes
    }
}

/// The skew of an ECMP group's loads: the busiest member over the mean, and
/// the coefficient of variation. An even spread is (1, 0); everything on
/// one of 8 members is (8, 2.65).
pub fn skew(loads: &[f64]) -> (f64, f64) {
    let n = loads.len() as f64;
    let mean = loads.iter().sum::<f64>() / n;
    if loads.is_empty() || mean <= 0.0 {
        return (1.0, 0.0);
    }
    let max = loads.iter().copied().fold(0.0, f64::max);
    let var = loads.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / n;
    (max / mean, var.sqrt() / mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qps_source_port_is_the_kernels_flow_label_in_the_roce_range() {
        // Worked by hand: 0x11 × 0x22 = 0x242, no high bits to fold.
        assert_eq!(udp_source_port(0x11, 0x22), 0xC242);
        // Bits 14–19 of the label fold onto the low ones: 0x4001 → 0x0001 ^ 0x1 = 0.
        assert_eq!(udp_source_port(1, 0x4001), 0xC000);
        let ports: std::collections::BTreeSet<u16> = (0..64).map(|q| udp_source_port(0x1200 + q, 0x3400 + q)).collect();
        assert!(ports.iter().all(|p| *p >= ROCE_SOURCE_PORT_MIN));
        assert!(ports.len() > 60, "consecutive QPs get distinct ports: {}", ports.len());
    }

    /// The flows of 16 connections, node `i` of one leaf to node `i` of
    /// another, 4 to 8 QPs each, on `qps`.
    fn job(qps: QpUse) -> Vec<Flow> {
        (0..16u32)
            .flat_map(|i| {
                let ips = (0x0A00_0000 | i << 8 | 1, 0x0A01_0000 | i << 8 | 1);
                connection_flows(ips, i as u16 * 4, (0x400 + 97 * i, 0x900 + 89 * i), qps)
            })
            .collect()
    }

    #[test]
    fn one_qp_a_connection_collides_and_more_qps_or_the_source_port_spread_it() {
        let factory = EcmpHash::new(FACTORY_ECMP_HASH, 7);
        let one = job(QpUse::default());
        let (max_one, cv_one) = skew(&factory.loads(&one, 8));
        // 16 elephants over 8 uplinks: some carry 3 or more, some none.
        assert!(max_one >= 1.5 && cv_one > 0.3, "({max_one}, {cv_one})");
        // More QPs do not help while the hash ignores the source port: every
        // QP of a connection hashes alike.
        let eight = job(QpUse { qps_per_connection: 8, split: true });
        assert_eq!(skew(&factory.loads(&eight, 8)), (max_one, cv_one));
        // With the L4 source port in the hash, 8 QPs a connection spread.
        let mut fields = FACTORY_ECMP_HASH.to_vec();
        fields.push(HashField::L4SrcPort);
        let entropy = EcmpHash::new(&fields, 7);
        let (max_eight, cv_eight) = skew(&entropy.loads(&eight, 8));
        // (128 flows over 8 uplinks: the busiest carries ~1.4× the mean.)
        assert!(max_eight < 1.5 && max_eight < max_one, "({max_eight}, {cv_eight}) against ({max_one}, {cv_one})");
        assert!(cv_eight < cv_one / 2.0, "({max_eight}, {cv_eight}) against ({max_one}, {cv_one})");
        // The destination QP alone does as much.
        let mut fields = FACTORY_ECMP_HASH.to_vec();
        fields.push(HashField::RdmaBthDestQp);
        let (max_qp, cv_qp) = skew(&EcmpHash::new(&fields, 7).loads(&eight, 8));
        assert!(max_qp < 1.5 && cv_qp < cv_one / 2.0, "({max_qp}, {cv_qp})");
    }

    #[test]
    fn the_choice_is_deterministic_and_the_field_order_does_not_matter() {
        let flows = job(QpUse::default());
        let a = EcmpHash::new(&[HashField::SrcIp, HashField::DstIp], 3);
        let b = EcmpHash::new(&[HashField::DstIp, HashField::SrcIp, HashField::SrcIp], 3);
        assert_eq!(a.loads(&flows, 8), b.loads(&flows, 8));
        let c = EcmpHash::new(&[HashField::SrcIp, HashField::DstIp], 4);
        assert_ne!(a.loads(&flows, 8), c.loads(&flows, 8), "another seed, another spread");
        assert_eq!(a.loads(&flows, 8).iter().sum::<f64>(), 16.0, "every flow goes somewhere");
    }

    #[test]
    fn skew_of_even_and_lopsided_groups() {
        assert_eq!(skew(&[1.0; 8]), (1.0, 0.0));
        let (max, cv) = skew(&[8.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(max, 8.0);
        assert!((cv - 7f64.sqrt()).abs() < 1e-12);
        assert_eq!(skew(&[0.0; 4]), (1.0, 0.0), "an idle group is not skewed");
    }
}
