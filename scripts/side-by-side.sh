#!/usr/bin/env bash
# rocemend and a real Prometheus side by side, against the same exporter, in one run: CPU per
# sample ingested (static and changing values, and changing with rocemend recording, at each
# scale), resident memory, the bytes a sample each keeps on disk (rocemend's recording against
# Prometheus's head written as a block by its snapshot API), and the time from a fault to
# Prometheus's alert and to rocemend's decision at a 100 ms interval.
# docs/performance.md ("Side by side with Prometheus") carries the latest table.
#
#   scripts/side-by-side.sh [options]
#
#   --quick                 a smoke run: 1,000 series, 10 s per cost run, 5 trials (~3 min)
#   --scales 10000,100000   series counts, comma-separated      (env SIDE_BY_SIDE_SCALES)
#   --seconds 60            how long each cost run counts        (env SIDE_BY_SIDE_SECONDS)
#   --settle 10             scraping before a cost run counts    (env SIDE_BY_SIDE_SETTLE)
#   --trials 40             fault raises for the latency         (env SIDE_BY_SIDE_TRIALS)
#   --latency-series 1000   series beside the fault flag in the latency run
#   --out FILE              also write the table to FILE
#   -h, --help              this text
#
# Defaults take about 9 minutes. Exit 2 on a bad option or when prometheus (Debian package
# `prometheus`) or python3 is missing. Builds rocemend in release first (cargo does nothing when
# it is up to date). Every process it starts (exporter, Prometheus, rocemend) runs in a temporary
# directory on free loopback ports and is stopped on exit, on an error and on INT/TERM/HUP.
# The figures are CPU time, but the latency is wall time: the quieter the machine, the better;
# the load average is printed at the start and at the end.
set -euo pipefail

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }
bad() {
	echo "side-by-side: $1" >&2
	echo "usage: scripts/side-by-side.sh [--quick] [--scales N,N] [--seconds S] [--settle S] [--trials N] [--latency-series N] [--out FILE]" >&2
	exit 2
}

SCALES="${SIDE_BY_SIDE_SCALES:-10000,100000}"
SECONDS_="${SIDE_BY_SIDE_SECONDS:-60}"
SETTLE="${SIDE_BY_SIDE_SETTLE:-10}"
TRIALS="${SIDE_BY_SIDE_TRIALS:-40}"
LATENCY_SERIES=1000
OUT=""
# Options are checked before anything is built or started, so a typo costs nothing.
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help)
		usage
		exit 0
		;;
	--quick)
		SCALES=1000 SECONDS_=10 SETTLE=4 TRIALS=5
		shift
		;;
	--scales | --seconds | --settle | --trials | --latency-series | --out)
		[ $# -ge 2 ] || bad "$1 needs a value"
		case "$1" in
		--scales) SCALES="$2" ;;
		--seconds) SECONDS_="$2" ;;
		--settle) SETTLE="$2" ;;
		--trials) TRIALS="$2" ;;
		--latency-series) LATENCY_SERIES="$2" ;;
		--out) OUT="$2" ;;
		esac
		shift 2
		;;
	*) bad "unknown option $1" ;;
	esac
done
[[ "$SCALES" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || bad "--scales wants series counts like 10000,100000, not '$SCALES'"
[[ "$SECONDS_" =~ ^[1-9][0-9]*$ ]] || bad "--seconds wants a whole number of seconds, not '$SECONDS_'"
[[ "$SETTLE" =~ ^[0-9]+$ ]] || bad "--settle wants a whole number of seconds, not '$SETTLE'"
[[ "$TRIALS" =~ ^[1-9][0-9]*$ ]] || bad "--trials wants a positive count, not '$TRIALS'"
[[ "$LATENCY_SERIES" =~ ^[0-9]+$ ]] || bad "--latency-series wants a count, not '$LATENCY_SERIES'"
if [ -n "$OUT" ]; then
	# Resolved now: the measurement runs from the repository's root.
	OUT="$(cd "$(dirname "$OUT")" 2>/dev/null && pwd)/$(basename "$OUT")" || bad "--out: no directory for $OUT"
fi

PROMETHEUS="$(command -v prometheus || true)"
[ -n "$PROMETHEUS" ] || {
	echo "side-by-side: prometheus is missing (Debian package prometheus)" >&2
	exit 2
}
command -v python3 >/dev/null || {
	echo "side-by-side: python3 is missing" >&2
	exit 2
}

cd "$(dirname "$0")/.."
cargo build -j2 --release --quiet --bin rocemend
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"

# measure.py stops what it started when it ends or gets INT/TERM/HUP, and its processes get
# SIGTERM if it dies some other way. It runs in the background so that a signal to this script
# is forwarded at once instead of after the measurement. The work directory (configs, TSDB,
# ledger, logs) is removed here, whatever became of measure.py.
WORK="$(mktemp -d -t side-by-side-XXXXXX)"
MEASURE=""
trap 'rm -rf "$WORK"' EXIT
trap '[ -z "$MEASURE" ] || { kill -TERM "$MEASURE" 2>/dev/null || true; wait "$MEASURE" || true; }; exit 130' INT TERM HUP
export PYTHONDONTWRITEBYTECODE=1
ARGS=(--rocemend "$TARGET_DIR/release/rocemend" --prometheus "$PROMETHEUS" --work "$WORK" --scales "$SCALES"
	--seconds "$SECONDS_" --settle "$SETTLE" --trials "$TRIALS" --latency-series "$LATENCY_SERIES")
[ -z "$OUT" ] || ARGS+=(--out "$OUT")
python3 scripts/side_by_side/measure.py "${ARGS[@]}" &
MEASURE=$!
wait "$MEASURE"
