//! ASIC families: which PFC counters each has, how a switch's family is recognised, and what
//! "this priority is storming" means on each — as SONiC's own watchdog decides it.
//!
//! orchagent picks the counters its PFC watchdog polls by platform (`orchdaemon.cpp:679-846`)
//! and runs `pfc_detect_<platform>.lua` on them every poll. They differ in what they can see:
//!
//! | family | port counters (per priority *n*) | queue counters | storm on one poll |
//! |---|---|---|---|
//! | [`Mellanox`](AsicFamily::Mellanox) | `SAI_PORT_STAT_PFC_n_RX_PKTS`, `…_RX_PAUSE_DURATION_US` | `SAI_QUEUE_STAT_PACKETS`, `…_CURR_OCCUPANCY_BYTES` | occupancy > 0, TX unchanged, pause duration grew by > 99 % of the poll |
//! | [`Vs`](AsicFamily::Vs) | as Mellanox | as Mellanox | (occupancy > 0, TX unchanged, PFC RX grew) or (occupancy 0, TX unchanged, duration grew by > 80 % of the poll) |
//! | [`Broadcom`](AsicFamily::Broadcom) | `…_RX_PKTS`, `…_ON2OFF_RX_PKTS` (no duration) | as above, and the attribute `SAI_QUEUE_ATTR_PAUSE_STATUS` | PFC RX grew, ON2OFF unchanged, the queue paused at both polls |
//! | [`MarvellTeralynx`](AsicFamily::MarvellTeralynx) | `…_RX_PKTS`, `…_RX_PAUSE_DURATION` (no `_US`) | as Mellanox | PFC RX grew, duration grew by > 80 % of the poll, and (occupancy 0 or TX unchanged) |
//! | [`MarvellPrestera`](AsicFamily::MarvellPrestera) | as Teralynx (its detector does not read the duration) | as Mellanox | occupancy > 0, TX unchanged, PFC RX grew |
//!
//! A storm is *declared* once such polls have covered the detection time (the detector counts
//! `PFC_WD_DETECTION_TIME_LEFT` down); [`AsicFamily::storming`] is the one-poll test, the
//! executable form of the table, checked against the Lua scripts themselves on a real Redis.

use std::time::Duration;

use crate::client::Entry;

/// An ASIC family, as orchagent's `platform` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AsicFamily {
    /// NVIDIA/Mellanox Spectrum (`mellanox`): pause duration in µs.
    Mellanox,
    /// SONiC's virtual switch (`vs`): Mellanox's counters, its own detector.
    Vs,
    /// Broadcom (`broadcom`): no pause duration; PFC packets, ON2OFF and the queue's pause status.
    Broadcom,
    /// Marvell Teralynx (`marvell-teralynx`): pause duration without `_US`.
    MarvellTeralynx,
    /// Marvell Prestera (`marvell-prestera`): Teralynx's counters; the detector reads packets only.
    MarvellPrestera,
}

/// What tells a family's counters apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterSet {
    /// `SAI_PORT_STAT_PFC_n_RX_PAUSE_DURATION_US` (Mellanox, VS).
    PauseDurationUs,
    /// `SAI_PORT_STAT_PFC_n_RX_PAUSE_DURATION` (Marvell; SAI counts it in pause quanta, SONiC's
    /// detector compares it with microseconds).
    PauseDuration,
    /// `SAI_PORT_STAT_PFC_n_ON2OFF_RX_PKTS` and no duration (Broadcom).
    On2Off,
}

/// How a family was recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recognition {
    /// The family.
    pub family: AsicFamily,
    /// What decided it: the counter field found, or the `DEVICE_METADATA` platform.
    pub evidence: String,
    /// A disagreement worth logging (the counters say one family, the platform another; the
    /// counters win, since they are what the detector reads).
    pub conflict: Option<String>,
}

/// A family that could not be recognised, or a counter that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AsicError {
    /// Neither the counters nor the platform tell the family.
    #[error("cannot tell the ASIC family: {0}")]
    Unrecognised(String),
    /// A counter the family's detector reads holds something other than a number.
    #[error("{key} {field} {value:?} is not a counter value")]
    BadCounter {
        /// The counters key (`COUNTERS:oid:0x…`).
        key: String,
        /// The field.
        field: String,
        /// The value.
        value: String,
    },
    /// A family whose detector script is not among SONiC's.
    #[error("no such ASIC family {0:?} (mellanox, vs, broadcom, marvell-teralynx, marvell-prestera)")]
    Unknown(String),
}

/// One poll's readings of the counters a family's detector reads for one priority and its
/// queue; `None` for a counter the switch does not have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StormSample {
    /// `SAI_PORT_STAT_PFC_n_RX_PKTS`.
    pub pfc_rx_pkts: Option<u64>,
    /// `SAI_PORT_STAT_PFC_n_ON2OFF_RX_PKTS` (Broadcom).
    pub on2off_rx_pkts: Option<u64>,
    /// The pause duration counter of the family ([`AsicFamily::pause_duration_counter`]).
    pub pause_duration: Option<u64>,
    /// `SAI_QUEUE_ATTR_PAUSE_STATUS` (Broadcom): whether the queue is paused.
    pub queue_paused: Option<bool>,
    /// `SAI_QUEUE_STAT_PACKETS`: packets the queue sent.
    pub queue_tx_pkts: Option<u64>,
    /// `SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES`.
    pub queue_occupancy_bytes: Option<u64>,
}

/// The queue counters every family's watchdog polls (`orchdaemon.cpp`, `queueStatIds`).
pub const QUEUE_STATS: [&str; 2] = ["SAI_QUEUE_STAT_PACKETS", "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES"];
/// The queue attribute Broadcom's watchdog polls (`queueAttrIds`).
pub const QUEUE_PAUSE_STATUS: &str = "SAI_QUEUE_ATTR_PAUSE_STATUS";

impl AsicFamily {
    /// Every family.
    pub const ALL: [AsicFamily; 5] = [
        AsicFamily::Mellanox,
        AsicFamily::Vs,
        AsicFamily::Broadcom,
        AsicFamily::MarvellTeralynx,
        AsicFamily::MarvellPrestera,
    ];

    /// orchagent's platform name (`mellanox`, `broadcom`, `marvell-teralynx`, …).
    pub fn name(self) -> &'static str {
        match self {
            AsicFamily::Mellanox => "mellanox",
            AsicFamily::Vs => "vs",
            AsicFamily::Broadcom => "broadcom",
            AsicFamily::MarvellTeralynx => "marvell-teralynx",
            AsicFamily::MarvellPrestera => "marvell-prestera",
        }
    }

    /// Parses [`AsicFamily::name`].
    pub fn parse(name: &str) -> Result<Self, AsicError> {
        Self::ALL.into_iter().find(|f| f.name() == name).ok_or_else(|| AsicError::Unknown(name.to_string()))
    }

    /// The watchdog's detector: `pfc_detect_<platform>.lua` (`pfcwdsworch.cpp:371`).
    pub fn detector_script(self) -> String {
        format!("pfc_detect_{}.lua", self.name())
    }

    /// The counters that tell this family apart.
    pub fn counter_set(self) -> CounterSet {
        match self {
            AsicFamily::Mellanox | AsicFamily::Vs => CounterSet::PauseDurationUs,
            AsicFamily::Broadcom => CounterSet::On2Off,
            AsicFamily::MarvellTeralynx | AsicFamily::MarvellPrestera => CounterSet::PauseDuration,
        }
    }

    /// `SAI_PORT_STAT_PFC_<priority>_RX_PKTS`: every family has it.
    pub fn pfc_rx_counter(priority: u8) -> String {
        format!("SAI_PORT_STAT_PFC_{priority}_RX_PKTS")
    }

    /// The pause duration counter of `priority`, if the family has one.
    pub fn pause_duration_counter(self, priority: u8) -> Option<String> {
        match self.counter_set() {
            CounterSet::PauseDurationUs => Some(format!("SAI_PORT_STAT_PFC_{priority}_RX_PAUSE_DURATION_US")),
            CounterSet::PauseDuration => Some(format!("SAI_PORT_STAT_PFC_{priority}_RX_PAUSE_DURATION")),
            CounterSet::On2Off => None,
        }
    }

    /// `SAI_PORT_STAT_PFC_<priority>_ON2OFF_RX_PKTS`, on Broadcom.
    pub fn on2off_counter(self, priority: u8) -> Option<String> {
        (self.counter_set() == CounterSet::On2Off).then(|| format!("SAI_PORT_STAT_PFC_{priority}_ON2OFF_RX_PKTS"))
    }

    /// The port counters the watchdog polls for one lossless priority (`orchdaemon.cpp`
    /// `portStatIds`, filtered to the port's lossless priorities by `pfcwdsworch.cpp:282-308`).
    pub fn port_counters(self, priority: u8) -> Vec<String> {
        let mut counters = vec![Self::pfc_rx_counter(priority)];
        counters.extend(self.pause_duration_counter(priority));
        counters.extend(self.on2off_counter(priority));
        counters
    }

    /// The queue counters (and attributes) the watchdog polls for each watched queue.
    pub fn queue_counters(self) -> Vec<&'static str> {
        let mut counters = QUEUE_STATS.to_vec();
        if self == AsicFamily::Broadcom {
            counters.push(QUEUE_PAUSE_STATUS);
        }
        counters
    }

    /// Recognises the family from one port's counters (`COUNTERS:<port oid>`) and, to tell
    /// apart families with one counter set, `DEVICE_METADATA|localhost`. The counters decide
    /// the set, since they are what the detector reads; the platform only chooses within it
    /// (or decides alone when the counters say nothing, which Broadcom's never fail to).
    pub fn recognise(port_counters: &Entry, metadata: Option<&Entry>) -> Result<Recognition, AsicError> {
        let platform = metadata.and_then(|m| m.get("platform")).map(|p| p.to_ascii_lowercase());
        let by_platform = platform.as_deref().and_then(family_of_platform);
        let field = |test: &dyn Fn(&str) -> bool| port_counters.keys().find(|k| test(k)).cloned();
        let pfc = |k: &str, suffix: &str, prefix: &str| {
            k.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix(suffix))
                .is_some_and(|n| n.len() == 1 && n.as_bytes()[0].is_ascii_digit())
        };
        let by_counters = if let Some(f) = field(&|k| pfc(k, "_RX_PAUSE_DURATION_US", "SAI_PORT_STAT_PFC_")) {
            Some((CounterSet::PauseDurationUs, f))
        } else if let Some(f) = field(&|k| pfc(k, "_RX_PAUSE_DURATION", "SAI_PORT_STAT_PFC_")) {
            Some((CounterSet::PauseDuration, f))
        } else if let Some(f) = field(&|k| pfc(k, "_ON2OFF_RX_PKTS", "SAI_PORT_STAT_PFC_")) {
            Some((CounterSet::On2Off, f))
        } else {
            // Broadcom's detector writes its own estimates (`EST_PORT_STAT_PFC_n_…`,
            // pfc_detect_broadcom.lua `updateTimePaused`) when pfc_stat_history is on: only it does.
            field(&|k| k.starts_with("EST_PORT_STAT_PFC_")).map(|f| (CounterSet::On2Off, f))
        };
        match (by_counters, by_platform) {
            (Some((set, field)), platform_family) => {
                let family = match platform_family.filter(|f| f.counter_set() == set) {
                    Some(f) => f,
                    None => match set {
                        CounterSet::PauseDurationUs => AsicFamily::Mellanox,
                        CounterSet::PauseDuration => AsicFamily::MarvellTeralynx,
                        CounterSet::On2Off => AsicFamily::Broadcom,
                    },
                };
                let conflict = platform_family.filter(|f| f.counter_set() != set).map(|f| {
                    format!(
                        "DEVICE_METADATA platform {:?} suggests {}, but the counters are {}'s",
                        platform.clone().unwrap_or_default(),
                        f.name(),
                        family.name()
                    )
                });
                Ok(Recognition { family, evidence: format!("counter {field}"), conflict })
            }
            (None, Some(family)) => Ok(Recognition {
                family,
                evidence: format!("DEVICE_METADATA platform {:?}", platform.unwrap_or_default()),
                conflict: None,
            }),
            (None, None) => Err(AsicError::Unrecognised(format!(
                "the port has no PFC pause duration, ON2OFF or estimated counters, and DEVICE_METADATA platform {:?} \
                 names no known family",
                platform.unwrap_or_default()
            ))),
        }
    }

    /// Reads the counters this family's detector reads for `priority`, from the port's and
    /// the queue's counters hashes (`port_key`, `queue_key` name them in errors).
    pub fn sample(
        self,
        priority: u8,
        (port_key, port): (&str, &Entry),
        (queue_key, queue): (&str, &Entry),
    ) -> Result<StormSample, AsicError> {
        let number = |key: &str, entry: &Entry, field: Option<String>| -> Result<Option<u64>, AsicError> {
            let Some(field) = field else { return Ok(None) };
            match entry.get(&field) {
                None => Ok(None),
                Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| AsicError::BadCounter {
                    key: key.to_string(),
                    field,
                    value: v.clone(),
                }),
            }
        };
        let paused = match (self == AsicFamily::Broadcom).then(|| queue.get(QUEUE_PAUSE_STATUS)).flatten() {
            None => None,
            Some(v) if v == "true" => Some(true),
            Some(v) if v == "false" => Some(false),
            Some(v) => {
                return Err(AsicError::BadCounter {
                    key: queue_key.to_string(),
                    field: QUEUE_PAUSE_STATUS.into(),
                    value: v.clone(),
                })
            }
        };
        Ok(StormSample {
            pfc_rx_pkts: number(port_key, port, Some(Self::pfc_rx_counter(priority)))?,
            on2off_rx_pkts: number(port_key, port, self.on2off_counter(priority))?,
            pause_duration: number(port_key, port, self.pause_duration_counter(priority))?,
            queue_paused: paused,
            queue_tx_pkts: number(queue_key, queue, Some(QUEUE_STATS[0].to_string()))?,
            queue_occupancy_bytes: number(queue_key, queue, Some(QUEUE_STATS[1].to_string()))?,
        })
    }

    /// Whether one poll from `before` to `after`, `poll` apart, is a storm poll for this
    /// family's detector (the table in the module doc). `None` when a counter the detector
    /// needs is missing from either sample: the detector skips such a queue, and so must a rule.
    pub fn storming(self, before: &StormSample, after: &StormSample, poll: Duration) -> Option<bool> {
        let poll_us = poll.as_micros() as f64;
        // Every counter the detector needs is read first: a detector skips a queue that lacks
        // one, whatever the others say.
        let occupied = after.queue_occupancy_bytes? > 0;
        let tx_same = after.queue_tx_pkts? == before.queue_tx_pkts?;
        let rx_grew = after.pfc_rx_pkts? > before.pfc_rx_pkts?;
        let duration_over = |fraction: f64| -> Option<bool> {
            let grew = after.pause_duration?.saturating_sub(before.pause_duration?);
            Some(grew as f64 > poll_us * fraction)
        };
        Some(match self {
            // pfc_detect_mellanox.lua: occupancy > 0, packets unchanged, duration > 0.99 × poll.
            AsicFamily::Mellanox => {
                let duration = duration_over(0.99)?;
                occupied && tx_same && duration
            }
            // pfc_detect_vs.lua: (occupancy > 0, packets unchanged, PFC RX grew) or (occupancy 0,
            // packets unchanged, duration > 0.8 × poll).
            AsicFamily::Vs => {
                let duration = duration_over(0.8)?;
                tx_same && if occupied { rx_grew } else { duration }
            }
            // pfc_detect_broadcom.lua: RX grew, ON2OFF unchanged, paused at both polls (it also
            // requires the queue's packet and occupancy counters, read above).
            AsicFamily::Broadcom => {
                let on2off_same = after.on2off_rx_pkts? == before.on2off_rx_pkts?;
                let paused = before.queue_paused? && after.queue_paused?;
                rx_grew && on2off_same && paused
            }
            // pfc_detect_marvell-teralynx.lua.
            AsicFamily::MarvellTeralynx => {
                let duration = duration_over(0.8)?;
                rx_grew && duration && (!occupied || tx_same)
            }
            // pfc_detect_marvell-prestera.lua sets the duration to 0: only its first branch can hold.
            AsicFamily::MarvellPrestera => occupied && tx_same && rx_grew,
        })
    }
}

impl std::fmt::Display for AsicFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The family a `DEVICE_METADATA` platform string names, for the vendors whose platform strings
/// say it (`x86_64-mlnx_msn2700-r0`, `x86_64-nvidia_sn5600-r0`, `x86_64-kvm_x86_64-r0`,
/// `…marvell…`). Broadcom boards carry the box vendor's name, not the ASIC's: never recognised here.
fn family_of_platform(platform: &str) -> Option<AsicFamily> {
    if platform.contains("mlnx") || platform.contains("nvidia") {
        Some(AsicFamily::Mellanox)
    } else if platform.contains("kvm") {
        Some(AsicFamily::Vs)
    } else if platform.contains("teralynx") || platform.contains("innovium") {
        Some(AsicFamily::MarvellTeralynx)
    } else if platform.contains("prestera") || (platform.contains("marvell") && !platform.starts_with("x86_64")) {
        // Prestera boards are ARM (`arm64-marvell_…`, `armhf-marvell_…`).
        Some(AsicFamily::MarvellPrestera)
    } else if platform.contains("marvell") {
        Some(AsicFamily::MarvellTeralynx)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pairs: &[(&str, &str)]) -> Entry {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn each_family_is_recognised_by_its_counters() {
        let cases = [
            (
                entry(&[("SAI_PORT_STAT_PFC_3_RX_PKTS", "1"), ("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US", "5")]),
                AsicFamily::Mellanox,
            ),
            (
                entry(&[("SAI_PORT_STAT_PFC_3_RX_PKTS", "1"), ("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION", "5")]),
                AsicFamily::MarvellTeralynx,
            ),
            (
                entry(&[("SAI_PORT_STAT_PFC_3_RX_PKTS", "1"), ("SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS", "5")]),
                AsicFamily::Broadcom,
            ),
            // Broadcom's detector's own estimates (sonic-utilities' mock COUNTERS_DB has these).
            (
                entry(&[("SAI_PORT_STAT_PFC_0_RX_PKTS", "1"), ("EST_PORT_STAT_PFC_0_ON2OFF_RX_PKTS", "14")]),
                AsicFamily::Broadcom,
            ),
        ];
        for (counters, family) in cases {
            assert_eq!(AsicFamily::recognise(&counters, None).unwrap().family, family, "{counters:?}");
        }
    }

    #[test]
    fn the_platform_chooses_within_a_counter_set_and_the_counters_win_a_conflict() {
        let us = entry(&[("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US", "5")]);
        let vs = entry(&[("platform", "x86_64-kvm_x86_64-r0")]);
        assert_eq!(AsicFamily::recognise(&us, Some(&vs)).unwrap().family, AsicFamily::Vs);
        let quanta = entry(&[("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION", "5")]);
        let prestera = entry(&[("platform", "arm64-marvell_db98cx8580_32cd-r0")]);
        assert_eq!(AsicFamily::recognise(&quanta, Some(&prestera)).unwrap().family, AsicFamily::MarvellPrestera);
        // sonic-utilities' mock: a Mellanox platform with Broadcom's counters.
        let broadcom = entry(&[("SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS", "5")]);
        let mlnx = entry(&[("platform", "x86_64-mlnx_msn3800-r0")]);
        let r = AsicFamily::recognise(&broadcom, Some(&mlnx)).unwrap();
        assert_eq!(r.family, AsicFamily::Broadcom);
        assert_eq!(r.evidence, "counter SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS");
        assert!(r.conflict.unwrap().contains("suggests mellanox"));
        // No counters: the platform alone.
        let r = AsicFamily::recognise(&Entry::new(), Some(&mlnx)).unwrap();
        assert_eq!(
            (r.family, r.evidence.as_str()),
            (AsicFamily::Mellanox, "DEVICE_METADATA platform \"x86_64-mlnx_msn3800-r0\"")
        );
        let dell = entry(&[("platform", "x86_64-dell_s6000_s1220-r0")]);
        assert!(matches!(AsicFamily::recognise(&Entry::new(), Some(&dell)), Err(AsicError::Unrecognised(_))));
    }

    fn sample(rx: u64, dur: Option<u64>, on2off: Option<u64>, paused: Option<bool>, tx: u64, occ: u64) -> StormSample {
        StormSample {
            pfc_rx_pkts: Some(rx),
            on2off_rx_pkts: on2off,
            pause_duration: dur,
            queue_paused: paused,
            queue_tx_pkts: Some(tx),
            queue_occupancy_bytes: Some(occ),
        }
    }

    #[test]
    fn a_storm_poll_is_what_each_detector_says_it_is() {
        let poll = Duration::from_millis(200);
        // Fully paused for the whole poll, queue stuck with data.
        let (a, b) = (sample(10, Some(0), None, None, 5, 100), sample(20, Some(200_000), None, None, 5, 100));
        assert_eq!(AsicFamily::Mellanox.storming(&a, &b, poll), Some(true));
        assert_eq!(AsicFamily::MarvellTeralynx.storming(&a, &b, poll), Some(true));
        assert_eq!(AsicFamily::MarvellPrestera.storming(&a, &b, poll), Some(true));
        // Paused for 90 % of the poll: not a storm on Mellanox (99 %), one on Teralynx (80 %).
        let b90 = sample(20, Some(180_000), None, None, 5, 100);
        assert_eq!(AsicFamily::Mellanox.storming(&a, &b90, poll), Some(false));
        assert_eq!(AsicFamily::MarvellTeralynx.storming(&a, &b90, poll), Some(true));
        // The queue still sends: no storm on Mellanox.
        let sending = sample(20, Some(200_000), None, None, 6, 100);
        assert_eq!(AsicFamily::Mellanox.storming(&a, &sending, poll), Some(false));
        // Broadcom: no duration at all; packets rising, ON2OFF still, paused twice.
        let (a, b) = (sample(10, None, Some(3), Some(true), 5, 0), sample(20, None, Some(3), Some(true), 5, 0));
        assert_eq!(AsicFamily::Broadcom.storming(&a, &b, poll), Some(true));
        let resumed = sample(20, None, Some(4), Some(true), 5, 0);
        assert_eq!(AsicFamily::Broadcom.storming(&a, &resumed, poll), Some(false), "an XON came: not a storm");
        let unpaused = StormSample { queue_paused: Some(false), ..b.clone() };
        assert_eq!(AsicFamily::Broadcom.storming(&unpaused, &b, poll), Some(false));
        // Missing what the detector needs: no answer, as the detector skips the queue.
        assert_eq!(AsicFamily::Mellanox.storming(&a, &b, poll), None, "Broadcom's samples have no duration");
    }

    #[test]
    fn samples_read_the_families_counters_and_refuse_garbage() {
        let port = entry(&[("SAI_PORT_STAT_PFC_3_RX_PKTS", "7"), ("SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS", "2")]);
        let queue = entry(&[
            ("SAI_QUEUE_STAT_PACKETS", "9"),
            ("SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES", "0"),
            (QUEUE_PAUSE_STATUS, "true"),
        ]);
        let s = AsicFamily::Broadcom.sample(3, ("P", &port), ("Q", &queue)).unwrap();
        assert_eq!(s, sample(7, None, Some(2), Some(true), 9, 0));
        let s = AsicFamily::Mellanox.sample(3, ("P", &port), ("Q", &queue)).unwrap();
        assert_eq!((s.pause_duration, s.on2off_rx_pkts, s.queue_paused), (None, None, None));
        let bad = entry(&[("SAI_PORT_STAT_PFC_3_RX_PKTS", "x")]);
        assert_eq!(
            AsicFamily::Mellanox.sample(3, ("COUNTERS:oid:0x1", &bad), ("Q", &queue)).unwrap_err().to_string(),
            "COUNTERS:oid:0x1 SAI_PORT_STAT_PFC_3_RX_PKTS \"x\" is not a counter value"
        );
        assert_eq!(AsicFamily::Broadcom.detector_script(), "pfc_detect_broadcom.lua");
        assert_eq!(AsicFamily::parse("marvell-teralynx").unwrap(), AsicFamily::MarvellTeralynx);
        assert_eq!(
            AsicFamily::Broadcom.port_counters(4),
            vec!["SAI_PORT_STAT_PFC_4_RX_PKTS".to_string(), "SAI_PORT_STAT_PFC_4_ON2OFF_RX_PKTS".to_string()]
        );
    }
}
