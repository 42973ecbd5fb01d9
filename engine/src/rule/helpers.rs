//! Cross-series helpers: what a rule may ask about the rest of the fabric.
//!
//! | function | returns |
//! |---|---|
//! | `label(name)` | this subject's value of label `name` (`""` if none) |
//! | `firing(rule)` | how many subjects of `rule` are firing |
//! | `firing_on(rule, label)` | how many subjects of `rule` that share this subject's `label` (e.g. `"switch"`, `"rail"`, `"plane"`) are firing |
//! | `firing_where(rule, #{k: v})` | how many subjects of `rule` with these labels are firing |
//! | `peer()` | the far end of this link end as a map (`#{switch, port}` or `#{node, rdma_dev, netdev}`), `#{}` if unknown |
//! | `job()` | this subject's `job` label |
//! | `job_nodes(job)` | the nodes a job runs on, as an array |
//!
//! The engine keeps the firing index up to date as instances change state,
//! so these are lookups, never scans of samples.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use rhai::{Array, Dynamic, ImmutableString, Map};

use crate::labels::{LabelSet, Labels};
use crate::series::SeriesTable;
use crate::topology::Topology;

use super::touched::{self, JobNodes};

/// What the helpers read. The engine writes it; scripts only read.
#[derive(Debug, Default)]
pub struct HelperState {
    /// The subject being evaluated.
    subject: LabelSet,
    series: Option<SeriesTable>,
    topology: Option<Arc<Topology>>,
    /// rule name → labels of its firing subjects.
    firing: HashMap<String, Vec<Labels>>,
    /// job → nodes.
    jobs: JobNodes,
    /// Bumped whenever the firing index or the job table changes, so cached
    /// evaluations of rules that read them are not reused.
    epoch: u64,
}

/// Shared handle to the helper state.
#[derive(Debug, Clone, Default)]
pub struct Helpers(Arc<Mutex<HelperState>>);

impl Helpers {
    /// Helpers that resolve labels through `series` and links through `topology`.
    pub fn new(series: Option<SeriesTable>, topology: Option<Arc<Topology>>) -> Helpers {
        Helpers(Arc::new(Mutex::new(HelperState { series, topology, ..HelperState::default() })))
    }

    fn lock(&self) -> MutexGuard<'_, HelperState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set_subject(&self, subject: &LabelSet) {
        self.lock().subject = subject.clone();
    }

    /// Points label resolution at `series` (the engine's table).
    pub fn set_series(&self, series: SeriesTable) {
        self.lock().series = Some(series);
    }

    /// Records that a subject of `rule` started firing.
    pub fn firing_started(&self, rule: &str, labels: Labels) {
        let mut state = self.lock();
        state.firing.entry(rule.to_string()).or_default().push(labels);
        state.epoch += 1;
    }

    /// A counter that changes whenever what the cross-series helpers answer may have.
    pub fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// Records that a subject of `rule` stopped firing.
    pub fn firing_stopped(&self, rule: &str, labels: &Labels) {
        let mut state = self.lock();
        if let Some(list) = state.firing.get_mut(rule) {
            if let Some(i) = list.iter().position(|l| l == labels) {
                list.swap_remove(i);
                state.epoch += 1;
            }
        }
    }

    /// Records that `node` runs (part of) `job`.
    pub fn add_job_node(&self, job: &str, node: &str) {
        let mut state = self.lock();
        if state.jobs.entry(job.to_string()).or_default().insert(node.to_string()) {
            state.epoch += 1;
        }
    }

    /// The jobs with a node behind a subject with `labels`, in name order: those on its `node`
    /// when it names one (a NIC, a GPU: its leaf is where its traffic goes, not where it comes
    /// from), else those on the nodes whose NICs face its `switch` (from the inventory).
    pub fn jobs_behind(&self, labels: &Labels) -> Vec<String> {
        let state = self.lock();
        let nodes: Vec<&str> = match (labels.get("node"), labels.get("switch"), &state.topology) {
            (Some(node), _, _) => vec![node],
            (None, Some(switch), Some(topology)) => topology.nodes_facing(switch),
            _ => Vec::new(),
        };
        let runs_behind = |(_, on): &(&String, &BTreeSet<String>)| nodes.iter().any(|n| on.contains(*n));
        state.jobs.iter().filter(runs_behind).map(|(job, _)| job.clone()).collect()
    }

    /// The running jobs an action on `target` touches, sorted: those on the nodes it reaches
    /// (its `node`; the node on its switch `port`; the nodes facing its `switch`, on its
    /// `rail` or `plane`, from the inventory), and the job it names.
    pub fn jobs_touched(&self, target: &Labels) -> Vec<String> {
        let state = self.lock();
        touched::jobs_touched(target, state.topology.as_deref(), &state.jobs)
    }

    fn subject_labels(&self) -> Labels {
        let state = self.lock();
        match &state.series {
            Some(series) => state.subject.to_labels(series.read().interner()),
            None => Labels::default(),
        }
    }

    fn count_firing(&self, rule: &str, wanted: &Labels) -> i64 {
        let state = self.lock();
        state.firing.get(rule).map(|list| list.iter().filter(|l| l.contains_all(wanted)).count() as i64).unwrap_or(0)
    }
}

fn to_map(labels: &Labels) -> Map {
    labels.0.iter().map(|(k, v)| (k.as_str().into(), Dynamic::from(v.clone()))).collect()
}

/// Registers the helper functions on a sandbox engine.
pub(crate) fn register(engine: &mut rhai::Engine, helpers: Helpers) {
    let h = helpers.clone();
    engine.register_fn("label", move |name: ImmutableString| -> String {
        h.subject_labels().get(&name).unwrap_or("").to_string()
    });
    let h = helpers.clone();
    engine.register_fn("firing", move |rule: ImmutableString| -> i64 { h.count_firing(&rule, &Labels::default()) });
    let h = helpers.clone();
    engine.register_fn("firing_on", move |rule: ImmutableString, label: ImmutableString| -> i64 {
        let subject = h.subject_labels();
        match subject.get(&label) {
            Some(value) => h.count_firing(&rule, &Labels::from_pairs([(label.as_str(), value)])),
            None => 0,
        }
    });
    let h = helpers.clone();
    engine.register_fn("firing_where", move |rule: ImmutableString, wanted: Map| -> i64 {
        let wanted = Labels(wanted.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        h.count_firing(&rule, &wanted)
    });
    let h = helpers.clone();
    engine.register_fn("peer", move || -> Map {
        let subject = h.subject_labels();
        let topology = h.lock().topology.clone();
        topology.and_then(|t| t.peer(&subject)).map(|p| to_map(&p)).unwrap_or_default()
    });
    let h = helpers.clone();
    engine.register_fn("job", move || -> String { h.subject_labels().get("job").unwrap_or("").to_string() });
    let h = helpers;
    engine.register_fn("job_nodes", move |job: ImmutableString| -> Array {
        let state = h.lock();
        state
            .jobs
            .get(job.as_str())
            .map(|nodes| nodes.iter().map(|n| Dynamic::from(n.clone())).collect())
            .unwrap_or_default()
    });
}
