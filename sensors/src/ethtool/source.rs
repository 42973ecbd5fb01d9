//! Where the `ethtool` sensor reads statistics from: the boundary between
//! the driver and the sensor's decoding.
//!
//! On a host it is the `SIOCETHTOOL` ioctls ([`EthtoolSocket`]); the chaos
//! runner gives the poller a simulated driver instead, so the simulated
//! fabric's NIC statistics go through the same names, layout and counter
//! handling as a real NIC's.

use std::io;

use net::ethtool::{interfaces, EthtoolSocket};

/// A driver's view of its interfaces' statistics, as `ethtool -S` reads it.
pub trait StatsSource: Send {
    /// The interfaces to read when the config lists none: every
    /// non-loopback interface.
    fn interfaces(&self) -> io::Result<Vec<String>>;
    /// How many statistics `netdev` reports (`ETHTOOL_GSSET_INFO`).
    fn stats_count(&self, netdev: &str) -> io::Result<usize>;
    /// The names of `netdev`'s first `count` statistics (`ETHTOOL_GSTRINGS`).
    fn stat_names(&self, netdev: &str, count: usize) -> io::Result<Vec<String>>;
    /// The values of `netdev`'s first `count` statistics into `values`
    /// (`ETHTOOL_GSTATS`); on success `values` holds `count` numbers unless
    /// the driver changed its layout in between.
    fn stat_values(&self, netdev: &str, count: usize, values: &mut Vec<u64>) -> io::Result<()>;
}

impl StatsSource for EthtoolSocket {
    fn interfaces(&self) -> io::Result<Vec<String>> {
        Ok(interfaces()?.into_iter().filter(|name| !self.is_loopback(name).unwrap_or(true)).collect())
    }

    fn stats_count(&self, netdev: &str) -> io::Result<usize> {
        EthtoolSocket::stats_count(self, netdev)
    }

    fn stat_names(&self, netdev: &str, count: usize) -> io::Result<Vec<String>> {
        EthtoolSocket::stat_names(self, netdev, count)
    }

    fn stat_values(&self, netdev: &str, count: usize, values: &mut Vec<u64>) -> io::Result<()> {
        EthtoolSocket::stat_values(self, netdev, count, values)
    }
}
