//! Job signals pushed through the control API (`PushJob`, `rocemend job
//! push`), turned into samples by a sensor like any other: the rules see
//! them through the same series table, windows and labels, and the
//! recording keeps them for replays and timelines.
//!
//! Series (all gauges), labelled `{job, node}` for each node the push
//! names, or `{job}` when it names none:
//! - `job_step_time_seconds`: wall time of the last training step;
//! - `nccl_busbw_gbps`, `nccl_algbw_gbps`: NCCL bus / algorithm bandwidth,
//!   the same names the `nccl_tests` sensor uses;
//! - `job_node_info` = 1: the job → nodes mapping, so the evaluator learns
//!   it (the `job_nodes` helper) even from a push that carries no signal.

use async_trait::async_trait;
use engine::series::SeriesError;
use engine::{Batch, Labels, Nanos, Sample, SampleKind, Sensor, SensorContext, SensorError, SeriesSpec, Value};
use tokio::sync::{mpsc, oneshot};

/// The sensor's name, in health and metrics.
pub const SENSOR_NAME: &str = "control-jobs";

/// Pushes in flight between the control service and the sensor.
pub const JOB_CHANNEL: usize = 256;

/// One push, as the control service hands it over.
#[derive(Debug)]
pub struct JobPush {
    /// The job id.
    pub job: String,
    /// The nodes it runs on (may be empty).
    pub nodes: Vec<String>,
    /// When measured.
    pub at: Nanos,
    /// `(metric, value)` pairs.
    pub values: Vec<(&'static str, f64)>,
    /// How many samples reached the engine, or why none did (a series
    /// could not be registered).
    pub reply: oneshot::Sender<Result<u32, SeriesError>>,
}

/// The longest job id or node name, in bytes: a DNS name's limit.
pub const MAX_NAME_LEN: usize = 253;

/// Why a job id or node name of a push is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// It is empty.
    #[error("{what} is empty")]
    Empty {
        /// `job` or `node`.
        what: String,
    },
    /// It is longer than [`MAX_NAME_LEN`].
    #[error("{what} {name:?} is longer than {MAX_NAME_LEN} bytes")]
    TooLong {
        /// `job` or `node`.
        what: String,
        /// The name as given.
        name: String,
    },
    /// It holds white space or a control character.
    #[error("{what} {name:?} contains {found:?}")]
    Char {
        /// `job` or `node`.
        what: String,
        /// The name as given.
        name: String,
        /// The first such character.
        found: char,
    },
}

/// Checks a job id or node name: printable, no spaces, at most 253 bytes
/// (a DNS name's limit), so it is safe as a label everywhere it goes.
pub fn check_name(what: &str, s: &str) -> Result<(), NameError> {
    if s.is_empty() {
        return Err(NameError::Empty { what: what.to_string() });
    }
    if s.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong { what: what.to_string(), name: s.to_string() });
    }
    if let Some(found) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(NameError::Char { what: what.to_string(), name: s.to_string(), found });
    }
    Ok(())
}

/// The sensor end of the channel.
pub struct JobSensor {
    rx: mpsc::Receiver<JobPush>,
}

/// A sensor and the sender the control service pushes into.
pub fn channel() -> (mpsc::Sender<JobPush>, JobSensor) {
    let (tx, rx) = mpsc::channel(JOB_CHANNEL);
    (tx, JobSensor { rx })
}

fn samples(ctx: &SensorContext, push: &JobPush) -> Result<Vec<Sample>, SeriesError> {
    let mut subjects: Vec<Labels> =
        push.nodes.iter().map(|n| Labels::from_pairs([("job", push.job.as_str()), ("node", n.as_str())])).collect();
    if subjects.is_empty() {
        subjects.push(Labels::from_pairs([("job", push.job.as_str())]));
    }
    let mut values = push.values.clone();
    if !push.nodes.is_empty() {
        values.push(("job_node_info", 1.0));
    }
    let mut out = Vec::with_capacity(subjects.len() * values.len());
    for labels in &subjects {
        for (metric, value) in &values {
            let spec = SeriesSpec { metric: (*metric).to_string(), labels: labels.clone(), kind: SampleKind::Gauge };
            out.push(Sample { series: ctx.register(&spec)?, ts: push.at, value: Value::Real(*value) });
        }
    }
    Ok(out)
}

#[async_trait]
impl Sensor for JobSensor {
    fn name(&self) -> &str {
        SENSOR_NAME
    }

    async fn run(mut self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        ctx.push_driven("waiting for job pushes");
        loop {
            let push = tokio::select! {
                push = self.rx.recv() => match push {
                    Some(p) => p,
                    None => return Ok(()),
                },
                _ = ctx.shutdown() => return Ok(()),
            };
            let started = std::time::Instant::now();
            match samples(&ctx, &push) {
                Ok(samples) => {
                    let n = samples.len() as u32;
                    ctx.send(Batch { samples, notes: vec![] }).await?;
                    ctx.read_ok(started.elapsed());
                    let _ = push.reply.send(Ok(n));
                }
                Err(e) => {
                    ctx.read_failed("series", &e.to_string());
                    let _ = push.reply.send(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_spaces_or_nothing_are_refused() {
        assert!(check_name("job", "llm-pretrain-42").is_ok());
        assert_eq!(check_name("node", "").unwrap_err(), NameError::Empty { what: "node".into() });
        assert_eq!(check_name("node", "").unwrap_err().to_string(), "node is empty");
        let spaced = check_name("node", "gpu 01").unwrap_err();
        assert!(matches!(spaced, NameError::Char { found: ' ', .. }), "{spaced:?}");
        assert_eq!(spaced.to_string(), "node \"gpu 01\" contains ' '");
        assert!(matches!(check_name("job", &"j".repeat(254)), Err(NameError::TooLong { .. })));
    }

    #[tokio::test]
    async fn a_push_for_two_nodes_becomes_one_sample_per_node_and_signal_plus_the_mapping() {
        let series = engine::SeriesTable::new(None, Labels::default());
        let (batch_tx, mut batch_rx) = mpsc::channel(4);
        let (_stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let ctx = SensorContext::new(series.clone(), SENSOR_NAME, 100, batch_tx, stop_rx);
        let (tx, sensor) = channel();
        let task = tokio::spawn(Box::new(sensor).run(ctx));
        let (reply, answer) = oneshot::channel();
        tx.send(JobPush {
            job: "j1".into(),
            nodes: vec!["gpu-01".into(), "gpu-02".into()],
            at: 7,
            values: vec![("job_step_time_seconds", 1.25), ("nccl_busbw_gbps", 180.0)],
            reply,
        })
        .await
        .unwrap();
        assert_eq!(answer.await.unwrap(), Ok(6));
        let batch = batch_rx.recv().await.unwrap();
        assert_eq!(batch.samples.len(), 6);
        let mut seen: Vec<String> = {
            let reg = series.read();
            batch
                .samples
                .iter()
                .map(|s| {
                    let info = reg.info(s.series);
                    let labels = info.labels.to_labels(reg.interner());
                    format!(
                        "{}{{{}}}={}",
                        reg.interner().resolve(info.metric),
                        labels.get("node").unwrap(),
                        s.value.as_f64()
                    )
                })
                .collect()
        };
        seen.sort();
        assert_eq!(
            seen,
            [
                "job_node_info{gpu-01}=1",
                "job_node_info{gpu-02}=1",
                "job_step_time_seconds{gpu-01}=1.25",
                "job_step_time_seconds{gpu-02}=1.25",
                "nccl_busbw_gbps{gpu-01}=180",
                "nccl_busbw_gbps{gpu-02}=180",
            ]
        );
        drop(tx);
        task.await.unwrap().unwrap();
    }
}
