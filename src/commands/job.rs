//! `rocemend job push`: a job's step time and NCCL bandwidth, pushed to
//! the daemon as samples.

use super::control::status_error;
use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::Exit;

/// What `rocemend job push` sends.
pub struct JobArgs {
    /// Job id.
    pub job: String,
    /// Its nodes.
    pub nodes: Vec<String>,
    /// Step time, seconds.
    pub step_time: Option<f64>,
    /// NCCL bus bandwidth, GB/s.
    pub busbw: Option<f64>,
    /// NCCL algorithm bandwidth, GB/s.
    pub algbw: Option<f64>,
}

/// `rocemend job push`.
pub fn job_push(target: &Target, args: JobArgs) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        let request = pb::PushJobRequest {
            job: args.job,
            nodes: args.nodes,
            at_ns: 0,
            step_time_seconds: args.step_time,
            busbw_gbps: args.busbw,
            algbw_gbps: args.algbw,
        };
        connect(target).await?.push_job(request).await.map_err(status_error)
    })?;
    println!("{} samples", reply.into_inner().samples);
    Ok(Exit::Ok)
}
