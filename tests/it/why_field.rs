//! `rocemend why` on the field generator (`chaos/sim/src/field_cases/`),
//! which does not share `why`'s assumptions: two scalable units of 16
//! nodes × 8 rails, tenants on the other nodes, each sensor at its own
//! cadence (step time pushed at each step's end, DCGM every 10 s with its
//! noisy fields, SONiC's 10 s queue refresh, Broadcom switches without
//! pause durations), bursty jobs, jobs that hang, and negative controls
//! (the job's own loader, checkpoints, a slow host, a hang on a healthy
//! fabric) whose answer is "not the fabric".
//!
//! The CI test holds the line the issue sets (top-1 at least 85 %, at most
//! 10 % confident wrong answers on the negative controls) on the first
//! [`CI_CASES`] seeds; the 200-case table in docs/operations.md is
//! `cargo test --release --test it -- why_field::two_hundred --ignored --nocapture`.

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::Topology;
use ops::why;
use sim::field_cases::{self, FieldCase, FieldKind};

/// Seeds the CI test runs (a debug build analyses a case in about a second).
const CI_CASES: u64 = 80;
/// The first seed.
const FIRST_SEED: u64 = 1;
/// A verdict at least this sure counts as confident.
const CONFIDENT: f64 = 0.5;

const NOT_THE_FABRIC: &str = "not the fabric";

fn topology() -> Arc<Topology> {
    Arc::new(Topology::parse(&field_cases::inventory_toml(), "field").expect("the field inventory parses"))
}

/// One case's outcome.
#[derive(Debug, Clone)]
struct Outcome {
    seed: u64,
    kind: FieldKind,
    /// The answers in order: "not the fabric" first when that is the verdict, then the ranking.
    answers: Vec<String>,
    confidence: f64,
    truth: Vec<String>,
    description: String,
}

impl Outcome {
    fn top1(&self) -> bool {
        self.answers.first().is_some_and(|a| self.truth.contains(a))
    }

    fn top3(&self) -> bool {
        self.answers.iter().take(3).any(|a| self.truth.contains(a))
    }

    fn fabric_answer(&self) -> bool {
        self.answers.first().is_some_and(|a| a != NOT_THE_FABRIC)
    }
}

/// `why` on case `seed`, as the verb runs it: the job's regression found in its step time.
fn outcome(seed: u64, topology: &Arc<Topology>) -> Outcome {
    let case: FieldCase = field_cases::case(seed);
    let bytes = field_cases::record(&case);
    let analysed = why::series::read(&bytes[..], "field").map_err(|e| e.to_string()).and_then(|rec| {
        let q = why::Query {
            job: &case.job,
            span: None,
            threshold: why::window::DEFAULT_THRESHOLD,
            topology: Some(topology),
            all_metrics: false,
        };
        why::analyze(&rec, &q, &[], |_| String::new()).map_err(|e| e.to_string())
    });
    let (answers, confidence) = match analysed {
        Ok(r) => {
            // What the verdict leads with: "not the fabric", or an ECMP collision on a leaf
            // behind the top element, or the top element.
            let lead = match r.ranking.first() {
                _ if !r.answer.fabric => Some(NOT_THE_FABRIC.to_string()),
                Some(top) => why::render::collision_behind(&r, top).map(|c| format!("switch {}", c.switch)),
                None => None,
            };
            (lead.into_iter().chain(r.ranking.iter().map(|e| e.element.to_string())).collect(), r.answer.confidence)
        }
        Err(e) => (vec![format!("error: {e}")], 0.0),
    };
    Outcome { seed, kind: case.kind, answers, confidence, truth: case.truth, description: case.description }
}

/// The figures over a set of outcomes.
#[derive(Debug, Default)]
struct Tally {
    faults: usize,
    top1: usize,
    top3: usize,
    controls: usize,
    not_the_fabric: usize,
    confident_wrong_controls: usize,
    by_kind: BTreeMap<FieldKind, (usize, usize, usize)>,
}

impl Tally {
    fn of(outcomes: &[Outcome]) -> Tally {
        let mut t = Tally::default();
        for o in outcomes {
            let k = t.by_kind.entry(o.kind).or_default();
            k.0 += 1;
            k.1 += usize::from(o.top1());
            k.2 += usize::from(o.top3());
            if o.kind.is_fabric_or_gpu() {
                t.faults += 1;
                t.top1 += usize::from(o.top1());
                t.top3 += usize::from(o.top3());
            } else {
                t.controls += 1;
                t.not_the_fabric += usize::from(o.top1());
                t.confident_wrong_controls += usize::from(o.fabric_answer() && o.confidence >= CONFIDENT);
            }
        }
        t
    }

    fn share(n: usize, of: usize) -> f64 {
        n as f64 / of.max(1) as f64
    }

    /// The table docs/operations.md shows.
    fn markdown(&self) -> String {
        let pct = |n: usize, of: usize| format!("{n}/{of} ({:.0} %)", 100.0 * Tally::share(n, of));
        let mut out = String::from("| cause | cases | top-1 | top-3 |\n|---|---|---|---|\n");
        for (kind, (n, one, three)) in &self.by_kind {
            out.push_str(&format!("| {} | {n} | {} | {} |\n", kind.name(), pct(*one, *n), pct(*three, *n)));
        }
        out.push_str(&format!(
            "| **faults** | {} | {} | {} |\n| **negative controls** (\"not the fabric\") | {} | {} | confident wrong: {} |\n",
            self.faults,
            pct(self.top1, self.faults),
            pct(self.top3, self.faults),
            self.controls,
            pct(self.not_the_fabric, self.controls),
            pct(self.confident_wrong_controls, self.controls),
        ));
        out
    }
}

/// The outcomes of `seeds`, in order, the cases shared out over the cores (each case is
/// independent; one thread of a debug build takes minutes for the CI's set).
fn run(seeds: std::ops::Range<u64>) -> Vec<Outcome> {
    let topology = topology();
    let seeds: Vec<u64> = seeds.collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = seeds.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let shares: Vec<_> = seeds
            .chunks(chunk)
            .map(|share| scope.spawn(|| share.iter().map(|&seed| outcome(seed, &topology)).collect::<Vec<_>>()))
            .collect();
        shares.into_iter().flat_map(|share| share.join().expect("a case panicked")).collect()
    })
}

fn misses(outcomes: &[Outcome]) -> Vec<String> {
    outcomes
        .iter()
        .filter(|o| !o.top1())
        .map(|o| {
            let got: Vec<&String> = o.answers.iter().take(3).collect();
            format!("seed {} {}: want {:?}, got {got:?} ({:.2})", o.seed, o.description, o.truth, o.confidence)
        })
        .collect()
}

#[test]
fn the_field_generators_faults_are_named_and_its_healthy_fabrics_are_not_blamed() {
    let outcomes = run(FIRST_SEED..FIRST_SEED + CI_CASES);
    let t = Tally::of(&outcomes);
    println!("{CI_CASES} field cases:\n{}", t.markdown());
    let misses = misses(&outcomes);
    for m in &misses {
        println!("miss: {m}");
    }
    assert!(t.faults > 0 && t.controls > 0, "the cases hold faults and controls: {t:?}");
    assert!(Tally::share(t.top1, t.faults) >= 0.85, "top-1 below 85 %: {}", t.markdown());
    assert!(
        Tally::share(t.confident_wrong_controls, t.controls) <= 0.10,
        "confident wrong answers on negative controls above 10 %: {}",
        t.markdown()
    );
}

/// The figures of docs/operations.md, and how well the confidence is calibrated.
#[test]
#[ignore = "200 cases: run in release for the docs' table"]
fn two_hundred_field_cases() {
    let outcomes = run(FIRST_SEED..FIRST_SEED + 200);
    let t = Tally::of(&outcomes);
    println!("200 field cases:\n{}", t.markdown());
    for m in misses(&outcomes) {
        println!("miss: {m}");
    }
    // Calibration: of the verdicts said with a confidence in each band, how many were right.
    let mut bands: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    for o in &outcomes {
        let band = bands.entry(((o.confidence * 5.0).floor() as u32).min(4)).or_default();
        band.0 += 1;
        band.1 += usize::from(o.top1());
    }
    println!("| confidence | verdicts | right |\n|---|---|---|");
    for (band, (n, right)) in bands {
        let lo = band as f64 / 5.0;
        println!("| {lo:.1}–{:.1} | {n} | {:.0} % |", lo + 0.2, 100.0 * Tally::share(right, n));
    }
}

/// One case's whole answer, for looking into a miss:
/// `FIELD_SEED=17 cargo test --release --test it -- why_field::one_case --ignored --nocapture`.
#[test]
#[ignore = "a tool for looking into one case"]
fn one_case() {
    let seed: u64 = std::env::var("FIELD_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(FIRST_SEED);
    let topology = topology();
    let case = field_cases::case(seed);
    println!("{}\ntruth: {:?}", case.description, case.truth);
    let bytes = field_cases::record(&case);
    let rec = why::series::read(&bytes[..], "field").unwrap();
    let q = why::Query {
        job: &case.job,
        span: None,
        threshold: why::window::DEFAULT_THRESHOLD,
        topology: Some(&topology),
        all_metrics: false,
    };
    match why::analyze(&rec, &q, &[], |_| String::new()) {
        Ok(r) => println!("{}", why::render::text(&r)),
        Err(e) => println!("error: {e}"),
    }
}
