//! The per-queue side of `ecn.lower` (`lowers = "queue"`, the default):
//! lower the ECN marking thresholds of one queue of one port, as SONiC
//! models it, and nothing else.
//!
//! SONiC binds a WRED profile to a queue with `QUEUE|<port>|<queue>`
//! `wred_profile`, and one profile (AZURE_LOSSLESS) usually serves every
//! lossless queue of the switch: lowering it lowers them all. So a
//! lowering of `Ethernet12` queue 3:
//!
//! 1. reads the profile bound to `QUEUE|Ethernet12|3` and all its fields,
//!    and `WRED_PROFILE|ROCEMEND_Ethernet12_3`, the queue's own copy, if it
//!    exists;
//! 2. sends ONE SetRequest: the copy's fields (those of the bound profile,
//!    the green thresholds lowered by [`super::switch::lowered`]'s rules:
//!    never below the floor, max ≥ min), then the queue re-bound to the
//!    copy. The profile comes first, so the binding names an existing
//!    profile however the switch orders a Set's checks;
//! 3. a queue already bound to its copy (a second lowering) gets the copy
//!    lowered again, in place: only the changed fields are sent.
//!
//! The outcome's prior ([`QueuePrior`]) holds the binding and the copy
//! before and after (`null` for a copy that did not exist), so undo sends
//! the reverse in one Set: the copy deleted (or given back its earlier
//! fields when it existed before) and the queue bound to its original
//! profile again. The dispatcher undoes only what [`verify`] still finds as
//! we left it; anything else is someone else's now.
//!
//! Profiles named `ROCEMEND_<port>_<queue>` are rocemend's: one per queue,
//! created and deleted by this actuator. A copy that exists without being
//! bound to its queue (left by an undo that was skipped, say) is
//! overwritten with a fresh copy, and given back as it was on undo.

use engine::{Action, ActuatorError, Prepared, Prior, Verification};
use gnmi_proto::sonic as sonic_schema;
use serde::{Deserialize, Serialize};

use super::switch::{self, Lowering};
use crate::sonic::{self, Change, Entry, Fields, Sonic};
use crate::target::{integer, label};

/// The CONFIG_DB table of queues (`<port>|<queue>` → `wred_profile`).
pub const TABLE: &str = sonic_schema::QUEUE;

/// The field of `QUEUE` that names the queue's WRED profile.
pub const BINDING: &str = sonic_schema::WRED_PROFILE_FIELD;

/// The start of every profile this actuator creates.
pub const COPY_PREFIX: &str = "ROCEMEND_";

/// The `scope` a queue prior carries.
const SCOPE: &str = "queue";

/// The name of `port`'s `queue`'s own copy: `ROCEMEND_Ethernet12_3`.
pub fn copy_name(port: &str, queue: u64) -> String {
    format!("{COPY_PREFIX}{port}_{queue}")
}

/// A per-queue lowering: the values, and where.
#[derive(Debug, Clone)]
pub struct QueueLowering<'a> {
    /// Factor, floor, probability, ECN mode; its `profile` is the copy.
    pub lowering: Lowering<'a>,
    /// The port.
    pub port: &'a str,
    /// The queue, 0–7.
    pub queue: u64,
    /// `<port>|<queue>`, the `QUEUE` key.
    pub key: String,
}

impl QueueLowering<'_> {
    /// The switch.
    pub fn switch(&self) -> &str {
        self.lowering.switch
    }

    /// The queue's own copy of its profile.
    pub fn copy(&self) -> &str {
        &self.lowering.profile
    }
}

/// Reads a queue-scope `ecn.lower` action: target `switch`, `port` and
/// `queue` (`default_queue` when the target has none), checked as SONiC's
/// YANG would check the keys and the copy's name, before anything is read.
pub fn lowering<'a>(
    action: &'a Action,
    default_queue: u64,
    factor: f64,
    floor: u64,
) -> Result<QueueLowering<'a>, ActuatorError> {
    if action.params.contains_key("profile") {
        return Err(ActuatorError::Invalid(format!(
            "{} with lowers = \"queue\" lowers a copy of whatever profile the queue is bound to; the parameter \
             profile (a profile to lower for every queue bound to it) needs an ecn actuator with lowers = \"profile\"",
            action.kind
        )));
    }
    let switch = label(action, "switch")?;
    let port = label(action, "port")?;
    sonic::check_name("port", port)?;
    let queue = match action.target.get("queue") {
        Some(text) => integer("queue", text, 0, sonic_schema::QUEUES - 1, "")?,
        None => default_queue,
    };
    let key = sonic_schema::queue_key(port, queue);
    sonic::check_key(TABLE, &key)?;
    let copy = copy_name(port, queue);
    sonic_schema::check_profile_name("profile", &copy).map_err(|e| {
        ActuatorError::Invalid(format!("port {port:?} cannot have its own WRED profile: the copy's name: {e}"))
    })?;
    let lowering = switch::values(action, switch, copy, factor, floor)?;
    Ok(QueueLowering { lowering, port, queue, key })
}

/// One side (before or after) of a per-queue lowering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueState {
    /// The profile the queue is bound to (`QUEUE|<port>|<queue>` `wred_profile`).
    pub wred_profile: String,
    /// Every field of the queue's copy; `None`: there is no copy.
    pub copy: Option<Entry>,
}

/// The prior of a per-queue lowering: what undo needs to put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuePrior {
    /// Always `"queue"`: tells this prior from a profile-scope one.
    pub scope: String,
    /// The `QUEUE` key, `Ethernet12|3`.
    pub queue: String,
    /// The queue's copy, `ROCEMEND_Ethernet12_3`.
    pub profile: String,
    /// Whether the copy existed before (a second lowering, or a copy left
    /// behind): undo then gives it back its fields instead of deleting it.
    pub copy_existed: bool,
    /// The binding and the copy before.
    pub before: QueueState,
    /// The binding and the copy after.
    pub after: QueueState,
    /// The port as the action named it, when that was an alias of the port `queue` names
    /// (`etp2` for `Ethernet4`): the action's later verify and undo carry it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given_port: Option<String>,
}

impl QueuePrior {
    /// What preparing the lowering found: it holds already when the queue
    /// is bound to a copy that holds the lowered values.
    pub fn prepared(&self) -> Result<Prepared, ActuatorError> {
        Prepared::from_record(self, &self.before, &self.after)
    }

    /// From an outcome's `prior`; `None` when it is not a queue prior (a
    /// profile-scope one, `{"before": fields, "after": fields}`, which has
    /// no `scope`).
    pub fn from_prior(prior: Option<&Prior>) -> Result<Option<QueuePrior>, ActuatorError> {
        #[derive(Deserialize)]
        struct Scoped {
            scope: Option<String>,
        }
        let Some(prior) = prior.filter(|p| p.read::<Scoped>().is_ok_and(|s| s.scope.as_deref() == Some(SCOPE))) else {
            return Ok(None);
        };
        let p: QueuePrior = prior.read()?;
        if p.copy_existed != p.before.copy.is_some() || p.after.copy.is_none() {
            return Err(ActuatorError::Invalid(format!(
                "the applied outcome's queue prior for {} contradicts itself (copy_existed {}, copy before {}, after {})",
                p.queue,
                p.copy_existed,
                p.before.copy.is_some(),
                p.after.copy.is_some()
            )));
        }
        Ok(Some(p))
    }

    /// Whether this prior is for `action`'s queue: its `port`, and its
    /// `queue` when it names one (one without takes the prior's, whatever
    /// the actuator's `queue` setting says now), and the copy of that queue.
    pub fn check_for(&self, action: &Action) -> Result<(), ActuatorError> {
        let port = label(action, "port")?;
        let queue = action.target.get("queue").map(|q| q.trim().parse::<u64>().ok());
        let matches = match sonic_schema::parse_queue_key(&self.queue) {
            Some((p, range)) => {
                (p == port || self.given_port.as_deref() == Some(port))
                    && range.start() == range.end()
                    && queue.is_none_or(|q| q == Some(*range.start()))
                    && self.profile == copy_name(p, *range.start())
            }
            None => false,
        };
        if matches {
            Ok(())
        } else {
            Err(ActuatorError::Invalid(format!(
                "the prior is for QUEUE|{} ({}), not for the action's target {}",
                self.queue, self.profile, action.target
            )))
        }
    }

    /// The Set that makes the switch hold `after`.
    pub fn apply_changes(&self) -> Vec<Change> {
        changes(&self.queue, &self.profile, &self.before, &self.after)
    }

    /// The Set that makes the switch hold `before` again.
    pub fn undo_changes(&self) -> Vec<Change> {
        changes(&self.queue, &self.profile, &self.after, &self.before)
    }

    /// What applying it did, for people.
    pub fn applied_summary(&self, switch: &str) -> String {
        let thresholds = self.after.copy.as_ref().map(show_thresholds).unwrap_or_default();
        if self.before.wred_profile == self.profile {
            format!("lowered {} on {switch} (bound to {TABLE}|{} alone) to {thresholds}", self.profile, self.queue)
        } else {
            format!(
                "bound {TABLE}|{} on {switch} to {}, a copy of {} lowered to {thresholds}",
                self.queue, self.profile, self.before.wred_profile
            )
        }
    }

    /// What undoing it did, for people.
    pub fn undone_summary(&self, switch: &str) -> String {
        let copy = match &self.before.copy {
            None => format!("{} deleted", self.profile),
            Some(entry) => format!("{} back to {}", self.profile, show_thresholds(entry)),
        };
        format!("restored {TABLE}|{} on {switch} to {}; {copy}", self.queue, self.before.wred_profile)
    }
}

fn show_thresholds(entry: &Entry) -> String {
    let fields: Fields = entry
        .iter()
        .filter(|(k, _)| k.starts_with("green_") || *k == "ecn")
        .map(|(k, v)| (k.clone(), Some(v.clone())))
        .collect();
    sonic::show(&fields)
}

/// The Set from `from` to `to`: the copy first (its changed fields, the
/// fields `to` lacks deleted, or the whole entry deleted), then the binding.
fn changes(queue: &str, copy: &str, from: &QueueState, to: &QueueState) -> Vec<Change> {
    let mut out = Vec::with_capacity(2);
    match (&from.copy, &to.copy) {
        (Some(_), None) => out.push(Change::Delete { table: switch::TABLE.into(), key: copy.into() }),
        (None, None) => {}
        // A new copy is written whole: sonic-gnmi's config updater refuses fields of an entry
        // that is not there.
        (None, Some(now)) => {
            out.push(Change::Create { table: switch::TABLE.into(), key: copy.into(), fields: now.clone() })
        }
        (was, Some(now)) => {
            let empty = Entry::new();
            let was = was.as_ref().unwrap_or(&empty);
            let mut fields: Fields = now
                .iter()
                .filter(|(k, v)| was.get(*k) != Some(*v))
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect();
            fields.extend(was.keys().filter(|k| !now.contains_key(*k)).map(|k| (k.clone(), None)));
            if !fields.is_empty() {
                out.push(Change::Fields { table: switch::TABLE.into(), key: copy.into(), fields });
            }
        }
    }
    if from.wred_profile != to.wred_profile {
        let fields = [(BINDING.to_string(), Some(to.wred_profile.clone()))].into();
        out.push(Change::Fields { table: TABLE.into(), key: queue.into(), fields });
    }
    out
}

/// Reads the queue's binding; refused when the queue has none, saying whether the queue's
/// entry is missing (or the whole `QUEUE` table: a switch whose QoS was never configured) or
/// only its `wred_profile` field.
async fn binding(sonic: &Sonic, l: &QueueLowering<'_>) -> Result<String, ActuatorError> {
    let switch = l.switch();
    let Some(entry) = sonic.get_entry(switch, TABLE, &l.key).await? else {
        let reason = if sonic.table_keys(switch, TABLE).await?.is_empty() {
            format!(
                "{switch} has no {TABLE} table in CONFIG_DB: no queue has a WRED profile bound (QoS not \
                 configured), so there are no thresholds to lower"
            )
        } else {
            format!(
                "{TABLE}|{} does not exist on {switch}: the queue has no WRED profile (or is bound through a range \
                 key such as {}|3-4, which rocemend does not split), so there are no thresholds to lower",
                l.key, l.port
            )
        };
        return Err(ActuatorError::Invalid(reason));
    };
    entry.get(BINDING).cloned().ok_or_else(|| {
        ActuatorError::Invalid(format!(
            "{TABLE}|{} on {switch} has no {BINDING}: the queue has no WRED profile, so there are no thresholds \
             to lower",
            l.key
        ))
    })
}

/// Reads the queue's binding, the profile bound to it and the queue's copy,
/// and computes the prior: the state before and the state the Set makes.
pub async fn plan(sonic: &Sonic, l: &QueueLowering<'_>) -> Result<QueuePrior, ActuatorError> {
    sonic.address(l.switch())?;
    let bound = binding(sonic, l).await?;
    let copy = sonic.get_entry(l.switch(), switch::TABLE, l.copy()).await?;
    let source = if bound == l.copy() {
        copy.clone()
    } else {
        switch::check_profile(BINDING, &bound)?;
        sonic.get_entry(l.switch(), switch::TABLE, &bound).await?
    };
    let source = source.ok_or_else(|| {
        ActuatorError::Invalid(format!(
            "{TABLE}|{} on {} is bound to {bound:?}, which is not in {}",
            l.key,
            l.switch(),
            switch::TABLE
        ))
    })?;
    let fields: Fields = source.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
    let lowered = switch::lowered(&Lowering { profile: bound.clone(), ..l.lowering.clone() }, &fields)?;
    let mut after = source;
    for (field, value) in lowered {
        if let Some(value) = value {
            after.insert(field, value);
        }
    }
    Ok(QueuePrior {
        scope: SCOPE.into(),
        queue: l.key.clone(),
        profile: l.copy().to_string(),
        copy_existed: copy.is_some(),
        before: QueueState { wred_profile: bound, copy },
        after: QueueState { wred_profile: l.copy().to_string(), copy: Some(after) },
        given_port: None,
    })
}

/// Reads the binding and the copy back: in effect when they hold `after`,
/// not in effect when they hold `before` (the copy absent again when it was
/// absent), someone else's otherwise.
pub async fn verify(sonic: &Sonic, switch: &str, prior: &QueuePrior) -> Result<Verification, ActuatorError> {
    let bound = sonic.get(switch, TABLE, &prior.queue, &[BINDING]).await?.remove(BINDING).flatten();
    let copy = sonic.get_entry(switch, switch::TABLE, &prior.profile).await?;
    let holds = |state: &QueueState| {
        bound.as_deref() == Some(state.wred_profile.as_str())
            && match (&state.copy, &copy) {
                (None, None) => true,
                (Some(want), Some(now)) => want.iter().all(|(k, v)| now.get(k) == Some(v)),
                _ => false,
            }
    };
    Ok(if holds(&prior.after) {
        Verification::InEffect
    } else if holds(&prior.before) {
        Verification::NotInEffect
    } else {
        let copy = match &copy {
            Some(entry) => format!("{} holds {}", prior.profile, show_thresholds(entry)),
            None => format!("{} does not exist", prior.profile),
        };
        Verification::Changed(format!(
            "{TABLE}|{} on {switch} is bound to {}; {copy}",
            prior.queue,
            bound.as_deref().unwrap_or("(nothing)")
        ))
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use engine::Labels;

    use super::*;

    const FLOOR: u64 = 262144;

    fn entry(pairs: &[(&str, &str)]) -> Entry {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()
    }

    fn action(target: &[(&str, &str)], params: &[(&str, &str)]) -> Action {
        Action {
            kind: "ecn.lower".into(),
            target: Labels::from_pairs(target.iter().copied()),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    fn azure() -> Entry {
        entry(&[
            ("green_min_threshold", "1048576"),
            ("green_max_threshold", "2097152"),
            ("green_drop_probability", "5"),
            ("wred_green_enable", "true"),
            ("ecn", "ecn_all"),
        ])
    }

    fn with(mut e: Entry, pairs: &[(&str, &str)]) -> Entry {
        e.extend(entry(pairs));
        e
    }

    /// The prior `plan` computes, without a switch: `bound` is the binding
    /// read, `source` that profile's fields, `copy` the copy's.
    fn prior(l: &QueueLowering<'_>, bound: &str, source: Entry, copy: Option<Entry>) -> QueuePrior {
        let fields: Fields = source.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
        let lowered = switch::lowered(&l.lowering, &fields).unwrap();
        let mut after = source;
        after.extend(lowered.into_iter().filter_map(|(k, v)| Some((k, v?))));
        QueuePrior {
            scope: SCOPE.into(),
            queue: l.key.clone(),
            profile: l.copy().into(),
            copy_existed: copy.is_some(),
            before: QueueState { wred_profile: bound.into(), copy },
            after: QueueState { wred_profile: l.copy().into(), copy: Some(after) },
            given_port: None,
        }
    }

    #[test]
    fn a_prior_made_for_an_alias_serves_the_action_that_named_it_and_no_other_port() {
        let a = action(&[("switch", "leaf-rail1"), ("port", "Ethernet4"), ("queue", "3")], &[]);
        let l = lowering(&a, 3, 0.5, FLOOR).unwrap();
        let mut p = prior(&l, "AZURE_LOSSLESS", azure(), None);
        let by_alias = action(&[("switch", "leaf-rail1"), ("port", "etp2"), ("queue", "3")], &[]);
        assert!(p.check_for(&by_alias).is_err(), "an alias the prior does not know");
        p.given_port = Some("etp2".into());
        assert!(p.check_for(&by_alias).is_ok() && p.check_for(&a).is_ok());
        let other = action(&[("switch", "leaf-rail1"), ("port", "etp3"), ("queue", "3")], &[]);
        assert!(p.check_for(&other).is_err());
        // Recorded before this field existed: read as no alias.
        let mut old = serde_json::to_value(&p).unwrap();
        old.as_object_mut().unwrap().remove("given_port");
        assert_eq!(serde_json::from_value::<QueuePrior>(old).unwrap().given_port, None);
    }

    #[test]
    fn the_queue_defaults_to_the_configured_one_and_names_its_copy() {
        let a = action(&[("switch", "leaf-rail1"), ("port", "Ethernet12")], &[]);
        let l = lowering(&a, 3, 0.5, FLOOR).unwrap();
        assert_eq!((l.key.as_str(), l.copy(), l.queue), ("Ethernet12|3", "ROCEMEND_Ethernet12_3", 3));
        let a = action(&[("switch", "leaf-rail1"), ("port", "Ethernet12"), ("queue", "4")], &[]);
        assert_eq!(lowering(&a, 3, 0.5, FLOOR).unwrap().copy(), "ROCEMEND_Ethernet12_4");
    }

    #[test]
    fn the_first_lowering_creates_a_copy_then_binds_it_in_one_set() {
        let a = action(&[("switch", "leaf-rail1"), ("port", "Ethernet12"), ("queue", "3")], &[]);
        let l = lowering(&a, 3, 0.5, FLOOR).unwrap();
        let p = prior(&l, "AZURE_LOSSLESS", azure(), None);
        let copy = with(azure(), &[("green_min_threshold", "524288"), ("green_max_threshold", "1048576")]);
        assert_eq!(p.after.copy.as_ref(), Some(&copy), "every field of the bound profile, the greens halved");
        let changes = p.apply_changes();
        assert_eq!(changes.len(), 2);
        let Change::Create { table, key, fields } = &changes[0] else { panic!("{changes:?}") };
        assert_eq!((table.as_str(), key.as_str(), fields.len()), ("WRED_PROFILE", "ROCEMEND_Ethernet12_3", 5));
        assert_eq!(fields["green_min_threshold"], "524288");
        assert_eq!(fields["ecn"], "ecn_all", "the copy keeps what it does not lower");
        assert_eq!(
            changes[1],
            Change::Fields {
                table: "QUEUE".into(),
                key: "Ethernet12|3".into(),
                fields: [("wred_profile".to_string(), Some("ROCEMEND_Ethernet12_3".to_string()))].into()
            },
            "bound after the copy exists"
        );
        // The prior carries the original binding and that there was no copy.
        let recorded = Prior::of(&p).unwrap();
        let json = recorded.as_json();
        assert_eq!(json["before"]["wred_profile"], "AZURE_LOSSLESS");
        assert_eq!((json["copy_existed"].as_bool(), json["before"]["copy"].is_null()), (Some(false), true));
        assert_eq!(QueuePrior::from_prior(Some(&recorded)).unwrap(), Some(p.clone()));
        // Undo: the copy deleted, the original bound again, in one Set.
        assert_eq!(
            p.undo_changes(),
            [
                Change::Delete { table: "WRED_PROFILE".into(), key: "ROCEMEND_Ethernet12_3".into() },
                Change::Fields {
                    table: "QUEUE".into(),
                    key: "Ethernet12|3".into(),
                    fields: [("wred_profile".to_string(), Some("AZURE_LOSSLESS".to_string()))].into()
                },
            ]
        );
    }

    #[test]
    fn a_second_lowering_lowers_the_bound_copy_in_place_never_below_the_floor() {
        let a = action(&[("switch", "leaf-rail1"), ("port", "Ethernet12")], &[]);
        let l = lowering(&a, 3, 0.5, FLOOR).unwrap();
        let copy = with(azure(), &[("green_min_threshold", "524288"), ("green_max_threshold", "1048576")]);
        let p = prior(&l, "ROCEMEND_Ethernet12_3", copy.clone(), Some(copy.clone()));
        assert!(p.copy_existed);
        let changes = p.apply_changes();
        let fields: Fields = [
            ("green_max_threshold".to_string(), Some("524288".to_string())),
            ("green_min_threshold".to_string(), Some("262144".to_string())),
        ]
        .into();
        assert_eq!(
            changes,
            [Change::Fields { table: "WRED_PROFILE".into(), key: "ROCEMEND_Ethernet12_3".into(), fields }],
            "only the changed fields; the binding is already the copy"
        );
        // Undo gives the copy its earlier thresholds and keeps it bound.
        let Change::Fields { fields, .. } = &p.undo_changes()[0] else { panic!() };
        assert_eq!(fields["green_min_threshold"].as_deref(), Some("524288"));
        assert_eq!(p.undo_changes().len(), 1);
        // A third: min is at the floor, max halves to it; then nothing is left to lower.
        let third = with(copy, &[("green_min_threshold", "262144"), ("green_max_threshold", "524288")]);
        let p = prior(&l, "ROCEMEND_Ethernet12_3", third.clone(), Some(third.clone()));
        assert_eq!(p.after.copy.as_ref().unwrap()["green_max_threshold"], "262144");
        let floor = with(third, &[("green_max_threshold", "262144")]);
        let fields: Fields = floor.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
        let err = switch::lowered(&l.lowering, &fields).unwrap_err();
        assert!(err.to_string().contains("already at the floor"), "{err}");
    }

    #[test]
    fn a_copy_left_behind_unbound_is_replaced_and_given_back_on_undo() {
        let a = action(&[("switch", "leaf-rail1"), ("port", "Ethernet12")], &[]);
        let l = lowering(&a, 3, 0.5, FLOOR).unwrap();
        let stale = entry(&[("green_min_threshold", "300000"), ("green_max_threshold", "400000"), ("x_old", "1")]);
        let p = prior(&l, "AZURE_LOSSLESS", azure(), Some(stale.clone()));
        let Change::Fields { fields, .. } = &p.apply_changes()[0] else { panic!() };
        assert_eq!(fields["x_old"], None, "a field the source lacks is deleted from the copy");
        assert_eq!(fields["green_min_threshold"].as_deref(), Some("524288"));
        let undo = p.undo_changes();
        let Change::Fields { fields, .. } = &undo[0] else { panic!("{undo:?}") };
        assert_eq!(fields["x_old"].as_deref(), Some("1"));
        assert_eq!(fields["ecn"], None, "the copy's fields from before, exactly");
        assert!(matches!(&undo[1], Change::Fields { table, .. } if table == "QUEUE"));
    }

    #[test]
    fn bad_targets_are_refused_before_anything_is_read() {
        for (target, params, expected) in [
            (vec![("switch", "s")], vec![], "has no label \"port\""),
            (vec![("switch", "s"), ("port", "Ethernet12"), ("queue", "8")], vec![], "queue 8 is out of range 0..7"),
            (
                vec![("switch", "s"), ("port", "Ethernet12"), ("queue", "3-4")],
                vec![],
                "queue \"3-4\" is not an integer",
            ),
            (vec![("switch", "s"), ("port", "Eth|12")], vec![], "port \"Eth|12\" is refused"),
            (vec![("switch", "s"), ("port", "Ethernet1.2")], vec![], "cannot have its own WRED profile"),
            (vec![("switch", "s"), ("port", "Ethernet123456789012345")], vec![], "cannot have its own WRED profile"),
            (vec![("switch", "s"), ("port", "Ethernet12")], vec![("profile", "X")], "lowers = \"profile\""),
            (vec![("switch", "s"), ("port", "Ethernet12")], vec![("factor", "2")], "factor \"2\""),
        ] {
            let err = lowering(&action(&target, &params), 3, 0.5, FLOOR).unwrap_err();
            assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains(expected)), "{target:?}: {err:?}");
        }
    }

    #[test]
    fn a_profile_scope_prior_is_not_read_as_a_queue_prior_and_a_broken_one_is_refused() {
        let legacy = serde_json::json!({ "before": { "green_min_threshold": "1" }, "after": {} });
        assert_eq!(QueuePrior::from_prior(Some(&Prior::from_json(legacy))).unwrap(), None);
        assert_eq!(QueuePrior::from_prior(None).unwrap(), None);
        let a = action(&[("switch", "leaf-rail1"), ("port", "Ethernet12")], &[]);
        let l = lowering(&a, 3, 0.5, FLOOR).unwrap();
        let mut json = Prior::of(&prior(&l, "AZURE_LOSSLESS", azure(), None)).unwrap().as_json().clone();
        json["copy_existed"] = serde_json::Value::Bool(true);
        let err = QueuePrior::from_prior(Some(&Prior::from_json(json))).unwrap_err();
        assert!(err.to_string().contains("contradicts itself"));
        let p = prior(&l, "AZURE_LOSSLESS", azure(), None);
        assert_eq!(p.check_for(&a), Ok(()));
        let with_queue = action(&[("switch", "leaf-rail1"), ("port", "Ethernet12"), ("queue", "3")], &[]);
        assert_eq!(p.check_for(&with_queue), Ok(()), "the same queue, named");
        for target in [
            vec![("switch", "leaf-rail1"), ("port", "Ethernet16")],
            vec![("switch", "leaf-rail1"), ("port", "Ethernet12"), ("queue", "4")],
        ] {
            let err = p.check_for(&action(&target, &[])).unwrap_err();
            assert!(err.to_string().contains("the prior is for QUEUE|Ethernet12|3"), "{err}");
        }
    }
}
