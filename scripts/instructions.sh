#!/usr/bin/env bash
# Instructions per unit of work on the hot paths, counted by callgrind (a
# figure that does not move with the machine's load, unlike wall time):
#
#   engine_ingest_per_sample     Evaluator::ingest, 100k counters, 30 rules
#   engine_evaluate_per_rule_evaluation
#                                Evaluator::evaluate / (script + native calls)
#   engine_firing                one sample in → evaluate → the proposal
#   prometheus_scrape_per_sample the prometheus sensor after the GET: parse,
#                                map to series, send on its channel (100k
#                                series, values changing on every page)
#   gnmi_update_per_sample       the gnmi sensor from a notification on: the
#                                sonic_queues JSON of 28 switches x 64 ports
#                                (100,352 series) mapped to series and sent,
#                                every counter moving
#
# Sources: engine/examples/ingest_path.rs, sensors/examples/scrape_path.rs and
# sensors/examples/gnmi_path.rs;
# each runs its measured functions a fixed number of times and prints how
# many samples, evaluations and firings they handled.
#
#   scripts/instructions.sh            print the figures
#   scripts/instructions.sh --check    also compare with bench/instructions.baseline;
#                                      exit 1 if a figure is more than 10 % above it
#   scripts/instructions.sh --update   print and write them as the new baseline
set -euo pipefail

cd "$(dirname "$0")/.."
BASELINE=bench/instructions.baseline
TOLERANCE=10 # percent
MODE="${1:-}"
case "$MODE" in
"" | --check | --update) ;;
*)
	echo "usage: $0 [--check|--update]" >&2
	exit 2
	;;
esac
command -v valgrind >/dev/null || {
	echo "valgrind is missing (Debian package valgrind)" >&2
	exit 2
}

# One build for the three (one feature resolution: built apart, the two packages' examples
# would each compile most of the dependency graph once more).
cargo build -j2 --release --quiet -p rocemend-engine -p rocemend-sensors \
	--example ingest_path --example scrape_path --example gnmi_path
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
EXAMPLES="$TARGET_DIR/release/examples"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# Runs "$@" under callgrind, collecting only inside the functions named by
# the --toggle-collect options in TOGGLES; prints the program's output.
callgrind() {
	local out="$1"
	shift
	valgrind --tool=callgrind --callgrind-out-file="$out" "${TOGGLES[@]}" "$@" 2>"$out.log"
}

# Inclusive instructions of the function whose name ends in $2 in profile $1.
inclusive() {
	callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
		awk -v f="$2" '!done && ($0 ~ (":" f " ") || $0 ~ (":" f "$")) { gsub(",", "", $1); print $1; done = 1 }'
}

# The value after word $2 in line $1.
field() {
	awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }' <<<"$1"
}

TOGGLES=(--toggle-collect='*measured_ingest*' --toggle-collect='*measured_evaluate*' --toggle-collect='*measured_fire*')
ENGINE_OUT="$(callgrind "$WORK/engine.cg" "$EXAMPLES/ingest_path" 3)"
TOGGLES=(--toggle-collect='*measured_scrape*')
SCRAPE_OUT="$(callgrind "$WORK/scrape.cg" "$EXAMPLES/scrape_path" 3)"
TOGGLES=(--toggle-collect='*measured_ingest*')
GNMI_OUT="$(callgrind "$WORK/gnmi.cg" "$EXAMPLES/gnmi_path" 3)"

ingest=$(inclusive "$WORK/engine.cg" "ingest_path::measured_ingest")
evaluate=$(inclusive "$WORK/engine.cg" "ingest_path::measured_evaluate")
fire=$(inclusive "$WORK/engine.cg" "ingest_path::measured_fire")
scrape=$(inclusive "$WORK/scrape.cg" "scrape_path::measured_scrape")
gnmi=$(inclusive "$WORK/gnmi.cg" "gnmi_path::measured_ingest")
for v in "$ingest" "$evaluate" "$fire" "$scrape" "$gnmi"; do
	[[ "$v" =~ ^[0-9]+$ ]] || {
		echo "could not read a function's instructions from callgrind's output" >&2
		exit 2
	}
done

div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
FIGURES="$WORK/figures"
{
	echo "engine_ingest_per_sample $(div "$ingest" "$(field "$ENGINE_OUT" samples)")"
	echo "engine_evaluate_per_rule_evaluation $(div "$evaluate" "$(field "$ENGINE_OUT" evaluations)")"
	echo "engine_firing $(div "$fire" "$(field "$ENGINE_OUT" firings)")"
	echo "prometheus_scrape_per_sample $(div "$scrape" "$(field "$SCRAPE_OUT" samples)")"
	echo "gnmi_update_per_sample $(div "$gnmi" "$(field "$GNMI_OUT" samples)")"
} >"$FIGURES"
echo "instructions (callgrind Ir):"
cat "$FIGURES"

case "$MODE" in
--update)
	{
		echo "# Instructions per unit of work (scripts/instructions.sh --update)."
		echo "# --check fails when a figure grows more than ${TOLERANCE} % over this."
		cat "$FIGURES"
	} >"$BASELINE"
	echo "baseline written: $BASELINE"
	;;
--check)
	[[ -f "$BASELINE" ]] || {
		echo "no baseline: $BASELINE (write one with --update)" >&2
		exit 2
	}
	status=0
	while read -r name value; do
		base=$(awk -v n="$name" '$1 == n { print $2 }' "$BASELINE")
		if [[ -z "$base" ]]; then
			echo "$name: not in the baseline" >&2
			status=1
			continue
		fi
		if awk -v v="$value" -v b="$base" -v t="$TOLERANCE" 'BEGIN { exit !(v > b * (1 + t / 100)) }'; then
			echo "REGRESSION $name: $value > $base + ${TOLERANCE} %" >&2
			status=1
		else
			echo "ok $name: $value (baseline $base)"
		fi
	done <"$FIGURES"
	exit $status
	;;
esac
