//! Prometheus text the fabric exposes: each job's step time, as a
//! training job's exporter would publish it (the last finished step's), and
//! read by the daemon's Prometheus parser.

use std::fmt::Write;

use super::Fabric;

/// The gauge of a job's last finished step, seconds, as the daemon's job
/// sensor names it (and its outcome checks read it, `job.step_time`).
pub const STEP_METRIC: &str = "job_step_time_seconds";
/// The gauge of a job's step time over its healthy step time.
pub const RATIO_METRIC: &str = "chaos_job_step_ratio";

/// The gauge that places a job on a node (1), as the daemon's job sensor names it: the
/// scheduler's placement, from which the evaluator learns which jobs run behind a leaf.
pub const NODE_INFO_METRIC: &str = "job_node_info";

/// The exposition text of every job (text format 0.0.4).
pub fn render(fabric: &Fabric) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# HELP {STEP_METRIC} Duration of the job's last training step.");
    let _ = writeln!(out, "# TYPE {STEP_METRIC} gauge");
    for job in &fabric.jobs {
        if let Some(last) = job.steps.last {
            let _ = writeln!(out, "{STEP_METRIC}{{job=\"{}\"}} {last}", job.spec.name);
        }
    }
    let _ = writeln!(out, "# HELP {RATIO_METRIC} The job's last step time over its healthy step time.");
    let _ = writeln!(out, "# TYPE {RATIO_METRIC} gauge");
    for job in &fabric.jobs {
        let _ = writeln!(out, "{RATIO_METRIC}{{job=\"{}\"}} {}", job.spec.name, job.step_ratio);
    }
    let _ = writeln!(out, "# HELP {NODE_INFO_METRIC} The job runs on the node (1).");
    let _ = writeln!(out, "# TYPE {NODE_INFO_METRIC} gauge");
    for job in &fabric.jobs {
        for &n in &job.nodes {
            let _ = writeln!(out, "{NODE_INFO_METRIC}{{job=\"{}\",node=\"{}\"}} 1", job.spec.name, fabric.nodes[n]);
        }
    }
    out
}
