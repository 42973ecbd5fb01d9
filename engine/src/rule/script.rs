//! Calling a rule's `fire` and `clear` functions.

use std::sync::Arc;

use rhai::{CallFnOptions, Dynamic, EvalAltResult, ImmutableString, Position, Scope};

use super::decl::Rule;
use super::helpers::Helpers;
use crate::labels::LabelSet;

/// Which condition to evaluate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Condition {
    /// `fire(w)`: should an inactive or pending instance fire?
    Fire,
    /// `clear(w)`: may a firing instance resolve? (`!fire(w)` when the rule
    /// defines no `clear`.)
    Clear,
}

/// A rule script failed at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// What went wrong.
    pub message: String,
    /// 1-based line in the rule file, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    /// The script ran out of its operation budget (a runaway loop).
    pub over_budget: bool,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.line, self.column, self.message)
        } else {
            f.write_str(&self.message)
        }
    }
}

impl ScriptError {
    pub(crate) fn from_rhai(err: &EvalAltResult) -> ScriptError {
        let pos = innermost_position(err);
        ScriptError {
            message: err.to_string(),
            line: pos.line().unwrap_or(0),
            column: pos.position().unwrap_or(0),
            over_budget: matches!(innermost(err), EvalAltResult::ErrorTooManyOperations(_)),
        }
    }
}

fn innermost(err: &EvalAltResult) -> &EvalAltResult {
    match err {
        EvalAltResult::ErrorInFunctionCall(_, _, inner, _) => innermost(inner),
        other => other,
    }
}

fn innermost_position(err: &EvalAltResult) -> Position {
    match err {
        EvalAltResult::ErrorInFunctionCall(_, _, inner, pos) => {
            let p = innermost_position(inner);
            if p.is_none() {
                *pos
            } else {
                p
            }
        }
        other => other.position(),
    }
}

/// The window values handed to a script as `w`. `w.name` and `w["name"]`
/// read a window; a name the rule did not declare is an error, so a typo
/// cannot silently compare `()` with a threshold.
#[derive(Debug, Clone)]
pub struct WindowValues {
    names: Arc<[String]>,
    booleans: Arc<[bool]>,
    values: Vec<f64>,
}

impl WindowValues {
    /// Values for the windows `names`; `booleans[i]` marks windows (like
    /// `absent`) that scripts see as `true` / `false`.
    pub fn new(names: Arc<[String]>, booleans: Arc<[bool]>, values: Vec<f64>) -> WindowValues {
        WindowValues { names, booleans, values }
    }

    pub(crate) fn get(&mut self, name: ImmutableString) -> Result<Dynamic, Box<EvalAltResult>> {
        match self.names.iter().position(|n| n.as_str() == name.as_str()) {
            Some(i) if self.booleans[i] => Ok(Dynamic::from_bool(self.values[i] != 0.0)),
            Some(i) => Ok(Dynamic::from_float(self.values[i])),
            None => {
                Err(format!("unknown window {:?}; this rule declares: {}", name.as_str(), self.names.join(", ")).into())
            }
        }
    }
}

/// The sandboxed engine with its helper state; cheap to clone.
#[derive(Clone)]
pub struct RuleScripts {
    engine: Arc<rhai::Engine>,
    helpers: Helpers,
}

impl RuleScripts {
    /// A new sandbox whose helpers read `helpers`.
    pub fn new(helpers: Helpers) -> RuleScripts {
        RuleScripts { engine: Arc::new(super::sandbox::engine(helpers.clone())), helpers }
    }

    /// The Rhai engine.
    pub fn engine(&self) -> &rhai::Engine {
        &self.engine
    }

    /// The helper state the scripts read.
    pub fn helpers(&self) -> &Helpers {
        &self.helpers
    }

    /// Evaluates `cond` of `rule` for the subject `subject`.
    pub fn eval(&self, rule: &Rule, cond: Condition, subject: &LabelSet, w: WindowValues) -> Result<bool, ScriptError> {
        self.helpers.set_subject(subject);
        let (func, negate) = match cond {
            Condition::Fire => ("fire", false),
            Condition::Clear if rule.has_clear => ("clear", false),
            Condition::Clear => ("fire", true),
        };
        let mut scope = Scope::new();
        let result: Dynamic = self
            .engine
            .call_fn_with_options(CallFnOptions::new().eval_ast(false), &mut scope, &rule.ast, func, (w,))
            .map_err(|e| ScriptError::from_rhai(&e))?;
        let value = result.as_bool().map_err(|ty| ScriptError {
            message: format!("{func}() must return a bool, it returned {ty}"),
            line: 0,
            column: 0,
            over_budget: false,
        })?;
        Ok(value != negate)
    }
}
