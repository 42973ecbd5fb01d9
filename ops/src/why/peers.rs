//! Peers as the baseline: a series counts as moved only as far as it moved
//! beyond its peers in the same job at the same time.
//!
//! A series' own past says *that* it moved; its peers say whether the move
//! is its own. When a job slows, much moves with it on every node: each
//! GPU idles more, each NIC sends less and waits more, every busy GPU's
//! power-cap bit flips. Those moves are common to the element's peers and
//! explain nothing. A storming NIC, a hot GPU, a leaf whose uplinks mark
//! move where their peers do not. So every compared series is also measured
//! against its peers (the same metric, queue and priority on the same kind
//! of element of the job's path: the same counter of the other NICs, the
//! other GPUs, the other uplinks): its change between the windows against
//! the median change of the group, in units of the group's spread (MAD) or
//! the metric's noise floor. A series is then as strong as the smaller of
//! the two measures: it must stand out from its past *and* from its peers.
//!
//! A group needs [`MIN_PEERS`] members for its median to mean something; a
//! smaller one (a plane's two spines) is judged against its past alone.
//! The best published straggler detectors compare ranks with each other
//! for the same reason: a fleet-wide move is the job's, not an element's.

use std::collections::BTreeMap;

use engine::Labels;

use super::path::Element;
use super::rank::{mad, median, Effect, Signal};

/// The least group (the series itself included) whose median is its peers'.
pub const MIN_PEERS: usize = 5;
/// Compared with its peers alone, a level this many natural-log units (a
/// factor of 1.65) from theirs is one unit of standing out.
pub const LOG_UNIT: f64 = 0.5;

/// What makes two series peers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PeerKey {
    metric: String,
    /// The element's kind: a NIC is no peer of an uplink.
    kind: u8,
    queue: Option<String>,
    prio: Option<String>,
}

impl PeerKey {
    /// The key of a series about `element`.
    pub fn of(metric: &str, element: &Element, labels: &Labels) -> PeerKey {
        let kind = match element {
            Element::Rail { .. } => 0,
            Element::Gpu { .. } => 1,
            Element::Node { .. } => 2,
            Element::Switch { .. } => 3,
            Element::Plane { .. } => 4,
        };
        PeerKey {
            metric: metric.to_string(),
            kind,
            queue: labels.get("queue").map(str::to_string),
            prio: labels.get("prio").map(str::to_string),
        }
    }
}

/// A compared series, before its peers are counted.
#[derive(Debug, Clone)]
pub struct Compared {
    /// Its element.
    pub element: Element,
    /// Its peers.
    pub key: PeerKey,
    /// Its movement against its own past.
    pub signal: Signal,
    /// The smallest change that matters for its metric.
    pub floor: f64,
    /// An event series (XIDs, carrier transitions): judged by its own
    /// Poisson surprise only. Events are rare and each GPU's or link's own;
    /// their rates (one in a hundred seconds) are no level to compare.
    pub event: bool,
}

/// The indices of each group of peers in `compared` large enough to judge by.
fn groups(compared: &[Compared]) -> Vec<Vec<usize>> {
    let mut by: BTreeMap<&PeerKey, Vec<usize>> = BTreeMap::new();
    for (i, c) in compared.iter().enumerate().filter(|(_, c)| !c.event) {
        by.entry(&c.key).or_default().push(i);
    }
    by.into_values().filter(|m| m.len() >= MIN_PEERS).collect()
}

/// How far each of `values` stands from their median, in units of their
/// spread plus `floor(i)`.
fn standing(values: &[f64], floor: impl Fn(usize) -> f64) -> (f64, Vec<f64>) {
    let center = median(values);
    let spread = 1.4826 * mad(values, center);
    let z = values.iter().enumerate().map(|(i, v)| (v - center).abs() / (spread + floor(i).max(1e-12))).collect();
    (center, z)
}

/// How far each of `compared` stands out from its peers: sets each
/// signal's `peer_z`, and lowers its score to what the smaller of its two
/// effects (past, peers) earns.
pub fn weigh(compared: &mut [Compared]) {
    for members in groups(compared) {
        let changes: Vec<f64> = members.iter().map(|&i| change(&compared[i].signal)).collect();
        let (_, zs) = standing(&changes, |k| compared[members[k]].floor);
        for (&i, z) in members.iter().zip(zs) {
            let s = &mut compared[i].signal;
            s.peer_z = Some(z);
            if z < s.effect.z && s.score > 0.0 {
                // Score is weight × ln(1 + z) (halved when late): keep all but the z.
                s.score *= (1.0 + z).ln() / (1.0 + s.effect.z).ln();
            }
        }
    }
}

/// Each of `compared` (its level in `effect.regression`) against its peers
/// alone: its effect becomes the group's median → its level, with the peer
/// z, scored by `score(index, effect)`. A series without enough peers scores 0.
///
/// Levels are compared as `ln(1 + level / floor)`: devices differ by
/// factors (one NIC corrects ten times the bits of another, healthy), so a
/// device stands out by how many times its peers' level it runs at, in units
/// of the group's spread of those logs or [`LOG_UNIT`].
pub fn stand_out(compared: &mut [Compared], score: impl Fn(usize, &Effect) -> f64) {
    for members in groups(compared) {
        let levels: Vec<f64> = members.iter().map(|&i| compared[i].signal.effect.regression).collect();
        let logs: Vec<f64> = members
            .iter()
            .zip(&levels)
            .map(|(&i, v)| (1.0 + v.abs() / compared[i].floor.max(1e-12)).ln().copysign(*v))
            .collect();
        let (_, zs) = standing(&logs, |_| LOG_UNIT);
        let center = median(&levels);
        for (&i, z) in members.iter().zip(zs) {
            let s = &mut compared[i].signal;
            s.effect = Effect { baseline: center, regression: s.effect.regression, z };
            s.peer_z = Some(z);
            s.score = score(i, &s.effect);
        }
    }
}

/// A series' move between the windows, in its own unit.
fn change(s: &Signal) -> f64 {
    let d = s.effect.regression - s.effect.baseline;
    if d.is_finite() {
        d
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nic(node: &str, baseline: f64, regression: f64, z: f64) -> Compared {
        let element = Element::Rail { node: node.into(), rail: "3".into() };
        let labels = Labels::from_pairs([("node", node), ("prio", "3")]);
        Compared {
            key: PeerKey::of("ethtool_rx_prio_pause_duration_us", &element, &labels),
            element,
            signal: Signal {
                metric: "ethtool_rx_prio_pause_duration_us".into(),
                labels: labels.to_string(),
                rate: true,
                effect: Effect { baseline, regression, z },
                moved_at: None,
                lead_ns: None,
                peer_z: None,
                score: 0.4 * (1.0 + z).ln(),
            },
            floor: 1e4,
            event: false,
        }
    }

    #[test]
    fn a_move_every_peer_made_is_no_ones_and_a_move_of_ones_own_stands() {
        // Six NICs paused a little more as the job slowed; one paused 60 % of the time.
        let mut all: Vec<Compared> = (0..6).map(|i| nic(&format!("n{i}"), 1e3, 5e4 + 1e3 * i as f64, 5.0)).collect();
        all.push(nic("storm", 1e3, 6e5, 60.0));
        let before: Vec<f64> = all.iter().map(|c| c.signal.score).collect();
        weigh(&mut all);
        for (c, b) in all.iter().zip(&before).take(6) {
            assert!(c.signal.peer_z.unwrap() < 1.0, "{:?}", c.signal);
            assert!(c.signal.score < b / 3.0, "a common move keeps little: {} of {b}", c.signal.score);
        }
        let storm = &all[6].signal;
        assert!(storm.peer_z.unwrap() > 30.0, "{storm:?}");
        // Less the peers' common move, it keeps most of its score.
        assert!(storm.score > 0.9 * before[6] && storm.score <= before[6], "{} of {}", storm.score, before[6]);
    }

    #[test]
    fn a_small_group_is_judged_against_its_past_alone() {
        let mut two = vec![nic("a", 0.0, 5e4, 5.0), nic("b", 0.0, 5e4, 5.0)];
        let before = two[0].signal.score;
        weigh(&mut two);
        assert_eq!(two[0].signal.peer_z, None);
        assert_eq!(two[0].signal.score, before);
    }
}
