//! The sandbox every rule script runs in.
//!
//! Built from [`rhai::Engine::new_raw`] with only the packages a condition
//! needs (arithmetic, logic, strings, arrays, maps, math). There is no
//! `eval`, no `import` (the `no_module` feature), no clock (`no_time`) and
//! no file or network access: Rhai has none unless a host registers it, and
//! this host registers only pure functions. Every run is bounded.

use rhai::packages::{
    ArithmeticPackage, BasicArrayPackage, BasicMapPackage, BasicMathPackage, BasicStringPackage, LogicPackage,
    MoreStringPackage, Package,
};
use rhai::{EvalAltResult, ImmutableString};

use super::helpers::{self, Helpers};
use super::script::WindowValues;
use crate::time::parse_duration;
use crate::window::{WindowFn, WindowSpec};

/// Operations one call of a rule script may take. A threshold check takes
/// tens; a loop over a job's nodes a few thousand. `loop {}` hits this in
/// about a millisecond and gets the rule quarantined.
pub const MAX_OPERATIONS: u64 = 100_000;
/// Nested function calls.
pub const MAX_CALL_LEVELS: usize = 16;
/// Expression nesting (top level, inside functions).
pub const MAX_EXPR_DEPTHS: (usize, usize) = (64, 32);
/// Longest string a script may build.
pub const MAX_STRING_SIZE: usize = 4096;
/// Largest array a script may build (a job may span a thousand nodes).
pub const MAX_ARRAY_SIZE: usize = 4096;
/// Largest map a script may build.
pub const MAX_MAP_SIZE: usize = 256;

/// A new sandboxed engine with the rule API registered.
pub fn engine(helpers: Helpers) -> rhai::Engine {
    let mut engine = rhai::Engine::new_raw();
    for module in [
        ArithmeticPackage::new().as_shared_module(),
        LogicPackage::new().as_shared_module(),
        BasicStringPackage::new().as_shared_module(),
        MoreStringPackage::new().as_shared_module(),
        BasicArrayPackage::new().as_shared_module(),
        BasicMapPackage::new().as_shared_module(),
        BasicMathPackage::new().as_shared_module(),
    ] {
        engine.register_global_module(module);
    }
    engine
        .set_max_operations(MAX_OPERATIONS)
        .set_max_call_levels(MAX_CALL_LEVELS)
        .set_max_expr_depths(MAX_EXPR_DEPTHS.0, MAX_EXPR_DEPTHS.1)
        .set_max_string_size(MAX_STRING_SIZE)
        .set_max_array_size(MAX_ARRAY_SIZE)
        .set_max_map_size(MAX_MAP_SIZE)
        // An undefined variable is a compile error with a position, not a
        // surprise at 3 a.m.
        .set_strict_variables(true)
        .set_fail_on_invalid_map_property(true)
        // Let the strict comparisons below take precedence over the built-ins.
        .set_fast_operators(false);
    engine.disable_symbol("eval");
    engine.on_print(|text| tracing::info!(message = "Rule printed.", %text));
    engine.on_debug(
        |text, source, pos| tracing::debug!(message = "Rule debug.", %text, source = source.unwrap_or(""), %pos),
    );
    register_window_declarations(&mut engine);
    register_strict_comparisons(&mut engine);
    engine.register_type_with_name::<WindowValues>("Windows").register_indexer_get(WindowValues::get);
    helpers::register(&mut engine, helpers);
    engine
}

/// Rhai answers `false` when it compares a number with a string, so
/// `w.paused > "500k"` would load and never fire. Here it is an error, which
/// the load-time trial run reports with its position.
fn register_strict_comparisons(engine: &mut rhai::Engine) {
    fn refuse(op: &str, left: &str, right: &str) -> Box<EvalAltResult> {
        format!("cannot compare a {left} with a {right} using {op}: write the threshold as a number").into()
    }
    for op in ["==", "!=", "<", "<=", ">", ">="] {
        engine.register_fn(op, move |_: f64, _: ImmutableString| -> Result<bool, Box<EvalAltResult>> {
            Err(refuse(op, "number", "string"))
        });
        engine.register_fn(op, move |_: ImmutableString, _: f64| -> Result<bool, Box<EvalAltResult>> {
            Err(refuse(op, "string", "number"))
        });
        engine.register_fn(op, move |_: i64, _: ImmutableString| -> Result<bool, Box<EvalAltResult>> {
            Err(refuse(op, "number", "string"))
        });
        engine.register_fn(op, move |_: ImmutableString, _: i64| -> Result<bool, Box<EvalAltResult>> {
            Err(refuse(op, "string", "number"))
        });
        engine.register_fn(op, move |_: bool, _: f64| -> Result<bool, Box<EvalAltResult>> {
            Err(refuse(op, "bool", "number"))
        });
        engine.register_fn(op, move |_: f64, _: bool| -> Result<bool, Box<EvalAltResult>> {
            Err(refuse(op, "number", "bool"))
        });
    }
}

fn register_window_declarations(engine: &mut rhai::Engine) {
    for func in WindowFn::ALL {
        if func.has_range() {
            engine.register_fn(
                func.name(),
                move |metric: ImmutableString, range: ImmutableString| -> Result<WindowSpec, Box<EvalAltResult>> {
                    let range = parse_duration(&range).map_err(|e| e.to_string())?;
                    if range <= 0 {
                        return Err(format!("{}({metric:?}, …): the range must be positive", func.name()).into());
                    }
                    Ok(WindowSpec { func, metric: metric.to_string(), range })
                },
            );
        } else {
            engine.register_fn(func.name(), move |metric: ImmutableString| WindowSpec {
                func,
                metric: metric.to_string(),
                range: 0,
            });
        }
    }
    engine.register_type_with_name::<WindowSpec>("Window");
    // `{:?}` of a window in a script prints what it computes.
    engine.register_fn("to_string", |w: &mut WindowSpec| w.to_string());
}
