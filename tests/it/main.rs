//! The binary's integration tests, linked as one test binary (`it`): one
//! link instead of one per file, which is most of what a test build of this
//! workspace costs. Each file below was a test binary of its own and keeps
//! its tests' names under its module (`cargo test --test it -- why::`).
//!
//! A new file of tests gets a `mod` line here, not a place directly under
//! `tests/`: there it would link a binary of its own, and `rocemend-house`
//! counts them (at most 15 for `cargo test --workspace`).
//!
//! Helpers the files share are in [`common`]: a daemon as a child process,
//! bounded waits, a headless browser, an independent gNMI target.
//!
//! Tests that need a real peer (root and network namespaces, etcd,
//! Prometheus, chromium, node with playwright-core, the interop Python) say
//! so through `test_peers`: skipped on a laptop, failed in CI, which sets
//! `ROCEMEND_REQUIRE_PEERS=1`.

mod common;

mod bad_configs;
mod bad_recordings;
mod chaos;
mod chaos_attach;
mod chaos_fleet;
mod chaos_html;
mod chaos_ladder;
mod chaos_veth;
mod cli;
mod cli_usage;
mod crash_loop;
mod disk_full;
mod drift;
mod interop_loop;
mod inventory_discover;
mod kube_condition;
mod netns_daemon;
mod ops_control;
mod ops_metrics;
mod ops_packaging;
mod ops_timeline;
mod ops_undo;
mod packaging_artifacts;
mod preview;
mod recording_verbs;
mod remote_write;
mod replay_flood;
mod safety;
mod shard_aggregators;
mod sonic_loop;
mod two_daemons;
mod veth_lifecycle;
mod web_console;
mod why;
mod why_field;
