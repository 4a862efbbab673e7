#!/usr/bin/env bash
# Does `spidey bench`'s open loop add its own lateness? Against `spidey serve --mode event`
# on a 1 KiB file over loopback: measure the closed-loop capacity briefly, then run the open
# loop at 10% of it. With free connections and an idle server, coordinated-omission
# correction has nothing real to correct, so corrected and uncorrected latency should agree,
# and what separates them is the generator's own send lateness.
#
# Goal (issue 15): corrected p50 within 20 us of uncorrected p50, and send lateness p99
# under 50 us. Prints PASS or FAIL, exits 0 or 1. Not a test: numbers depend on the machine
# and its load (the load average is printed beside them).
#
#   bench/open-loop-precision.sh                       # defaults below
#   CONNS=16 THREADS=1 DURATION=5s CAPACITY_DURATION=2s FRACTION=0.1 bench/open-loop-precision.sh
#
# The capacity is measured with one client thread per core; the open loop runs THREADS
# client threads (default 1: a tenth of the capacity is easily one thread's work, and on a
# small machine every extra spinning client thread takes a core from the server).
#
# Loopback only; takes about DURATION + CAPACITY_DURATION + the build; the server it starts
# is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

CONNS=${CONNS:-16}
THREADS=${THREADS:-1}
DURATION=${DURATION:-5s}
CAPACITY_DURATION=${CAPACITY_DURATION:-2s}
FRACTION=${FRACTION:-0.1}
GOAL_P50_GAP_US=20
GOAL_LATENESS_P99_US=50

cargo build --release -q
SPIDEY=${CARGO_TARGET_DIR:-target}/release/spidey

tmp=$(mktemp -d)
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

mkdir -p "$tmp/www"
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"

"$SPIDEY" serve "$tmp/www" --mode event --port 0 -q >"$tmp/serve.out" 2>"$tmp/serve.err" &
server=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's#^spidey listening on http://127.0.0.1:\([0-9]*\) .*#\1#p' "$tmp/serve.out")
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { echo "spidey serve did not start: $(cat "$tmp/serve.err")" >&2; exit 2; }
url="http://127.0.0.1:$port/1k.bin"

field() { python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'v': v}))" "$@"; }

echo "== open-loop precision: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "== machine: $(uname -sr), $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== closed loop, -c $CONNS for $CAPACITY_DURATION (capacity)"
timeout 120 "$SPIDEY" bench -c "$CONNS" -d "$CAPACITY_DURATION" --json "$tmp/capacity.json" "$url" | sed 's/^/   /'
capacity=$(field "$tmp/capacity.json" 'round(v["requests_per_sec"])')
rate=$(python3 -c "print(max(1, round($capacity * $FRACTION)))")

echo "== open loop at $rate requests/s ($FRACTION of $capacity), -c $CONNS -t $THREADS for $DURATION"
timeout 120 "$SPIDEY" bench -c "$CONNS" -t "$THREADS" -d "$DURATION" --rate "$rate" --json "$tmp/open.json" "$url" | sed 's/^/   /'
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

corrected=$(field "$tmp/open.json" 'v["latency"]["p50_us"]')
uncorrected=$(field "$tmp/open.json" 'v["latency_uncorrected"]["p50_us"]')
lateness_p50=$(field "$tmp/open.json" 'v["send_lateness"]["p50_us"]')
lateness_p99=$(field "$tmp/open.json" 'v["send_lateness"]["p99_us"]')
gap=$((corrected - uncorrected))
verdict=PASS
[ "${gap#-}" -le "$GOAL_P50_GAP_US" ] || verdict=FAIL
[ "$lateness_p99" -lt "$GOAL_LATENESS_P99_US" ] || verdict=FAIL

echo "== result"
printf '   %-28s %8s us\n' "corrected p50" "$corrected" "uncorrected p50" "$uncorrected" \
  "difference (goal <= $GOAL_P50_GAP_US)" "$gap" "send lateness p50" "$lateness_p50" \
  "send lateness p99 (goal < $GOAL_LATENESS_P99_US)" "$lateness_p99"
echo "$verdict"
[ "$verdict" = PASS ]
