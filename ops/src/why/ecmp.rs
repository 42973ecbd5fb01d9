//! ECMP collisions on the job's leaves: a leaf that spreads its traffic
//! unevenly over its uplinks while the job is slow.
//!
//! A collective is a few large flows; a leaf hashes each onto one uplink of
//! its ECMP group, and with few flows two or three share an uplink while
//! another idles. The ranking sees the hot uplinks' marks and pauses (the
//! plane's element) and the NICs waiting behind them, but not *why* one
//! uplink of several is hot. This finding says it, from each uplink's bytes
//! sent (`switch_port_tx_bytes` on the leaf's ports with no NIC behind
//! them): "ECMP collision: 2 of 4 uplinks of leaf-su0-rail0 to plane 0
//! carry 75 %".
//!
//! A leaf counts when, over the regression, its busiest uplink sent more
//! than [`SKEW`] times the mean of its uplinks, the group carried at least
//! [`MIN_BYTES_PER_S`], and the spread is worse than over the baseline
//! (by [`WORSE`]): a leaf that was always uneven is not what changed.

use engine::{Nanos, Topology};
use serde::Serialize;

use super::path::{enriched, JobPath};
use super::series::{Recorded, Series};
use super::window::Windows;

/// The uplinks' bytes sent.
pub const TX_BYTES: &str = "switch_port_tx_bytes";
/// Busiest over mean above which a group is a collision (the `ecmp-imbalance` rule's).
pub const SKEW: f64 = 1.5;
/// How much worse than over the baseline the spread must be.
pub const WORSE: f64 = 1.2;
/// The least traffic that counts: a tenth of one 400G link (an idle leaf's own traffic is noise).
pub const MIN_BYTES_PER_S: f64 = 5e9;

/// A leaf whose uplinks share its traffic unevenly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Collision {
    /// The leaf.
    pub switch: String,
    /// Its plane, when known.
    pub plane: Option<String>,
    /// Uplinks that carry more than their even share.
    pub hot: usize,
    /// Uplinks in the group.
    pub uplinks: usize,
    /// The share of the group's bytes the hot uplinks carry, 0 to 1.
    pub share: f64,
    /// Busiest over mean, over the regression.
    pub skew: f64,
    /// The same over the baseline (`None`: no traffic then).
    pub baseline_skew: Option<f64>,
}

impl std::fmt::Display for Collision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ECMP collision: {} of {} uplinks of {}", self.hot, self.uplinks, self.switch)?;
        if let Some(plane) = &self.plane {
            write!(f, " to plane {plane}")?;
        }
        write!(f, " carry {:.0} % (busiest {:.1}× the mean", 100.0 * self.share, self.skew)?;
        match self.baseline_skew {
            Some(b) => write!(f, ", {b:.1}× before)"),
            None => write!(f, ")"),
        }
    }
}

/// Busiest over mean of `rates`, and their sum.
fn skew(rates: &[f64]) -> (f64, f64) {
    let sum: f64 = rates.iter().sum();
    let mean = sum / rates.len().max(1) as f64;
    let max = rates.iter().copied().fold(0.0, f64::max);
    (if mean > 0.0 { max / mean } else { 1.0 }, sum)
}

/// The mean rate of each uplink of `leaf` over `span`, `None` for one with no points.
fn rates(rec: &Recorded, uplinks: &[&Series], span: (Nanos, Nanos)) -> Option<Vec<f64>> {
    uplinks
        .iter()
        .map(|s| {
            let pts = s.points(&rec.grid, span.0, span.1);
            (!pts.is_empty()).then(|| pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64)
        })
        .collect()
}

/// The collisions on the leaves of `path`, worst first.
pub fn collisions(rec: &Recorded, path: &JobPath, w: &Windows, topology: Option<&Topology>) -> Vec<Collision> {
    let mut out = Vec::new();
    if w.peers_only {
        // No before to be worse than: a healthy leaf with few flows is uneven too.
        return out;
    }
    for leaf in &path.leaves {
        let uplinks: Vec<&Series> = rec
            .series
            .iter()
            .filter(|s| s.metric == TX_BYTES && s.labels.get("switch") == Some(leaf.as_str()))
            .filter(|s| enriched(&s.labels, topology).get("peer_node").is_none())
            .collect();
        if uplinks.len() < 2 {
            continue;
        }
        let Some(reg) = rates(rec, &uplinks, w.regression) else { continue };
        let (skew_reg, carried) = skew(&reg);
        let baseline_skew = rates(rec, &uplinks, w.baseline)
            .map(|b| skew(&b))
            .and_then(|(s, sum)| (sum >= MIN_BYTES_PER_S).then_some(s));
        let worse = baseline_skew.is_none_or(|b| skew_reg > WORSE * b);
        if skew_reg <= SKEW || carried < MIN_BYTES_PER_S || !worse {
            continue;
        }
        let mean = carried / reg.len() as f64;
        let hot: Vec<f64> = reg.iter().copied().filter(|r| *r > mean).collect();
        let plane = uplinks.iter().find_map(|s| enriched(&s.labels, topology).get("plane").map(str::to_string));
        out.push(Collision {
            switch: leaf.clone(),
            plane,
            hot: hot.len(),
            uplinks: reg.len(),
            share: hot.iter().sum::<f64>() / carried,
            skew: skew_reg,
            baseline_skew,
        });
    }
    out.sort_by(|a, b| b.skew.total_cmp(&a.skew).then(a.switch.cmp(&b.switch)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collision_reads_as_the_issue_writes_it() {
        let c = Collision {
            switch: "leaf-rail3".into(),
            plane: Some("0".into()),
            hot: 2,
            uplinks: 8,
            share: 0.61,
            skew: 2.6,
            baseline_skew: Some(1.1),
        };
        assert_eq!(
            c.to_string(),
            "ECMP collision: 2 of 8 uplinks of leaf-rail3 to plane 0 carry 61 % (busiest 2.6× the mean, 1.1× before)"
        );
        assert_eq!(skew(&[2.0, 1.0, 1.0, 0.0]), (2.0, 4.0));
        assert_eq!(skew(&[0.0, 0.0]), (1.0, 0.0));
    }
}
