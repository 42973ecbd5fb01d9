//! Native predicates: `fire` / `clear` bodies compiled from Rhai's own AST
//! into a small typed tree that runs without the Rhai interpreter.
//!
//! Calling a Rhai function costs about a microsecond (scope and runtime
//! state set up per call, function resolution, a property lookup per
//! `w.name`); the common condition is a few comparisons of windows with
//! thresholds, which takes tens of nanoseconds natively. When a rule loads,
//! each condition whose body has the shape below is compiled into a
//! [`NativePredicate`]; every other body runs on Rhai as before.
//!
//! # What compiles
//!
//! The body of `fn fire(w)` / `fn clear(w)` must be one expression (or one
//! `if … { … } else { … }` statement, or `return` of one) built only from:
//!
//! - window values `w.name` and `w["name"]`, for windows the rule declares
//!   (numbers, or `true`/`false` for `absent` windows);
//! - integer, float and boolean literals;
//! - arithmetic `+ - * /` and unary `-` / `+` on numbers;
//! - comparisons `< <= > >= == !=` of two numbers or of two booleans;
//! - `&&`, `||`, `!`, parentheses;
//! - `if c { a } else { b }` with a boolean `c` and both branches of one type;
//! - calls `f(w)` of functions of the same file that take only `w` and
//!   whose bodies have this shape themselves (inlined).
//!
//! Anything else (variables, `let`, loops, strings, maps, arrays, helpers
//! such as `label` or `firing`, built-in functions such as `abs`, `%`, `**`,
//! comparing a boolean with a number, branches of different types…) leaves
//! the condition on Rhai; [`NativePredicate::compile`] says why.
//!
//! # Same answers as Rhai
//!
//! The tree is typed when it is built: integers only come from literals,
//! floats from windows and float literals, so the type of every node is
//! known and the operation is the one Rhai's built-ins would pick for it
//! (`only_i64`, checked arithmetic, no `fast_operators`, no overrides of
//! number operators in the sandbox). In particular:
//!
//! - integer `+ - * /` are checked: overflow and division by zero are Rhai
//!   errors. The native tree does not reproduce the error: it answers
//!   "ask Rhai" (`None`), the evaluator then calls the script and reports
//!   Rhai's own error (quarantine included). `1 / 2` is integer division (0);
//! - an integer meets a float by `as f64`, then the float operation runs;
//! - float arithmetic is IEEE 754 (`x / 0.0` is ±inf or NaN, no error);
//! - float comparisons are Rhai's *checked-build* comparisons, which are
//!   relative to `f64::EPSILON` rather than IEEE: `a == b` is
//!   `|a - b| / max(|a|, |b|) <= EPSILON` (with 1 as the scale when `a * b`
//!   is 0). So `1.0 + 1e-17 == 1.0`, `NaN == 0.0` and `NaN >= 0.0` are true,
//!   `inf > 1.0` and `inf == inf` are false. The formulas below are Rhai's,
//!   operation for operation;
//! - `&&` and `||` short-circuit, `if` evaluates one branch.
//!
//! A native predicate cannot fail any other way: it has no loops, no calls
//! at run time, and its size is bounded ([`MAX_NODES`]) far below the
//! sandbox's operation budget, so it never hits a limit Rhai would.

use rhai::{ASTFlags, ASTNode, Expr, FnCallExpr, Stmt, StmtBlock, AST};

/// The most nodes (after inlining) a native predicate may have. Rhai counts
/// at most a few operations per node; this keeps every native predicate
/// well under [`MAX_OPERATIONS`](super::sandbox::MAX_OPERATIONS), so one that
/// compiles can never be a body Rhai would stop for running too long.
pub const MAX_NODES: usize = 4_096;

/// How deep calls of the file's own functions are inlined; deeper (or
/// recursive) calls stay on Rhai.
pub const MAX_INLINE_DEPTH: usize = 8;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// An arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

/// A float-valued node.
#[derive(Debug, Clone)]
enum F {
    Window(usize),
    Const(f64),
    /// An integer used as a float (`as f64`, as Rhai's mixed operators do).
    Int(Box<I>),
    Neg(Box<F>),
    Arith(Arith, Box<F>, Box<F>),
    If(Box<B>, Box<F>, Box<F>),
}

/// An integer-valued node (literals and arithmetic on them).
#[derive(Debug, Clone)]
enum I {
    Const(i64),
    Neg(Box<I>),
    Arith(Arith, Box<I>, Box<I>),
    If(Box<B>, Box<I>, Box<I>),
}

/// A boolean-valued node.
#[derive(Debug, Clone)]
enum B {
    Const(bool),
    /// An `absent`-style window: `true` when its value is not 0.
    Window(usize),
    Not(Box<B>),
    And(Vec<B>),
    Or(Vec<B>),
    CmpFloat(Cmp, Box<F>, Box<F>),
    CmpInt(Cmp, Box<I>, Box<I>),
    CmpBool(Cmp, Box<B>, Box<B>),
    If(Box<B>, Box<B>, Box<B>),
}

/// A compiled node of any type.
enum Node {
    F(F),
    I(I),
    B(B),
}

impl Node {
    fn type_name(&self) -> &'static str {
        match self {
            Node::F(_) => "a float",
            Node::I(_) => "an integer",
            Node::B(_) => "a bool",
        }
    }
}

/// How one condition of a rule runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runs {
    /// As a [`NativePredicate`] compiled when the rule loaded.
    Native,
    /// On Rhai, for the reason given (what in the body has no native form).
    Rhai(String),
}

impl Runs {
    /// Whether it runs natively.
    pub fn is_native(&self) -> bool {
        matches!(self, Runs::Native)
    }
}

impl std::fmt::Display for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Runs::Native => f.write_str("native"),
            Runs::Rhai(why) => write!(f, "rhai ({why})"),
        }
    }
}

/// A `fire` or `clear` body compiled to native code.
#[derive(Debug, Clone)]
pub struct NativePredicate {
    root: B,
    nodes: usize,
}

/// Why a condition stays on Rhai: the construct the native compiler does
/// not take, in words for `check`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotNative(pub String);

impl NativePredicate {
    /// Compiles function `func` (one parameter) of `ast`. `windows` are the
    /// rule's windows in value order: name, and whether scripts see it as a
    /// bool. `Err` says why the body stays on Rhai.
    pub fn compile(ast: &AST, func: &str, windows: &[(&str, bool)]) -> Result<NativePredicate, NotNative> {
        let mut compiler = Compiler { ast, windows, nodes: 0, stack: Vec::new() };
        let root = compiler.function(func).map_err(NotNative)?;
        match root {
            Node::B(root) => Ok(NativePredicate { root, nodes: compiler.nodes }),
            other => Err(NotNative(format!("{func}(w) returns {}, not a bool", other.type_name()))),
        }
    }

    /// The value of the predicate for window `values` (in the order given
    /// to [`NativePredicate::compile`]). `None`: integer arithmetic
    /// overflowed or divided by zero, which is a Rhai error; call the script
    /// for the error.
    #[inline]
    pub fn eval(&self, values: &[f64]) -> Option<bool> {
        eval_b(&self.root, values)
    }

    /// Nodes in the compiled tree (after inlining).
    pub fn nodes(&self) -> usize {
        self.nodes
    }
}

// ---------------------------------------------------------------------------
// Evaluation.

/// Rhai's checked-build float comparison (`rhai::func::builtin`,
/// `impl_float!`), operation for operation.
#[inline]
fn cmp_f(op: Cmp, x: f64, y: f64) -> bool {
    let max = if x * y == 0.0 { 1.0 } else { x.abs().max(y.abs()) };
    match op {
        Cmp::Eq => max == 0.0 || (x - y).abs() / max <= f64::EPSILON,
        Cmp::Ne => max != 0.0 && (x - y).abs() / max > f64::EPSILON,
        Cmp::Gt => max != 0.0 && (x - y) / max > f64::EPSILON,
        Cmp::Ge => max == 0.0 || (x - y) / max > -f64::EPSILON,
        Cmp::Lt => max != 0.0 && (y - x) / max > f64::EPSILON,
        Cmp::Le => max == 0.0 || (y - x) / max > -f64::EPSILON,
    }
}

#[inline]
fn cmp_ord<T: PartialOrd>(op: Cmp, x: T, y: T) -> bool {
    match op {
        Cmp::Eq => x == y,
        Cmp::Ne => x != y,
        Cmp::Lt => x < y,
        Cmp::Le => x <= y,
        Cmp::Gt => x > y,
        Cmp::Ge => x >= y,
    }
}

fn eval_b(node: &B, v: &[f64]) -> Option<bool> {
    Some(match node {
        B::Const(b) => *b,
        B::Window(i) => v[*i] != 0.0,
        B::Not(x) => !eval_b(x, v)?,
        B::And(xs) => {
            for x in xs {
                if !eval_b(x, v)? {
                    return Some(false);
                }
            }
            true
        }
        B::Or(xs) => {
            for x in xs {
                if eval_b(x, v)? {
                    return Some(true);
                }
            }
            false
        }
        B::CmpFloat(op, x, y) => cmp_f(*op, eval_f(x, v)?, eval_f(y, v)?),
        B::CmpInt(op, x, y) => cmp_ord(*op, eval_i(x, v)?, eval_i(y, v)?),
        B::CmpBool(op, x, y) => cmp_ord(*op, eval_b(x, v)?, eval_b(y, v)?),
        B::If(c, t, e) => {
            if eval_b(c, v)? {
                eval_b(t, v)?
            } else {
                eval_b(e, v)?
            }
        }
    })
}

fn eval_f(node: &F, v: &[f64]) -> Option<f64> {
    Some(match node {
        F::Window(i) => v[*i],
        F::Const(x) => *x,
        F::Int(x) => eval_i(x, v)? as f64,
        F::Neg(x) => -eval_f(x, v)?,
        F::Arith(op, x, y) => {
            let (x, y) = (eval_f(x, v)?, eval_f(y, v)?);
            match op {
                Arith::Add => x + y,
                Arith::Sub => x - y,
                Arith::Mul => x * y,
                Arith::Div => x / y,
            }
        }
        F::If(c, t, e) => {
            if eval_b(c, v)? {
                eval_f(t, v)?
            } else {
                eval_f(e, v)?
            }
        }
    })
}

fn eval_i(node: &I, v: &[f64]) -> Option<i64> {
    match node {
        I::Const(x) => Some(*x),
        I::Neg(x) => eval_i(x, v)?.checked_neg(),
        I::Arith(op, x, y) => {
            let (x, y) = (eval_i(x, v)?, eval_i(y, v)?);
            match op {
                Arith::Add => x.checked_add(y),
                Arith::Sub => x.checked_sub(y),
                Arith::Mul => x.checked_mul(y),
                // `checked_div` is `None` for a zero divisor and for MIN / -1,
                // both Rhai errors.
                Arith::Div => x.checked_div(y),
            }
        }
        I::If(c, t, e) => {
            if eval_b(c, v)? {
                eval_i(t, v)
            } else {
                eval_i(e, v)
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Compilation from Rhai's AST.

struct Compiler<'a> {
    ast: &'a AST,
    windows: &'a [(&'a str, bool)],
    nodes: usize,
    /// Functions being inlined, innermost last (their parameter names).
    stack: Vec<(String, String)>,
}

type Compiled = Result<Node, String>;

impl Compiler<'_> {
    fn count(&mut self) -> Result<(), String> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(format!("more than {MAX_NODES} operations"));
        }
        Ok(())
    }

    /// The parameter name of the function being compiled.
    fn param(&self) -> &str {
        self.stack.last().map(|(_, p)| p.as_str()).unwrap_or("")
    }

    /// Compiles the body of the script function `name` (one parameter).
    fn function(&mut self, name: &str) -> Compiled {
        if self.stack.len() >= MAX_INLINE_DEPTH {
            return Err(format!("calls nested deeper than {MAX_INLINE_DEPTH}"));
        }
        if self.stack.iter().any(|(f, _)| f == name) {
            return Err(format!("{name}(…) calls itself"));
        }
        let Some(def) = self.ast.iter_fn_def().find(|f| f.name == name && f.params.len() == 1) else {
            return Err(format!("no function {name}(w) in the file"));
        };
        if def.this_type.is_some() {
            return Err(format!("{name} is a method"));
        }
        let param = def.params[0].to_string();
        // The body's statements: the top-level nodes of a walk over an AST
        // holding only this function (the type of `ScriptFuncDef::body` is
        // not exported by Rhai). `retain_functions`, because
        // `clone_functions_only_filtered` keeps every function when it
        // copies into an empty module.
        let mut only = self.ast.clone_functions_only();
        only.retain_functions(|_, _, n, params| n == name && params == 1);
        if only.iter_fn_def().count() != 1 {
            return Err(format!("{name}(w) could not be isolated from the file's other functions"));
        }
        let mut body: Vec<Stmt> = Vec::new();
        only.walk(&mut |path: &[ASTNode]| {
            if let [ASTNode::Stmt(stmt)] = path {
                body.push((*stmt).clone());
            }
            true
        });
        self.stack.push((name.to_string(), param));
        let result = match body.as_slice() {
            [stmt] => self.stmt(stmt),
            [] => Err(format!("{name}(w) has an empty body")),
            _ => Err(format!("{name}(w) has more than one statement")),
        };
        self.stack.pop();
        result
    }

    /// A statement whose value is the value of a block.
    fn stmt(&mut self, stmt: &Stmt) -> Compiled {
        match stmt {
            Stmt::Expr(e) => self.expr(e),
            Stmt::FnCall(call, _) => self.call(call),
            Stmt::Block(block) => self.block(block),
            Stmt::Return(Some(e), flags, _) if !flags.contains(ASTFlags::BREAK) => self.expr(e),
            Stmt::If(flow, _) => {
                self.count()?;
                let cond = self.bool(&flow.expr, "an if condition")?;
                if flow.body.is_empty() || flow.branch.is_empty() {
                    return Err("an if without else (its value may be ())".into());
                }
                let then = self.block(&flow.body)?;
                let other = self.block(&flow.branch)?;
                let cond = Box::new(cond);
                match (then, other) {
                    (Node::F(t), Node::F(e)) => Ok(Node::F(F::If(cond, Box::new(t), Box::new(e)))),
                    (Node::I(t), Node::I(e)) => Ok(Node::I(I::If(cond, Box::new(t), Box::new(e)))),
                    (Node::B(t), Node::B(e)) => Ok(Node::B(B::If(cond, Box::new(t), Box::new(e)))),
                    (t, e) => Err(format!("if branches of different types ({} and {})", t.type_name(), e.type_name())),
                }
            }
            other => Err(format!("a statement other than an expression or if/else ({})", stmt_kind(other))),
        }
    }

    /// A block of exactly one statement.
    fn block(&mut self, block: &StmtBlock) -> Compiled {
        match block.statements() {
            [stmt] => self.stmt(stmt),
            [] => Err("an empty block".into()),
            _ => Err("a block of more than one statement".into()),
        }
    }

    fn bool(&mut self, e: &Expr, what: &str) -> Result<B, String> {
        match self.expr(e)? {
            Node::B(b) => Ok(b),
            other => Err(format!("{what} that is {}, not a bool", other.type_name())),
        }
    }

    fn expr(&mut self, e: &Expr) -> Compiled {
        self.count()?;
        match e {
            Expr::BoolConstant(b, _) => Ok(Node::B(B::Const(*b))),
            Expr::IntegerConstant(n, _) => Ok(Node::I(I::Const(*n))),
            Expr::FloatConstant(x, _) => Ok(Node::F(F::Const(**x))),
            Expr::Dot(bin, flags, _) if !flags.contains(ASTFlags::NEGATED) => match (&bin.lhs, &bin.rhs) {
                (Expr::Variable(var, _, _), Expr::Property(prop, _)) if var.1.as_str() == self.param() => {
                    self.window(prop.2.as_str())
                }
                _ => Err("a property access other than w.name".into()),
            },
            Expr::Index(bin, flags, _) if !flags.contains(ASTFlags::NEGATED) => match (&bin.lhs, &bin.rhs) {
                (Expr::Variable(var, _, _), Expr::StringConstant(name, _)) if var.1.as_str() == self.param() => {
                    self.window(name.as_str())
                }
                _ => Err("an index other than w[\"name\"]".into()),
            },
            Expr::And(xs, _) | Expr::Or(xs, _) => {
                let mut list = Vec::with_capacity(xs.len());
                for x in xs.iter() {
                    list.push(self.bool(x, "an operand of && or ||")?);
                }
                Ok(Node::B(if matches!(e, Expr::And(..)) { B::And(list) } else { B::Or(list) }))
            }
            Expr::FnCall(call, _) => self.call(call),
            Expr::Stmt(block) => self.block(block),
            Expr::Variable(var, _, _) if var.1.as_str() == self.param() => {
                Err(format!("`{}` used other than as w.name", var.1))
            }
            Expr::Variable(var, _, _) => Err(format!("a variable (`{}`)", var.1)),
            Expr::StringConstant(..) | Expr::InterpolatedString(..) | Expr::CharConstant(..) => Err("a string".into()),
            Expr::Array(..) => Err("an array".into()),
            Expr::Map(..) => Err("a map".into()),
            Expr::Unit(..) => Err("()".into()),
            Expr::MethodCall(call, _) => Err(format!("a method call (`.{}(…)`)", call.name)),
            Expr::Coalesce(..) => Err("`??`".into()),
            _ => Err("an expression of another kind".into()),
        }
    }

    fn window(&mut self, name: &str) -> Compiled {
        match self.windows.iter().position(|(n, _)| *n == name) {
            Some(i) if self.windows[i].1 => Ok(Node::B(B::Window(i))),
            Some(i) => Ok(Node::F(F::Window(i))),
            None => Err(format!("w.{name}, which the rule does not declare")),
        }
    }

    fn call(&mut self, call: &FnCallExpr) -> Compiled {
        if call.capture_parent_scope {
            return Err(format!("{}!(…) captures the caller's scope", call.name));
        }
        let name = call.name.as_str();
        let args = call.args.as_slice();
        if call.op_token.is_none() {
            // A function of the file, given the windows: inlined.
            return match args {
                [Expr::Variable(var, _, _)] if var.1.as_str() == self.param() => {
                    self.function(name).map_err(|why| format!("{name}(w): {why}"))
                }
                _ => Err(format!("a call of {name}(…) with arguments other than w")),
            };
        }
        match (name, args) {
            ("!", [x]) => Ok(Node::B(B::Not(Box::new(self.bool(x, "an operand of !")?)))),
            ("-", [x]) => match self.expr(x)? {
                Node::F(x) => Ok(Node::F(F::Neg(Box::new(x)))),
                Node::I(x) => Ok(Node::I(I::Neg(Box::new(x)))),
                Node::B(_) => Err("-bool".into()),
            },
            ("+", [x]) => match self.expr(x)? {
                Node::B(_) => Err("+bool".into()),
                number => Ok(number),
            },
            ("+" | "-" | "*" | "/", [x, y]) => {
                let op = match name {
                    "+" => Arith::Add,
                    "-" => Arith::Sub,
                    "*" => Arith::Mul,
                    _ => Arith::Div,
                };
                match (self.expr(x)?, self.expr(y)?) {
                    (Node::I(x), Node::I(y)) => Ok(Node::I(I::Arith(op, Box::new(x), Box::new(y)))),
                    (Node::B(_), _) | (_, Node::B(_)) => Err(format!("`{name}` with a bool operand")),
                    (x, y) => Ok(Node::F(F::Arith(op, Box::new(float(x)), Box::new(float(y))))),
                }
            }
            ("==" | "!=" | "<" | "<=" | ">" | ">=", [x, y]) => {
                let op = match name {
                    "==" => Cmp::Eq,
                    "!=" => Cmp::Ne,
                    "<" => Cmp::Lt,
                    "<=" => Cmp::Le,
                    ">" => Cmp::Gt,
                    _ => Cmp::Ge,
                };
                match (self.expr(x)?, self.expr(y)?) {
                    (Node::I(x), Node::I(y)) => Ok(Node::B(B::CmpInt(op, Box::new(x), Box::new(y)))),
                    (Node::B(x), Node::B(y)) => Ok(Node::B(B::CmpBool(op, Box::new(x), Box::new(y)))),
                    (Node::B(_), _) | (_, Node::B(_)) => {
                        Err(format!("`{name}` between a bool and a number (a Rhai error)"))
                    }
                    (x, y) => Ok(Node::B(B::CmpFloat(op, Box::new(float(x)), Box::new(float(y))))),
                }
            }
            _ => Err(format!("the operator `{name}` with {} operand(s)", args.len())),
        }
    }
}

/// A numeric node as a float: integers are converted with `as f64`, as
/// Rhai's mixed integer/float operators do.
fn float(node: Node) -> F {
    match node {
        Node::F(f) => f,
        Node::I(I::Const(n)) => F::Const(n as f64),
        Node::I(i) => F::Int(Box::new(i)),
        Node::B(_) => unreachable!("callers refuse bools"),
    }
}

fn stmt_kind(stmt: &Stmt) -> &'static str {
    match stmt {
        Stmt::Noop(..) => "an empty statement",
        Stmt::Var(..) => "let/const",
        Stmt::Assignment(..) => "an assignment",
        Stmt::While(..) | Stmt::Do(..) | Stmt::For(..) => "a loop",
        Stmt::Switch(..) => "switch",
        Stmt::Return(..) => "return without a value, or throw",
        Stmt::TryCatch(..) => "try/catch",
        _ => "another statement",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(body: &str, windows: &[(&str, bool)]) -> Result<NativePredicate, NotNative> {
        let engine = super::super::sandbox::engine(super::super::Helpers::default());
        let ast = engine.compile(format!("fn fire(w) {{ {body} }}")).expect("parses");
        NativePredicate::compile(&ast, "fire", windows)
    }

    #[test]
    fn float_comparisons_are_rhai_s_relative_ones() {
        assert!(cmp_f(Cmp::Eq, f64::NAN, 0.0));
        assert!(cmp_f(Cmp::Ge, f64::NAN, 0.0));
        assert!(!cmp_f(Cmp::Ge, f64::NAN, 1.0));
        assert!(!cmp_f(Cmp::Gt, f64::INFINITY, 1.0));
        assert!(cmp_f(Cmp::Eq, 1.0 + f64::EPSILON / 2.0, 1.0));
    }

    #[test]
    fn the_common_shapes_compile_and_others_say_why() {
        let w = [("x", false), ("y", false), ("gone", true)];
        for ok in [
            "w.x > 5.0",
            "w.x / 1e6 > 0.5 && w[\"y\"] >= 2",
            "!(w.x >= 1.0) || w.gone",
            "(if w.x > w.y { w.x } else { w.y }) == 0.0",
            "-w.x < -(1 / 2)",
            "w.gone == false",
            // Rhai returns the last statement's value, `;` or not.
            "w.x > 1.0;",
        ] {
            let p = compile(ok, &w).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert!(p.nodes() > 0);
        }
        for (body, why) in [
            ("let a = w.x; a > 1.0", "more than one statement"),
            ("w.z > 1.0", "does not declare"),
            ("abs(w.x) > 1.0", "arguments other than w"),
            ("w.x > \"1\"", "string"),
            ("w.x", "not a bool"),
            ("w.gone > 1.0", "between a bool and a number"),
            ("if w.x > 1.0 { true }", "without else"),
            ("w.x % 2.0 > 1.0", "operator `%`"),
            ("label(\"node\") == \"a\"", "arguments other than w"),
        ] {
            let e = compile(body, &w).err().unwrap_or_else(|| panic!("{body} compiled"));
            assert!(e.0.contains(why), "{body}: {e}");
        }
    }

    #[test]
    fn integer_errors_are_left_to_rhai() {
        let w = [("x", false)];
        let p = compile("w.x > 9223372036854775807 + 1 || w.x > 1 / 0", &w).expect("compiles");
        assert_eq!(p.eval(&[0.0]), None);
        let p = compile("w.x > 1.0 || 1 / 0 > 0", &w).expect("compiles");
        assert_eq!(p.eval(&[2.0]), Some(true), "short-circuit, as Rhai");
        assert_eq!(p.eval(&[0.0]), None);
    }
}
