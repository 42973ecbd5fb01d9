//! The fleet budget, counted locally: the daemon config's `[fleet]`
//! budgets kept in memory, as if this daemon were the whole fleet.
//!
//! A preview has one recording, one daemon's view: it cannot know what
//! the other daemons would take. Counting only this daemon's tokens shows
//! what the budget alone would hold back (a fourth cordon in ten minutes),
//! the lower bound of what the real fleet would hold. The reasons say so.

use std::sync::Mutex;

use engine::contracts::{
    Admission, CoordinationError, Coordinator, FleetBreaker, Health, Release, Token, TokenRequest,
};
use engine::Nanos;
use fleet::settings::Budget;

/// One token taken: which budget and cell, for which decision, when.
struct Taken {
    key: String,
    budget: usize,
    cell: String,
    at: Nanos,
    /// Undone: a concurrency budget's token no longer counts; a windowed
    /// one counts until its window ends.
    undone: bool,
}

/// A [`Coordinator`] that keeps the fleet's budgets in memory.
pub struct LocalBudgets {
    budgets: Vec<Budget>,
    taken: Mutex<Vec<Taken>>,
    breaker: Mutex<FleetBreaker>,
}

impl LocalBudgets {
    /// Keeps `budgets`.
    pub fn new(budgets: Vec<Budget>) -> LocalBudgets {
        LocalBudgets { budgets, taken: Mutex::new(Vec::new()), breaker: Mutex::new(FleetBreaker::default()) }
    }

    /// The budgets in words, for the preview's header.
    pub fn describe(&self) -> String {
        self.budgets.iter().map(|b| format!("{} {}", b.name, b.describe())).collect::<Vec<_>>().join(", ")
    }

    fn counts(&self, t: &Taken, now: Nanos) -> bool {
        match self.budgets[t.budget].window {
            Some(w) => now - t.at < w.as_nanos() as Nanos,
            None => !t.undone,
        }
    }
}

#[async_trait::async_trait]
impl Coordinator for LocalBudgets {
    fn name(&self) -> &str {
        "preview (fleet budgets counted locally)"
    }

    fn identity(&self) -> &str {
        "preview"
    }

    async fn acquire(&self, request: &TokenRequest) -> Admission {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        let mut new = Vec::new();
        for (i, b) in self.budgets.iter().enumerate().filter(|(_, b)| b.counts(&request.kind)) {
            let cell = b.cell(&request.impact);
            let in_use =
                taken.iter().filter(|t| t.budget == i && t.cell == cell && self.counts(t, request.at)).count() as u32;
            if in_use >= b.limit {
                return Admission::Refused(format!(
                    "fleet budget {} ({}) exhausted in {cell}: {in_use} of {} in use \
                     (counted as if this daemon were the whole fleet)",
                    b.name,
                    b.describe(),
                    b.limit
                ));
            }
            let key = format!("{}/{cell}/{}", b.name, request.decision);
            new.push(Taken { key, budget: i, cell, at: request.at, undone: false });
        }
        let token = Token {
            decision: request.decision.clone(),
            holder: "preview".into(),
            budgets: new.iter().map(|t| format!("{} ({})", self.budgets[t.budget].name, t.cell)).collect(),
            keys: new.iter().map(|t| t.key.clone()).collect(),
        };
        taken.extend(new);
        Admission::Granted(token)
    }

    async fn release(&self, token: &Token, why: Release) -> Result<(), CoordinationError> {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        match why {
            Release::NotDone => taken.retain(|t| !token.keys.contains(&t.key)),
            Release::Undone => {
                for t in taken.iter_mut().filter(|t| token.keys.contains(&t.key)) {
                    t.undone = true;
                }
            }
        }
        Ok(())
    }

    fn breaker(&self) -> FleetBreaker {
        self.breaker.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    async fn trip(&self, reason: &str) -> Result<(), CoordinationError> {
        let mut breaker = self.breaker.lock().unwrap_or_else(|p| p.into_inner());
        *breaker = FleetBreaker { tripped: true, by: "preview".into(), reason: reason.into(), at: None };
        Ok(())
    }

    async fn reset(&self, _by: &str) -> Result<FleetBreaker, CoordinationError> {
        let mut breaker = self.breaker.lock().unwrap_or_else(|p| p.into_inner());
        Ok(std::mem::take(&mut *breaker))
    }

    fn health(&self) -> Health {
        Health::Reachable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::policy::Impact;
    use std::time::Duration;

    fn request(decision: &str, at: Nanos) -> TokenRequest {
        TokenRequest { decision: decision.into(), kind: "node.cordon".into(), impact: Impact::default(), at }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_windowed_budget_refuses_past_its_max_until_the_window_ends() {
        let budget = Budget {
            name: "cordon".into(),
            kinds: vec!["node.cordon".into()],
            limit: 1,
            window: Some(Duration::from_secs(600)),
            per: fleet::settings::Per::Fleet,
        };
        let local = LocalBudgets::new(vec![budget]);
        assert!(matches!(local.acquire(&request("a", 0)).await, Admission::Granted(_)));
        match local.acquire(&request("b", 60 * engine::SECOND)).await {
            Admission::Refused(reason) => assert!(reason.contains("cordon (1 per 10m) exhausted"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(local.acquire(&request("c", 601 * engine::SECOND)).await, Admission::Granted(_)));
    }
}
