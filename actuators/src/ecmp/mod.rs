//! The `ecmp` actuator: widens a leaf's ECMP hash (`ecmp.widen_hash`) so the
//! flows of a collective spread over its uplinks.
//!
//! A RoCEv2 NIC puts each queue pair's entropy in the UDP source port (the
//! kernel's flow label of the two QP numbers); a leaf whose `SWITCH_HASH|GLOBAL`
//! `ecmp_hash` leaves that port out hashes every QP of a connection alike, so
//! more QPs change nothing. The action adds, to the list CONFIG_DB holds, the
//! first of these the switch can hash on (STATE_DB `SWITCH_CAPABILITY|switch`
//! `HASH|NATIVE_HASH_FIELD_LIST`) and the list lacks:
//!
//! 1. `L4_SRC_PORT`, the UDP source port;
//! 2. `RDMA_BTH_DEST_QP`, the RoCE destination QP, where the ASIC has it.
//!
//! The whole list is written (`ecmp_hash@`, one gNMI Set as origin
//! `sonic-db`): switchorch applies a list only if the switch can hash on
//! every field, and refuses to remove a field or the entry, so undo writes
//! the earlier list back rather than deleting anything. A list that already
//! has every field the switch offers is held already: nothing is sent.
//!
//! A hash change moves every flow of the leaf, every job's: the kind counts
//! against `max_hash_changes_per_plane` (one leaf of a plane at a time, the
//! first a canary), and the standard playbooks ask a human to approve it.

pub mod config;

pub use config::EcmpConfig;

use async_trait::async_trait;
use engine::{
    Action, ActionKindDecl, Actuator, ActuatorError, Change, LimitClass, Outcome, Prepared, Prior, RequestPlan,
    Verification,
};
use sonic::hash::{self, HashField};

use crate::sonic::{Fields, Sonic};
use crate::target::{label, recorded, unsupported};

/// The kind this actuator carries out.
pub const WIDEN_KIND: &str = "ecmp.widen_hash";

/// The fields that spread a collective's flows, in the order they are added.
pub const WIDER: [HashField; 2] = [HashField::L4SrcPort, HashField::RdmaBthDestQp];

/// STATE_DB's capability table and its key.
const CAPABILITY: (&str, &str) = ("SWITCH_CAPABILITY", "switch");

/// The action kinds the `ecmp` actuator carries out.
pub fn kinds() -> Vec<ActionKindDecl> {
    vec![ActionKindDecl::new(WIDEN_KIND, &["switch"])
        .fleet()
        .limited_by(LimitClass::SwitchHash)
        .lost_on_switch_restart()]
}

/// Widens leaves' ECMP hashes, built from an [`EcmpConfig`].
#[derive(Debug)]
pub struct EcmpActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    sonic: Sonic,
}

impl EcmpActuator {
    /// The actuator `name`, reaching its switches through `sonic`.
    pub fn new(name: &str, sonic: Sonic) -> EcmpActuator {
        EcmpActuator { name: name.to_string(), kinds: kinds(), sonic }
    }

    fn switch<'a>(&self, action: &'a Action) -> Result<&'a str, ActuatorError> {
        if action.kind != WIDEN_KIND {
            return Err(unsupported(&self.kinds, &action.kind));
        }
        label(action, "switch")
    }

    /// The list CONFIG_DB holds on `switch`, as written.
    async fn current(&self, switch: &str) -> Result<String, ActuatorError> {
        let entry = self.sonic.get_entry(switch, hash::SWITCH_HASH, hash::GLOBAL).await?.unwrap_or_default();
        let list = entry.get(hash::ECMP_HASH_FIELD).ok_or_else(|| {
            ActuatorError::NotSupported(format!(
                "{switch} has no {}|{} {}: it hashes on its built-in defaults, which CONFIG_DB does not name; \
                 write the list it uses first (docs/rules.md, \"ECMP: which remedy\")",
                hash::SWITCH_HASH,
                hash::GLOBAL,
                hash::ECMP_HASH_FIELD
            ))
        })?;
        hash::parse_fields(list).map_err(|e| ActuatorError::Invalid(format!("{switch}: ecmp_hash {list:?}: {e}")))?;
        Ok(list.clone())
    }

    /// The fields `switch` says it can hash on.
    async fn capable(&self, switch: &str) -> Result<Vec<HashField>, ActuatorError> {
        let entry = self.sonic.state_entry(switch, CAPABILITY.0, CAPABILITY.1).await?.unwrap_or_default();
        let list = entry.get(hash::NATIVE_HASH_FIELD_LIST).ok_or_else(|| {
            ActuatorError::NotSupported(format!(
                "{switch} does not say which fields it can hash on (STATE_DB {}|{} {}): its SONiC has no generic hash",
                CAPABILITY.0,
                CAPABILITY.1,
                hash::NATIVE_HASH_FIELD_LIST
            ))
        })?;
        // A name this build does not know is a field we would never add.
        Ok(list.split(',').filter_map(|f| f.trim().parse::<HashField>().ok()).collect())
    }

    /// The list before and after: the first of [`WIDER`] the switch can hash on and the list
    /// lacks, added at its end.
    async fn plan(&self, switch: &str) -> Result<Change<String>, ActuatorError> {
        let before = self.current(switch).await?;
        let fields = hash::parse_fields(&before).map_err(ActuatorError::Invalid)?;
        let capable = self.capable(switch).await?;
        let after = match WIDER.iter().find(|f| !fields.contains(f) && capable.contains(f)) {
            Some(f) => hash::format_fields(&[fields.as_slice(), &[*f]].concat()),
            None => before.clone(),
        };
        Ok(Change { before, after })
    }

    fn fields(list: &str) -> Fields {
        [(hash::ECMP_HASH_FIELD.to_string(), Some(list.to_string()))].into()
    }

    fn describe(&self, switch: &str, list: &str) -> Result<String, ActuatorError> {
        self.sonic.describe(switch, hash::SWITCH_HASH, hash::GLOBAL, &Self::fields(list))
    }
}

#[async_trait]
impl Actuator for EcmpActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn check_targets(&self) -> Vec<(String, Result<String, ActuatorError>)> {
        self.sonic.check_switches().await
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        let switch = self.switch(action)?;
        let change = self.plan(switch).await?;
        Ok(RequestPlan { actuator: self.name.clone(), requests: vec![self.describe(switch, &change.after)?] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prepared = self.prepare(action).await?.expect("ecmp always reads its target");
        self.apply(action, &prepared.prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<Prepared>, ActuatorError> {
        let switch = self.switch(action)?;
        Ok(Some(self.plan(switch).await?.prepared()?))
    }

    async fn apply(&self, action: &Action, prior: &Prior) -> Result<Outcome, ActuatorError> {
        let switch = self.switch(action)?;
        let change: Change<String> = prior.read()?;
        let sent = self.sonic.set(switch, hash::SWITCH_HASH, hash::GLOBAL, &Self::fields(&change.after)).await?;
        Ok(Outcome {
            summary: format!(
                "{switch}: ECMP hash {} → {} (every flow of the leaf re-hashed)",
                change.before, change.after
            ),
            requests: vec![sent],
            prior: Some(prior.clone()),
        })
    }

    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let switch = self.switch(action)?;
        let now = self.current(switch).await?;
        let change = applied.map(recorded::<String>).transpose()?;
        Ok(match change {
            Some(c) if now == c.after => Verification::InEffect,
            Some(c) if now == c.before => Verification::NotInEffect,
            Some(_) => Verification::Changed(format!("{switch}'s ecmp_hash is now {now}")),
            None if self.plan(switch).await?.after == now => Verification::InEffect,
            None => Verification::NotInEffect,
        })
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        let switch = self.switch(action)?;
        let change: Change<String> = recorded(applied)?;
        Ok(RequestPlan { actuator: self.name.clone(), requests: vec![self.describe(switch, &change.before)?] })
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let switch = self.switch(action)?;
        let change: Change<String> = recorded(applied)?;
        let now = self.current(switch).await?;
        // switchorch refuses a removal: the earlier list is written back whole.
        let sent = self.sonic.set(switch, hash::SWITCH_HASH, hash::GLOBAL, &Self::fields(&change.before)).await?;
        Ok(Outcome {
            summary: format!("{switch}: ECMP hash back to {}", change.before),
            requests: vec![sent],
            prior: Some(Prior::of(&Change { before: now, after: change.before })?),
        })
    }
}
