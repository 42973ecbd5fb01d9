#!/usr/bin/env bash
# Runs every cargo fuzz target of fuzz/ for SECONDS each (default 30), starting from the committed
# corpus (fuzz/corpus/TARGET, copied so the run does not change it). Fails on the first crash; the
# crashing input is left in fuzz/artifacts/TARGET/ and becomes a regression test. One input that
# runs longer than 10 s is a failure too (libFuzzer's default would wait 20 minutes on a hang), so
# a run takes about SECONDS per target plus the one build.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-30}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build -O
work="${TMPDIR:-/tmp}/rocemend-fuzz-corpus"
for target in "${targets[@]}"; do
  rm -rf "$work/$target"
  mkdir -p "$work/$target"
  cp -r "corpus/$target/." "$work/$target/" 2>/dev/null || true
  echo "fuzz: $target for ${seconds}s"
  cargo +nightly fuzz run -O "$target" "$work/$target" -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
    -print_final_stats=1 2>&1 | grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|==|SUMMARY|Done)" || true
  if ls "artifacts/$target"/crash-* "artifacts/$target"/oom-* "artifacts/$target"/timeout-* >/dev/null 2>&1; then
    echo "fuzz: $target found a failing input in fuzz/artifacts/$target/"
    exit 1
  fi
done
