//! "Why is this job slow?", in fabric terms: the analysis behind
//! `rocemend why` and the console's `/why`.
//!
//! 1. [`window`]: when the job got slow (its step time against its own
//!    baseline), or the span given;
//! 2. [`path`]: the job's nodes, their NICs, leaf ports, leaves and planes,
//!    and which element each recorded series is about;
//! 3. [`rank`]: how far each series moved between baseline and regression
//!    (robust effect size), when it moved relative to the job, and which
//!    element moved most;
//! 4. [`ecmp`]: the job's leaves that spread their traffic unevenly over
//!    their uplinks meanwhile (an ECMP collision), which the verdict names
//!    when the top element is on such a leaf;
//! 5. [`decisions`]: what rocemend decided meanwhile, and whether the job
//!    recovered after;
//! 6. [`render`]: the verdict, the table, the decisions, as text or JSON.
//!
//! The recording is read once ([`series`]), counters as rates
//! ([`rates`], shared with the timeline). [`analyze`] works on what was
//! read, so benches and tests call it directly; [`answer`] finds the
//! daemon's recording and ledger first, as the verb does.

pub mod answer;
pub mod compare;
pub mod decisions;
pub mod ecmp;
pub mod path;
pub mod peers;
pub mod rank;
pub mod rates;
pub mod refresh;
pub mod render;
pub mod select;
pub mod series;
pub mod signals;
pub mod window;

#[cfg(test)]
mod cause_tests;

use std::collections::BTreeSet;

use engine::config::TomlError;
use engine::dispatch::Decision;
use engine::topology::TopologyError;
use engine::{Labels, Nanos, Topology, SECOND};
use serde::Serialize;

use crate::recorded::{self, Files, LedgerError, ReadError};
use crate::time::{parse_time, TimeError};

use path::{enriched, JobPath};
use rank::Ranked;
use series::Recorded;
use window::{Levels, Windows};

/// The job signal's metrics, in order of preference.
pub const STEP_TIME: &str = "job_step_time_seconds";
/// NCCL bus bandwidth, used (inverted) when no step time is recorded.
pub const BUSBW: &str = "nccl_busbw_gbps";

/// How far before the job's rise a decision still counts as about it: a
/// rule fires on the cause, which can lead the step time.
const DECISION_LEAD: Nanos = 30 * SECOND;

/// Why a job's slowdown cannot be explained.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WhyError {
    /// No `job_node_info` series names the job.
    #[error("unknown job {job}: no job_node_info series names it (jobs recorded: {known})")]
    UnknownJob {
        /// The job asked about.
        job: String,
        /// The jobs recorded, or `none`.
        known: String,
    },
    /// The job has no step time nor bandwidth series.
    #[error("job {job} has no {STEP_TIME} nor {BUSBW} series in the recording")]
    NoSignal {
        /// The job.
        job: String,
    },
    /// `--from` is not before `--to`.
    #[error("the regression window is empty: --from must be before --to")]
    EmptySpan,
    /// Too few points to find a regression in.
    #[error(
        "the job signal has {points} points; at least {needed} are needed to find a regression (pass --from/--to)"
    )]
    TooFewPoints {
        /// Points of the job signal.
        points: usize,
        /// Points needed.
        needed: usize,
    },
    /// The job signal never rose above its threshold for long.
    #[error(
        "no regression: the job signal never stayed above {threshold:.4} (baseline {baseline:.4} + {percent:.0} %) after its first quarter (pass --from/--to to compare a span you choose)"
    )]
    NoRegression {
        /// The level that counts as slow.
        threshold: f64,
        /// The baseline level.
        baseline: f64,
        /// The relative rise asked for, in percent.
        percent: f64,
    },
    /// `--threshold` is no positive fraction.
    #[error("--threshold must be a positive fraction, e.g. 0.15 for 15 %")]
    Threshold,
    /// The daemon config.
    #[error(transparent)]
    Config(#[from] TomlError),
    /// Neither `--recording` nor a config that records.
    #[error("no recording: pass --recording FILE, or --config with a config that sets `record = ...`")]
    NoRecording,
    /// The inventory.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// `--from` or `--to`.
    #[error("--{flag}: {cause}")]
    Time {
        /// `from` or `to`.
        flag: &'static str,
        /// What is wrong with it.
        cause: TimeError,
    },
    /// The ledger.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The recording.
    #[error(transparent)]
    Recording(#[from] ReadError),
}

/// What to analyse.
#[derive(Debug, Clone)]
pub struct Query<'a> {
    /// The job.
    pub job: &'a str,
    /// The regression span, if given (`--from/--to`).
    pub span: Option<(Nanos, Nanos)>,
    /// Relative rise that counts as a regression.
    pub threshold: f64,
    /// The inventory, if any.
    pub topology: Option<&'a Topology>,
    /// Rank metrics the table of [`signals`] does not know too.
    pub all_metrics: bool,
}

/// The job signal as analysed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobSignal {
    /// `job_step_time_seconds` or `nccl_busbw_gbps`.
    pub metric: String,
    /// Its level in each window (in the metric's own unit).
    pub levels: Levels,
    /// How much slower the job was (0.38 = 38 %).
    pub slowdown: f64,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The job.
    pub job: String,
    /// Its nodes.
    pub nodes: Vec<String>,
    /// Baseline and regression.
    pub windows: Windows,
    /// The job signal.
    pub signal: JobSignal,
    /// Elements of the path, most moved first (those that moved at all).
    pub ranking: Vec<Ranked>,
    /// Whether the fabric explains it, how sure, and on what evidence.
    pub answer: answer::Answer,
    /// Decisions taken in the regression.
    pub decisions: Vec<decisions::Taken>,
    /// The job's leaves whose uplinks carried its traffic unevenly, worst first.
    pub ecmp: Vec<ecmp::Collision>,
    /// Series on the path that were compared.
    pub compared: usize,
    /// Devices of each ranked rail element, for the verdict.
    #[serde(skip)]
    pub path: JobPath,
}

/// The job's signal, "higher is slower", and its metric.
fn job_signal(rec: &Recorded, job: &str) -> Option<(String, Vec<(Nanos, f64)>)> {
    let (from, to) = (rec.grid.origin, rec.grid.end());
    for metric in [STEP_TIME, BUSBW] {
        let series: Vec<Vec<(Nanos, f64)>> = rec
            .series
            .iter()
            .filter(|s| s.metric == metric && s.labels.get("job") == Some(job))
            .map(|s| {
                let pts = s.points(&rec.grid, from, to);
                if metric == BUSBW {
                    pts.into_iter().filter(|p| p.1 > 0.0).map(|(t, v)| (t, 1.0 / v)).collect()
                } else {
                    pts
                }
            })
            .collect();
        if series.iter().any(|s| !s.is_empty()) {
            return Some((metric.to_string(), window::worst_of(&series)));
        }
    }
    None
}

/// The windows: given, or found in the job signal (pushed as `pushes` says).
fn windows_of(q: &Query, signal: &[(Nanos, f64)], pushes: window::Pushes) -> Result<Windows, WhyError> {
    match q.span {
        Some((from, to)) if from < to => Ok(Windows::given(from, to)),
        Some(_) => Err(WhyError::EmptySpan),
        None => window::detect(signal, q.threshold, pushes),
    }
}

/// Why `q.job` was slow, from a recording read with [`series::read`] and
/// the decisions of its ledger; `incident` names a decision's incident.
pub fn analyze(
    rec: &Recorded,
    q: &Query,
    all_decisions: &[Decision],
    incident: impl Fn(&Decision) -> String,
) -> Result<Report, WhyError> {
    let nodes: BTreeSet<String> = rec.job_nodes.get(q.job).cloned().unwrap_or_default();
    if nodes.is_empty() {
        let known: Vec<&str> = rec.job_nodes.keys().map(String::as_str).collect();
        let known = if known.is_empty() { "none".into() } else { known.join(", ") };
        return Err(WhyError::UnknownJob { job: q.job.to_string(), known });
    }
    let (metric, signal) = job_signal(rec, q.job).ok_or_else(|| WhyError::NoSignal { job: q.job.to_string() })?;
    let pushes = window::Pushes { step_ends: metric == STEP_TIME, recording_end: rec.grid.end() };
    let mut path = JobPath::walk(&nodes, q.topology);
    for s in &rec.series {
        path.learn(&enriched(&s.labels, q.topology));
    }
    let (w, ranking, compared) = match windows_of(q, &signal, pushes) {
        Ok(w) => {
            let (ranking, compared) = compare::ranking(rec, &path, &w, q);
            (w, ranking, compared)
        }
        // A job never faster in the recording: its elements against their peers alone.
        Err(no_regression @ (WhyError::NoRegression { .. } | WhyError::TooFewPoints { .. })) => {
            let span = (rec.grid.origin, rec.grid.end());
            let (ranking, compared) = compare::ranking_by_peers(rec, &path, span, q);
            if ranking.first().is_none_or(|top| top.score < answer::FABRIC_SCORE) {
                return Err(no_regression);
            }
            (Windows::peers_only(span.0, span.1), ranking, compared)
        }
        Err(e) => return Err(e),
    };
    let mut levels = window::levels(&signal, &w);
    if w.stalled {
        // No step ended in a stall: the one under way has lasted at least its length.
        let silence = (w.regression.1 - w.regression.0) as f64 / SECOND as f64;
        // A bandwidth (inverted) fell to nothing.
        levels.regression = if metric == BUSBW { f64::INFINITY } else { silence };
    }
    if metric == BUSBW {
        levels = Levels { baseline: 1.0 / levels.baseline, regression: 1.0 / levels.regression };
    }
    let slowdown = if metric == BUSBW { levels.baseline / levels.regression - 1.0 } else { levels.change() };
    let ecmp = ecmp::collisions(rec, &path, &w, q.topology);
    let on_path = |l: &Labels| path.element_of(&enriched(l, q.topology)).is_some() || l.get("job") == Some(q.job);
    let base_level = window::levels(&signal, &w).baseline;
    let decisions =
        decisions::taken(all_decisions, &w, DECISION_LEAD, on_path, incident, &signal, (base_level, q.threshold));
    Ok(Report {
        job: q.job.to_string(),
        nodes: nodes.into_iter().collect(),
        windows: w,
        signal: JobSignal { metric, levels, slowdown },
        answer: answer::answer(&ranking),
        ranking,
        decisions,
        ecmp,
        compared,
        path,
    })
}

/// What `rocemend why` is asked.
#[derive(Debug, Clone)]
pub struct Request {
    /// The job (as `job push` named it).
    pub job: String,
    /// Start of the regression, as `--from` takes it; with `to`.
    pub from: Option<String>,
    /// Its end.
    pub to: Option<String>,
    /// Relative rise of the step time that counts as a regression.
    pub threshold: f64,
    /// Where the daemon's recording, ledger and inventory are.
    pub files: Files,
    /// Rank metrics `why` does not know too (`--all-metrics`).
    pub all_metrics: bool,
}

/// The analysis `request` asks for, and whether a ledger was read. Blocks:
/// it reads the recording, and a live daemon's ledger over its socket (the
/// web console runs it on a thread of its own). The ledger is optional:
/// without a state directory the answer has no decisions.
pub fn answer(request: &Request, now: Nanos) -> Result<(Report, bool), WhyError> {
    if !(request.threshold > 0.0 && request.threshold.is_finite()) {
        return Err(WhyError::Threshold);
    }
    let found = request.files.resolve()?;
    let recording = found.recording.ok_or(WhyError::NoRecording)?;
    let topology = crate::config::topology(found.inventory.as_deref())?;
    let time = |flag: &'static str, t: &Option<String>| {
        t.as_deref().map(|t| parse_time(t, now)).transpose().map_err(|cause| WhyError::Time { flag, cause })
    };
    let span = match (time("from", &request.from)?, time("to", &request.to)?) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    let decisions = match &found.state {
        Some(dir) => recorded::decisions(dir, found.socket.as_deref())?,
        None => Vec::new(),
    };
    let wanted = select::for_job(&recording, &request.job, topology.clone())?;
    let recorded = select::read(&recording, wanted)?;
    let query = Query {
        job: &request.job,
        span,
        threshold: request.threshold,
        topology: topology.as_deref(),
        all_metrics: request.all_metrics,
    };
    let report = analyze(&recorded, &query, &decisions, |d| {
        let p = &d.proposal;
        crate::control::incidents::incident_id(&p.rule, &p.subject, p.active_at)
    })?;
    Ok((report, found.state.is_some()))
}
