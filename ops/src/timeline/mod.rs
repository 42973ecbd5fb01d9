//! `rocemend timeline`: one HTML page with GPU, NCCL, NIC, switch and job
//! signals, rule states, decisions and actions on one time axis — the
//! answer to "the run slowed down at 03:12: why?".
//!
//! It reads only what the daemon already keeps ([`crate::recorded`]): its
//! recording (`record =`) for the signals, its ledger for decisions and
//! actions, and its rules, through which the recording is replayed for the
//! rule states (the store keeps no history of them). `--recording` and
//! `--state` point it at copies of a node's files instead.
//!
//! - [`window`]: `--from` / `--to`;
//! - [`focus`]: `--node`, `--job`, `--incident`;
//! - [`signals`]: the recording, as rates and bounded points, ordered by
//!   how much each series moved (`why`'s ranking), flat ones collapsed;
//! - [`history`]: the replayed rule states;
//! - [`page`]: the HTML.

pub mod focus;
pub mod history;
mod page;
pub mod signals;
pub mod window;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use engine::config::TomlError;
use engine::dispatch::Decision;
use engine::playbook::Playbook;
use engine::rule::{self, Helpers};
use engine::time::{Nanos, SECOND};
use engine::topology::TopologyError;
use engine::{Errors, RuleErrors, RuleSet, Topology};

use crate::control::incidents::incident_id;
use crate::progress::Progress;
use crate::recorded::{self, Files, LedgerError, ReadError};
use crate::time::{parse_time, rfc3339, TimeError};

use focus::Focus;
use window::{EmptyWindow, Window};

pub use page::effective_at;

/// Least padding around an incident: enough to see what led to it.
const INCIDENT_PAD: Nanos = 60 * SECOND;

/// Why a timeline cannot be drawn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TimelineError {
    /// The daemon config.
    #[error(transparent)]
    Config(#[from] TomlError),
    /// Neither `--recording` nor a config that records.
    #[error(
        "no recording: pass --recording FILE, or --config with a config that sets `record = ...` (the daemon records nothing without it)"
    )]
    NoRecording,
    /// Neither `--state` nor a config.
    #[error("no ledger: pass --state DIR (the daemon's state_dir) or --config")]
    NoLedger,
    /// The inventory.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The config's playbook.
    #[error(transparent)]
    Playbook(#[from] Errors<TomlError>),
    /// Neither the config nor its playbook names a rule directory.
    #[error("no rule directory: set `rules` in the config or in the playbook")]
    NoRules,
    /// The rules.
    #[error(transparent)]
    Rules(#[from] RuleErrors),
    /// `--from` or `--to`.
    #[error("--{flag}: {cause}")]
    Time {
        /// `from` or `to`.
        flag: &'static str,
        /// What is wrong with it.
        cause: TimeError,
    },
    /// `--from` without `--incident`.
    #[error("--from is required (or --incident ID): e.g. --from 2026-12-03T03:00:00Z or --from -30m")]
    NoFrom,
    /// An empty window.
    #[error(transparent)]
    Window(#[from] EmptyWindow),
    /// No decision of the ledger belongs to the incident.
    #[error(
        "unknown incident {id}: no decision in the ledger {} belongs to it (`rocemend incidents` lists them)",
        ledger.display()
    )]
    UnknownIncident {
        /// The incident asked for.
        id: String,
        /// The state directory read.
        ledger: PathBuf,
    },
    /// No `job_node_info` series names the job.
    #[error("unknown job {job}: no job_node_info series in {} names it (jobs recorded: {known})", recording.display())]
    UnknownJob {
        /// The job asked for.
        job: String,
        /// The recording read.
        recording: PathBuf,
        /// The jobs recorded, or `none`.
        known: String,
    },
    /// Nothing at all in the window.
    #[error(
        "no data in the window {} – {} for {focus} in {} ({held}) nor in the ledger {}",
        rfc3339(window.from),
        rfc3339(window.to),
        recording.display(),
        ledger.display()
    )]
    NoData {
        /// The window.
        window: Window,
        /// What the page is about, in words.
        focus: String,
        /// The recording read.
        recording: PathBuf,
        /// What the recording holds, in words.
        held: String,
        /// The state directory read.
        ledger: PathBuf,
    },
    /// The ledger.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// The recording.
    #[error(transparent)]
    Recording(#[from] ReadError),
    /// The rules could not be replayed.
    #[error(transparent)]
    Replay(#[from] engine::backtest::BacktestError),
}

/// What a timeline is asked to show.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Where the daemon's recording, ledger and inventory are.
    pub files: Files,
    /// Start, as `--from` takes it; optional with `incident`.
    pub from: Option<String>,
    /// End (default: now, or the incident's end).
    pub to: Option<String>,
    /// Only this job's signals and nodes.
    pub job: Option<String>,
    /// Only this node's series and the switch ports facing its NICs.
    pub node: Option<String>,
    /// One incident: its time span, padded, and its subject.
    pub incident: Option<String>,
    /// The rule directory to replay for rule states, instead of the config's.
    pub rules: Option<PathBuf>,
}

/// Where the inputs are, from the config and the overrides.
struct Sources {
    recording: PathBuf,
    state: PathBuf,
    /// The daemon's control socket, when a config names it.
    socket: Option<PathBuf>,
    topology: Option<Arc<Topology>>,
    rules: Option<(PathBuf, RuleSet)>,
}

fn sources(request: &Request) -> Result<Sources, TimelineError> {
    let found = request.files.resolve()?;
    let recording = found.recording.ok_or(TimelineError::NoRecording)?;
    let state = found.state.ok_or(TimelineError::NoLedger)?;
    let topology = crate::config::topology(found.inventory.as_deref())?;
    let helpers = Helpers::new(None, topology.clone());
    let config = found.config.as_ref();
    let playbook = config.map(|c| Playbook::load(&c.playbook)).transpose()?;
    let dir = match (&request.rules, config, &playbook) {
        (Some(d), _, _) => Some(d.clone()),
        (None, Some(c), Some(p)) => Some(c.rules_dir(p).ok_or(TimelineError::NoRules)?),
        _ => None,
    };
    let rules = match dir {
        None => None,
        Some(dir) => {
            let set = rule::load_dir(&dir, helpers)?;
            let set = match &playbook {
                Some(p) => set.without_disabled(&p.disabled_rules()),
                None => set,
            };
            Some((dir, set))
        }
    };
    Ok(Sources { recording, state, socket: found.socket, topology, rules })
}

/// An incident's decisions: those whose rule, subject and first-seen time
/// give its id (as `rocemend incidents` groups them).
fn incident<'a>(decisions: &'a [Decision], id: &str) -> Vec<&'a Decision> {
    decisions
        .iter()
        .filter(|d| {
            let p = &d.proposal;
            incident_id(&p.rule, &p.subject, p.active_at) == id
        })
        .collect()
}

/// The page's time window and what it shows: an incident's span (padded)
/// and subject, or `--from`/`--to` with a job, a node or everything.
/// The window, the focus, and the incident's start when there is one
/// (the moment the page's tracks are ranked around).
fn window_and_focus(
    request: &Request,
    src: &Sources,
    decisions: &[Decision],
    now: Nanos,
) -> Result<(Window, Focus, Option<Nanos>), TimelineError> {
    let time = |flag: &'static str, t: &Option<String>| {
        t.as_deref().map(|t| parse_time(t, now)).transpose().map_err(|cause| TimelineError::Time { flag, cause })
    };
    let (from, to) = (time("from", &request.from)?, time("to", &request.to)?);
    let job_nodes = |job: &str| -> Result<BTreeSet<String>, TimelineError> {
        Ok(signals::job_nodes(&src.recording)?.remove(job).unwrap_or_default())
    };
    if let Some(id) = &request.incident {
        let mine = incident(decisions, id);
        let first =
            mine.first().ok_or_else(|| TimelineError::UnknownIncident { id: id.clone(), ledger: src.state.clone() })?;
        let start = mine.iter().map(|d| d.proposal.active_at).min().unwrap_or(first.proposal.active_at);
        let end = mine.iter().map(|d| effective_at(d)).max().unwrap_or(start);
        let pad = INCIDENT_PAD.max((end - start) / 4);
        let nodes = job_nodes(first.proposal.subject.get("job").unwrap_or_default())?;
        let focus = Focus::of_subject(&first.proposal.subject, |_| nodes.clone());
        let window = Window::new(from.unwrap_or(start - pad), to.unwrap_or(end + pad))?;
        return Ok((window, focus, Some(start)));
    }
    let window = Window::new(from.ok_or(TimelineError::NoFrom)?, to.unwrap_or(now))?;
    let focus = match (&request.job, &request.node) {
        (Some(job), _) => {
            let nodes = job_nodes(job)?;
            if nodes.is_empty() {
                let known: Vec<String> = signals::job_nodes(&src.recording)?.into_keys().collect();
                return Err(TimelineError::UnknownJob {
                    job: job.clone(),
                    recording: src.recording.clone(),
                    known: if known.is_empty() { "none".to_string() } else { known.join(", ") },
                });
            }
            Focus::Job { job: job.clone(), nodes }
        }
        (None, Some(node)) => Focus::Node(node.clone()),
        (None, None) => Focus::All,
    };
    Ok((window, focus, None))
}

/// The rule instances' transitions that `focus` keeps, replayed from the
/// first `until_end` bytes of the recording through the rules (none without
/// rules), and how they were obtained, in words; `bar` makes a progress bar.
fn rule_states(
    src: &Sources,
    until_end: u64,
    focus: &Focus,
    bar: impl Fn(u64, &str) -> Progress,
) -> Result<(Vec<history::Transition>, String), TimelineError> {
    let Some((dir, set)) = &src.rules else {
        return Ok((vec![], "not shown: no rules (pass --rules DIR or --config)".to_string()));
    };
    let replaying = bar(until_end, "replaying the rules");
    let all = history::rule_states(&src.recording, until_end, set.clone(), src.topology.clone(), &replaying)?;
    replaying.finish();
    let kept = all.into_iter().filter(|t| focus.keeps(&t.subject, src.topology.as_deref())).collect();
    let how = format!(
        "replayed from the recording through the rules in {} (the store keeps no history of them)",
        dir.display()
    );
    Ok((kept, how))
}

/// A timeline drawn.
#[derive(Debug, Clone)]
pub struct Drawn {
    /// The HTML page.
    pub html: String,
    /// What is on it, in a line.
    pub summary: String,
}

/// The page `request` asks for, with `now` the time `now` and `-30m` count
/// from; progress bars on stderr when `bars` (the verb on a terminal; never
/// when a server renders a page). Blocks: it reads the recording, and a
/// live daemon's ledger over its socket, so an async caller runs it on a
/// thread of its own.
pub fn render(request: &Request, now: Nanos, bars: bool) -> Result<Drawn, TimelineError> {
    let bar = |total: u64, what: &str| if bars { Progress::bytes(total, what) } else { Progress::hidden() };
    let src = sources(request)?;
    let decisions = recorded::decisions(&src.state, src.socket.as_deref())?;
    let (window, focus, incident_start) = window_and_focus(request, &src, &decisions, now)?;
    let topology = src.topology.as_deref();
    let reading = bar(signals::recorded_bytes(&src.recording), "reading the signals");
    let mut signals = signals::read(&src.recording, &window, &focus, topology, &reading)?;
    reading.finish();
    // What moved comes first, as `rocemend why` ranks it: around the
    // incident's start, else the job's rise, else the window's middle.
    let split = incident_start
        .or_else(|| matches!(focus, Focus::Job { .. }).then(|| signals::job_rise(&signals.tracks)).flatten())
        .unwrap_or(window.from + (window.to - window.from) / 2);
    signals::rank_tracks(&mut signals.tracks, split);
    let (transitions, rule_states) = rule_states(&src, signals.until_end, &focus, bar)?;
    let decisions: Vec<Decision> = decisions
        .into_iter()
        .filter(|d| focus.keeps(&d.proposal.action.target, topology) || focus.keeps(&d.proposal.subject, topology))
        .collect();
    let any_decision = decisions
        .iter()
        .any(|d| window.contains(d.proposal.decided_at) || d.steps.iter().any(|s| window.contains(s.at)));
    let any_transition = transitions.iter().any(|t| window.contains(t.at));
    if signals.tracks.is_empty() && signals.notes.is_empty() && !any_decision && !any_transition {
        let held = match signals.span {
            Some((a, b)) => format!("it holds {} – {}", rfc3339(a), rfc3339(b)),
            None => "it holds no samples".into(),
        };
        return Err(TimelineError::NoData {
            window,
            focus: focus.describe(),
            recording: src.recording,
            held,
            ledger: src.state,
        });
    }
    let html = page::render(&page::Page {
        window,
        focus: focus.describe(),
        sources: vec![("recording", src.recording.display().to_string()), ("ledger", src.state.display().to_string())],
        rule_states,
        signals: &signals.tracks,
        left_out: signals.left_out,
        transitions: &transitions,
        decisions: &decisions,
        notes: &signals.notes,
    });
    let summary = format!(
        "{} signal tracks, {} rule state changes, {} decisions",
        signals.tracks.len(),
        transitions.iter().filter(|t| window.contains(t.at)).count(),
        decisions.iter().filter(|d| window.contains(d.proposal.decided_at)).count()
    );
    Ok(Drawn { html, summary })
}
