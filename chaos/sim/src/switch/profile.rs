//! What kind of SONiC switch a [`Model`](super::Model) is: its ASIC family (which counters
//! syncd writes and which detector the PFC watchdog runs), its ports' aliases, its queues,
//! its gNMI server's settings and the configuration it boots with. [`Profile::default`] is a
//! SONiC image as it ships on an NVIDIA Spectrum switch; every field is what SONiC does unless
//! a test says otherwise.

use std::time::Duration;

use sonic::gnmi_front::FrontConfig;
use sonic::hash::HashField;
use sonic::watchdog::Action;
use sonic::AsicFamily;

/// How a platform names its ports for people (`PORT|<name>` `alias`), from the
/// `port_config.ini` files of sonic-buildimage; sonic-gnmi keys its virtual paths by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aliases {
    /// `etp1`, `etp2`, … (NVIDIA Spectrum platforms, and sonic-utilities' captured
    /// `config_db.json`).
    Etp,
    /// `Ethernet1/1`, `Ethernet2/1`, … (Arista platforms): an alias with a `/`, and one that
    /// starts with `Ethernet` but is not the SONiC name of the same port.
    EthernetSlash,
}

impl Aliases {
    /// The alias of the `index`th port (0-based).
    pub fn alias(self, index: usize) -> String {
        match self {
            Aliases::Etp => format!("etp{}", index + 1),
            Aliases::EthernetSlash => format!("Ethernet{}/1", index + 1),
        }
    }

    /// The scheme the platforms of `family` use in this simulator.
    pub fn of(family: AsicFamily) -> Aliases {
        match family {
            AsicFamily::Broadcom => Aliases::EthernetSlash,
            _ => Aliases::Etp,
        }
    }
}

/// One simulated switch's kind.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The ASIC family: the PFC counters syncd writes (Mellanox `…_RX_PAUSE_DURATION_US`,
    /// Marvell `…_RX_PAUSE_DURATION`, Broadcom none but `…_ON2OFF_RX_PKTS` and the queue's
    /// `SAI_QUEUE_ATTR_PAUSE_STATUS`) and the storm detector the watchdog runs.
    pub asic: AsicFamily,
    /// The ports' aliases.
    pub aliases: Aliases,
    /// The gNMI server's settings (native write on, translib write off, one stream per client,
    /// the config updater's one-second pause: the image's).
    pub front: FrontConfig,
    /// Unicast queues per port (indices `0..unicast_queues`).
    pub unicast_queues: u8,
    /// Multicast queues per port, after the unicast ones; sonic-gnmi's `…/Queues` lists them.
    pub multicast_queues: u8,
    /// The lossless priorities (`PORT_QOS_MAP` `pfc_enable` and `pfcwd_sw_enable`).
    pub lossless: Vec<u8>,
    /// The watchdog each port boots with (`pfcwd start_default`: drop, 200 ms, 200 ms).
    pub pfcwd_action: Action,
    /// The watchdog's detection time at boot, ms.
    pub pfcwd_detection_ms: u32,
    /// The watchdog's restoration time at boot, ms.
    pub pfcwd_restoration_ms: u32,
    /// The flex counter groups' poll intervals at boot (`FLEX_COUNTER_TABLE|<group>`
    /// `POLL_INTERVAL`; `counterpoll <group> interval` changes them).
    pub polls: Polls,
    /// The ECMP hash's fields at boot (`SWITCH_HASH|GLOBAL` `ecmp_hash`): the outer 5-tuple.
    pub ecmp_hash: Vec<HashField>,
    /// The fields the ASIC can hash on (STATE_DB `SWITCH_CAPABILITY|switch`
    /// `HASH|NATIVE_HASH_FIELD_LIST`): every outer and inner field; the RoCE BTH fields only
    /// when a test gives them.
    pub hash_capable: Vec<HashField>,
    /// The ASIC's hash seed: two switches of one plane with the same seed and fields choose
    /// alike (hash polarization).
    pub hash_seed: u32,
}

/// The outer 5-tuple: the ECMP hash a switch's SAI starts with.
pub const FIVE_TUPLE: [HashField; 5] =
    [HashField::SrcIp, HashField::DstIp, HashField::IpProtocol, HashField::L4SrcPort, HashField::L4DstPort];

/// The flex counter poll intervals (CONFIG_DB `FLEX_COUNTER_TABLE`) a switch boots with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Polls {
    /// `PORT`: port counters (sonic-swss `PORT_STAT_FLEX_COUNTER_POLLING_INTERVAL_MS`, 1 s).
    pub port: Duration,
    /// `QUEUE` and `WRED_ECN_QUEUE`: queue counters (`QUEUE_STAT_FLEX_COUNTER_POLLING_INTERVAL_MS`,
    /// 10 s).
    pub queue: Duration,
    /// `QUEUE_WATERMARK`: queue watermarks, read and cleared
    /// (`QUEUE_WATERMARK_STAT_FLEX_COUNTER_POLLING_INTERVAL_MS`, 60 s).
    pub watermark: Duration,
    /// `PFC_WD|GLOBAL` `POLL_INTERVAL`: the watchdog's poll (`pfcwd start_default` sets 200 ms).
    pub pfcwd: Duration,
}

impl Default for Polls {
    fn default() -> Self {
        Polls {
            port: Duration::from_secs(1),
            queue: Duration::from_secs(10),
            watermark: Duration::from_secs(60),
            pfcwd: Duration::from_millis(200),
        }
    }
}

impl Profile {
    /// A switch of `family` with the image's defaults.
    pub fn for_asic(family: AsicFamily) -> Profile {
        let (unicast_queues, multicast_queues) = match family {
            // sonic-utilities' captured Broadcom-style ports: ten unicast, ten multicast.
            AsicFamily::Broadcom => (10, 10),
            _ => (8, 8),
        };
        Profile {
            asic: family,
            aliases: Aliases::of(family),
            front: FrontConfig::default(),
            unicast_queues,
            multicast_queues,
            lossless: vec![3, 4],
            pfcwd_action: Action::Drop,
            pfcwd_detection_ms: 200,
            pfcwd_restoration_ms: 200,
            polls: Polls::default(),
            ecmp_hash: FIVE_TUPLE.to_vec(),
            hash_capable: HashField::ALL
                .iter()
                .copied()
                .filter(|f| !matches!(f, HashField::RdmaBthOpcode | HashField::RdmaBthDestQp))
                .collect(),
            hash_seed: 0,
        }
    }

    /// Queues per port, unicast and multicast.
    pub fn queues(&self) -> usize {
        usize::from(self.unicast_queues) + usize::from(self.multicast_queues)
    }
}

impl Default for Profile {
    /// NVIDIA Spectrum (Mellanox) with the image's defaults.
    fn default() -> Self {
        Profile::for_asic(AsicFamily::Mellanox)
    }
}
