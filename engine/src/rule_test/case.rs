//! Turning a parsed test file into validated cases: every duration parsed,
//! every values string expanded, every `at` on the step grid. What is wrong
//! is reported with the line and column it is written at.

use std::collections::{BTreeMap, BTreeSet};

use toml::Spanned;

use super::expand::{self, Number};
use super::format::{ActionSpec, CaseSpec, ExpectSpec, KindSpec, SeriesInput, TestFile};
use crate::config::{line_col, TomlError};
use crate::counter::{CounterSpec, Overflow, RateBound};
use crate::instance::State;
use crate::labels::Labels;
use crate::rule::selector::{MatchOp, Selector};
use crate::series::{SampleKind, SeriesSpec, Value};
use crate::time::{parse_duration, Nanos, Span};

/// Most series one case may declare. A case describes a few NICs; a
/// thousand series is many nodes' worth of counters.
pub const MAX_SERIES_PER_CASE: usize = 1_000;

/// A parsed, validated test file.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// The inventory path as written, with its position.
    pub inventory: Option<(String, (usize, usize))>,
    /// The cases.
    pub cases: Vec<Case>,
}

/// One validated case.
#[derive(Debug, Clone)]
pub(super) struct Case {
    pub name: String,
    pub interval: Nanos,
    pub steps: usize,
    pub series: Vec<CaseSeries>,
    pub expects: Vec<Expect>,
    pub actions: Vec<ExpectedAction>,
}

/// One input series with a value (or none) per step.
#[derive(Debug, Clone)]
pub(super) struct CaseSeries {
    pub spec: SeriesSpec,
    pub values: Vec<Option<Value>>,
    /// Where the series is written.
    pub pos: (usize, usize),
}

/// An expected state.
#[derive(Debug, Clone)]
pub(super) struct Expect {
    pub step: usize,
    pub state: State,
    pub subject: Option<Labels>,
    pub stale: Option<bool>,
    /// Where the row is, for errors found when the subjects are known.
    pub pos: (usize, usize),
}

/// An expected proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ExpectedAction {
    pub step: usize,
    pub kind: String,
    pub target: Labels,
    pub params: Option<BTreeMap<String, String>>,
}

/// Builds errors that point into one file.
pub(super) struct Locator<'a> {
    pub text: &'a str,
    pub origin: &'a str,
}

impl Locator<'_> {
    pub fn at(&self, pos: (usize, usize), message: impl Into<String>) -> TomlError {
        TomlError { path: self.origin.to_string(), line: pos.0, column: pos.1, message: message.into() }
    }

    pub fn pos<T>(&self, spanned: &Spanned<T>) -> (usize, usize) {
        line_col(self.text, spanned.span().start)
    }

    fn err<T>(&self, spanned: &Spanned<T>, message: impl Into<String>) -> TomlError {
        self.at(self.pos(spanned), message)
    }

    /// Where byte `offset` of a string value's content is, when the string
    /// is written on one line without escapes; else where the value starts.
    fn inside(&self, spanned: &Spanned<String>, offset: usize) -> (usize, usize) {
        let span = spanned.span();
        let raw = self.text.get(span.clone()).unwrap_or("");
        let plain = raw.len() == spanned.get_ref().len() + 2 && raw.get(1..raw.len() - 1) == Some(spanned.get_ref());
        if plain {
            line_col(self.text, span.start + 1 + offset)
        } else {
            line_col(self.text, span.start)
        }
    }
}

/// Parses and validates the test file `text`, named `origin` in errors.
pub(super) fn plan(text: &str, origin: &str) -> Result<Plan, TomlError> {
    let file: TestFile = crate::config::parse_toml(text, origin)?;
    let loc = Locator { text, origin };
    if file.cases.is_empty() {
        return Err(loc.at((1, 1), "the file has no [[case]]: a test file needs at least one case"));
    }
    let mut names = BTreeSet::new();
    let mut cases = Vec::new();
    for spanned in &file.cases {
        let case = spanned.get_ref();
        if !names.insert(case.name.clone()) {
            return Err(loc.err(spanned, format!("case name {:?} is used twice in this file", case.name)));
        }
        cases.push(build_case(&loc, case, loc.pos(spanned))?);
    }
    let inventory = file.inventory.as_ref().map(|i| (i.get_ref().clone(), loc.pos(i)));
    Ok(Plan { inventory, cases })
}

fn build_case(loc: &Locator<'_>, case: &CaseSpec, pos: (usize, usize)) -> Result<Case, TomlError> {
    let interval = parse_duration(case.interval.get_ref()).map_err(|e| loc.err(&case.interval, e.to_string()))?;
    if interval <= 0 {
        return Err(loc.err(&case.interval, "the interval must be positive"));
    }
    if case.series.len() > MAX_SERIES_PER_CASE {
        return Err(loc.at(pos, format!("case {:?} declares more than {MAX_SERIES_PER_CASE} series", case.name)));
    }
    let mut series = Vec::new();
    let mut seen = BTreeSet::new();
    for input in &case.series {
        let s = build_series(loc, input)?;
        if !seen.insert((s.spec.metric.clone(), s.spec.labels.clone())) {
            return Err(loc.err(&input.series, format!("series {:?} is declared twice", input.series.get_ref())));
        }
        series.push(s);
    }
    let longest = series.iter().map(|s| s.values.len()).max().unwrap_or(0);
    let steps = match &case.steps {
        None => longest,
        Some(steps) => {
            let n = usize::try_from(*steps.get_ref()).unwrap_or(usize::MAX);
            if n > expand::MAX_VALUES {
                return Err(loc.err(steps, format!("a case runs at most {} steps", expand::MAX_VALUES)));
            }
            if n < longest {
                return Err(loc.err(steps, format!("steps = {n}, but a values list has {longest} entries")));
            }
            n
        }
    };
    if steps == 0 {
        return Err(loc.at(pos, format!("case {:?} has no steps: give `steps` or some values", case.name)));
    }
    let last = (steps as i64 - 1)
        .checked_mul(interval)
        .filter(|t| t.checked_add(super::CASE_EPOCH).is_some())
        .ok_or_else(|| loc.at(pos, format!("case {:?} runs past the year 2262", case.name)))?;
    let step_of = |at: &Spanned<String>| -> Result<usize, TomlError> {
        let t = parse_duration(at.get_ref()).map_err(|e| loc.err(at, e.to_string()))?;
        if t % interval != 0 {
            return Err(
                loc.err(at, format!("at = {:?} is not a multiple of the interval {}", at.get_ref(), Span(interval)))
            );
        }
        if t > last {
            return Err(loc.err(
                at,
                format!("at = {:?} is after the last step ({}, step {})", at.get_ref(), Span(last), steps - 1),
            ));
        }
        Ok((t / interval) as usize)
    };
    let expects = case
        .expect
        .iter()
        .map(|e: &ExpectSpec| {
            Ok(Expect {
                step: step_of(&e.at)?,
                state: e.state,
                subject: e.subject.as_ref().map(|s| Labels(s.get_ref().clone())),
                stale: e.stale,
                pos: e.subject.as_ref().map(|s| loc.pos(s)).unwrap_or_else(|| loc.pos(&e.at)),
            })
        })
        .collect::<Result<Vec<_>, TomlError>>()?;
    let actions = case
        .action
        .iter()
        .map(|a: &ActionSpec| {
            Ok(ExpectedAction {
                step: step_of(&a.at)?,
                kind: a.kind.clone(),
                target: Labels(a.target.clone()),
                params: a.params.clone(),
            })
        })
        .collect::<Result<Vec<_>, TomlError>>()?;
    Ok(Case { name: case.name.clone(), interval, steps, series, expects, actions })
}

fn build_series(loc: &Locator<'_>, input: &SeriesInput) -> Result<CaseSeries, TomlError> {
    let text = input.series.get_ref();
    let selector = Selector::parse(text).map_err(|e| loc.err(&input.series, e.to_string()))?;
    let mut labels = Labels::default();
    for m in &selector.matchers {
        match &m.op {
            MatchOp::Eq(v) => labels.insert(m.label.clone(), v.clone()),
            _ => {
                return Err(loc.err(
                    &input.series,
                    format!("series {text:?}: label {:?} must be given with `=`; a test series is one series", m.label),
                ))
            }
        }
    }
    let kind = match input.kind {
        KindSpec::Counter => {
            let bits = input.bits.as_ref().map_or(64, |b| *b.get_ref());
            if !(1..=64).contains(&bits) {
                let b = input.bits.as_ref().expect("only an explicit width can be out of range");
                return Err(loc.err(b, format!("bits = {bits}: a counter is 1 to 64 bits wide")));
            }
            let overflow = input.overflow.as_ref().map_or(Overflow::Wrap, |o| *o.get_ref());
            SampleKind::Counter(CounterSpec { bits, overflow, bound: RateBound::Unknown, refresh_ms: 0 })
        }
        other => {
            let name = if other == KindSpec::Gauge { "gauge" } else { "event" };
            if let Some(b) = &input.bits {
                return Err(loc.err(b, format!("`bits` is for counters; this series is a {name}")));
            }
            if let Some(o) = &input.overflow {
                return Err(loc.err(o, format!("`overflow` is for counters; this series is a {name}")));
            }
            if other == KindSpec::Gauge {
                SampleKind::Gauge
            } else {
                SampleKind::Event
            }
        }
    };
    let numbers =
        expand::expand(input.values.get_ref()).map_err(|e| loc.at(loc.inside(&input.values, e.offset), e.message))?;
    let values = numbers
        .into_iter()
        .enumerate()
        .map(|(step, n)| {
            n.map(|n| value(kind, n))
                .transpose()
                .map_err(|m| loc.err(&input.values, format!("value of step {step}: {m}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CaseSeries {
        spec: SeriesSpec { metric: selector.metric.clone(), labels, kind },
        values,
        pos: loc.pos(&input.series),
    })
}

fn value(kind: SampleKind, n: Number) -> Result<Value, String> {
    match kind {
        SampleKind::Counter(spec) => match n {
            Number::Int(i) if (0..=spec.max() as i128).contains(&i) => Ok(Value::Count(i as u64)),
            Number::Int(i) => Err(format!("{i} does not fit a counter of {} bits (0 to {})", spec.bits, spec.max())),
            Number::Float(x) => Err(format!("{x} is not a whole number; counter readings are integers")),
        },
        SampleKind::Gauge | SampleKind::Event => Ok(Value::Real(n.as_f64())),
    }
}
