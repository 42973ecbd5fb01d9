//! Native predicates give Rhai's answers.
//!
//! - `random_expressions_agree_with_rhai`: random `fire` bodies of the shape
//!   that compiles natively (window values, integer, float and boolean
//!   literals, `+ - * /`, unary `-`, comparisons, `&&`, `||`, `!`,
//!   `if`/`else`, a helper function of the file), each compiled natively
//!   and run by the sandbox's Rhai engine on random window values (NaN,
//!   ±inf, ±0, the largest and smallest floats, values within a few
//!   `f64::EPSILON` of the literals, any `f64`): the same outcome, true,
//!   false or error (an error is `None` natively: the script must run);
//! - `standard_rules_run_natively`: every rule of `rules/` compiles natively,
//!   both conditions, or the test names the rule and the reason;
//! - `standard_rules_agree_with_rhai`: the standard rules' conditions, native
//!   and on Rhai, on random window values.

use std::sync::Arc;

use engine::labels::LabelSet;
use engine::rule::script::WindowValues;
use engine::rule::{self, sandbox, Condition, NativePredicate, Rule, RuleScripts};
use engine::Helpers;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rhai::{CallFnOptions, Dynamic, Scope};

/// Float windows `a`, `b`, `c` and a boolean (`absent`-style) window `p`.
const WINDOWS: [(&str, bool); 4] = [("a", false), ("b", false), ("c", false), ("p", true)];

/// Float literals as written in the script (parsed by Rhai).
const FLOATS: &[&str] = &[
    "0.0",
    "(-0.0)",
    "1.0",
    "0.5",
    "2.5",
    "(-3.0)",
    "0.1",
    "1e6",
    "1e-6",
    "1e300",
    "(-1e300)",
    "1e-300",
    "4294967295.0",
    "1.7976931348623157e308",
];
/// Their values, for window values close to them.
const FLOAT_VALUES: &[f64] =
    &[0.0, -0.0, 1.0, 0.5, 2.5, -3.0, 0.1, 1e6, 1e-6, 1e300, -1e300, 1e-300, 4294967295.0, f64::MAX];
/// Integer literals, with the edges of `i64`.
const INTS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "(-1)",
    "1000000",
    "2147483648",
    "4611686018427387904",
    "9223372036854775807",
    "(-9223372036854775807)",
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ty {
    Float,
    Int,
    Bool,
}

/// Writes a random expression of a type from a tape of random numbers, so
/// that proptest shrinks a failing expression by shrinking its tape.
struct Gen<'a> {
    tape: &'a [u32],
    at: usize,
    /// Whether `h(w)` (a float helper of the file) may be called.
    helper: bool,
}

impl Gen<'_> {
    fn next(&mut self, n: u32) -> u32 {
        let x = self.tape.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        x % n
    }

    fn pick<'s>(&mut self, items: &[&'s str]) -> &'s str {
        items[self.next(items.len() as u32) as usize]
    }

    fn num(&mut self, depth: u32) -> String {
        let ty = if self.next(3) == 0 { Ty::Int } else { Ty::Float };
        self.expr(ty, depth)
    }

    fn expr(&mut self, ty: Ty, depth: u32) -> String {
        let leaf = depth == 0 || self.next(3) == 0;
        match (ty, leaf) {
            (Ty::Float, true) => match self.next(if self.helper { 6 } else { 5 }) {
                0 => "w.a".into(),
                1 => "w.b".into(),
                2 => "w[\"c\"]".into(),
                5 => "h(w)".into(),
                _ => self.pick(FLOATS).into(),
            },
            (Ty::Int, true) => self.pick(INTS).into(),
            (Ty::Bool, true) => match self.next(4) {
                0 => "true".into(),
                1 => "false".into(),
                _ => "w.p".into(),
            },
            (Ty::Float, false) => match self.next(4) {
                0 => format!("(-{})", self.expr(Ty::Float, depth - 1)),
                1 => {
                    let cond = self.expr(Ty::Bool, depth - 1);
                    let (t, e) = (self.expr(Ty::Float, depth - 1), self.expr(Ty::Float, depth - 1));
                    format!("(if {cond} {{ {t} }} else {{ {e} }})")
                }
                _ => {
                    // At least one float operand makes a float.
                    let (x, y) = if self.next(2) == 0 {
                        (self.expr(Ty::Float, depth - 1), self.num(depth - 1))
                    } else {
                        (self.num(depth - 1), self.expr(Ty::Float, depth - 1))
                    };
                    let op = self.pick(&["+", "-", "*", "/"]);
                    format!("({x} {op} {y})")
                }
            },
            (Ty::Int, false) => match self.next(4) {
                0 => format!("(-{})", self.expr(Ty::Int, depth - 1)),
                1 => {
                    let cond = self.expr(Ty::Bool, depth - 1);
                    let (t, e) = (self.expr(Ty::Int, depth - 1), self.expr(Ty::Int, depth - 1));
                    format!("(if {cond} {{ {t} }} else {{ {e} }})")
                }
                _ => {
                    let (x, y) = (self.expr(Ty::Int, depth - 1), self.expr(Ty::Int, depth - 1));
                    let op = self.pick(&["+", "-", "*", "/"]);
                    format!("({x} {op} {y})")
                }
            },
            (Ty::Bool, false) => match self.next(7) {
                0 | 1 => {
                    let (x, y) = (self.num(depth - 1), self.num(depth - 1));
                    let op = self.pick(&["<", "<=", ">", ">=", "==", "!="]);
                    format!("({x} {op} {y})")
                }
                2 => {
                    let (x, y) = (self.expr(Ty::Bool, depth - 1), self.expr(Ty::Bool, depth - 1));
                    let op = self.pick(&["<", "<=", ">", ">=", "==", "!="]);
                    format!("({x} {op} {y})")
                }
                3 => format!("!{}", self.expr(Ty::Bool, depth - 1)),
                4 => {
                    let (x, y) = (self.expr(Ty::Bool, depth - 1), self.expr(Ty::Bool, depth - 1));
                    format!("({x} && {y})")
                }
                5 => {
                    let (x, y) = (self.expr(Ty::Bool, depth - 1), self.expr(Ty::Bool, depth - 1));
                    format!("({x} || {y})")
                }
                _ => {
                    let cond = self.expr(Ty::Bool, depth - 1);
                    let (t, e) = (self.expr(Ty::Bool, depth - 1), self.expr(Ty::Bool, depth - 1));
                    format!("(if {cond} {{ {t} }} else {{ {e} }})")
                }
            },
        }
    }
}

/// Window values that find the edges: special values, values within a few
/// epsilons of the literals (where Rhai's relative comparisons differ from
/// IEEE ones), small integers, and any `f64` (every class: NaN, inf,
/// subnormal, zero).
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::sample::select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            5e-324,
            1e300,
            -1e300,
            1e-300,
        ]),
        (prop::sample::select(FLOAT_VALUES.to_vec()), -4i32..=4)
            .prop_map(|(x, k)| x * (1.0 + f64::from(k) * f64::EPSILON)),
        (-5i32..=5).prop_map(f64::from),
        any::<f64>(),
    ]
}

/// `fire(w)` of `ast` on Rhai: `Some(answer)`, or `None` for an error.
fn rhai_fire(engine: &rhai::Engine, ast: &rhai::AST, values: &[f64]) -> Result<Option<bool>, TestCaseError> {
    let names: Arc<[String]> = WINDOWS.iter().map(|(n, _)| n.to_string()).collect();
    let booleans: Arc<[bool]> = WINDOWS.iter().map(|(_, b)| *b).collect();
    let w = WindowValues::new(names, booleans, values.to_vec());
    let result: Result<Dynamic, _> =
        engine.call_fn_with_options(CallFnOptions::new().eval_ast(false), &mut Scope::new(), ast, "fire", (w,));
    match result {
        Ok(value) => match value.as_bool() {
            Ok(b) => Ok(Some(b)),
            Err(ty) => Err(TestCaseError::fail(format!("fire returned {ty}, not a bool"))),
        },
        Err(_) => Ok(None),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn random_expressions_agree_with_rhai(
        tape in prop::collection::vec(any::<u32>(), 1..160),
        helper_tape in prop::collection::vec(any::<u32>(), 0..40),
        values in prop::collection::vec(prop::collection::vec(value(), 4), 16),
    ) {
        let helper = Gen { tape: &helper_tape, at: 0, helper: false }.expr(Ty::Float, 2);
        let body = Gen { tape: &tape, at: 0, helper: true }.expr(Ty::Bool, 4);
        let source = format!("fn h(w) {{ {helper} }}\nfn fire(w) {{ {body} }}\n");
        let engine = sandbox::engine(Helpers::default());
        let ast = match engine.compile(&source) {
            Ok(ast) => ast,
            // Nesting past the sandbox's depth limit does not load at all.
            Err(e) if matches!(*e.0, rhai::ParseErrorType::ExprTooDeep) => return Err(TestCaseError::reject("too deep")),
            Err(e) => return Err(TestCaseError::fail(format!("{source}: {e}"))),
        };
        let native = NativePredicate::compile(&ast, "fire", &WINDOWS)
            .map_err(|why| TestCaseError::fail(format!("{source}: does not compile natively: {why}")))?;
        for v in values {
            // `w.p` is `v[3] != 0.0`, NaN included, on both sides.
            let expected = rhai_fire(&engine, &ast, &v)?;
            prop_assert_eq!(native.eval(&v), expected, "{} with w = {:?}", source, v);
        }
    }
}

fn rules_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules")
}

fn standard_rules() -> (Vec<Arc<Rule>>, RuleScripts) {
    let set = rule::load_dir(&rules_dir(), Helpers::default()).expect("the standard rules load");
    assert!(set.rules.len() >= 10, "rules/ holds the standard rules, found {}", set.rules.len());
    (set.rules, set.scripts)
}

#[test]
fn standard_rules_run_natively() {
    let (rules, _) = standard_rules();
    let on_rhai: Vec<String> = rules
        .iter()
        .flat_map(|r| {
            [Condition::Fire, Condition::Clear]
                .into_iter()
                .filter(|&c| !r.runs(c).is_native())
                .map(move |c| format!("{} {c:?}: {}", r.name, r.runs(c)))
        })
        .collect();
    assert!(on_rhai.is_empty(), "standard rule conditions that fell back to Rhai:\n{}", on_rhai.join("\n"));
    assert!(rules.iter().all(|r| r.runs_natively()));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn standard_rules_agree_with_rhai(values in prop::collection::vec(value(), 8)) {
        thread_local! {
            static RULES: (Vec<Arc<Rule>>, RuleScripts) = standard_rules();
        }
        RULES.with(|(rules, scripts)| {
            for rule in rules {
                let v: Vec<f64> = values.iter().copied().cycle().take(rule.windows.len()).collect();
                for cond in [Condition::Fire, Condition::Clear] {
                    let native = rule.eval_native(cond, &v);
                    prop_assert!(native.is_some(), "{} {:?} has a native predicate", rule.name, cond);
                    let script = scripts.eval(rule, cond, &LabelSet::default(), rule.window_values(v.clone())).ok();
                    prop_assert_eq!(native, script, "{} {:?} with windows {:?}", rule.name, cond, v);
                }
            }
            Ok(())
        })?;
    }
}
