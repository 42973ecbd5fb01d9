//! Adoption: actions in effect on switches this daemon took over from
//! another aggregator of its shard group become its own.
//!
//! Each is recorded in this ledger under an id of this daemon's (decision
//! ids are per daemon), with a step saying who took it and why it is ours
//! now, and counted in effect: it is then reverified, and undone when this
//! daemon's instance of its rule resolves, as if this daemon had taken it.
//! Its hand-over record is written again in this daemon's name, so a switch
//! that moves once more carries it along.

use super::*;

impl Dispatcher {
    /// Adopts what the coordinator found on switches taken over.
    pub async fn adopt_taken_over(&mut self, now: Nanos) {
        let coordinator = self.fleet.coordinator().clone();
        for Adopted { decision: taken, from, switch } in coordinator.take_adopted() {
            let key = taken.proposal.action.dedup_key();
            if self.policy.in_effect().any(|e| e.action.dedup_key() == key) {
                continue; // already ours: adopted before, or this daemon's own
            }
            let id = self.next_id();
            let what = format!(
                "adopted by {} from {from} (its decision {}): switch {switch} changed hands",
                coordinator.identity(),
                taken.id
            );
            let d = Decision { id, steps: [taken.steps, vec![Step { at: now, what }]].concat(), ..taken };
            tracing::info!(
                message = "Adopted an action in effect on a switch taken over.",
                id = %d.id,
                action = %d.proposal.action,
                %from,
                %switch
            );
            self.save(&d, true);
            restore_effect_of(&mut self.policy, &d);
            coordinator.switch_changed(&d, &switch).await;
        }
    }
}
