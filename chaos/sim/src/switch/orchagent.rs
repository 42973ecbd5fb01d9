//! What orchagent (and the daemons beside it) make of a CONFIG_DB change, applied to the
//! model's ASIC as each write lands — before the config updater's pause ends, as on a switch,
//! where orchagent reacts within milliseconds:
//!
//! - `PORT|<name>` `admin_status` (portsorch): the port up or down; APPL_DB and STATE_DB
//!   `PORT_TABLE` follow;
//! - `QUEUE|<name>|<q>`, `WRED_PROFILE|<name>` (qosorch): the WRED profile bound to each queue,
//!   so the fabric's physics marks at its `green_min_threshold`;
//! - `PFC_WD|<key>` (pfcwdorch, [`super::watchdog`]): a `del` notification is a DEL, any
//!   other a SET of every field the entry has when it is read (swss-common's
//!   `SubscriberStateTable`); so the config updater's in-place rewrite (`HSET`, `HDEL`) is two
//!   SETs, and only a deletion restarts the port's watchdog;
//! - `FLEX_COUNTER_TABLE|<group>` (flexcounterorch, `counterpoll`): the group's poll interval
//!   and status;
//! - `SWITCH_HASH|GLOBAL` (switchorch): the ECMP hash's fields, each checked against the
//!   switch's capability (a field it cannot hash on refuses the whole write); the removal of a
//!   field or of the entry is refused, as switchorch logs and ignores it.

use std::time::Duration;

use sonic::gnmi_front::WriteOp;
use sonic::hash;

use super::model::State;
use super::watchdog::{self, Task};

/// The Redis key a write is about.
fn key_of(op: &WriteOp) -> &str {
    match op {
        WriteOp::HSet { key, .. } | WriteOp::HDel { key, .. } | WriteOp::Del { key } => key,
    }
}

/// Applies CONFIG_DB writes `ops` (already in the store) in order.
pub fn config_written(state: &mut State, ops: &[WriteOp]) {
    let mut qos = false;
    for op in ops {
        let key = key_of(op);
        let Some((table, rest)) = key.split_once('|') else { continue };
        match table {
            "PFC_WD" => {
                let task = match state.store.get("CONFIG_DB", key) {
                    Some(fields) if !matches!(op, WriteOp::Del { .. }) => Task::Set(fields),
                    _ => Task::Del,
                };
                watchdog::task(state, rest, task);
            }
            "PORT" => port_written(state, rest),
            "QUEUE" | "WRED_PROFILE" => qos = true,
            "FLEX_COUNTER_TABLE" => flex_written(state, rest),
            hash::SWITCH_HASH if rest == hash::GLOBAL => switch_hash_written(state, op),
            _ => {}
        }
    }
    if qos {
        apply_wred(state);
    }
}

/// portsorch: the port's `admin_status`.
fn port_written(state: &mut State, name: &str) {
    let Some(index) = state.index(name) else { return };
    let entry = state.store.get("CONFIG_DB", &format!("PORT|{name}")).unwrap_or_default();
    // A port without the field is down (SONiC's default).
    let up = entry.get("admin_status").map(String::as_str) == Some("up");
    if state.ports[index].admin_up != up {
        state.ports[index].admin_up = up;
        state.ports[index].update_oper();
        state.publish_port_state(index);
    }
}

/// qosorch: each queue's WRED profile threshold, from `QUEUE` and `WRED_PROFILE`.
pub fn apply_wred(state: &mut State) {
    let config = state.config();
    for port in &mut state.ports {
        for (q, queue) in port.queues.iter_mut().enumerate() {
            queue.wred_green_min = super::config::queue_green_min(&config, &port.name, q);
        }
    }
}

/// switchorch: the ECMP hash's fields, if the ASIC can hash on every one.
fn switch_hash_written(state: &mut State, op: &WriteOp) {
    if !matches!(op, WriteOp::HSet { .. }) {
        // "Parameter removal" and "Configuration removal" are errors to switchorch.
        tracing::warn!(message = "switchorch: removing a switch hash field or entry is not supported; ignored");
        state.ecmp_hash.refused += 1;
        return;
    }
    let key = format!("{}|{}", hash::SWITCH_HASH, hash::GLOBAL);
    let entry = state.store.get("CONFIG_DB", &key).unwrap_or_default();
    let Some(list) = entry.get(hash::ECMP_HASH_FIELD) else { return };
    let fields = match hash::parse_fields(list) {
        Ok(fields) if !fields.is_empty() && fields.iter().all(|f| state.profile.hash_capable.contains(f)) => fields,
        _ => {
            tracing::warn!(message = "switchorch: ecmp_hash names a field this switch cannot hash on; ignored", list);
            state.ecmp_hash.refused += 1;
            return;
        }
    };
    state.ecmp_hash.fields = fields;
}

/// flexcounterorch: a group's poll interval and status.
fn flex_written(state: &mut State, group: &str) {
    let entry = state.store.get("CONFIG_DB", &format!("FLEX_COUNTER_TABLE|{group}")).unwrap_or_default();
    if entry.get("FLEX_COUNTER_STATUS").map(String::as_str) == Some("disable") {
        state.flex.disabled.insert(group.to_string());
    } else {
        state.flex.disabled.remove(group);
    }
    let Some(ms) = entry.get("POLL_INTERVAL").and_then(|v| v.trim().parse::<u64>().ok()).filter(|ms| *ms > 0) else {
        return;
    };
    let every = Duration::from_millis(ms);
    match group {
        "PORT" => state.flex.polls.port = every,
        "QUEUE" => state.flex.polls.queue = every,
        "WRED_ECN_QUEUE" => state.flex.wred = every,
        "QUEUE_WATERMARK" => state.flex.polls.watermark = every,
        _ => {}
    }
}
