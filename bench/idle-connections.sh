#!/usr/bin/env bash
# What N idle keep-alive connections cost a Spidey mode: its resident memory, and a
# legitimate client's latency while they sit open.
#
# For each mode: start the server; measure a legitimate client (spidey bench at a fixed
# rate, p50/p99); open N connections from several loopback source addresses (127.0.0.2 and
# up: one source address has only ~28k ephemeral ports towards one server port), send one
# request on each and read its answer, so every connection has been served and now idles
# in keep-alive; read the server's VmRSS; measure the legitimate client again; close all.
#
#   bench/idle-connections.sh                    # N=100000, MODES="event uring"
#   N=10000 MODES=event bench/idle-connections.sh
#
# Loopback only; the client and the server are stopped on exit. Needs root (or a hard
# descriptor limit above N) to raise RLIMIT_NOFILE.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-100000}
MODES=${MODES:-"event uring"}
WORKERS=${WORKERS:-1}
RATE=${RATE:-2000}
PROBE=${PROBE:-3s}

# The server and the crowd each need N descriptors. Raising the hard limit takes
# CAP_SYS_RESOURCE; without it the largest N is the hard limit less some headroom.
ulimit -n $((N + 1000)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((N + 1000)) ]; then
  echo "descriptor limit $(ulimit -n) (hard $(ulimit -Hn)) is below N+1000=$((N + 1000)):" \
    "raising it needs CAP_SYS_RESOURCE; lower N" >&2
  exit 2
fi

cargo build --release -q
SPIDEY=$(realpath "${CARGO_TARGET_DIR:-target}/release/spidey")
tmp=$(mktemp -d)
chmod 755 "$tmp"
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/www"
printf 'idle\n' >"$tmp/www/small.txt"
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"

cat >"$tmp/crowd.py" <<'PY'
# Opens N keep-alive connections, one request each, answers read; holds them until stdin closes.
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
per_source = 25000
conns = []
for i in range(n):
    s = socket.socket()
    s.setsockopt(socket.SOL_IP, 24, 1)  # IP_BIND_ADDRESS_NO_PORT: the port is chosen at connect
    s.bind((f"127.0.0.{2 + i // per_source}", 0))
    s.connect(("127.0.0.1", port))
    conns.append(s)
req = b"GET /small.txt HTTP/1.1\r\nHost: idle\r\n\r\n"
for s in conns:
    s.sendall(req)
bad = 0
for s in conns:
    got = b""
    while not (b"\r\n\r\n" in got and got.endswith(b"idle\n")):
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    bad += not got.startswith(b"HTTP/1.1 200")
print(f"open {len(conns)} answered {len(conns) - bad}", flush=True)
sys.stdin.read()
PY

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
probe() { # port -> "p50 p99" in µs of a legitimate client at $RATE req/s
  "$SPIDEY" bench -c 8 -d "$PROBE" --rate "$RATE" --json "$tmp/probe.json" "http://127.0.0.1:$1/1k.bin" >/dev/null
  python3 - "$tmp/probe.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
lat = d["latency"]
def pick(name):
    for k, v in lat.items():
        if k.replace("_us", "") == name:
            return v
    raise SystemExit(f"no {name} in {sorted(lat)}")
errs = sum(d["errors"].values()) if isinstance(d["errors"], dict) else d["errors"]
print(pick("p50"), pick("p99"), d["responses"], errs)
PY
}

echo "| mode | N idle | RSS before (MiB) | RSS with N idle (MiB) | per connection (bytes) | legit p50/p99 before (µs) | legit p50/p99 with N idle (µs) | crowd answered |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for mode in $MODES; do
  out="$tmp/$mode.out"
  "$SPIDEY" serve "$tmp/www" --port 0 --quiet --mode "$mode" --workers "$WORKERS" \
    --max-conns $((N + 1000)) --idle-timeout 600s --max-requests 4000000000 >"$out" 2>&1 &
  server=$!
  for _ in $(seq 50); do grep -q listening "$out" && break; sleep 0.1; done
  port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
  read -r b50 b99 _ _ < <(probe "$port")
  before=$(rss_kib "$server")
  coproc CROWD { python3 "$tmp/crowd.py" "$port" "$N"; }
  read -r line <&"${CROWD[0]}"
  after=$(rss_kib "$server")
  read -r w50 w99 _ _ < <(probe "$port")
  exec {CROWD[1]}>&-
  wait "$CROWD_PID" 2>/dev/null || true
  per=$(((after - before) * 1024 / N))
  printf '| %s | %d | %.1f | %.1f | %d | %s / %s | %s / %s | %s |\n' "$mode" "$N" \
    "$(echo "$before / 1024" | bc -l)" "$(echo "$after / 1024" | bc -l)" "$per" "$b50" "$b99" "$w50" "$w99" "${line#open }"
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=""
done
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r);" \
  "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src crates || echo '+changes'); --workers $WORKERS;" \
  "legit client: spidey bench -c 8 -d $PROBE --rate $RATE on a 1 KiB file; load $(cut -d' ' -f1-3 /proc/loadavg)"
