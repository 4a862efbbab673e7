#!/usr/bin/env bash
# Runs every fuzz target for a short time (default 20 s each) from its committed corpus.
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain; with only stable,
# RUSTC_BOOTSTRAP=1 lets cargo-fuzz use -Zsanitizer. New inputs found go to a scratch
# corpus so the committed seeds stay small; a crash fails the run and leaves its input in
# fuzz/artifacts/<target>/.
#
#   fuzz/run-ci.sh [seconds-per-target]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
else
  export RUSTC_BOOTSTRAP=1
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for target in parse chunked decode_path range cgi_head connection hpack_decode h2_frame h2_conn; do
  echo "fuzz: $target for ${seconds}s"
  mkdir -p "$scratch/$target"
  status=0
  cargo "${toolchain[@]}" fuzz run -O "$target" "$scratch/$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 >"$scratch/$target.log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|#[0-9]+ +DONE|==[0-9]+==|SUMMARY)' "$scratch/$target.log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$scratch/$target.log"
    echo "fuzz: $target FAILED (see fuzz/artifacts/$target/)"
    exit 1
  fi
done
