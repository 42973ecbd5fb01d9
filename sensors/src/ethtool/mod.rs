//! The `ethtool` sensor: NIC driver statistics (`ethtool -S`) through the
//! `SIOCETHTOOL` ioctls, without running any command.
//!
//! Every statistic becomes a 64-bit wrapping counter labelled `netdev`,
//! named per `docs/signals.md` ([`names`]): `rx_prio<p>_pause` →
//! `ethtool_rx_prio_pause{prio="p"}`, `*_pause_duration` →
//! `*_pause_duration_us`, anything else `ethtool_<name>`. When an interface
//! has both `rx_corrected_bits_phy` and `rx_bits_phy`, the gauge
//! `ethtool_pre_fec_ber` is Δcorrected / Δbits between two polls.
//!
//! - [`config`]: [`EthtoolConfig`], the user's settings;
//! - [`names`]: statistic name → metric and `prio`;
//! - [`source`]: [`StatsSource`], where statistics come from: the ioctls
//!   of [`net::ethtool`] on a host, a simulated driver under the chaos
//!   runner;
//! - [`sensor`]: [`EthtoolPoller`] (one synchronous poll) and
//!   [`EthtoolSensor`] (the loop).

pub mod config;
pub mod names;
pub mod sensor;
pub mod source;

pub use config::EthtoolConfig;
pub use sensor::{EthtoolPoller, EthtoolSensor};
pub use source::StatsSource;
