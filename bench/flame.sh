#!/usr/bin/env bash
# A flame graph of where a Spidey mode's CPU goes at a fixed rate: the server (one loop,
# pinned to SERVER_CPUS) is sampled with `perf record -e cpu-clock` (timer-based sampling,
# which virtual machines without hardware counters still have; every thread of the
# server, user and kernel stacks, DWARF unwinding since optimised builds keep no frame
# pointers) while `spidey bench --rate RATE` (pinned to LOAD_CPUS) sends 1 KiB keep-alive
# requests; the stacks are folded and drawn with inferno (`cargo install inferno`, done
# here if missing) into OUT/MODE.svg.
#
#   bench/flame.sh                                   # event, uring and hybrid
#   MODES=uring RATE=20000 DURATION=10 bench/flame.sh
#   WORKLOAD=1k-close TITLE_NOTE="quiet machine" bench/flame.sh
#
# A graph shows proportions of the server's samples, not times; on a machine busy with
# other work it still shows where the server's own CPU goes (TITLE_NOTE is added to each
# graph's title to say how it was taken). Loopback only; the server is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

MODES=${MODES:-"event uring hybrid"}
RATE=${RATE:-10000}
DURATION=${DURATION:-10}
CONNS=${CONNS:-32}
FREQ=${FREQ:-999}
CALL_GRAPH=${CALL_GRAPH:-dwarf,16384}
WORKLOAD=${WORKLOAD:-1k-keepalive}
OUT=${OUT:-docs/flame}
TITLE_NOTE=${TITLE_NOTE:-}
source bench/lib/small_load.sh
small_load_setup

if ! perf record -q -e cpu-clock -F "$FREQ" -g -o /dev/null -- true 2>/dev/null; then
  echo "perf record -e cpu-clock does not work here (install linux-perf; perf_event_paranoid" \
    "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null))" >&2
  exit 1
fi
PATH=$PATH:${CARGO_HOME:-$HOME/.cargo}/bin
command -v inferno-flamegraph >/dev/null || cargo install -q inferno >&2

declare -A pid port tport cgroup
source bench/lib/servers.sh
cargo build --profile profiling -q
BENCH=$(realpath "${CARGO_TARGET_DIR:-target}/profiling/spidey")
SPIDEY=${SPIDEY:-$BENCH}
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src crates || echo '+changes')"

tmp=$(mktemp -d)
chmod 755 "$tmp"
cleanup() {
  stop_servers
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/www" "$OUT"
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
head -c $((1024 * 1024)) /dev/urandom >"$tmp/www/1m.bin"
chmod -R a+rX "$tmp/www"

for mode in $MODES; do
  s=$mode:1
  start_server "$s"
  check_servers "$s"
  url="http://127.0.0.1:${port[$s]}/1k.bin"
  "${load_pin[@]}" "$BENCH" bench -c "$CONNS" -d 1s --rate "$RATE" "${bench_flags[@]}" "$url" >/dev/null
  perf record -q -e cpu-clock -F "$FREQ" --call-graph "$CALL_GRAPH" -p "${pid[$s]}" -o "$tmp/$mode.data" \
    -- sleep "$DURATION" 2>"$tmp/$mode.perf-err" &
  rec=$!
  "${load_pin[@]}" "$BENCH" bench -c "$CONNS" -d "${DURATION}s" --rate "$RATE" "${bench_flags[@]}" \
    --json "$tmp/$mode.json" "$url" >/dev/null
  wait "$rec"
  responses=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["responses"]+d["errors"].get("late",0))' "$tmp/$mode.json")
  title="spidey $mode, 1 KiB $WORKLOAD at $RATE/s ($responses responses in ${DURATION}s), commit $commit"
  [ -z "$TITLE_NOTE" ] || title="$title; $TITLE_NOTE"
  perf script -i "$tmp/$mode.data" 2>/dev/null | inferno-collapse-perf >"$tmp/$mode.folded"
  # A cpu-clock sample weighs its period in nanoseconds: the widths are CPU time sampled.
  inferno-flamegraph --countname ns --title "$title" --subtitle "perf record -e cpu-clock -F $FREQ --call-graph $CALL_GRAPH, server pinned to CPU ${SERVER_CPUS:-any}, client to CPU ${LOAD_CPUS:-any}" \
    <"$tmp/$mode.folded" >"$OUT/$mode.svg"
  echo "$OUT/$mode.svg: $(awk '{n += $NF} END {printf "%.0f", n / 1e6}' "$tmp/$mode.folded") ms of CPU sampled, $responses responses" >&2
  kill "${pid[$s]}" 2>/dev/null || true
  wait "${pid[$s]}" 2>/dev/null || true
  unset "pid[$s]"
done
