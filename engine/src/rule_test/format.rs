//! The schema of a rule test file (`rules/<stem>.test.toml`).
//!
//! Fields that later checks may complain about are [`Spanned`], so those
//! errors can name the line and column too.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::counter::Overflow;
use crate::instance::State;

/// A whole test file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestFile {
    /// Inventory to enrich labels from, as the daemon does; relative to the
    /// test file. Without it series keep only the labels written here.
    #[serde(default)]
    pub inventory: Option<Spanned<String>>,
    /// The cases, run in order, each from a fresh engine.
    #[serde(default, rename = "case")]
    pub cases: Vec<Spanned<CaseSpec>>,
}

/// One case: input series, expected states and the exact set of proposals.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseSpec {
    /// Shown in reports; unique within the file.
    pub name: String,
    /// One step; sample `k` of every series is taken at `k·interval`.
    pub interval: Spanned<String>,
    /// Steps to run; default: the longest values list.
    #[serde(default)]
    pub steps: Option<Spanned<u64>>,
    /// The input series.
    #[serde(default)]
    pub series: Vec<SeriesInput>,
    /// Expected instance states.
    #[serde(default)]
    pub expect: Vec<ExpectSpec>,
    /// Every proposal the case must produce, and no others.
    #[serde(default)]
    pub action: Vec<ActionSpec>,
}

/// The kind of an input series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KindSpec {
    /// A cumulative counter (the default).
    #[default]
    Counter,
    /// A level.
    Gauge,
    /// A discrete event; each value is one event with that payload.
    Event,
}

/// One input series.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesInput {
    /// `metric{label="value", …}`; only `=` matchers.
    pub series: Spanned<String>,
    /// `counter` (default), `gauge` or `event`.
    #[serde(default)]
    pub kind: KindSpec,
    /// Counter width in bits, 1..=64; default 64.
    #[serde(default)]
    pub bits: Option<Spanned<u8>>,
    /// What a counter does at the top of its width: `wrap` (default) or `saturate`.
    #[serde(default)]
    pub overflow: Option<Spanned<Overflow>>,
    /// Promtool expanding notation, one value per step; `_` is no sample.
    pub values: Spanned<String>,
}

/// An expected state at one step.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectSpec {
    /// When, a multiple of the interval (`"800ms"`).
    pub at: Spanned<String>,
    /// `inactive`, `pending`, `firing` or `resolved`.
    pub state: State,
    /// Labels the subject must have; every subject that has them must be in
    /// `state`. May be left out when the case has a single subject.
    #[serde(default)]
    pub subject: Option<Spanned<BTreeMap<String, String>>>,
    /// Whether the subject's inputs are stale (not checked when left out).
    #[serde(default)]
    pub stale: Option<bool>,
}

/// An expected proposal.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionSpec {
    /// When it must be proposed, a multiple of the interval.
    pub at: Spanned<String>,
    /// `<actuator>.<verb>`.
    pub kind: String,
    /// Must equal the proposal's target exactly.
    #[serde(default)]
    pub target: BTreeMap<String, String>,
    /// When given, must equal the proposal's parameters exactly.
    #[serde(default)]
    pub params: Option<BTreeMap<String, String>>,
}
