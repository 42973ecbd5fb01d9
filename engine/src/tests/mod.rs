//! The engine's tests through its public API, as a user of the crate
//! writes them (`use engine::…`, see `extern crate self` in `lib.rs`). They
//! were an integration-test binary of their own; as unit tests they link
//! into the crate's one test binary instead (`cargo test -p rocemend-engine
//! -- tests::safety::`). Keep them to the public API all the same. A new
//! file gets a `mod` line here, never a place under `tests/`, where it would
//! link a binary of its own.
//!
//! [`common`] holds what the files share: rules, playbooks and a loop to
//! drive them.

mod common;

mod bad_data;
mod bad_labels;
mod canary_loop;
mod clock_steps;
mod evaluator;
mod jobs_touched;
mod native_evaluator;
mod native_predicates;
mod reload;
mod restarts;
mod rule_errors;
mod run_loop;
mod safety;
mod standard_rules;
mod subject_times;
