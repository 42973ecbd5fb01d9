//! `rocemend timeline`: one HTML page with GPU, NCCL, NIC, switch and job
//! signals, rule states, decisions and actions on one time axis — the
//! answer to "the run slowed down at 03:12: why?".
//!
//! It reads only what the daemon already keeps: its recording (`record =`)
//! for the signals, its ledger (the sled state directory) for decisions and
//! actions, and its rules, through which the recording is replayed for the
//! rule states (the store keeps no history of them). `--recording` and
//! `--state` point it at copies of a node's files instead.
//!
//! - [`window`]: `--from` / `--to`;
//! - [`scope`]: `--node`, `--job`, `--incident`;
//! - [`signals`]: the recording, as rates and bounded points, ordered by
//!   how much each series moved (`why`'s ranking), flat ones collapsed;
//! - [`history`]: the ledger and the replayed rule states;
//! - [`page`]: the HTML.

pub(crate) mod history;
mod page;
mod scope;
mod signals;
pub(crate) mod window;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use engine::dispatch::Decision;
use engine::playbook::Playbook;
use engine::rule::{self, Helpers};
use engine::time::{wall_clock_now, Nanos, SECOND};
use engine::{RuleSet, Topology};

use crate::cli::TimelineArgs;
use crate::config::DaemonConfig;
use crate::progress::Progress;
use crate::{wiring, Exit};

use scope::Scope;
use window::{parse_time, Window};

/// Least padding around an incident: enough to see what led to it.
const INCIDENT_PAD: Nanos = 60 * SECOND;

/// Where the inputs are, from the config and the overrides.
struct Sources {
    recording: PathBuf,
    state: PathBuf,
    /// The daemon's control socket, when a config names it.
    socket: Option<PathBuf>,
    topology: Option<Arc<Topology>>,
    rules: Option<(PathBuf, RuleSet)>,
}

fn sources(args: &TimelineArgs) -> anyhow::Result<Sources> {
    let config = args.config.as_deref().map(DaemonConfig::load).transpose()?;
    let recording = match args.recording.clone().or_else(|| config.as_ref().and_then(|c| c.record.clone())) {
        Some(r) => r,
        None => anyhow::bail!(
            "no recording: pass --recording FILE, or --config with a config that sets `record = ...` (the daemon records nothing without it)"
        ),
    };
    let state = match (&args.state, config.as_ref()) {
        (Some(s), _) => s.clone(),
        (None, Some(c)) => c.state_dir.clone(),
        (None, None) => anyhow::bail!("no ledger: pass --state DIR (the daemon's state_dir) or --config"),
    };
    let inventory = args.inventory.clone().or_else(|| config.as_ref().and_then(|c| c.inventory.clone()));
    let topology = wiring::topology(inventory.as_deref())?;
    let helpers = Helpers::new(None, topology.clone());
    let playbook = config.as_ref().map(|c| Playbook::load(&c.playbook)).transpose()?;
    let dir = match (&args.rules, &config, &playbook) {
        (Some(d), _, _) => Some(d.clone()),
        (None, Some(c), Some(p)) => Some(wiring::rules_dir(c, p)?),
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
    let socket = config.as_ref().map(|c| c.control.socket.clone().unwrap_or_else(|| c.state_dir.join("control.sock")));
    Ok(Sources { recording, state, socket, topology, rules })
}

/// An incident's decisions: those whose rule, subject and first-seen time
/// give its id (as `rocemend incidents` groups them).
fn incident<'a>(decisions: &'a [Decision], id: &str) -> Vec<&'a Decision> {
    decisions
        .iter()
        .filter(|d| {
            let p = &d.proposal;
            crate::control::incidents::incident_id(&p.rule, &p.subject, p.active_at) == id
        })
        .collect()
}

/// The page's time window and what it shows: an incident's span (padded)
/// and subject, or `--from`/`--to` with a job, a node or everything.
/// The window, the scope, and the incident's start when there is one
/// (the moment the page's tracks are ranked around).
fn window_and_scope(
    args: &TimelineArgs,
    src: &Sources,
    decisions: &[Decision],
) -> anyhow::Result<(Window, Scope, Option<Nanos>)> {
    let now = wall_clock_now();
    let time = |flag: &str, t: &Option<String>| {
        t.as_deref().map(|t| parse_time(t, now)).transpose().map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
    };
    let (from, to) = (time("from", &args.from)?, time("to", &args.to)?);
    let job_nodes = |job: &str| -> anyhow::Result<BTreeSet<String>> {
        Ok(signals::job_nodes(&src.recording)?.remove(job).unwrap_or_default())
    };
    let (window, scope) = if let Some(id) = &args.incident {
        let mine = incident(decisions, id);
        let first = mine.first().ok_or_else(|| {
            anyhow::anyhow!(
                "unknown incident {id}: no decision in the ledger {} belongs to it (`rocemend incidents` lists them)",
                src.state.display()
            )
        })?;
        let start = mine.iter().map(|d| d.proposal.active_at).min().unwrap_or(first.proposal.active_at);
        let end = mine.iter().map(|d| page::effective_at(d)).max().unwrap_or(start);
        let pad = INCIDENT_PAD.max((end - start) / 4);
        let nodes = job_nodes(first.proposal.subject.get("job").unwrap_or_default())?;
        let scope = Scope::of_subject(&first.proposal.subject, |_| nodes.clone());
        let window = Window::new(from.unwrap_or(start - pad), to.unwrap_or(end + pad)).map_err(anyhow::Error::msg)?;
        return Ok((window, scope, Some(start)));
    } else {
        let from =
            from.context("--from is required (or --incident ID): e.g. --from 2026-12-03T03:00:00Z or --from -30m")?;
        let window = Window::new(from, to.unwrap_or(now)).map_err(anyhow::Error::msg)?;
        let scope = match (&args.job, &args.node) {
            (Some(job), _) => {
                let nodes = job_nodes(job)?;
                if nodes.is_empty() {
                    let known: Vec<String> = signals::job_nodes(&src.recording)?.into_keys().collect();
                    anyhow::bail!(
                        "unknown job {job}: no job_node_info series in {} names it (jobs recorded: {})",
                        src.recording.display(),
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    );
                }
                Scope::Job { job: job.clone(), nodes }
            }
            (None, Some(node)) => Scope::Node(node.clone()),
            (None, None) => Scope::All,
        };
        (window, scope)
    };
    Ok((window, scope, None))
}

/// Runs the verb.
pub fn run(args: &TimelineArgs) -> anyhow::Result<Exit> {
    let (html, summary) = render_with(args, true)?;
    std::fs::write(&args.out, html).with_context(|| format!("writing {}", args.out.display()))?;
    println!("wrote {}: {summary}", args.out.display());
    Ok(Exit::Ok)
}

/// The page `args` ask for, and a line saying what is on it. Blocks: it
/// reads the recording, and a live daemon's ledger over its socket, so an
/// async caller runs it on a thread of its own.
pub fn render(args: &TimelineArgs) -> anyhow::Result<(String, String)> {
    render_with(args, false)
}

/// [`render`], with progress bars on stderr when `bars` (the verb on a
/// terminal; never when a server renders a page).
fn render_with(args: &TimelineArgs, bars: bool) -> anyhow::Result<(String, String)> {
    let bar = |total: u64, what: &str| if bars { Progress::bytes(total, what) } else { Progress::hidden() };
    let src = sources(args)?;
    let decisions = history::decisions(&src.state, src.socket.as_deref())?;
    let (window, scope, incident_start) = window_and_scope(args, &src, &decisions)?;
    let topology = src.topology.as_deref();
    let reading = bar(signals::recorded_bytes(&src.recording), "reading the signals");
    let mut signals = signals::read(&src.recording, &window, &scope, topology, &reading)?;
    reading.finish();
    // What moved comes first, as `rocemend why` ranks it: around the
    // incident's start, else the job's rise, else the window's middle.
    let split = incident_start
        .or_else(|| matches!(scope, Scope::Job { .. }).then(|| signals::job_rise(&signals.tracks)).flatten())
        .unwrap_or(window.from + (window.to - window.from) / 2);
    signals::rank_tracks(&mut signals.tracks, split);
    let (transitions, rule_states) = match &src.rules {
        Some((dir, set)) => {
            let replaying = bar(signals.until_end, "replaying the rules");
            let all =
                history::rule_states(&src.recording, signals.until_end, set.clone(), src.topology.clone(), &replaying)?;
            replaying.finish();
            let kept: Vec<_> = all.into_iter().filter(|t| scope.keeps(&t.subject, topology)).collect();
            (
                kept,
                format!(
                    "replayed from the recording through the rules in {} (the store keeps no history of them)",
                    dir.display()
                ),
            )
        }
        None => (vec![], "not shown: no rules (pass --rules DIR or --config)".to_string()),
    };
    let decisions: Vec<Decision> = decisions
        .into_iter()
        .filter(|d| scope.keeps(&d.proposal.action.target, topology) || scope.keeps(&d.proposal.subject, topology))
        .collect();
    let any_decision = decisions
        .iter()
        .any(|d| window.contains(d.proposal.decided_at) || d.steps.iter().any(|s| window.contains(s.at)));
    let any_transition = transitions.iter().any(|t| window.contains(t.at));
    if signals.tracks.is_empty() && signals.notes.is_empty() && !any_decision && !any_transition {
        let held = match signals.span {
            Some((a, b)) => format!("it holds {} – {}", engine::time::rfc3339(a), engine::time::rfc3339(b)),
            None => "it holds no samples".into(),
        };
        anyhow::bail!(
            "no data in the window {} – {} for {} in {} ({held}) nor in the ledger {}",
            engine::time::rfc3339(window.from),
            engine::time::rfc3339(window.to),
            scope.describe(),
            src.recording.display(),
            src.state.display()
        );
    }
    let html = page::render(&page::Page {
        window,
        scope: scope.describe(),
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
    Ok((html, summary))
}
