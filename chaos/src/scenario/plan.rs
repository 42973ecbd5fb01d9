//! A scenario resolved on the shared plan (`crate::plan`): durations in
//! nanoseconds, paths resolved, the inventory loaded, selectors checked
//! against it; and the schedule of one run.
//!
//! - [`links`]: the veth names of the wall-clock faults, checked.

pub mod links;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::time::{Nanos, MS};
use engine::Topology;
use sim::fabric::{Effect, Fabric, JobSpec};
use toml::Spanned;

use super::spec::{Abort, ActionMatch, Clock, Expect, Probe, Scenario};
use crate::plan::{locate, site, span_or, Bound, Ctx, FaultPlan};
use crate::spec::{Dur, FaultKind, FaultSpec, Keyed, ScenarioError};

/// The jobs' step time must come back: `step_time` in `[expect]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepTimePlan {
    /// How far from the pre-fault baseline counts as back, a fraction.
    pub within: f64,
    /// The deadline, from each fault's end (or its mitigation when it does
    /// not end within the run).
    pub after: Nanos,
}

/// The probe that times the jobs, recorded in every run of a scenario with
/// a `[[job]]`.
pub const STEP_TIME_PROBE: &str = "step_time_ratio";

/// The expectations, resolved.
#[derive(Debug, Clone, Default)]
pub struct ExpectPlan {
    /// Rule and deadline.
    pub detect: Option<(String, Nanos)>,
    /// Action kind and deadline.
    pub mitigate: Option<(String, Nanos)>,
    /// Deadlines count from the trigger (the last fault occurrence before
    /// detection) instead of the first fault.
    pub from_trigger: bool,
    /// Deadline for the steady state.
    pub recover_within: Option<Nanos>,
    /// Must happen.
    pub must: Vec<ActionMatch>,
    /// Must not happen.
    pub must_not: Vec<ActionMatch>,
    /// Most actions.
    pub max_actions: Option<usize>,
    /// Most rails per plane.
    pub max_rails_drained_per_plane: Option<usize>,
    /// No healthy node cordoned.
    pub no_healthy_node_cordoned: bool,
    /// Fewest held proposals.
    pub min_held: Option<usize>,
    /// The jobs' step time back near its baseline.
    pub step_time: Option<StepTimePlan>,
}

/// An abort condition, resolved.
#[derive(Debug, Clone)]
pub struct AbortPlan {
    /// The probe's bound: the run aborts while it does not hold.
    pub bound: Bound,
    /// For how long.
    pub for_: Nanos,
}

/// A scenario resolved.
#[derive(Debug, Clone)]
pub struct ScenarioPlan {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// The inventory.
    pub topology: Arc<Topology>,
    /// The rule directory the scenario names (`rules`); without one, the
    /// playbook's `rules`.
    pub rules_dir: Option<PathBuf>,
    /// The playbook: the scenario's `playbook`, else `playbooks/chaos.toml`
    /// found from the scenario's folder or the current directory; `None`
    /// when there is none, and the built-in chaos playbook is used.
    pub playbook: Option<PathBuf>,
    /// Clock.
    pub clock: Clock,
    /// Step (sensor interval).
    pub step: Nanos,
    /// Run length.
    pub duration: Nanos,
    /// Runs.
    pub runs: u32,
    /// Seed of run 0.
    pub seed: u64,
    /// Jobs.
    pub jobs: Vec<JobSpec>,
    /// The probes recorded, with their steady-state bounds; a probe
    /// recorded only to be reported (the jobs' step time) has neither `min`
    /// nor `max`.
    pub probes: Vec<Bound>,
    /// How long bounds must hold to count as recovered.
    pub hold: Nanos,
    /// Faults.
    pub faults: Vec<FaultPlan>,
    /// Expectations.
    pub expect: ExpectPlan,
    /// Aborts.
    pub aborts: Vec<AbortPlan>,
    /// Approvals: requests of a kind pattern approved this long after they were made.
    pub approve: Vec<(String, Nanos)>,
}

/// One occurrence of a fault in one run.
#[derive(Debug, Clone)]
pub struct Scheduled {
    /// Index of the fault in the scenario.
    pub fault: usize,
    /// What.
    pub kind: FaultKind,
    /// What and where, for people.
    pub label: String,
    /// Start, offset from the run's start.
    pub start: Nanos,
    /// End, if it ends within the run.
    pub end: Option<Nanos>,
    /// What it does to the fabric (empty for real-link faults).
    pub effects: Vec<Effect>,
    /// The nodes it touches (for "no healthy node cordoned").
    pub nodes: Vec<String>,
}

/// The playbook a scenario runs with when it names none.
pub const DEFAULT_PLAYBOOK: &str = "playbooks/chaos.toml";

fn probe_known(name: &Spanned<String>, ctx: &Ctx) -> Result<String, ScenarioError> {
    if sim::fabric::physics::PROBES.iter().any(|(p, _)| p == name.get_ref()) {
        Ok(name.get_ref().clone())
    } else {
        let known: Vec<&str> = sim::fabric::physics::PROBES.iter().map(|(p, _)| *p).collect();
        Err(ctx.err(name.span(), format!("unknown probe {:?}; known: {}", name.get_ref(), known.join(", "))))
    }
}

impl Scenario {
    /// Checks the scenario and resolves it; `text` and `origin` are the
    /// file's, for error locations; `base` is its directory. `inventory`,
    /// when given (a daemon config's), replaces the scenario's.
    pub fn resolve(
        &self,
        text: &str,
        origin: &str,
        base: &Path,
        inventory: Option<Arc<Topology>>,
    ) -> Result<ScenarioPlan, ScenarioError> {
        let ctx = Ctx { text, origin, base: base.to_path_buf(), what: "scenario" };
        // The first error stops the resolution, so this order decides which
        // of several mistakes is reported: keep it.
        let topology = match inventory {
            Some(topology) => topology,
            None => Arc::new(self.topology(&ctx)?),
        };
        let rules_dir = self.rules.as_ref().map(|r| ctx.path(r, "rules")).transpose()?;
        let playbook = match &self.playbook {
            Some(p) => Some(ctx.path(p, "playbook")?),
            None => locate(base, DEFAULT_PLAYBOOK),
        };
        let (step, duration) = self.timing(&ctx)?;
        let mut probes = self.steady_state.probe.iter().map(|p| p.resolve(&ctx)).collect::<Result<Vec<_>, _>>()?;
        // Every report says what the faults cost the jobs: their step time
        // is recorded whenever there is a job, bounded or not.
        if !self.job.is_empty() && !probes.iter().any(|b| b.probe == STEP_TIME_PROBE) {
            probes.push(Bound { probe: STEP_TIME_PROBE.into(), min: None, max: None });
        }
        let hold = ctx.opt(&self.steady_state.hold, "steady_state.hold", 500 * MS)?;
        let fabric = self.check_fabric(&topology, &ctx)?;
        let mut faults =
            self.fault.iter().map(|f| resolve_fault(f, self.clock, &fabric, &ctx)).collect::<Result<Vec<_>, _>>()?;
        let mut labels: Vec<String> = faults.iter().map(|f| f.label.clone()).collect();
        site::unique(&mut labels);
        for (f, label) in faults.iter_mut().zip(labels) {
            f.label = label;
        }
        links::check_all(&self.fault, &faults, duration, &ctx)?;
        let expect = self.expect.resolve(&ctx)?;
        self.check_expect(&expect, &probes, &faults, step, &ctx)?;
        let aborts = self.abort.iter().map(|a| a.resolve(&ctx)).collect::<Result<Vec<_>, _>>()?;
        if self.clock == Clock::Wall && !self.approve.is_empty() {
            return Err(ctx
                .err(0..0, "[[approve]] is for the virtual clock; on the wall clock approve with `rocemend approve`"));
        }
        Ok(ScenarioPlan {
            name: self.name.clone(),
            description: self.description.clone(),
            topology,
            rules_dir,
            playbook,
            clock: self.clock,
            step,
            duration,
            runs: self.runs.max(1),
            seed: self.seed,
            jobs: self.job.clone(),
            probes,
            hold,
            faults,
            expect,
            aborts,
            approve: self
                .approve
                .iter()
                .map(|a| Ok((a.action.clone(), ctx.dur(&a.after, "approve.after")?)))
                .collect::<Result<_, ScenarioError>>()?,
        })
    }

    /// The inventory: the documentation's example, or the file named
    /// (relative to `base`), or, where that file is not, the library's
    /// inventory of that name (a built-in scenario run anywhere).
    fn topology(&self, ctx: &Ctx) -> Result<Topology, ScenarioError> {
        let name = self.inventory.get_ref();
        if name == "example" {
            return Topology::parse(engine::topology::EXAMPLE_INVENTORY, "docs/examples/inventory.toml")
                .map_err(|e| ctx.err(self.inventory.span(), e.to_string()));
        }
        match (ctx.path(&self.inventory, "inventory"), super::inventories::built_in(name)) {
            (Err(_), Some(text)) => Topology::parse(text, name),
            (path, _) => Topology::load(&path?),
        }
        .map_err(|e| ctx.err(self.inventory.span(), format!("inventory: {e}")))
    }

    /// The step (at least 1 ms) and the run's length (at least one step).
    fn timing(&self, ctx: &Ctx) -> Result<(Nanos, Nanos), ScenarioError> {
        let step = ctx.opt(&self.step, "step", 100 * MS)?;
        if step < MS {
            return Err(ctx.err(self.step.as_ref().map(Dur::span).unwrap_or(0..0), "step must be at least 1ms"));
        }
        let duration = ctx.dur(&self.duration, "duration")?;
        if duration < step {
            return Err(ctx.err(self.duration.span(), "duration is shorter than one step"));
        }
        Ok((step, duration))
    }

    /// A fabric of the inventory with the jobs placed, never run: building
    /// it checks the jobs' nodes, and it checks the faults' selectors.
    fn check_fabric(&self, topology: &Arc<Topology>, ctx: &Ctx) -> Result<Fabric, ScenarioError> {
        Fabric::new(topology.clone(), &self.job, 0, 0).map_err(|e| ctx.err(self.inventory.span(), e.to_string()))
    }

    /// Expectations that need something else of the scenario: a recovery
    /// deadline needs a bounded probe (else nothing says the fabric
    /// recovered), and the step time needs jobs on the virtual clock and a
    /// step before the first fault for its baseline.
    fn check_expect(
        &self,
        expect: &ExpectPlan,
        probes: &[Bound],
        faults: &[FaultPlan],
        step: Nanos,
        ctx: &Ctx,
    ) -> Result<(), ScenarioError> {
        if let Some(within) = &self.expect.recover_within {
            if !probes.iter().any(Bound::bounds) {
                return Err(ctx.err(
                    within.span(),
                    "recover_within needs a [[steady_state.probe]] with `min` or `max`: without one nothing says the fabric recovered",
                ));
            }
        }
        let (Some(spec), Some(plan)) = (&self.expect.step_time, &expect.step_time) else { return Ok(()) };
        if self.clock != Clock::Virtual {
            return Err(ctx.err(spec.span(), "step_time needs the virtual clock: only simulated jobs are timed"));
        }
        if self.job.is_empty() {
            return Err(ctx.err(spec.span(), "step_time needs a [[job]]: the step time is the jobs'"));
        }
        let within = &spec.get_ref().within;
        if !(plan.within > 0.0 && plan.within <= 1.0) {
            let span = if within.span().is_empty() { spec.span() } else { within.span() };
            return Err(ctx.err(span, format!("step_time.within {} is not a fraction in (0, 1]", plan.within)));
        }
        if let Some((i, first)) = faults.iter().enumerate().min_by_key(|(_, f)| f.at) {
            // The first probe point is taken at the end of the first step;
            // a fault that starts by then leaves no point before it.
            if first.at <= step {
                return Err(ctx.err(
                    self.fault[i].value.place(),
                    format!(
                        "step_time needs a baseline before the first fault, which starts at {} ms, by the end of the first step ({} ms)",
                        first.at / MS,
                        step / MS
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl Probe {
    /// The probe's bounds, the probe checked.
    fn resolve(&self, ctx: &Ctx) -> Result<Bound, ScenarioError> {
        Ok(Bound { probe: probe_known(&self.name, ctx)?, min: self.min, max: self.max })
    }
}

/// The keys of a fault that are a game day's: its name, and what the
/// daemons must do about it.
const GAME_KEYS: &[&str] = &["name", "expect"];

/// A fault resolved on the shared plan, after what only a scenario
/// checks: its keys, its start, its target (and `clock`), its repeats, its
/// BER, its real link.
fn resolve_fault(f: &Keyed<FaultSpec>, clock: Clock, fabric: &Fabric, ctx: &Ctx) -> Result<FaultPlan, ScenarioError> {
    if let Some((key, span)) = f.first_key_not(|k| !GAME_KEYS.contains(&k)) {
        return Err(
            ctx.err(span, format!("`{key}` is a fleet game day's key (`rocemend chaos fleet`), not a scenario's"))
        );
    }
    let spec = &f.value;
    if spec.at.is_none() {
        return Err(ctx.err(spec.kind.span(), "missing field `at`: when the fault starts, from the run's start"));
    }
    check_target(spec, clock, fabric, ctx)?;
    let every = ctx.opt(&spec.every, "every", 0)?;
    if spec.repeats > 1 && every == 0 {
        return Err(ctx.err(spec.place(), "repeats > 1 needs `every`"));
    }
    let ber = spec.ber.unwrap_or(1e-9);
    if !(0.0..1.0).contains(&ber) {
        return Err(ctx.err(spec.place(), format!("ber {ber} is not a rate in [0, 1)")));
    }
    let (link, peer) = links::pair(spec, ctx)?;
    spec.resolve(ctx, fabric, link, peer)
}

/// Whether the fault can land: real-link faults need the wall clock and
/// a `link`; `gnmi_silent` a leaf to silence; every other fault a
/// selector that matches NICs of `fabric`.
fn check_target(spec: &FaultSpec, clock: Clock, fabric: &Fabric, ctx: &Ctx) -> Result<(), ScenarioError> {
    let kind = *spec.kind.get_ref();
    let select = spec.select.as_ref().map(|s| s.get_ref().clone()).unwrap_or_default();
    let select_span = span_or(&spec.select, spec.place());
    if kind.needs_real_links() {
        if clock != Clock::Wall {
            return Err(ctx.err(spec.place(), format!("fault {kind:?} needs real links: set clock = \"wall\"")));
        }
        if spec.link.is_none() {
            return Err(ctx.err(spec.place(), format!("fault {kind:?} needs `link`, the veth to impair")));
        }
    } else if clock == Clock::Wall {
        // The wall clock has real links and no simulated fabric: a
        // fabric fault would have nothing to act on.
        return Err(ctx.err(spec.place(), format!("fault {kind:?} is a simulator fault: it needs clock = \"virtual\"")));
    } else if kind == FaultKind::HashChange {
        if let Some(s) = select.switch.as_ref().filter(|s| fabric.leaf(s).is_none()) {
            return Err(ctx.err(select_span, format!("hash_change: {s:?} is not a leaf of the inventory")));
        }
    } else if !matches!(kind, FaultKind::GnmiSilent | FaultKind::UplinkCongestion) {
        fabric.select(&select).map_err(|e| ctx.err(select_span, e.to_string()))?;
        if let Some(job) = spec.job.as_ref().filter(|_| kind == FaultKind::JobRelaunch) {
            if fabric.job_index(job.get_ref()).is_none() {
                return Err(ctx.err(job.span(), format!("job {:?} is not a [[job]] of the scenario", job.get_ref())));
            }
        }
    } else if select.switch.as_ref().is_none_or(|s| fabric.leaf(s).is_none()) {
        return Err(ctx.err(select_span, format!("{} needs `select.switch`, a leaf of the inventory", kind.name())));
    }
    Ok(())
}

impl Expect {
    /// The expectations, their deadlines in nanoseconds.
    fn resolve(&self, ctx: &Ctx) -> Result<ExpectPlan, ScenarioError> {
        Ok(ExpectPlan {
            detect: self.detect.as_ref().map(|d| deadline(&d.rule, &d.within, "detect.within", ctx)).transpose()?,
            mitigate: self
                .mitigate
                .as_ref()
                .map(|m| deadline(&m.action, &m.within, "mitigate.within", ctx))
                .transpose()?,
            from_trigger: self.counts_from_trigger(ctx)?,
            recover_within: self.recover_within.as_ref().map(|d| ctx.dur(d, "recover_within")).transpose()?,
            must: self.must.clone(),
            must_not: self.must_not.clone(),
            max_actions: self.max_actions,
            max_rails_drained_per_plane: self.max_rails_drained_per_plane,
            no_healthy_node_cordoned: self.no_healthy_node_cordoned,
            min_held: self.min_held,
            step_time: self
                .step_time
                .as_ref()
                .map(|s| {
                    let s = s.get_ref();
                    Ok::<_, ScenarioError>(StepTimePlan {
                        within: *s.within.get_ref(),
                        after: ctx.dur(&s.after, "step_time.after")?,
                    })
                })
                .transpose()?,
        })
    }

    /// Whether the deadlines count from the trigger (`from = "trigger"`)
    /// rather than the first fault (`"fault"`, the default).
    fn counts_from_trigger(&self, ctx: &Ctx) -> Result<bool, ScenarioError> {
        match self.from.as_ref().map(|f| f.get_ref().as_str()) {
            None | Some("fault") => Ok(false),
            Some("trigger") => Ok(true),
            Some(other) => {
                Err(ctx.err(span_or(&self.from, 0..0), format!("from {other:?}: expected \"fault\" or \"trigger\"")))
            }
        }
    }
}

/// What must happen (a rule, an action kind) and its deadline; `field`
/// names the deadline in errors.
fn deadline(what: &str, within: &Dur, field: &str, ctx: &Ctx) -> Result<(String, Nanos), ScenarioError> {
    Ok((what.to_string(), ctx.dur(within, field)?))
}

impl Abort {
    /// The abort condition: the bound the probe must keep, and for how long
    /// it may not.
    fn resolve(&self, ctx: &Ctx) -> Result<AbortPlan, ScenarioError> {
        Ok(AbortPlan {
            bound: Bound { probe: probe_known(&self.probe, ctx)?, min: self.below, max: self.above },
            for_: ctx.opt(&self.for_, "for", 0)?,
        })
    }
}

impl ScenarioPlan {
    /// The faults of one run on real links (no fabric), in start order;
    /// `seed` draws the jitter.
    pub fn schedule_real(&self, seed: u64) -> Vec<Scheduled> {
        let mut rng = fastrand::Rng::with_seed(seed ^ 0x5eed_f417);
        let mut out = Vec::new();
        for (fi, f) in self.faults.iter().enumerate() {
            let jitter = if f.jitter > 0 { rng.i64(0..=f.jitter) } else { 0 };
            for r in 0..f.repeats {
                let start = f.at + jitter + r as i64 * f.every;
                out.push(Scheduled {
                    fault: fi,
                    kind: f.kind,
                    label: f.label.clone(),
                    start,
                    end: f.duration.map(|d| start + d),
                    effects: Vec::new(),
                    nodes: Vec::new(),
                });
            }
        }
        out.sort_by_key(|s| s.start);
        out
    }

    /// The faults of one run, in start order, each with its fabric effects;
    /// `seed` draws the jitter.
    pub fn schedule(&self, fabric: &Fabric, seed: u64) -> Vec<Scheduled> {
        let mut rng = fastrand::Rng::with_seed(seed ^ 0x5eed_f417);
        let mut out = Vec::new();
        for (fi, f) in self.faults.iter().enumerate() {
            let nics = fabric.select(&f.select).unwrap_or_default();
            let jitter = if f.jitter > 0 { rng.i64(0..=f.jitter) } else { 0 };
            let effects: Vec<Effect> = f.effects(fabric);
            let mut nodes: Vec<String> = nics.iter().map(|&i| fabric.nics[i].node.clone()).collect();
            nodes.sort();
            nodes.dedup();
            for r in 0..f.repeats {
                let start = f.at + jitter + r as i64 * f.every;
                let end = f.duration.map(|d| start + d);
                let (effects, nodes, label) = (effects.clone(), nodes.clone(), f.label.clone());
                out.push(Scheduled { fault: fi, kind: f.kind, label, start, end, effects, nodes });
            }
        }
        out.sort_by_key(|s| s.start);
        out
    }
}
