//! Each recorded series on the job's path, compared: against its own past
//! (baseline → regression, [`rank`]) and against its peers ([`peers`]); or,
//! when the job was never faster in the recording, against its peers alone.
//!
//! Both start from the series as `why` reads it ([`prepared`]): only a
//! metric the table of [`signals`] knows (all of them under
//! `--all-metrics`), a bitmask decoded to the bits that mean slowdown, a
//! slowly refreshed switch counter spread over its refresh edges.

use engine::{Nanos, SECOND};

use super::path::{enriched, Element, JobPath};
use super::peers::{self, Compared, PeerKey};
use super::rank::{self, Effect, Ranked, Signal};
use super::series::{self, Recorded, Shape};
use super::signals::{self, Known};
use super::window::Windows;
use super::{refresh, Query};

/// A series' points over the whole recording as `why` weighs them, with
/// what the table knows of its metric; `None` when it does not rank.
fn prepared(rec: &Recorded, s: &series::Series, all_metrics: bool) -> Option<(Known, Vec<(Nanos, f64)>)> {
    let known = match signals::known(&s.metric) {
        Some(k) => *k,
        None if all_metrics => signals::UNKNOWN,
        None => return None,
    };
    // The whole series once: decoded, and a slowly refreshed counter read
    // over its refresh edges, so a window's edge cuts no refresh in two.
    let mut all = s.points(&rec.grid, rec.grid.origin, rec.grid.end());
    if let Some(f) = known.decode {
        all.iter_mut().for_each(|p| p.1 = f(p.1));
    }
    if s.shape == Shape::Rate && refresh::refreshed_slowly(&s.metric) {
        all = refresh::over_refresh_edges(all);
    }
    Some((known, all))
}

fn values(p: &[(Nanos, f64)]) -> Vec<f64> {
    p.iter().map(|x| x.1).collect()
}

fn seconds((a, b): (Nanos, Nanos)) -> f64 {
    (b - a) as f64 / SECOND as f64
}

/// The least change that matters for a metric at these levels.
fn floor_of(known: &Known, effect: &Effect) -> f64 {
    if known.floor.is_nan() {
        0.05 * effect.baseline.abs().max(effect.regression.abs())
    } else {
        known.floor
    }
}

/// One series' movement between the windows, if it has enough points in
/// both, with the least change that matters for it. A move the good way scores 0.
fn signal_of(rec: &Recorded, s: &series::Series, w: &Windows, all_metrics: bool) -> Option<(Signal, f64)> {
    let (known, all) = prepared(rec, s, all_metrics)?;
    let within = |(from, to): (Nanos, Nanos)| -> Vec<(Nanos, f64)> {
        all.iter().copied().filter(|(t, _)| *t >= rec.grid.start_of(rec.grid.index_floor(from)) && *t <= to).collect()
    };
    let (base, reg) = (within(w.baseline), within(w.regression));
    let effect = match s.shape {
        Shape::Event => rank::event_effect(&values(&base), &values(&reg), seconds(w.baseline), seconds(w.regression))?,
        _ => rank::level_effect_over(&s.metric, known.floor, &values(&base), &values(&reg))?,
    };
    let spread = 1.4826 * rank::mad(&values(&base), effect.baseline);
    let floor = floor_of(&known, &effect);
    let band = (3.0 * spread).max(floor).max(0.05 * effect.baseline.abs());
    // Search from a little before the rise: a cause moves first.
    let search_from = w.regression.0 - (w.regression.1 - w.regression.0).max(10 * SECOND);
    let around = within((search_from.max(w.baseline.0), w.regression.1));
    let moved = if effect.z > 1.0 { rank::moved_at(&around, effect.baseline, band) } else { None };
    let lead_ns = moved.map(|m| w.rise_at - m);
    let bad_way = known.bad.admits(effect.baseline, effect.regression);
    let score = if bad_way {
        rank::score_weighted(known.weight, &effect, lead_ns, w.regression.1 - w.regression.0)
    } else {
        0.0
    };
    let signal = Signal {
        metric: s.metric.clone(),
        labels: s.labels.to_string(),
        rate: s.shape == Shape::Rate,
        effect,
        moved_at: moved,
        lead_ns,
        peer_z: None,
        score,
    };
    Some((signal, floor))
}

/// One series' level over `span` (a median; a mean for a sparse metric; a
/// rate for events), for comparing it with its peers alone.
fn level_of(rec: &Recorded, s: &series::Series, span: (Nanos, Nanos), all_metrics: bool) -> Option<(Signal, Known)> {
    let (known, all) = prepared(rec, s, all_metrics)?;
    let v: Vec<f64> = all.iter().filter(|(t, _)| *t >= span.0 && *t <= span.1).map(|p| p.1).collect();
    let level = match s.shape {
        Shape::Event => rank::event_effect(&v, &v, seconds(span), seconds(span))?.regression,
        _ if v.len() < 3 => return None,
        _ if rank::sparse(&s.metric) => v.iter().sum::<f64>() / v.len() as f64,
        _ => rank::median(&v),
    };
    let signal = Signal {
        metric: s.metric.clone(),
        labels: s.labels.to_string(),
        rate: s.shape == Shape::Rate,
        effect: Effect { baseline: level, regression: level, z: 0.0 },
        moved_at: None,
        lead_ns: None,
        peer_z: None,
        score: 0.0,
    };
    Some((signal, known))
}

/// Signals through which a neighbour's NIC (another node's, on a leaf the
/// job uses) reaches the job: pause frames it sends stop the leaf's shared
/// buffer, and the watchdog that catches it. Its own marks, CNPs, errors
/// and flaps are on its own path, not the job's.
const THROUGH_THE_LEAF: [&str; 5] = ["tx_prio_pause", "pfc_rx", "pause_storm", "pfcwd", "deadlock"];

/// A neighbour's leaf-port queue (an incast into it) reaches the job only
/// when the leaf pauses the job's ports for it: these say a job port was paused.
const PAUSED: [&str; 3] = ["pfc_tx_pause", "rx_prio_pause", "rx_pause"];

/// What a series about `element` can say of the job.
#[derive(Debug, Clone, PartialEq)]
enum Reach {
    /// Any series of the job's own elements; a neighbour's pause frames.
    Job,
    /// A neighbour's queue on this leaf: only if the leaf paused the job's ports.
    IfPaused(String),
    /// Nothing: a neighbour's own marks, CNPs, errors, flaps.
    Not,
}

fn reach(path: &JobPath, element: &Element, metric: &str, labels: &engine::Labels) -> Reach {
    let Element::Rail { node, .. } = element else { return Reach::Job };
    if path.nodes.contains(node) {
        return Reach::Job;
    }
    let lower = metric.to_ascii_lowercase();
    if THROUGH_THE_LEAF.iter().any(|m| lower.contains(m)) {
        return Reach::Job;
    }
    match labels.get("switch") {
        Some(leaf) if lower.starts_with("switch_queue") => Reach::IfPaused(leaf.to_string()),
        _ => Reach::Not,
    }
}

/// The leaves that paused the job's own ports meanwhile.
fn paused_leaves(path: &JobPath, compared: &[Compared]) -> std::collections::BTreeSet<String> {
    compared
        .iter()
        .filter(|c| c.signal.score > 0.0 && PAUSED.iter().any(|m| c.signal.metric.contains(m)))
        .filter(|c| matches!(&c.element, Element::Rail { node, .. } if path.nodes.contains(node)))
        .filter_map(|c| path.cable(&c.element).and_then(|cable| cable.switch.clone()))
        .collect()
}

/// The elements of the path, ranked, and how many series were compared:
/// each series against its past and its peers.
pub fn ranking(rec: &Recorded, path: &JobPath, w: &Windows, q: &Query) -> (Vec<Ranked>, usize) {
    let mut compared: Vec<Compared> = Vec::new();
    let mut reaches: Vec<Reach> = Vec::new();
    for s in &rec.series {
        let labels = enriched(&s.labels, q.topology);
        let Some(element) = path.element_of(&labels) else { continue };
        let how = reach(path, &element, &s.metric, &labels);
        if how == Reach::Not {
            continue;
        }
        let Some((signal, floor)) = signal_of(rec, s, w, q.all_metrics) else { continue };
        let key = PeerKey::of(&s.metric, &element, &labels);
        compared.push(Compared { element, key, signal, floor, event: s.shape == Shape::Event });
        reaches.push(how);
    }
    peers::weigh(&mut compared);
    let paused = paused_leaves(path, &compared);
    for (c, how) in compared.iter_mut().zip(&reaches) {
        if matches!(how, Reach::IfPaused(leaf) if !paused.contains(leaf)) {
            c.signal.score = 0.0;
        }
    }
    ranked(compared)
}

/// The elements of the path ranked by how far they stand out from their
/// peers over `span` alone: for a job that was never faster in the recording.
pub fn ranking_by_peers(rec: &Recorded, path: &JobPath, span: (Nanos, Nanos), q: &Query) -> (Vec<Ranked>, usize) {
    let mut compared: Vec<Compared> = Vec::new();
    let mut table: Vec<Known> = Vec::new();
    for s in &rec.series {
        let labels = enriched(&s.labels, q.topology);
        // Alone with its peers there is no "meanwhile": a neighbour counts by its pause frames only.
        let Some(element) = path.element_of(&labels).filter(|e| reach(path, e, &s.metric, &labels) == Reach::Job)
        else {
            continue;
        };
        let Some((signal, known)) = level_of(rec, s, span, q.all_metrics) else { continue };
        let floor = floor_of(&known, &signal.effect);
        let key = PeerKey::of(&s.metric, &element, &labels);
        compared.push(Compared { element, key, signal, floor, event: false });
        table.push(known);
    }
    peers::stand_out(&mut compared, |i, effect| {
        let k = &table[i];
        if k.bad.admits(effect.baseline, effect.regression) {
            rank::score_weighted(k.weight, effect, None, 0)
        } else {
            0.0
        }
    });
    ranked(compared)
}

fn ranked(compared: Vec<Compared>) -> (Vec<Ranked>, usize) {
    let count = compared.len();
    let moved = compared.into_iter().filter(|c| c.signal.score > 0.0).map(|c| (c.element, c.signal)).collect();
    (rank::group(moved), count)
}
