//! The engine's integration tests through its public API, linked as one
//! test binary (`it`); each file below was a binary of its own and keeps its
//! tests' names under its module (`cargo test -p rocemend-engine --test it
//! -- safety::`). A new file gets a `mod` line here, not a place directly
//! under `tests/`, where it would link a binary of its own.
//!
//! [`common`] holds what the files share: rules, playbooks and a loop to
//! drive them.

mod common;

mod bad_data;
mod evaluator;
mod native_evaluator;
mod native_predicates;
mod reload;
mod restarts;
mod run_loop;
mod rule_errors;
mod safety;
mod standard_rules;
mod subject_times;
