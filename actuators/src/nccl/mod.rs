//! The `nccl` actuator: NCCL settings for a job's next communicators
//! (`nccl.qps`), written to the job's environment file ([`job_env`]).
//!
//! `nccl.qps` raises `NCCL_IB_QPS_PER_CONNECTION` (and sets
//! `NCCL_IB_SPLIT_DATA_ON_QPS` when asked) for one job: each connection of
//! the job's rings then runs over that many queue pairs, each its own
//! RoCEv2 flow with its own UDP source port, so a leaf's ECMP hash spreads
//! the job's traffic over more uplinks (the `ecmp-imbalance` rule's safest
//! remedy). NCCL reads the variables when a communicator is created: the
//! action takes effect at the job's next launch or re-rendezvous, never
//! under a running collective, and the decision says so.
//!
//! The target carries `job`; params `qps` (1 to 128, at least this many:
//! a file that already asks for more keeps its number) and optionally
//! `split` (`0` or `1`). Undo puts back what the file held before, per
//! job, and removes a file that then says nothing.
//!
//! - [`config`]: [`NcclConfig`], the directory of the files;
//! - [`job_env`]: one job's file, parsed and written atomically.

pub mod config;
pub mod job_env;

pub use config::NcclConfig;

use std::path::PathBuf;

use async_trait::async_trait;
use engine::{
    Action, ActionKindDecl, Actuator, ActuatorError, Change, Outcome, Prepared, Prior, RequestPlan, Verification,
};

use crate::target::{integer, label, recorded, unsupported};
use job_env::QpSettings;

/// The kind this actuator carries out.
pub const QPS_KIND: &str = "nccl.qps";

/// The action kinds the `nccl` actuator carries out.
pub fn kinds() -> Vec<ActionKindDecl> {
    // A job runs on many nodes, and its file is read by every one of its launchers.
    vec![ActionKindDecl::new(QPS_KIND, &["job"]).fleet()]
}

/// What an `nccl.qps` action asks for: at least `qps` queue pairs per connection, and
/// `split` when given.
pub fn requested(action: &Action) -> Result<(u32, Option<bool>), ActuatorError> {
    let qps = action.params.get("qps").ok_or_else(|| {
        ActuatorError::Invalid(format!("{QPS_KIND} needs the parameter qps (1 to {})", job_env::MAX_QPS))
    })?;
    let qps = integer("qps", qps, 1, job_env::MAX_QPS, "")? as u32;
    let split = match action.params.get("split").map(|s| s.trim()) {
        None => None,
        Some("0") => Some(false),
        Some("1") => Some(true),
        Some(other) => return Err(ActuatorError::Invalid(format!("split {other:?} is not 0 or 1"))),
    };
    Ok((qps, split))
}

/// Writes jobs' NCCL settings, built from an [`NcclConfig`].
#[derive(Debug)]
pub struct NcclActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    env_dir: PathBuf,
}

/// What one `nccl.qps` action asks for.
struct Request {
    job: String,
    path: PathBuf,
    qps: u32,
    split: Option<bool>,
}

impl NcclActuator {
    /// The actuator `name`, writing the jobs' files under `env_dir`.
    pub fn new(name: &str, env_dir: PathBuf) -> NcclActuator {
        NcclActuator { name: name.to_string(), kinds: kinds(), env_dir }
    }

    fn parse(&self, action: &Action) -> Result<Request, ActuatorError> {
        if action.kind != QPS_KIND {
            return Err(unsupported(&self.kinds, &action.kind));
        }
        let job = label(action, "job")?.to_string();
        let (qps, split) = requested(action)?;
        Ok(Request { path: job_env::path(&self.env_dir, &job)?, job, qps, split })
    }

    fn plan(&self, requests: Vec<String>) -> RequestPlan {
        RequestPlan { actuator: self.name.clone(), requests }
    }

    /// Writes `settings` as the file's managed lines, keeping its other lines.
    fn write(&self, r: &Request, settings: QpSettings) -> Result<(), ActuatorError> {
        let env = job_env::read(&r.path)?;
        job_env::write(&r.path, &job_env::JobEnv { settings, ..env })
    }
}

#[async_trait]
impl Actuator for NcclActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        let r = self.parse(action)?;
        let after = job_env::read(&r.path)?.settings.raised(r.qps, r.split);
        Ok(self.plan(vec![job_env::request(&r.path, &after)]))
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prepared = self.prepare(action).await?.expect("nccl always reads its target");
        self.apply(action, &prepared.prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<Prepared>, ActuatorError> {
        let r = self.parse(action)?;
        let before = job_env::read(&r.path)?.settings;
        Ok(Some(Change { before, after: before.raised(r.qps, r.split) }.prepared()?))
    }

    async fn apply(&self, action: &Action, prior: &Prior) -> Result<Outcome, ActuatorError> {
        let r = self.parse(action)?;
        let change: Change<QpSettings> = prior.read()?;
        self.write(&r, change.after)?;
        Ok(Outcome {
            summary: format!(
                "job {}: {} for its next communicators (takes effect when the job next creates them: \
                 a restart or a re-rendezvous; its running collectives keep their queue pairs)",
                r.job, change.after
            ),
            requests: vec![job_env::request(&r.path, &change.after)],
            prior: Some(prior.clone()),
        })
    }

    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let r = self.parse(action)?;
        let now = job_env::read(&r.path)?.settings;
        let change = applied.map(recorded::<QpSettings>).transpose()?;
        let after = change.as_ref().map_or_else(|| now.raised(r.qps, r.split), |c| c.after);
        Ok(if now == after {
            Verification::InEffect
        } else if change.as_ref().is_none_or(|c| c.before == now) {
            Verification::NotInEffect
        } else {
            Verification::Changed(format!("{} now sets {now}", r.path.display()))
        })
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        let r = self.parse(action)?;
        let change: Change<QpSettings> = recorded(applied)?;
        Ok(self.plan(vec![job_env::request(&r.path, &change.before)]))
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let r = self.parse(action)?;
        let change: Change<QpSettings> = recorded(applied)?;
        let now = job_env::read(&r.path)?.settings;
        self.write(&r, change.before)?;
        Ok(Outcome {
            summary: format!("job {}: back to {} for its next communicators", r.job, change.before),
            requests: vec![job_env::request(&r.path, &change.before)],
            prior: Some(Prior::of(&Change { before: now, after: change.before })?),
        })
    }
}

#[cfg(test)]
mod tests;
