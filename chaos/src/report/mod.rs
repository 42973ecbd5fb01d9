//! Reports of chaos runs: the JSON record ([`record`]), the generic SVG
//! timeline ([`timeline`]) and the HTML page ([`html`]) built from them.

pub mod html;
pub mod record;
pub mod table;
pub mod timeline;

pub use record::{
    DecisionRecord, FaultRecord, ProbeSeries, Report, RunOutcome, RunRecord, Stats, Summary, TransitionRecord,
};
