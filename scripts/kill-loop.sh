#!/usr/bin/env bash
# The SIGKILL loop of tests/it/crash_loop.rs at scale: a daemon in enforce mode escalating the PFC
# watchdog of eight simulated switches is killed at a random moment 0.2-4 s after each start,
# CYCLES times (default 1000), on the same state directory, then left to finish. It prints the
# kills, the escalations and restores the switches received, and fails on a lost undo, a port
# left changed, a double apply, a switch change without its ledger record, or a prior that is
# not the port's original. docs/safety.md reports its figures.
#
#   scripts/kill-loop.sh [CYCLES] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
export ROCEMEND_KILL_CYCLES="${1:-1000}"
export ROCEMEND_KILL_SEED="${2:-1592598566}"
exec cargo test --release --test it -- crash_loop:: --nocapture
