#!/usr/bin/env bash
# A deterministic account per response: what each server asks of the kernel and of the
# allocator to answer one request, counted, not timed, so a change that adds work shows
# even when the machine's noise hides it in every timing.
#
# For each server (bench/lib/servers.sh: Spidey's modes, the C reference servers of
# bench/ref/, the floor, the peers): start it inside its own cgroup of a perf_event
# hierarchy (so every process it ever forks is counted, exited ones too: a fork child, a
# prefork worker, io_uring's kernel workers), check it serves the file (200 and the exact
# length), warm it up uncounted, then count with `perf stat -a -G CGROUP` while
# `spidey bench -c CONNS -n REQUESTS` fetches a 1 KiB file (closed loop):
#   - system calls (the raw_syscalls:sys_enter tracepoint),
#   - page faults and context switches (software events),
#   - allocator calls: uprobes on glibc's malloc, calloc, realloc and free ("allocations"
#     is malloc + calloc + realloc; a server with its own allocator, such as nginx's pools
#     or Go's, shows only what it asks of glibc).
# Each count divided by the responses the client received is one cell. With CONNS=1 every
# request finds the server idle, so nothing is batched: the cost of one request on its own.
#
#   bench/account.sh                                          # every mode beside its reference
#   WORKLOAD=1k-close bench/account.sh                        # a connection per request
#   WORKLOAD=h2c-m32 CONNS=4 SERVERS="h2o event:1" bench/account.sh  # h2c, 4 x 32 streams
#   SERVERS="ref-fork fork" REQUESTS=2000 bench/account.sh
#   SPIDEY_ALT=/path/to/old/spidey SERVERS="alt-event:1 event:1" bench/account.sh
#
# Servers are pinned to SERVER_CPUS (0) and the client to LOAD_CPUS (1). The table goes to
# stdout (markdown), progress to stderr. Loopback only; everything it starts is stopped on
# exit, and the probes it adds are removed.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVERS=${SERVERS:-"ref-iterative single ref-fork fork ref-thread thread ref-pool:4 pool:4 ref-prefork:4 prefork:4 floor ref-epoll:1 event:1 hybrid:1 ref-uring:1 uring:1"}
REQUESTS=${REQUESTS:-10000}
CONNS=${CONNS:-1}
WARMUP=${WARMUP:-500}
WORKLOAD=${WORKLOAD:-1k-keepalive}
source bench/lib/small_load.sh
small_load_setup

declare -A pid port tport cgroup perf_cgroup
source bench/lib/servers.sh
read -r -a servers <<<"$SERVERS"
install_server_packages "${servers[@]}"
command -v perf >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf >&2; }

# A perf_event cgroup hierarchy: cgroup v2's root, or a v1 one, mounted here if missing.
perf_cg_root=""
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  perf_cg_root=/sys/fs/cgroup
else
  perf_cg_root=$(awk '$3 == "cgroup" && $4 ~ /(^|,)perf_event(,|$)/ {print $2; exit}' /proc/mounts)
  if [ -z "$perf_cg_root" ]; then
    perf_cg_root=/sys/fs/cgroup/perf_event
    mkdir -p "$perf_cg_root"
    mount -t cgroup -o perf_event none "$perf_cg_root" || {
      echo "no perf_event cgroup hierarchy, and none could be mounted: nothing counted" >&2
      exit 1
    }
  fi
fi

LIBC=$(ldconfig -p | awk '$1 == "libc.so.6" && /x86-64|x86_64|aarch64/ {print $NF; exit}')
[ -n "$LIBC" ] || LIBC=$(ldconfig -p | awk '$1 == "libc.so.6" {print $NF; exit}')
probes=()
for f in malloc calloc realloc free; do
  if perf probe -q -x "$LIBC" --add "spidey_$f=$f" 2>/dev/null || perf probe -l "probe_libc:spidey_$f" 2>/dev/null | grep -q .; then
    probes+=("probe_libc:spidey_$f")
  else
    echo "cannot put a uprobe on $LIBC's $f: allocator calls are not counted" >&2
    probes=()
    break
  fi
done
events="raw_syscalls:sys_enter,page-faults,context-switches"
[ "${#probes[@]}" -eq 0 ] || events+=",$(IFS=,; echo "${probes[*]}")"

cargo build --release -q
BENCH=$(realpath "${CARGO_TARGET_DIR:-target}/release/spidey")
SPIDEY=${SPIDEY:-$BENCH}

tmp=$(mktemp -d)
chmod 755 "$tmp"
cleanup() {
  stop_servers
  for p in "${probes[@]}"; do perf probe -q --del "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
make_www
cpu_accounting_setup

start_checked_servers "${servers[@]}"

echo "Per response: $WORKLOAD, a 1 KiB file, \`spidey bench -c $CONNS -n $REQUESTS${bench_flags[*]:+ ${bench_flags[*]}}\` after $WARMUP uncounted;" \
  "$(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d), spidey $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates src || echo '+changes')."
echo
if [ "${#probes[@]}" -gt 0 ]; then
  echo "| server | responses | system calls | page faults | context switches | allocations | frees |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
else
  echo "| server | responses | system calls | page faults | context switches |"
  echo "|---|---:|---:|---:|---:|"
fi
for s in "${servers[@]}"; do
  url="http://127.0.0.1:${port[$s]}/1k.bin" f=${s//:/-}
  "${load_pin[@]}" "$BENCH" bench -c "$CONNS" -n "$WARMUP" "${bench_flags[@]}" "$url" >/dev/null
  perf stat -a -x, -o "$tmp/$f.stat" -e "$events" \
    -G "$(for _ in ${events//,/ }; do printf '%s,' "${perf_cgroup[$s]}"; done | sed 's/,$//')" -- \
    "${load_pin[@]}" "$BENCH" bench -c "$CONNS" -n "$REQUESTS" "${bench_flags[@]}" --json - "$url" >"$tmp/$f.json" 2>"$tmp/$f.err"
  ok=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(v for k,v in r["status"].items() if k.startswith("2")))' "$tmp/$f.json")
  [ "$ok" = "$REQUESTS" ] || echo "$s: $ok of $REQUESTS requests answered 2xx; the counts are per 2xx response. The client's summary: $(cat "$tmp/$f.err")" >&2
  python3 - "$tmp/$f.stat" "$ok" "$s" "${#probes[@]}" <<'PY'
import sys
path, ok, name, probes = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
counts = {}
for line in open(path):
    parts = line.strip().split(",")
    if len(parts) < 3 or line.startswith("#"):
        continue
    value, event = parts[0], parts[2]
    counts[event.split(":")[-1]] = float(value) if value.replace(".", "").isdigit() else float("nan")
def per(*names):
    return f"{sum(counts.get(n, float('nan')) for n in names) / ok:.2f}" if ok else "-"
cells = [name, str(ok), per("sys_enter"), per("page-faults"), per("context-switches")]
if probes:
    cells += [per("spidey_malloc", "spidey_calloc", "spidey_realloc"), per("spidey_free")]
print("| " + " | ".join(cells) + " |")
PY
done
