//! Where rocemend keeps fleet state in etcd, and what the values hold.
//!
//! Under the prefix (`/rocemend/fleet/` by default):
//!
//! | key | value | lease |
//! |---|---|---|
//! | `budget/<budget>/<cell>/guard` | the decision that last took a token | none |
//! | `budget/<budget>/<cell>/token/<holder>/<decision>` | [`TokenValue`] | the holder's session |
//! | `breaker` | [`BreakerValue`] (present: tripped) | none |
//! | `breaker-reset` | [`BreakerValue`] of the last reset | none |
//! | `member/<identity>` | [`MemberValue`] | the daemon's session |
//! | `election/<name>/…` | the leader's identity (etcd election API) | the candidate's session |
//! | `shard/<group>/members/<identity>` | [`MemberValue`] of a switch aggregator sharing `<group>` | the aggregator's shard lease |
//! | `shard/<group>/owner/<switch>` | the owning aggregator's identity | the owner's shard lease |
//!
//! Every token take is one transaction that compares the `guard` key of each
//! budget cell it counts in (its mod revision as read) and the absence of
//! `breaker`, then writes the guards and the tokens: two daemons that read
//! the same count cannot both take the last token. A token lives under its
//! holder's lease, so a daemon that dies frees its tokens when the lease
//! expires.

use serde::{Deserialize, Serialize};

/// Key layout under one prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// The layout under `prefix` (ends in `/`).
    pub fn new(prefix: &str) -> Keys {
        let mut prefix = prefix.to_string();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        Keys { prefix }
    }

    /// The prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Every key of a budget cell (the guard and its tokens).
    pub fn cell(&self, budget: &str, cell: &str) -> String {
        format!("{}budget/{budget}/{cell}/", self.prefix)
    }

    /// Every budget key.
    pub fn budgets(&self) -> String {
        format!("{}budget/", self.prefix)
    }

    /// The guard of a budget cell.
    pub fn guard(&self, budget: &str, cell: &str) -> String {
        format!("{}guard", self.cell(budget, cell))
    }

    /// One token.
    pub fn token(&self, budget: &str, cell: &str, holder: &str, decision: &str) -> String {
        format!("{}token/{holder}/{decision}", self.cell(budget, cell))
    }

    /// The fleet breaker (present while tripped).
    pub fn breaker(&self) -> String {
        format!("{}breaker", self.prefix)
    }

    /// The last reset of the fleet breaker.
    pub fn breaker_reset(&self) -> String {
        format!("{}breaker-reset", self.prefix)
    }

    /// A live daemon.
    pub fn member(&self, identity: &str) -> String {
        format!("{}member/{identity}", self.prefix)
    }

    /// Every live daemon.
    pub fn members(&self) -> String {
        format!("{}member/", self.prefix)
    }

    /// An election.
    pub fn election(&self, name: &str) -> String {
        format!("{}election/{name}", self.prefix)
    }

    /// Everything of the shard group `group` (its members and its claims).
    pub fn shard(&self, group: &str) -> String {
        format!("{}shard/{group}/", self.prefix)
    }

    /// Every live aggregator of the shard group `group`.
    pub fn shard_members(&self, group: &str) -> String {
        format!("{}members/", self.shard(group))
    }

    /// One aggregator of the shard group `group`.
    pub fn shard_member(&self, group: &str, identity: &str) -> String {
        format!("{}{identity}", self.shard_members(group))
    }

    /// Every switch claim of the shard group `group`.
    pub fn shard_owners(&self, group: &str) -> String {
        format!("{}owner/", self.shard(group))
    }

    /// The claim on `switch` in the shard group `group`: its value is the
    /// owner's identity.
    pub fn shard_owner(&self, group: &str, switch: &str) -> String {
        format!("{}{switch}", self.shard_owners(group))
    }

    /// The actions in effect on `switch` recorded for its next owner in the
    /// shard group `group` (outside the group's own keys, which its
    /// aggregators watch).
    pub fn handovers(&self, group: &str, switch: &str) -> String {
        format!("{}handover/{group}/{switch}/", self.prefix)
    }

    /// The record of an action in effect on `switch`, by its `action` key
    /// (kind and target).
    pub fn handover(&self, group: &str, switch: &str, action: &str) -> String {
        format!("{}{action}", self.handovers(group, switch))
    }

    /// Splits a shard key of `group` into what it is about: `Member(identity)`
    /// or `Owner(switch)`.
    pub fn parse_shard<'a>(&self, group: &str, key: &'a str) -> Option<ShardKey<'a>> {
        let rest = key.strip_prefix(self.prefix.as_str())?.strip_prefix("shard/")?.strip_prefix(group)?;
        let rest = rest.strip_prefix('/')?;
        if let Some(identity) = rest.strip_prefix("members/") {
            return (!identity.is_empty()).then_some(ShardKey::Member(identity));
        }
        let switch = rest.strip_prefix("owner/")?;
        (!switch.is_empty()).then_some(ShardKey::Owner(switch))
    }

    /// Splits a token key into (budget, cell, holder, decision).
    pub fn parse_token<'a>(&self, key: &'a str) -> Option<(&'a str, &'a str, &'a str, &'a str)> {
        let rest = key.strip_prefix(self.prefix.as_str())?.strip_prefix("budget/")?;
        let mut parts = rest.splitn(5, '/');
        let budget = parts.next()?;
        let cell = parts.next()?;
        (parts.next()? == "token").then_some(())?;
        let holder = parts.next()?;
        let decision = parts.next()?;
        Some((budget, cell, holder, decision))
    }
}

/// A key of a shard group, parsed by [`Keys::parse_shard`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardKey<'a> {
    /// `members/<identity>`.
    Member(&'a str),
    /// `owner/<switch>`.
    Owner(&'a str),
}

/// What a token says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenValue {
    /// The daemon holding it.
    pub holder: String,
    /// The decision it was taken for.
    pub decision: String,
    /// The action kind.
    pub kind: String,
    /// When it was taken (wall clock, ms since the epoch).
    pub taken_at_ms: u64,
    /// When it stops counting, for windowed budgets (wall clock, ms).
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
}

impl TokenValue {
    /// Whether it still counts at `now_ms`.
    pub fn live(&self, now_ms: u64) -> bool {
        self.expires_at_ms.is_none_or(|e| e > now_ms)
    }
}

/// The fleet breaker's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerValue {
    /// Who tripped (or reset) it.
    pub by: String,
    /// Why.
    pub reason: String,
    /// When (wall clock, ms since the epoch).
    pub at_ms: u64,
}

/// A live daemon's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberValue {
    /// Its identity.
    pub identity: String,
    /// Since when its session lives (wall clock, ms).
    pub since_ms: u64,
    /// Its process id.
    pub pid: u32,
}

/// The wall clock in ms since the epoch. Windowed tokens are stamped with
/// it, so daemons compare them across hosts: keep clocks in sync (NTP), as
/// etcd itself needs.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_keys_round_trip() {
        let k = Keys::new("/r/f");
        let key = k.token("cordon", "all", "n17", "d00000042");
        assert_eq!(key, "/r/f/budget/cordon/all/token/n17/d00000042");
        assert_eq!(k.parse_token(&key), Some(("cordon", "all", "n17", "d00000042")));
        assert_eq!(k.parse_token(&k.guard("cordon", "all")), None);
        assert!(key.starts_with(&k.cell("cordon", "all")));
    }

    #[test]
    fn shard_keys_round_trip() {
        let k = Keys::new("/r/f/");
        assert_eq!(k.shard_member("pod-a", "agg-1"), "/r/f/shard/pod-a/members/agg-1");
        assert_eq!(k.shard_owner("pod-a", "leaf-3"), "/r/f/shard/pod-a/owner/leaf-3");
        assert_eq!(k.parse_shard("pod-a", &k.shard_member("pod-a", "agg-1")), Some(ShardKey::Member("agg-1")));
        assert_eq!(k.parse_shard("pod-a", &k.shard_owner("pod-a", "leaf-3")), Some(ShardKey::Owner("leaf-3")));
        // Another group whose name starts with this one's is not this group's.
        assert_eq!(k.parse_shard("pod-a", &k.shard_owner("pod-ab", "leaf-3")), None);
        assert_eq!(k.parse_shard("pod-a", &k.shard_owners("pod-a")), None);
        assert!(k.shard_owner("pod-a", "leaf-3").starts_with(&k.shard("pod-a")));
    }

    #[test]
    fn a_windowed_token_stops_counting_when_its_window_ends() {
        let t = TokenValue {
            holder: "n1".into(),
            decision: "d1".into(),
            kind: "node.cordon".into(),
            taken_at_ms: 1_000,
            expires_at_ms: Some(2_000),
        };
        assert!(t.live(1_999));
        assert!(!t.live(2_000));
        assert!(TokenValue { expires_at_ms: None, ..t }.live(u64::MAX));
    }
}
