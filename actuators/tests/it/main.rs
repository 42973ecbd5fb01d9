//! The actuators against what they change — the simulated SONiC switch, an
//! independent gNMI target, real veth links in network namespaces, a real
//! Slurm, a real Alertmanager, sysfs trees — linked as one test binary
//! (`it`); each file below was a binary of its own and keeps its tests'
//! names under its module (`cargo test -p rocemend-actuators --test it --
//! cordon::`). A new file gets a `mod` line here, not a place directly under
//! `tests/`, where it would link a binary of its own.
//!
//! [`common`] holds the peers the files share: namespaces, a one-node Slurm,
//! a fake Kubernetes API, the independent SONiC target. A missing peer
//! skips the test on a laptop and fails it in CI (`test_peers`).

mod common;

mod cordon;
mod ecmp;
mod host;
mod interop;
mod link;
mod nccl;
mod node_condition;
mod rail;
mod sonic_ecn;
mod sonic_switch;
mod switch;
mod webhook;
