#!/usr/bin/env bash
# System calls per response, per server: what each server asks of the kernel to answer one
# request, a count that does not depend on the machine's load (timings do; these do not).
#
# For each server (bench/lib/servers.sh: the floor, the peers, the C reference servers of
# bench/ref/, Spidey's modes): start it,
# check it serves the file (status 200 and the exact length), warm it up untraced, then
# trace every process of the server and send a fixed number of requests with
# `spidey bench -c CONNS -n REQUESTS` (closed loop). The tracer, METHOD: `perf` (the
# default where it works: `perf trace -s`, from the kernel's syscall tracepoints, on every
# thread the server has when tracing starts) or `strace` (-f -c: ptrace, which also follows
# threads and children started later, but stops the server at every call, slowing it far
# more than its client: a server that tries a read straight after its write then finds the
# next request already there more often than it would untraced). Each
# system call's count, divided by the responses the client received, is one cell of the
# table; "errors" are the calls that failed (an EAGAIN read, for one). With CONNS=1 every
# request finds the server idle, so nothing is batched and the count is the cost of one
# request on its own path; more connections let a server share an epoll_wait or an
# io_uring_enter among several.
#
# io_uring's work is done inside io_uring_enter (and by the kernel's io-wq workers, which
# no tracer can attach to), so for a ring a syscall count hides the operations: where
# `perf` can record tracepoints, the ring operations submitted are counted too (the
# io_uring:io_uring_submit_req tracepoint, by opcode), with the operations that had to arm
# an internal poll (io_uring_poll_arm) and those handed to an io-wq worker
# (io_uring_queue_async_work).
#
#   bench/syscalls.sh
#   SERVERS="floor event:1" REQUESTS=2000 bench/syscalls.sh
#   SERVERS="ref-epoll:1 event:1 ref-uring:1 uring:1" bench/syscalls.sh   # each mode beside its bare architecture
#   SERVERS="ref-fork fork:1" METHOD=strace bench/syscalls.sh   # a process per connection: only strace follows it
#   SERVERS=caddy METHOD=strace bench/syscalls.sh      # Go starts threads as it goes
#   WORKLOAD=1k-close CONNS=4 bench/syscalls.sh
#
# Servers are pinned to SERVER_CPUS (0) and the client to LOAD_CPUS (1), as in
# bench/vs-peers.sh. The table goes to stdout (markdown), the progress to stderr.
# Loopback only; everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVERS=${SERVERS:-"floor lighttpd nginx:1 h2o event:1 uring:1 hybrid:1"}
REQUESTS=${REQUESTS:-20000}
CONNS=${CONNS:-1}
WARMUP=${WARMUP:-500}
WORKLOAD=${WORKLOAD:-1k-keepalive}
MIN=${MIN:-0.005}
METHOD=${METHOD:-}
source bench/lib/small_load.sh
small_load_setup

declare -A pid port tport cgroup
source bench/lib/servers.sh
read -r -a servers <<<"$SERVERS"
install_server_packages "${servers[@]}"
command -v strace >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >&2; }
ring_ops=0
if command -v perf >/dev/null && perf record -q -e io_uring:io_uring_submit_req -o /dev/null -- true 2>/dev/null; then
  ring_ops=1
else
  echo "perf cannot record io_uring tracepoints here: ring operations are not counted" >&2
fi
if [ -z "$METHOD" ]; then
  METHOD=strace
  ! command -v perf >/dev/null || ! perf trace -s -o /dev/null -- true 2>/dev/null || METHOD=perf
fi
case $METHOD in
  perf | strace) ;;
  *) echo "METHOD must be perf or strace, not '$METHOD'" >&2; exit 2 ;;
esac

cargo build --release -q
BENCH=$(realpath "${CARGO_TARGET_DIR:-target}/release/spidey")
SPIDEY=${SPIDEY:-$BENCH}

tmp=$(mktemp -d)
chmod 755 "$tmp"
tracers=()
cleanup() {
  for t in "${tracers[@]}"; do kill "$t" 2>/dev/null || true; done
  stop_servers
  rm -rf "$tmp"
}
trap cleanup EXIT
make_www
cpu_accounting_setup

start_checked_servers "${servers[@]}"

# Waits until strace has attached to every process of the server (one "attached" line each,
# "with N threads" for a process of several).
wait_attached() { # strace-stderr processes
  for _ in $(seq 100); do
    [ "$(grep -c 'attached' "$1" 2>/dev/null || true)" -ge "$2" ] && return 0
    sleep 0.05
  done
  echo "strace did not attach to all $2 processes: $(cat "$1")" >&2
  return 1
}

for s in "${servers[@]}"; do
  url="http://127.0.0.1:${port[$s]}/1k.bin" f=${s//:/-}
  "${load_pin[@]}" "$BENCH" bench -c "$CONNS" -n "$WARMUP" "${bench_flags[@]}" "$url" >/dev/null
  mapfile -t pids < <(server_pids "$s")
  tids_before=$(for p in "${pids[@]}"; do ls /proc/"$p"/task; done | sort)
  ps_args=()
  for p in "${pids[@]}"; do ps_args+=(-p "$p"); done
  if [ "$METHOD" = strace ]; then
    strace -f -c -U name,calls,errors -o "$tmp/$f.trace" "${ps_args[@]}" 2>"$tmp/$f.trace-err" &
  else
    perf trace -s -o "$tmp/$f.trace" -p "$(IFS=,; echo "${pids[*]}")" 2>"$tmp/$f.trace-err" &
  fi
  st=$!
  tracers=("$st")
  perf_pid=""
  if [ "$ring_ops" = 1 ]; then
    perf record -q -e io_uring:io_uring_submit_req -e io_uring:io_uring_poll_arm \
      -e io_uring:io_uring_queue_async_work -o "$tmp/$f.perf" \
      -p "$(IFS=,; echo "${pids[*]}")" 2>"$tmp/$f.perf-err" &
    perf_pid=$!
    tracers+=("$perf_pid")
  fi
  [ "$METHOD" = perf ] || wait_attached "$tmp/$f.trace-err" "${#pids[@]}"
  sleep 1 # perf attaches without saying so
  "${load_pin[@]}" "$BENCH" bench -c "$CONNS" -n "$REQUESTS" "${bench_flags[@]}" --json "$tmp/$f.json" "$url" >/dev/null
  kill -INT "$st"
  [ -z "$perf_pid" ] || kill -INT "$perf_pid"
  wait "$st" || true
  [ -z "$perf_pid" ] || wait "$perf_pid" || true
  tracers=()
  tids_after=$(for p in "${pids[@]}"; do ls /proc/"$p"/task 2>/dev/null; done | sort)
  if [ "$METHOD" = perf ] && [ -n "$(comm -13 <(echo "$tids_before") <(echo "$tids_after"))" ]; then
    echo "$s started threads while traced, which perf trace -p does not follow: its counts are" \
      "partial (use METHOD=strace)" | tee -a "$tmp/notes" >&2
  fi
  # One "name calls errors" line per system call: strace -c's table, or the sum of perf
  # trace -s's tables (one per thread).
  if [ "$METHOD" = strace ]; then
    awk '/^-/ {n++; next} n == 1 && NF >= 2 {print $1, $2, (NF >= 3 ? $3 : 0)}' "$tmp/$f.trace" >"$tmp/$f.counts"
  else
    awk '/^ *-----/ {table = 1; next} /events,/ || NF == 0 {table = 0} table && NF >= 3 {c[$1] += $2; e[$1] += $3}
      END {for (k in c) print k, c[k], e[k]}' "$tmp/$f.trace" >"$tmp/$f.counts"
  fi
  if [ -n "$perf_pid" ]; then
    perf script -i "$tmp/$f.perf" -F event,trace 2>/dev/null | awk '
      /io_uring_submit_req/ {for (i = 1; i <= NF; i++) if ($i == "opcode") {op = $(i + 1); sub(",", "", op); n["ring:" op]++}}
      /io_uring_poll_arm/ {n["ring:+poll"]++}
      /io_uring_queue_async_work/ {n["ring:+io-wq"]++}
      END {for (k in n) print k, n[k], 0}' >>"$tmp/$f.counts"
  fi
  responses=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["responses"]+d["errors"].get("late",0))' "$tmp/$f.json")
  echo "$s: $responses responses, $(awk '$1 !~ /^ring/ {c += $2} END {print c + 0}' "$tmp/$f.counts") system calls" >&2
  echo "$responses" >"$tmp/$f.responses"
done

# The table: one row per system call (then the ring operations), one column per server,
# calls per response; a cell "1.00 (0.50 failed)" says half of them failed. Rows whose
# every cell is under MIN are left out (the total counts them).
python3 - "$tmp" "$MIN" "${servers[@]}" <<'PY'
import sys
tmp, least, servers = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
calls, errors = {}, {}
for s in servers:
    f = s.replace(":", "-")
    n = int(open(f"{tmp}/{f}.responses").read())
    for line in open(f"{tmp}/{f}.counts"):
        name, c, e = line.split()
        if name in ("total",):
            continue
        calls.setdefault(name, {})[s] = int(c) / n
        errors.setdefault(name, {})[s] = int(e or 0) / n
def cell(name, s):
    c, e = calls[name].get(s, 0), errors[name].get(s, 0)
    if not c:
        return "-"
    if c < 0.005:
        return "<0.01"
    return f"{c:.2f}" + (f" ({e:.2f} failed)" if e >= 0.005 else "")
syscalls = sorted((k for k in calls if not k.startswith("ring")), key=lambda k: -max(calls[k].values()))
ring = sorted((k for k in calls if k.startswith("ring")), key=lambda k: -max(calls[k].values()))
print("| system call, per response | " + " | ".join(servers) + " |")
print("| --- |" + " ---: |" * len(servers))
for k in syscalls:
    if max(calls[k].values()) >= least:
        print(f"| {k} | " + " | ".join(cell(k, s) for s in servers) + " |")
totals = [sum(calls[k].get(s, 0) for k in syscalls) for s in servers]
print("| **all system calls** | " + " | ".join(f"**{t:.2f}**" for t in totals) + " |")
if ring:
    print("| *io_uring operations, per response:* |" + " |" * len(servers))
    labels = {"ring:+poll": "(of which armed an internal poll)", "ring:+io-wq": "(of which went to an io-wq worker)"}
    ring.sort(key=lambda k: k in labels)
    for k in ring:
        label = labels.get(k, k.replace("ring:", "IORING_OP_"))
        print(f"| {label} | " + " | ".join(cell(k, s) for s in servers) + " |")
PY
echo
[ ! -f "$tmp/notes" ] || { sed 's/^/Note: /' "$tmp/notes"; echo; }
echo "$REQUESTS requests of 1 KiB ($WORKLOAD), spidey bench -c $CONNS -n $REQUESTS, after $WARMUP untraced;" \
  "$([ "$METHOD" = perf ] && echo 'perf trace -s' || echo 'strace -f -c') on every process of each server$([ "$ring_ops" = 0 ] || echo ', perf record of the io_uring tracepoints');" \
  "server pinned to CPU ${SERVER_CPUS:-any}, client to CPU ${LOAD_CPUS:-any};" \
  "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src crates bench/floor bench/ref || echo '+changes');" \
  "$(server_versions); Linux $(uname -r), $([ "$METHOD" = perf ] && perf --version || strace -V | head -1 | sed 's/ -- version//')"
