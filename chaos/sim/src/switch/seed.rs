//! The databases a simulated switch boots with, keyed as SONiC keys them: what
//! sonic-cfggen, portsyncd, orchagent and syncd have written by the time its gNMI server
//! answers (the shapes of sonic-utilities' captured databases).
//!
//! - CONFIG_DB: `DEVICE_METADATA|localhost` (the platform names the ASIC family),
//!   `PORT|<name>` with its alias, `PORT_QOS_MAP|<name>` (`pfc_enable`, `pfcwd_sw_enable`,
//!   `pfc_to_queue_map` `AZURE`), `MAP_PFC_PRIORITY_TO_QUEUE|AZURE` (priority *i* → queue *i*),
//!   `PFC_WD|<name>` and `PFC_WD|GLOBAL` (`pfcwd start_default`), `WRED_PROFILE|AZURE_LOSSLESS`
//!   bound to each lossless queue (`QUEUE|<name>|<q>`), `FLEX_COUNTER_TABLE|<group>`;
//! - COUNTERS_DB: the name maps (`COUNTERS_PORT_NAME_MAP`, `COUNTERS_QUEUE_NAME_MAP` with the
//!   multicast queues, `…_INDEX_MAP`, `…_PORT_MAP`, `…_TYPE_MAP`); the counters themselves are
//!   syncd's ([`super::syncd`]);
//! - APPL_DB `PORT_TABLE:<name>`, STATE_DB `PORT_TABLE|<name>`, ASIC_DB
//!   `ASIC_STATE:SAI_OBJECT_TYPE_PORT:<oid>` (the PFC mask).

use std::collections::BTreeMap;

use sonic::gnmi_front::Entry;
use sonic::hash;
use sonic::AsicFamily;

use super::asic::{port_oid, queue_oid, Port};
use super::profile::Profile;

/// The lossless WRED profile SONiC's QoS templates bind to every lossless queue.
pub const LOSSLESS_PROFILE: &str = "AZURE_LOSSLESS";

/// Redis key → fields, for one database.
pub type Tables = BTreeMap<String, Entry>;

fn entry<K: ToString, V: ToString>(pairs: impl IntoIterator<Item = (K, V)>) -> Entry {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A platform string of `family`'s switches (`DEVICE_METADATA|localhost` `platform`), as
/// `sonic::AsicFamily::recognise` reads it.
pub fn platform(family: AsicFamily) -> &'static str {
    match family {
        AsicFamily::Mellanox => "x86_64-nvidia_sn5600-r0",
        AsicFamily::Vs => "x86_64-kvm_x86_64-r0",
        AsicFamily::Broadcom => "x86_64-arista_7060x6_64pe",
        AsicFamily::MarvellTeralynx => "x86_64-marvell_dbmvtx9180-r0",
        AsicFamily::MarvellPrestera => "arm64-marvell_db98cx8580_32cd-r0",
    }
}

/// The comma-joined priorities (`3,4`).
pub fn priorities(list: &[u8]) -> String {
    list.iter().map(u8::to_string).collect::<Vec<_>>().join(",")
}

/// The PFC mask of `priorities` (bit *n*: PFC on for priority *n*).
pub fn pfc_mask(priorities: &[u8]) -> u8 {
    priorities.iter().fold(0u8, |m, p| m | (1 << p))
}

/// CONFIG_DB at boot.
pub fn config_db(ports: &[Port], profile: &Profile) -> Tables {
    let mut db = Tables::new();
    let lossless = priorities(&profile.lossless);
    db.insert(
        "DEVICE_METADATA|localhost".into(),
        entry([
            ("hostname", "sonic"),
            ("platform", platform(profile.asic)),
            ("default_pfcwd_status", "enable"),
            ("type", "LeafRouter"),
        ]),
    );
    for (i, port) in ports.iter().enumerate() {
        let lanes: Vec<String> = (0..8).map(|l| (8 * i + l).to_string()).collect();
        db.insert(
            format!("PORT|{}", port.name),
            entry([
                ("admin_status", "up".to_string()),
                ("alias", port.alias.clone()),
                ("index", i.to_string()),
                ("lanes", lanes.join(",")),
                ("mtu", "9100".into()),
                ("speed", "400000".into()),
            ]),
        );
        db.insert(
            format!("PORT_QOS_MAP|{}", port.name),
            entry([("pfc_enable", &lossless), ("pfcwd_sw_enable", &lossless), ("pfc_to_queue_map", &"AZURE".into())]),
        );
        db.insert(
            format!("PFC_WD|{}", port.name),
            entry([
                ("action", profile.pfcwd_action.as_str().to_string()),
                ("detection_time", profile.pfcwd_detection_ms.to_string()),
                ("restoration_time", profile.pfcwd_restoration_ms.to_string()),
            ]),
        );
        for q in &profile.lossless {
            db.insert(format!("QUEUE|{}|{q}", port.name), entry([("wred_profile", LOSSLESS_PROFILE)]));
        }
    }
    db.insert("MAP_PFC_PRIORITY_TO_QUEUE|AZURE".into(), (0..8).map(|p| (p.to_string(), p.to_string())).collect());
    db.insert("PFC_WD|GLOBAL".into(), entry([("POLL_INTERVAL", profile.polls.pfcwd.as_millis())]));
    db.insert(format!("WRED_PROFILE|{LOSSLESS_PROFILE}"), entry(gnmi_proto::sonic::LOSSLESS_WRED));
    let polls = &profile.polls;
    for (group, every) in [("PORT", polls.port), ("QUEUE", polls.queue), ("WRED_ECN_QUEUE", polls.queue)] {
        db.insert(
            format!("FLEX_COUNTER_TABLE|{group}"),
            entry([("POLL_INTERVAL", every.as_millis().to_string()), ("FLEX_COUNTER_STATUS", "enable".into())]),
        );
    }
    let mut watermark = entry([("FLEX_COUNTER_STATUS", "enable")]);
    if polls.watermark != super::profile::Polls::default().watermark {
        watermark.insert("POLL_INTERVAL".into(), polls.watermark.as_millis().to_string());
    }
    db.insert("FLEX_COUNTER_TABLE|QUEUE_WATERMARK".into(), watermark);
    db.insert("FLEX_COUNTER_TABLE|PFCWD".into(), entry([("FLEX_COUNTER_STATUS", "enable")]));
    db.insert(
        format!("{}|{}", hash::SWITCH_HASH, hash::GLOBAL),
        entry([
            (hash::ECMP_HASH_FIELD, hash::format_fields(&profile.ecmp_hash)),
            ("ecmp_hash_algorithm", "CRC".into()),
        ]),
    );
    db
}

/// STATE_DB `SWITCH_CAPABILITY|switch`: what switchorch found the ASIC can hash on.
pub fn switch_capability(profile: &Profile) -> (String, Entry) {
    let fields = hash::format_fields(&profile.hash_capable);
    let capability = entry([
        ("ECMP_HASH_CAPABLE", "true".to_string()),
        ("LAG_HASH_CAPABLE", "true".into()),
        (hash::NATIVE_HASH_FIELD_LIST, fields),
        ("ECMP_HASH_ALGORITHM_CAPABLE", "true".into()),
        ("ECMP_HASH_ALGORITHM", "CRC,XOR,RANDOM,CRC_32LO,CRC_32HI,CRC_CCITT,CRC_XOR".into()),
    ]);
    (hash::SWITCH_CAPABILITY_KEY.to_string(), capability)
}

/// COUNTERS_DB's name maps.
pub fn counters_db(ports: &[Port], profile: &Profile) -> Tables {
    let mut db = Tables::new();
    let mut name = Entry::new();
    let (mut queues, mut index, mut port_map, mut kind) = (Entry::new(), Entry::new(), Entry::new(), Entry::new());
    for (i, port) in ports.iter().enumerate() {
        name.insert(port.name.clone(), port_oid(i));
        for q in 0..profile.queues() {
            let oid = queue_oid(i, q);
            queues.insert(format!("{}:{q}", port.name), oid.clone());
            index.insert(oid.clone(), q.to_string());
            port_map.insert(oid.clone(), port_oid(i));
            let multicast = q >= usize::from(profile.unicast_queues);
            let t = if multicast { "SAI_QUEUE_TYPE_MULTICAST" } else { "SAI_QUEUE_TYPE_UNICAST" };
            kind.insert(oid, t.to_string());
        }
    }
    db.insert("COUNTERS_PORT_NAME_MAP".into(), name);
    db.insert("COUNTERS_QUEUE_NAME_MAP".into(), queues);
    db.insert("COUNTERS_QUEUE_INDEX_MAP".into(), index);
    db.insert("COUNTERS_QUEUE_PORT_MAP".into(), port_map);
    db.insert("COUNTERS_QUEUE_TYPE_MAP".into(), kind);
    db
}

/// APPL_DB `PORT_TABLE` (portsyncd and portsorch), STATE_DB `PORT_TABLE` and the switch's hash
/// capability, and ASIC_DB's port objects with their PFC masks.
pub fn port_tables(ports: &[Port], profile: &Profile) -> (Tables, Tables, Tables) {
    let (mut appl, mut state, mut asic) = (Tables::new(), Tables::new(), Tables::new());
    let (key, capability) = switch_capability(profile);
    state.insert(key, capability);
    let mask = pfc_mask(&profile.lossless);
    for (i, port) in ports.iter().enumerate() {
        appl.insert(format!("PORT_TABLE:{}", port.name), appl_port(port, i));
        state.insert(format!("PORT_TABLE|{}", port.name), state_port(port));
        asic.insert(
            format!("ASIC_STATE:SAI_OBJECT_TYPE_PORT:{}", port.oid),
            entry([("SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL", mask)]),
        );
    }
    (appl, state, asic)
}

fn up_down(up: bool) -> &'static str {
    if up {
        "up"
    } else {
        "down"
    }
}

/// A port's APPL_DB `PORT_TABLE` entry (the fields portsorch keeps current).
pub fn appl_port(port: &Port, index: usize) -> Entry {
    entry([
        ("admin_status", up_down(port.admin_up).to_string()),
        ("alias", port.alias.clone()),
        ("flap_count", port.oper_transitions.to_string()),
        ("index", index.to_string()),
        ("mtu", "9100".into()),
        ("oper_status", up_down(port.oper_up).to_string()),
        ("speed", "400000".into()),
    ])
}

/// A port's STATE_DB `PORT_TABLE` entry.
pub fn state_port(port: &Port) -> Entry {
    entry([("netdev_oper_status", up_down(port.oper_up)), ("state", "ok")])
}
