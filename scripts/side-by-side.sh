#!/usr/bin/env bash
# rocemend and a real Prometheus side by side, against the same exporter, in one run: CPU per
# sample ingested (static and changing values, at each scale), resident memory, and the time
# from a fault to Prometheus's alert and to rocemend's decision at a 100 ms interval.
# docs/performance.md ("Side by side with Prometheus") carries the latest table.
#
#   scripts/side-by-side.sh [--quick] [measure.py options]
#
#   --quick                 a smoke run: 1,000 series, 10 s per cost run, 5 trials (~2 min)
#   --scales 10000,100000   series counts (default)
#   --seconds 60            how long each cost run counts (default)
#   --trials 40             fault raises for the latency (default)
#   --out FILE              also write the table to FILE
#
# Needs Prometheus (Debian `prometheus`) and python3; builds rocemend in release. The machine
# should be quiet: the figures are CPU time, but the latency is wall time.
set -euo pipefail

cd "$(dirname "$0")/.."
command -v prometheus >/dev/null || {
	echo "side-by-side: no prometheus here (Debian package prometheus)" >&2
	exit 2
}
command -v python3 >/dev/null || {
	echo "side-by-side: no python3 here" >&2
	exit 2
}
ARGS=()
for a in "$@"; do
	case "$a" in
	--quick) ARGS+=(--scales 1000 --seconds 10 --settle 4 --trials 5) ;;
	-h | --help)
		sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) ARGS+=("$a") ;;
	esac
done
cargo build -j2 --release --quiet --bin rocemend
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
exec python3 scripts/side_by_side/measure.py --rocemend "$TARGET_DIR/release/rocemend" "${ARGS[@]}"
