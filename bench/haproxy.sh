#!/usr/bin/env bash
# Spidey behind HAProxy (Debian's package): 1, 2 and 4 `spidey serve --mode event --workers 1`
# instances, each in a network namespace of its own (pinned to a CPU of its own while there
# are as many CPUs as instances), behind one haproxy in its own namespace, loaded by
# `spidey bench` from a client namespace; and one instance alone, loaded directly, as the
# baseline. All namespaces hang off one bridge in a namespace of its own: nothing is added
# to the machine's own network. Needs root and iproute2; installs haproxy and curl with
# apt-get if missing. Not run in CI (it is a benchmark).
#
#   bench/haproxy.sh [DURATION] [CONNECTIONS]        (defaults: 5s, 64)
#   OUT=DIR to keep each run's JSON (default: a temporary directory)
#
# Before measuring, each instance and the balancer must serve the test file (status 200 and
# its exact length) to a curl from the client namespace, or the script stops. It prints the
# machine, the commit, each run's `spidey bench` report, and a table of requests/s and p99.
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-5s}"
conns="${2:-64}"
[ "$(id -u)" -eq 0 ] || { echo "haproxy.sh: needs root (network namespaces)" >&2; exit 1; }
missing=()
for p in haproxy curl iproute2; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Debian may start haproxy as a service on install; this script starts its own.
if command -v systemctl >/dev/null && systemctl is-active -q haproxy 2>/dev/null; then systemctl stop haproxy || true; fi

cargo build --release --quiet
bin="$(pwd)/${CARGO_TARGET_DIR:-target}/release/spidey"
pfx="sphx-$$"
work="$(mktemp -d)"
out="${OUT:-$work/out}"
mkdir -p "$out" "$work/root"
head -c 1024 /dev/urandom >"$work/root/file.bin"
size=1024
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ns in $(ip netns list | awk '{print $1}' | grep "^$pfx-" || true); do ip netns del "$ns"; done
  rm -rf "$work"
}
trap cleanup EXIT

# host NAME IP: a namespace on the bridge with eth0 at IP/24.
ip netns add "$pfx-br"
ip -n "$pfx-br" link add br0 type bridge
ip -n "$pfx-br" link set br0 up
n_hosts=0
host() {
  local ns="$pfx-$1" port="v$n_hosts"
  n_hosts=$((n_hosts + 1))
  ip netns add "$ns"
  ip -n "$pfx-br" link add "$port" type veth peer name eth0 netns "$ns"
  ip -n "$pfx-br" link set "$port" master br0 up
  ip -n "$ns" addr add "$2/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}
host lb 10.79.0.1
host client 10.79.0.2
for i in 1 2 3 4; do host "s$i" "10.79.0.1$i"; done
in_ns() { local ns="$pfx-$1"; shift; ip netns exec "$ns" "$@"; }
# The same in the background, as one process (ip execs the program), so $! is the server's
# own pid and killing it stops the server.

# check URL: 200 and the file's exact length, or stop.
check() {
  local got
  got=$(in_ns client curl -s -o /dev/null --max-time 5 -w '%{http_code} %{size_download}' "$1" || true)
  if [ "$got" != "200 $size" ]; then
    echo "haproxy.sh: $1 answered '$got', want '200 $size'; not measuring" >&2
    exit 1
  fi
}

wait_for() {
  for _ in $(seq 100); do
    in_ns client curl -s -o /dev/null --max-time 1 "$1" && return 0
    sleep 0.05
  done
  echo "haproxy.sh: $1 never answered" >&2
  exit 1
}

cpus=$(nproc)
# start_instances N: N spidey instances, pinned to CPUs 0..N-1 if there are N CPUs.
start_instances() {
  local n=$1 i
  for i in $(seq "$n"); do
    local pin=()
    [ "$n" -le "$cpus" ] && pin=(taskset -c $((i - 1)))
    ip netns exec "$pfx-s$i" "${pin[@]}" "$bin" serve "$work/root" --addr "10.79.0.1$i" --port 8080 \
      --mode event --workers 1 --quiet --max-requests 4000000000 >/dev/null &
    pids+=($!)
    wait_for "http://10.79.0.1$i:8080/file.bin"
    check "http://10.79.0.1$i:8080/file.bin"
  done
}

start_haproxy() {
  local n=$1 i
  {
    printf 'global\n  maxconn 4096\n\ndefaults\n  mode http\n  timeout connect 5s\n'
    printf '  timeout client 30s\n  timeout server 30s\n  option http-keep-alive\n  http-reuse always\n\n'
    printf 'frontend fe\n  bind 10.79.0.1:8080\n  default_backend be\n\nbackend be\n  balance roundrobin\n'
    for i in $(seq "$n"); do printf '  server s%s 10.79.0.1%s:8080\n' "$i" "$i"; done
  } >"$work/haproxy.cfg"
  ip netns exec "$pfx-lb" haproxy -db -f "$work/haproxy.cfg" &
  pids+=($!)
  wait_for "http://10.79.0.1:8080/file.bin"
  # Round robin: 2N requests reach every instance twice; all must be right.
  for _ in $(seq $((2 * n))); do check "http://10.79.0.1:8080/file.bin"; done
}

stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}

measure() { # NAME URL
  echo "== $1: spidey bench $2 -c $conns -d $duration -t 1 (from the client namespace)"
  in_ns client timeout 120 "$bin" bench "$2" -c "$conns" -d "$duration" -t 1 --json "$out/$1.json"
  echo
}

echo "haproxy.sh $duration $conns"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src crates || echo ' (with uncommitted changes)'), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "haproxy: $(haproxy -v | head -1)"
echo

start_instances 1
measure direct-1 "http://10.79.0.11:8080/file.bin"
stop_all
for n in 1 2 4; do
  start_instances "$n"
  start_haproxy "$n"
  measure "haproxy-$n" "http://10.79.0.1:8080/file.bin"
  stop_all
done

echo "| setup | requests/s | p50 | p99 | errors |"
echo "| --- | ---: | ---: | ---: | ---: |"
for name in direct-1 haproxy-1 haproxy-2 haproxy-4; do
  python3 - "$out/$name.json" "$name" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
e = sum(v for v in r["errors"].values())
print(f"| {sys.argv[2]} | {r['requests_per_sec']:.0f} | {r['latency']['p50_us']} us | {r['latency']['p99_us']} us | {e} |")
EOF
done
