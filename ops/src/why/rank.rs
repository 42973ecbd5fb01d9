//! How much each series moved between the baseline and the regression, and
//! which element of the path moved most.
//!
//! **Effect size.** `z = |median_reg − median_base| / (1.4826·MAD_base + ε)`:
//! medians and the MAD ignore the odd spike, and 1.4826·MAD is the standard
//! deviation of a normal baseline. Fabric counters are mostly *zero* when
//! healthy (no pause, no symbol error), so their MAD is 0 and any change
//! would be infinitely significant; ε is therefore the smallest change an
//! operator would care about for that metric ([`floor`]: 1 % of a second of
//! pause, one symbol error a second, one carrier loss per 20 s…) or 5 % of
//! the baseline level, whichever is larger. A median needs the signal to
//! have moved for most of the regression: a one-off blip does not rank.
//! Metrics that move in rare discrete steps ([`sparse`]: carrier losses,
//! watchdog storms, error counts) are compared by their means instead.
//! Events (XIDs, carrier transitions) are rare by nature: they are judged
//! by their mean rate instead of a median, as a Poisson surprise.
//!
//! **Score.** `weight × ln(1 + z)`. The log keeps a 10⁶× change from
//! drowning everything else; the [`weight`] says how directly a metric
//! points at a *cause*: a NIC sending pause frames, symbol errors, a lost
//! carrier, an XID, a marking queue are where a fault is (1.0–2.0); a NIC
//! *receiving* marks is near one (0.7); a port being paused or waiting to
//! send is a victim of something elsewhere (0.4); traffic volumes follow
//! the job's pace (0.2).
//!
//! **Lead time.** When a series first left its baseline band (and stayed
//! out for most of the next few points), relative to the job's rise:
//! positive when it moved first. A series that moved long after the job
//! slowed is a consequence (the watchdog dropping, a drain moving traffic)
//! and its score is halved.
//!
//! **Elements.** Each element scores its best series plus half its second
//! and a quarter of its third: one cause shows on both ends of a cable
//! (the NIC's pause counter and the leaf port's), a victim usually on one.

use std::collections::BTreeMap;

use engine::{Nanos, SECOND};
use serde::Serialize;

use super::path::Element;

/// Medians need data; fewer points than this in a window is no evidence.
const MIN_POINTS: usize = 3;

pub use engine::stats::{mad, median};

/// The weight and noise floor of `metric` ([`signals`](super::signals));
/// for a metric the table does not know (drawn on a timeline, never ranked
/// without `--all-metrics`), a middling weight and no floor.
fn role(metric: &str) -> (f64, f64) {
    super::signals::known(metric).map_or((0.5, 1e-6), |k| (k.weight, k.floor))
}

/// How directly `metric` points at a cause (see the module doc).
pub fn weight(metric: &str) -> f64 {
    role(metric).0
}

/// The smallest change of `metric` worth a look (see the module doc).
pub fn floor(metric: &str) -> f64 {
    role(metric).1
}

/// One series' movement between the windows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    /// Baseline level (median; mean rate for events).
    pub baseline: f64,
    /// Regression level.
    pub regression: f64,
    /// Robust effect size.
    pub z: f64,
}

/// Whether `metric` moves in discrete, rare steps (a carrier loss, a
/// watchdog storm, an error burst): a flapping link loses its carrier for
/// 150 ms every 700 ms, so most points of its rates and states are still
/// "normal" and a median would not see it. These are compared by their
/// mean (the rate of losses over the window, the fraction of time down).
pub fn sparse(metric: &str) -> bool {
    ["carrier", "link_down", "transition", "deadlock", "oper_up", "stormed", "symbol_err", "errors"]
        .iter()
        .any(|p| metric.contains(p))
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The effect size of a level series (rates and gauges).
pub fn level_effect(metric: &str, base: &[f64], reg: &[f64]) -> Option<Effect> {
    level_effect_over(metric, floor(metric), base, reg)
}

/// [`level_effect`] over the noise floor `floor`; a NaN floor (a metric
/// nobody described) is 5 % of the larger of its two levels, so a move
/// counts by its size relative to the metric itself: at most z = 20.
pub fn level_effect_over(metric: &str, floor: f64, base: &[f64], reg: &[f64]) -> Option<Effect> {
    if base.len() < MIN_POINTS || reg.len() < MIN_POINTS {
        return None;
    }
    let (b, r) = if sparse(metric) { (mean(base), mean(reg)) } else { (median(base), median(reg)) };
    let eps = if floor.is_nan() { (0.05 * b.abs().max(r.abs())).max(1e-9) } else { floor.max(0.05 * b.abs()) };
    let z = (r - b).abs() / (1.4826 * mad(base, b) + eps);
    Some(Effect { baseline: b, regression: r, z })
}

/// The effect size of an event series, from its counts per second in each
/// window (`base_s`, `reg_s` seconds long): the excess of events over what
/// the baseline rate predicts, in Poisson standard deviations, the
/// prediction never below 0.01 events (a rare event's first occurrence is
/// surprising, not infinitely so).
pub fn event_effect(base: &[f64], reg: &[f64], base_s: f64, reg_s: f64) -> Option<Effect> {
    if reg.is_empty() || base_s <= 0.0 || reg_s <= 0.0 {
        return None;
    }
    let per_point = |v: &[f64], secs: f64| v.iter().sum::<f64>() / v.len().max(1) as f64 * secs;
    let (nb, nr) = (per_point(base, base_s), per_point(reg, reg_s));
    let expected = (nb / base_s * reg_s).max(0.01);
    let z = ((nr - expected) / expected.sqrt()).max(0.0);
    Some(Effect { baseline: nb / base_s, regression: nr / reg_s, z })
}

/// When `points` first left the band `|v − center| > band` and stayed out
/// for most of the next few points.
pub fn moved_at(points: &[(Nanos, f64)], center: f64, band: f64) -> Option<Nanos> {
    let out = |v: f64| (v - center).abs() > band;
    (0..points.len()).find_map(|i| {
        let next = &points[i..(i + 5).min(points.len())];
        (out(points[i].1) && next.iter().filter(|p| out(p.1)).count() * 4 >= next.len() * 3).then_some(points[i].0)
    })
}

/// One ranked series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Signal {
    /// Metric.
    pub metric: String,
    /// Its labels, as text.
    pub labels: String,
    /// Counter shown as a rate.
    pub rate: bool,
    /// Movement.
    pub effect: Effect,
    /// When it left its baseline.
    pub moved_at: Option<Nanos>,
    /// Nanoseconds before the job's rise it moved (negative: after).
    pub lead_ns: Option<Nanos>,
    /// How far it stood out from its peers' median move (their spread or its
    /// floor as unit), when it had enough peers ([`super::peers`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer_z: Option<f64>,
    /// Its score.
    pub score: f64,
}

/// The score of a series that moved by `effect`, `lead_ns` before the
/// job's rise, in a regression `reg_len` long.
pub fn score(metric: &str, effect: &Effect, lead_ns: Option<Nanos>, reg_len: Nanos) -> f64 {
    score_weighted(weight(metric), effect, lead_ns, reg_len)
}

/// [`score`] with the weight `weight`.
pub fn score_weighted(weight: f64, effect: &Effect, lead_ns: Option<Nanos>, reg_len: Nanos) -> f64 {
    let late = lead_ns.is_some_and(|l| -l > (reg_len / 10).max(2 * SECOND));
    weight * (1.0 + effect.z).ln() * if late { 0.5 } else { 1.0 }
}

/// An element and its signals, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranked {
    /// The element.
    pub element: Element,
    /// Its score.
    pub score: f64,
    /// Its series, best first.
    pub signals: Vec<Signal>,
}

/// Groups `signals` by element, scores each element by its strongest
/// signals, best first (ties: the earlier mover, then the name).
pub fn group(signals: Vec<(Element, Signal)>) -> Vec<Ranked> {
    let mut by: BTreeMap<Element, Vec<Signal>> = BTreeMap::new();
    for (e, s) in signals {
        by.entry(e).or_default().push(s);
    }
    let mut out: Vec<Ranked> = by
        .into_iter()
        .map(|(element, mut signals)| {
            signals.sort_by(|a, b| b.score.total_cmp(&a.score));
            let score = signals.iter().take(3).zip([1.0, 0.5, 0.25]).map(|(s, w)| s.score * w).sum();
            Ranked { element, score, signals }
        })
        .collect();
    let lead = |r: &Ranked| r.signals.first().and_then(|s| s.lead_ns).unwrap_or(Nanos::MIN);
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(lead(b).cmp(&lead(a))).then(a.element.cmp(&b.element)));
    out
}

/// How much a drawn series moved around `split` (before vs after), for
/// ordering a timeline's tracks: the same effect size and weight as the
/// ranking, without the lead time.
pub fn relevance(metric: &str, points: &[(Nanos, f64)], split: Nanos) -> f64 {
    let (base, reg): (Vec<_>, Vec<_>) = points.iter().partition(|(t, _)| *t < split);
    let vals = |v: Vec<&(Nanos, f64)>| v.into_iter().map(|p| p.1).collect::<Vec<f64>>();
    let (base, reg) = (vals(base), vals(reg));
    let (base, reg) = if base.len() < MIN_POINTS {
        // Nothing before the split: compare the two halves of what there is.
        let all: Vec<f64> = points.iter().map(|p| p.1).collect();
        let (a, b) = all.split_at(all.len() / 2);
        (a.to_vec(), b.to_vec())
    } else {
        (base, reg)
    };
    level_effect(metric, &base, &reg).map_or(0.0, |e| weight(metric) * (1.0 + e.z).ln())
}

/// Whether a drawn series never moved by more than its metric's floor: one
/// line of "n series unchanged" says as much as its track.
pub fn is_flat(metric: &str, points: &[(Nanos, f64)]) -> bool {
    let (lo, hi) = points.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
    points.is_empty() || hi - lo <= floor(metric).max(0.05 * hi.abs().max(lo.abs())) * 0.5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_mads_ignore_spikes() {
        assert_eq!(median(&[1.0, 100.0, 2.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), 2.5);
        assert_eq!(mad(&[1.0, 2.0, 3.0, 100.0], 2.5), 1.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn a_zero_baseline_is_measured_against_the_metrics_floor() {
        // A NIC pausing its port 90 % of the time (9e5 µs/s) from nothing.
        let e = level_effect("ethtool_tx_prio_pause_duration_us", &[0.0; 10], &[9e5; 10]).unwrap();
        assert!((e.z - 90.0).abs() < 1e-9, "{e:?}");
        // Four symbol errors a second is real, but far less than 400.
        let small = level_effect("ethtool_rx_pcs_symbol_err_phy", &[0.0; 10], &[4.0; 10]).unwrap();
        let big = level_effect("ethtool_rx_pcs_symbol_err_phy", &[0.0; 10], &[400.0; 10]).unwrap();
        assert!(small.z < big.z / 50.0);
        // A blip in a few of the regression's points is no change.
        let mut reg = [0.0; 10];
        reg[3] = 1e6;
        assert_eq!(level_effect("ethtool_tx_prio_pause_duration_us", &[0.0; 10], &reg).unwrap().z, 0.0);
        assert!(level_effect("x", &[1.0], &[2.0; 5]).is_none(), "too few points");
    }

    #[test]
    fn noise_in_the_baseline_widens_the_band() {
        let base: Vec<f64> = (0..20).map(|i| 1000.0 + 300.0 * ((i % 5) as f64 - 2.0)).collect();
        let e = level_effect("rdma_port_xmit_wait", &base, &[1300.0; 10]).unwrap();
        assert!(e.z < 1.0, "{e:?}");
    }

    #[test]
    fn an_xid_out_of_nowhere_is_surprising_and_a_regular_one_is_not() {
        let once = event_effect(&[0.0; 100], &[0.0, 0.1, 0.0], 100.0, 30.0).unwrap();
        assert!(once.z > 5.0, "{once:?}");
        let usual = event_effect(&[0.1; 100], &[0.1; 30], 100.0, 30.0).unwrap();
        assert!(usual.z < 1.0, "{usual:?}");
    }

    #[test]
    fn a_cause_outweighs_its_victims_and_a_late_mover_is_a_consequence() {
        let e = Effect { baseline: 0.0, regression: 9e5, z: 90.0 };
        let cause = score("ethtool_tx_prio_pause_duration_us", &e, Some(0), 10 * SECOND);
        let victim = score("rdma_port_xmit_wait", &e, Some(0), 10 * SECOND);
        assert!(cause > 2.0 * victim);
        let late = score("ethtool_tx_prio_pause_duration_us", &e, Some(-5 * SECOND), 10 * SECOND);
        assert_eq!(late, cause / 2.0);
    }

    #[test]
    fn moved_at_needs_the_move_to_last() {
        let pts: Vec<(Nanos, f64)> = [0.0, 0.0, 9.0, 0.0, 0.0, 0.0, 8.0, 9.0, 9.0, 9.0, 9.0]
            .iter()
            .enumerate()
            .map(|(i, v)| (i as Nanos, *v))
            .collect();
        assert_eq!(moved_at(&pts, 0.0, 1.0), Some(6));
        assert_eq!(moved_at(&pts[..6], 0.0, 1.0), None);
    }

    #[test]
    fn elements_are_scored_by_their_strongest_signals() {
        let s = |score: f64, lead: Nanos| Signal {
            metric: "m".into(),
            labels: String::new(),
            rate: false,
            effect: Effect { baseline: 0.0, regression: 1.0, z: 1.0 },
            moved_at: None,
            lead_ns: Some(lead),
            peer_z: None,
            score,
        };
        let a = Element::Node { node: "a".into() };
        let b = Element::Node { node: "b".into() };
        let ranked = group(vec![(a.clone(), s(4.0, 0)), (a.clone(), s(4.0, 0)), (b.clone(), s(5.0, 0))]);
        assert_eq!(ranked[0].element, a, "two ends of one cable beat one: 4 + 2 > 5");
        assert_eq!(ranked[0].score, 6.0);
        let tie = group(vec![(a.clone(), s(4.0, 0)), (b.clone(), s(4.0, 100))]);
        assert_eq!(tie[0].element, b, "equal scores: the earlier mover first");
    }

    #[test]
    fn timeline_relevance_and_flatness() {
        let step: Vec<(Nanos, f64)> = (0..20).map(|i| (i, if i < 10 { 0.0 } else { 5e5 })).collect();
        let flat: Vec<(Nanos, f64)> = (0..20).map(|i| (i, 100.0 + (i % 2) as f64)).collect();
        let metric = "ethtool_tx_prio_pause_duration_us";
        assert!(relevance(metric, &step, 10) > relevance(metric, &flat, 10));
        assert!(relevance(metric, &step, 0) > 1.0, "no baseline: the halves are compared");
        assert!(is_flat(metric, &flat) && !is_flat(metric, &step));
    }
}
