//! Reports of chaos runs: the JSON record ([`record`]), the generic SVG
//! timeline ([`timeline`]), the terminal table ([`table`]) and the HTML page
//! ([`html`]) built from them.

pub mod html;
pub mod record;
pub mod table;
pub mod timeline;

pub use record::{
    DecisionRecord, FaultOutcome, FaultRecord, FaultSummary, ProbeSeries, Report, RunOutcome, RunRecord, Stats,
    StepTime, StepTimeSummary, Summary, TransitionRecord,
};
