//! Reports of chaos runs, one shape for a scenario's runs and a fleet game
//! day's: the JSON record ([`record`], a game's own figures in
//! [`fleet`]), the terminal table ([`table`]) and the HTML page ([`html`],
//! its tracks ordered by [`relevance`]) built from them. The markup itself
//! (escaping, the page shell, table rows, the SVG timeline) is the
//! `rocemend-render` crate's.

pub mod fleet;
pub mod html;
pub mod record;
pub mod relevance;
mod stats;
pub mod table;

pub use record::{
    DecisionRecord, FaultOutcome, FaultRecord, FaultSummary, Moments, ProbeSeries, RecoveryStats, Report, RunOutcome,
    RunRecord, Stats, StepTime, StepTimeSummary, Summary, TransitionRecord,
};
