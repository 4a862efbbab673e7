#!/usr/bin/env bash
# spidey bench --h2 vs h2load, rotated rounds against the same nginx (1 worker, h2c, 1 KiB).
#
#   bench/bench-vs-h2load.sh [ROUNDS] [SECONDS] [CONNECTIONS] [STREAMS]
#                                            (defaults: 3 rounds of 3 s, -c4, 8 streams each)
#
# Installs nginx-light and nghttp2-client (h2load) with apt-get when missing, starts its own
# nginx (HTTP/2 by prior knowledge on a free loopback port, access_log off) pinned to CPU 0,
# builds spidey bench --release (its example binary: the same code), then runs `spidey bench --h2 -t1 -cC --streams M -dS` and
# `h2load -t1 -cC -mM -DS`, both pinned to CPU 1, in turn, the first tool alternating per
# round. Prints each round and the medians, and spidey/h2load ratios. h2load prints no
# latency percentiles, so the latencies compared are the means.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-3}
C=${3:-4}
M=${4:-8}

need=()
command -v h2load >/dev/null || need+=(nghttp2-client)
[ -x /usr/sbin/nginx ] || need+=(nginx-light)
if [ "${#need[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}"
fi
NGINX=/usr/sbin/nginx
# spidey bench's own code without the server and the lab (crates/bench/examples/bench.rs):
# the same flags and code path as `spidey bench`, a much shorter release build.
cargo build --release --quiet -p spidey-bench --example bench
SPIDEY=${CARGO_TARGET_DIR:-target}/release/examples/bench

dir=$(mktemp -d)
nginx_pid=
cleanup() {
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$dir/www" "$dir/tmp"
head -c 1024 /dev/urandom >"$dir/www/1k.bin"
chmod 755 "$dir" "$dir/www"; chmod 644 "$dir/www/1k.bin"
cat >"$dir/nginx.conf" <<EOF
worker_processes 1;
daemon off;
master_process off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
    uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
    keepalive_requests 100000000;
    http2_max_concurrent_streams 256;
    server { listen 127.0.0.1:$port http2; root $dir/www; }
}
EOF
taskset -c 0 "$NGINX" -c "$dir/nginx.conf" -p "$dir" &
nginx_pid=$!
URL="http://127.0.0.1:$port/1k.bin"
for _ in $(seq 50); do curl -sf --http2-prior-knowledge "$URL" -o /dev/null && break; sleep 0.1; done
curl -sf --http2-prior-knowledge "$URL" -o /dev/null || { echo "nginx does not serve 1k.bin over h2c" >&2; exit 1; }

spidey_round() {
  taskset -c 1 "$SPIDEY" --h2 -t1 -c"$C" --streams "$M" -d"${SECS}s" --json "$dir/s.json" "$URL" >/dev/null
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); l=r["latency"]; print("spidey", round(r["requests_per_sec"]), round(l["mean_us"]), l["p50_us"], l["p99_us"], r["errors"]["connect"]+r["errors"]["timeout"]+r["errors"]["reset"]+r["errors"]["closed"]+r["errors"]["malformed"]+r["errors"]["other"]+r["non_2xx_3xx"])' "$dir/s.json"
}
h2load_round() {
  taskset -c 1 h2load -t1 -c"$C" -m"$M" -D "$SECS" "$URL" >"$dir/h.txt"
  python3 - "$dir/h.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
rps = float(re.search(r"finished in [\d.]+s, ([\d.]+) req/s", t).group(1))
req = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", t)
def us(v):
    n = float(re.match(r"[\d.]+", v).group())
    return n * (1e6 if v.endswith("s") and not v.endswith(("ms", "us")) else 1e3 if v.endswith("ms") else 1)
m = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", t)
print("h2load", round(rps), round(us(m.group(3))), "-", "-", int(req.group(5)) + int(req.group(6)))
PY
}

echo "machine: nproc $(nproc), $(uname -r); nginx on CPU 0, the client on CPU 1; -c$C x $M streams, ${SECS}s per run" >&2
: >"$dir/all.txt"
for round in $(seq "$ROUNDS"); do
  echo "round $round/$ROUNDS (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  if [ $((round % 2)) -eq 1 ]; then
    spidey_round | tee -a "$dir/all.txt"; h2load_round | tee -a "$dir/all.txt"
  else
    h2load_round | tee -a "$dir/all.txt"; spidey_round | tee -a "$dir/all.txt"
  fi
done
python3 - "$dir/all.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(tool, i): return statistics.median(float(r[i]) for r in rows if r[0] == tool)
s, h = med("spidey", 1), med("h2load", 1)
sm, hm = med("spidey", 2), med("h2load", 2)
print("| tool | requests/s (median) | mean latency | rounds (requests/s) | errors |")
print("|---|---:|---:|---|---:|")
for tool in ("h2load", "spidey"):
    rps = ", ".join(r[1] for r in rows if r[0] == tool)
    errs = sum(int(r[5]) for r in rows if r[0] == tool)
    print(f"| {tool} | {med(tool, 1):.0f} | {med(tool, 2):.0f} us | {rps} | {errs} |")
print(f"| spidey / h2load | {s / h:.3f}x | {sm / hm:.2f}x | | |")
PY
