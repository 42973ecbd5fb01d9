//! Scenarios on the wall clock: real links. Implemented in the next step.
use chaos::report::RunRecord;
use chaos::scenario::Plan;

use super::{Options, Sources};

/// Runs `plan` once on the wall clock.
pub async fn run(plan: &Plan, _sources: &Sources, _options: &Options, _index: u32, _seed: u64) -> anyhow::Result<RunRecord> {
    anyhow::bail!("scenario {}: the wall clock needs real links, which this build does not drive yet", plan.name)
}
