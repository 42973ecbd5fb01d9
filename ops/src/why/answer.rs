//! Whether the fabric explains the slowdown, and how sure `why` is.
//!
//! **"Not the fabric".** An element is the answer only when it moved
//! clearly: its score is at least [`FABRIC_SCORE`] (one cause signal, weight
//! 1, about 6 noise floors out of its baseline). A slowdown that nothing on
//! the job's path explains beyond that is the job's own: its input
//! pipeline, its code, a checkpoint to slow storage; the answer says so and
//! names the best element anyway, as a lead.
//!
//! **Confidence.** How far the top element clears that line, times how far
//! it stands above the best element that is a different answer (the same
//! rail on several nodes is one answer: a rail-wide cause). Both are
//! logistic in their measure, fitted on the project's generator
//! (`chaos/sim/src/why_cases.rs`: right answers scored 3.6 and more, healthy
//! fabrics with small distractors 1.3 at most; the measurement is
//! `cargo test --release --test it -- why::scores --ignored --nocapture`).
//! On data that generator does not model the figure is an estimate, not a
//! promise.

use serde::Serialize;

use super::path::Element;
use super::rank::Ranked;

/// The least score of an element that explains a slowdown.
pub const FABRIC_SCORE: f64 = 2.0;

/// What `why` concludes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// An element of the path explains it (the ranking's first); `false`: not the fabric.
    pub fabric: bool,
    /// How sure, 0 to 1.
    pub confidence: f64,
    /// The signals that support it, strongest first (the top element's).
    pub evidence: Vec<String>,
}

fn logistic(x: f64, middle: f64, steepness: f64) -> f64 {
    1.0 / (1.0 + (-(x - middle) * steepness).exp())
}

/// The group an element answers for: a rail is one answer on every node.
fn answer_of(e: &Element) -> String {
    match e {
        Element::Rail { rail, .. } => format!("rail {rail}"),
        other => other.to_string(),
    }
}

/// The answer for `ranking` (best first).
pub fn answer(ranking: &[Ranked]) -> Answer {
    let Some(top) = ranking.first() else { return Answer { fabric: false, confidence: 0.95, evidence: Vec::new() } };
    let strength = logistic(top.score, 2.4, 3.0);
    let mine = answer_of(&top.element);
    let rival = ranking.iter().filter(|e| answer_of(&e.element) != mine).map(|e| e.score).fold(0.0, f64::max);
    let margin = logistic(1.0 - rival / top.score, 0.15, 12.0);
    let evidence =
        top.signals.iter().filter(|s| s.score > 0.0).take(3).map(|s| format!("{}{}", s.metric, s.labels)).collect();
    if top.score >= FABRIC_SCORE {
        Answer { fabric: true, confidence: strength * margin, evidence }
    } else {
        Answer { fabric: false, confidence: 1.0 - strength, evidence }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::why::rank::{Effect, Signal};

    fn ranked(node: &str, rail: &str, score: f64) -> Ranked {
        let signal = Signal {
            metric: "ethtool_tx_prio_pause_duration_us".into(),
            labels: String::new(),
            rate: true,
            effect: Effect { baseline: 0.0, regression: 1.0, z: 1.0 },
            moved_at: None,
            lead_ns: None,
            peer_z: None,
            score,
        };
        Ranked { element: Element::Rail { node: node.into(), rail: rail.into() }, score, signals: vec![signal] }
    }

    #[test]
    fn a_clear_cause_is_sure_a_close_rival_is_not_and_a_faint_one_is_not_the_fabric() {
        let clear = answer(&[ranked("a", "3", 7.0), ranked("b", "3", 3.5), ranked("c", "5", 1.0)]);
        assert!(clear.fabric && clear.confidence > 0.9, "{clear:?}");
        let rivals = answer(&[ranked("a", "3", 5.0), ranked("b", "5", 4.9)]);
        assert!(rivals.fabric && rivals.confidence < 0.3, "{rivals:?}");
        let faint = answer(&[ranked("a", "3", 1.2)]);
        assert!(!faint.fabric && faint.confidence > 0.9, "{faint:?}");
        assert!(!answer(&[]).fabric);
    }
}
