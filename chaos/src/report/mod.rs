//! Reports of chaos runs: the JSON record ([`record`]), the generic SVG
//! timeline ([`timeline`]), the terminal table ([`table`]) and the HTML page
//! ([`html`], its table rows from [`rows`], its tracks ordered by
//! [`relevance`]) built from them.

pub mod html;
pub mod record;
pub mod relevance;
pub mod rows;
pub mod table;
pub mod timeline;

pub use record::{
    DecisionRecord, FaultOutcome, FaultRecord, FaultSummary, Moments, ProbeSeries, Report, RunOutcome, RunRecord,
    Stats, StepTime, StepTimeSummary, Summary, TransitionRecord,
};
