//! The fleet's state in etcd, replayed from the watch log: which tokens
//! existed at every revision, who held them, when one went, who had a
//! session, and the fleet breaker.
//!
//! The key layout is the one `fleet::keys` writes (read here from etcd,
//! not shared in code: the game checks the coordinator from the outside):
//!
//! | key under the prefix | value |
//! |---|---|
//! | `budget/<budget>/<cell>/token/<holder>/<decision>` | the token (JSON: holder, decision, kind, taken_at_ms, expires_at_ms) |
//! | `budget/<budget>/<cell>/guard` | the decision that last took a token |
//! | `member/<identity>` | a daemon with a live session |
//! | `breaker` | present while the fleet breaker is tripped (JSON: by, reason, at_ms) |

use std::collections::{BTreeMap, BTreeSet};

use engine::Nanos;
use serde::{Deserialize, Serialize};

use super::watch::{Change, Event};

/// The prefix the daemons keep their state under (`fleet::keys`' default).
pub const PREFIX: &str = "/rocemend/fleet/";

/// A token key, split.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct TokenKey {
    /// The budget.
    pub budget: String,
    /// Its cell (`plane=0`).
    pub cell: String,
    /// The daemon holding it.
    pub holder: String,
    /// The decision it was taken for.
    pub decision: String,
}

/// Splits `key` if it is a token's.
pub fn token_key(key: &str) -> Option<TokenKey> {
    let rest = key.strip_prefix(PREFIX)?.strip_prefix("budget/")?;
    let mut parts = rest.splitn(5, '/');
    let (budget, cell) = (parts.next()?, parts.next()?);
    (parts.next()? == "token").then_some(())?;
    let (holder, decision) = (parts.next()?, parts.next()?);
    Some(TokenKey { budget: budget.into(), cell: cell.into(), holder: holder.into(), decision: decision.into() })
}

/// A daemon's session key's identity, if `key` is one.
fn member(key: &str) -> Option<&str> {
    key.strip_prefix(PREFIX)?.strip_prefix("member/")
}

/// What a token says of itself (the part the game reads).
#[derive(Debug, Clone, Deserialize)]
struct TokenValue {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    expires_at_ms: Option<u64>,
}

/// The fleet breaker's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breaker {
    /// Who tripped it.
    pub by: String,
    /// Why.
    pub reason: String,
    /// When, as the tripping daemon wrote it (ms since the epoch).
    pub at_ms: u64,
}

/// One budget cell over the game.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CellHistory {
    /// The most tokens it held at once.
    pub max_concurrent: usize,
    /// When it first held that many (wall clock).
    pub max_at: Option<Nanos>,
    /// Every token it held, with the action kind.
    pub tokens: Vec<(TokenKey, String)>,
    /// Tokens in use after each change: (time, count), for the timeline.
    pub series: Vec<(Nanos, usize)>,
}

/// Every budget cell's history, by (budget, cell), replayed in revision
/// order. A windowed token stops counting when its window ends, as the
/// coordinator counts it.
pub fn cells(events: &[Event]) -> BTreeMap<(String, String), CellHistory> {
    let mut ordered: Vec<&Event> = events.iter().collect();
    ordered.sort_by_key(|e| e.revision);
    let mut live: BTreeMap<(String, String), BTreeMap<TokenKey, Option<u64>>> = BTreeMap::new();
    let mut out: BTreeMap<(String, String), CellHistory> = BTreeMap::new();
    for e in ordered {
        let Some(t) = token_key(&e.key) else { continue };
        let cell = (t.budget.clone(), t.cell.clone());
        let history = out.entry(cell.clone()).or_default();
        let tokens = live.entry(cell).or_default();
        match e.change {
            Change::Put => {
                let value: Option<TokenValue> = serde_json::from_slice(&e.value).ok();
                let kind = value.as_ref().map(|v| v.kind.clone()).unwrap_or_default();
                if !history.tokens.iter().any(|(k, _)| k == &t) {
                    history.tokens.push((t.clone(), kind));
                }
                tokens.insert(t, value.and_then(|v| v.expires_at_ms));
            }
            Change::Delete => {
                tokens.remove(&t);
            }
        }
        let now_ms = (e.at / 1_000_000) as u64;
        let count = tokens.values().filter(|exp| exp.is_none_or(|x| x > now_ms)).count();
        history.series.push((e.at, count));
        if count > history.max_concurrent {
            history.max_concurrent = count;
            history.max_at = Some(e.at);
        }
    }
    out
}

/// The token keys of `holder` present at the end of the log: all of
/// them, or those of one `decision` (one executed action's).
pub fn tokens_of(events: &[Event], holder: &str, decision: Option<&str>) -> Vec<String> {
    present(events)
        .into_iter()
        .filter(|k| token_key(k).is_some_and(|t| t.holder == holder && decision.is_none_or(|d| t.decision == d)))
        .collect()
}

/// The keys present at the end of the log.
fn present(events: &[Event]) -> BTreeSet<String> {
    let mut ordered: Vec<&Event> = events.iter().collect();
    ordered.sort_by_key(|e| e.revision);
    let mut keys = BTreeSet::new();
    for e in ordered {
        match e.change {
            Change::Put => keys.insert(e.key.clone()),
            Change::Delete => keys.remove(&e.key),
        };
    }
    keys
}

/// When `key` was deleted at or after `since`, if it was.
pub fn deleted_after(events: &[Event], key: &str, since: Nanos) -> Option<Nanos> {
    events.iter().filter(|e| e.change == Change::Delete && e.key == key && e.at >= since).map(|e| e.at).min()
}

/// The daemons with a session at the end of the log.
pub fn members(events: &[Event]) -> BTreeSet<String> {
    present(events).iter().filter_map(|k| member(k).map(str::to_string)).collect()
}

/// The daemons that opened a session (wrote their member key under a
/// lease) at or after `since`: after a lost session, a new one.
pub fn sessions_opened_since(events: &[Event], since: Nanos) -> BTreeSet<String> {
    events
        .iter()
        .filter(|e| e.change == Change::Put && e.at >= since)
        .filter_map(|e| member(&e.key).map(str::to_string))
        .collect()
}

/// Daemons with a session after each change: (time, count), for the
/// timeline.
pub fn member_series(events: &[Event]) -> Vec<(Nanos, usize)> {
    let mut ordered: Vec<&Event> = events.iter().collect();
    ordered.sort_by_key(|e| e.revision);
    let mut live = BTreeSet::new();
    let mut out = Vec::new();
    for e in ordered {
        let Some(m) = member(&e.key) else { continue };
        match e.change {
            Change::Put => live.insert(m.to_string()),
            Change::Delete => live.remove(m),
        };
        out.push((e.at, live.len()));
    }
    out
}

/// The first trip of the fleet breaker, with when the game saw it.
pub fn breaker(events: &[Event]) -> Option<(Nanos, Breaker)> {
    let key = format!("{PREFIX}breaker");
    events.iter().find(|e| e.change == Change::Put && e.key == key).map(|e| {
        let value = serde_json::from_slice(&e.value).unwrap_or_else(|error| Breaker {
            by: "unknown".into(),
            reason: format!("unreadable breaker record: {error}"),
            at_ms: 0,
        });
        (e.at, value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(revision: i64, change: Change, key: &str, value: &str) -> Event {
        Event {
            at: revision * 1_000_000,
            revision,
            change,
            key: key.into(),
            value: value.as_bytes().to_vec(),
            lease: 1,
        }
    }

    const A: &str = "/rocemend/fleet/budget/rail/plane=0/token/node-01/d1";
    const B: &str = "/rocemend/fleet/budget/rail/plane=0/token/node-02/d7";

    #[test]
    fn a_cell_counts_its_tokens_in_revision_order() {
        let token = r#"{"holder":"node-01","decision":"d1","kind":"rail.drain","taken_at_ms":1}"#;
        // Arrival order is not revision order: the replay sorts.
        let events = vec![
            ev(3, Change::Delete, A, ""),
            ev(2, Change::Put, A, token),
            ev(4, Change::Put, B, token),
            ev(5, Change::Put, "/rocemend/fleet/budget/rail/plane=0/guard", "d7"),
        ];
        let c = &cells(&events)[&("rail".to_string(), "plane=0".to_string())];
        assert_eq!(c.max_concurrent, 1, "A was gone before B came");
        assert_eq!(c.tokens.len(), 2);
        assert_eq!(c.tokens[0].1, "rail.drain");
        assert_eq!(c.series, vec![(2_000_000, 1), (3_000_000, 0), (4_000_000, 1)]);
        let both = vec![ev(2, Change::Put, A, token), ev(4, Change::Put, B, token)];
        assert_eq!(cells(&both)[&("rail".to_string(), "plane=0".to_string())].max_concurrent, 2);
        assert_eq!(tokens_of(&both, "node-02", Some("d7")), vec![B.to_string()]);
        assert_eq!(tokens_of(&both, "node-02", Some("d1")), Vec::<String>::new());
        assert_eq!(tokens_of(&both, "node-01", None), vec![A.to_string()]);
        assert_eq!(deleted_after(&events, A, 0), Some(3_000_000));
        assert_eq!(deleted_after(&events, A, 4_000_000), None);
    }

    #[test]
    fn an_expired_windowed_token_stops_counting() {
        let old = r#"{"holder":"n","decision":"d","kind":"node.cordon","taken_at_ms":1,"expires_at_ms":3}"#;
        let k1 = "/rocemend/fleet/budget/cordon/all/token/n/d1";
        let k2 = "/rocemend/fleet/budget/cordon/all/token/n/d2";
        let events = vec![
            ev(2, Change::Put, k1, old),
            ev(4, Change::Put, k2, old.replace("\"expires_at_ms\":3", "\"expires_at_ms\":9").as_str()),
        ];
        assert_eq!(cells(&events)[&("cordon".to_string(), "all".to_string())].max_concurrent, 1);
    }

    #[test]
    fn sessions_and_the_breaker_are_read_from_their_keys() {
        let m = |r, k, who: &str| ev(r, k, &format!("/rocemend/fleet/member/{who}"), "{}");
        let events = vec![
            m(1, Change::Put, "a"),
            m(2, Change::Put, "b"),
            m(3, Change::Delete, "a"),
            m(4, Change::Put, "b"),
            ev(5, Change::Put, "/rocemend/fleet/breaker", r#"{"by":"b","reason":"5 limit hits","at_ms":5}"#),
        ];
        assert_eq!(members(&events), BTreeSet::from(["b".to_string()]));
        assert_eq!(sessions_opened_since(&events, 2_000_000).len(), 1);
        assert_eq!(member_series(&events).last(), Some(&(4_000_000, 1)));
        let (at, b) = breaker(&events).unwrap();
        assert_eq!((at, b.by.as_str()), (5_000_000, "b"));
        assert_eq!(token_key("/rocemend/fleet/budget/rail/plane=0/guard"), None);
    }
}
