#!/usr/bin/env bash
# spidey bench vs wrk, alternating rounds against the same nginx (1 worker, 1 KiB file).
#
#   bench/bench-vs-wrk.sh [ROUNDS] [DURATION]      (defaults: 5 rounds of 10s)
#
# Installs nginx-light and wrk with apt-get when missing, starts its own nginx from a
# generated config in a temp dir on a free loopback port, builds spidey --release, then
# runs `spidey bench -t1 -c32 -dD` and `wrk -t1 -c32 -dD --latency` in turn, ROUNDS times
# each, and prints a markdown table of the medians. Exits 1 when spidey bench reaches
# less than 0.95x wrk's requests/s, or its p50/p99 differ from wrk's by more than 25%.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
DURATION=${2:-10s}

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
if [ "${#need[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

cargo build --release --quiet
SPIDEY=${CARGO_TARGET_DIR:-target}/release/spidey

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
# nginx's worker runs as nobody: let it read the file (mktemp -d makes a 0700 directory).
chmod 755 "$dir" "$dir/www"
chmod 644 "$dir/www/1k.bin"
cat >"$dir/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $dir/tmp;
    proxy_temp_path $dir/tmp;
    fastcgi_temp_path $dir/tmp;
    uwsgi_temp_path $dir/tmp;
    scgi_temp_path $dir/tmp;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$port;
        root $dir/www;
    }
}
EOF
"$NGINX" -c "$dir/nginx.conf" -p "$dir" &
nginx_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/1k.bin" -o /dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$port/1k.bin" -o /dev/null || { echo "nginx does not serve 1k.bin" >&2; exit 1; }
URL="http://127.0.0.1:$port/1k.bin"

# wrk prints latency as 812.00us / 1.23ms / 2.00s; convert to microseconds.
to_us() { awk -v v="$1" 'BEGIN { n=v+0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n*1000; else if (v ~ /m$/) print n*60e6; else print n*1e6 }'; }

: >"$dir/spidey.tsv"
: >"$dir/wrk.tsv"
for round in $(seq "$ROUNDS"); do
  echo "round $round/$ROUNDS (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "$SPIDEY" bench -t1 -c32 -d"$DURATION" --json "$dir/s.json" "$URL" >/dev/null
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); l=r["latency"]; print(r["requests_per_sec"], l["p50_us"], l["p99_us"], sum(r["errors"].values()) + sum(n for c, n in r["status"].items() if c != "200"))' "$dir/s.json" >>"$dir/spidey.tsv"
  wrk -t1 -c32 -d"$DURATION" --latency "$URL" >"$dir/w.txt"
  rps=$(awk '/^Requests\/sec:/ { print $2 }' "$dir/w.txt")
  p50=$(to_us "$(awk '$1 == "50%" { print $2 }' "$dir/w.txt")")
  p99=$(to_us "$(awk '$1 == "99%" { print $2 }' "$dir/w.txt")")
  # "Socket errors: connect 0, read 0, write 0, timeout 0" and "Non-2xx or 3xx responses: N".
  errs=$(awk -F'[:,]' '/Socket errors/ { for (i = 2; i <= NF; i++) { split($i, f, " "); e += f[2] } }
                       /Non-2xx/ { e += $2 } END { print e + 0 }' "$dir/w.txt")
  echo "$rps $p50 $p99 $errs" >>"$dir/wrk.tsv"
  tail -n1 "$dir/spidey.tsv" | sed 's/^/  spidey: rps p50us p99us errors = /' >&2
  tail -n1 "$dir/wrk.tsv" | sed 's/^/  wrk:    rps p50us p99us errors = /' >&2
done

python3 - "$dir/spidey.tsv" "$dir/wrk.tsv" "$ROUNDS" "$DURATION" <<'EOF'
import statistics, sys
def load(p):
    rows = [list(map(float, l.split())) for l in open(p) if l.strip()]
    return [statistics.median(c) for c in zip(*rows)], rows
(s, srows), (w, wrows) = load(sys.argv[1]), load(sys.argv[2])
rounds, duration = sys.argv[3], sys.argv[4]
print(f"| tool (median of {rounds} rounds of {duration}, -t1 -c32) | requests/s | p50 | p99 | errors + non-200 |")
print("|---|---:|---:|---:|---:|")
print(f"| wrk | {w[0]:.0f} | {w[1]:.0f} us | {w[2]:.0f} us | {w[3]:.0f} |")
print(f"| spidey bench | {s[0]:.0f} | {s[1]:.0f} us | {s[2]:.0f} us | {s[3]:.0f} |")
ratio, p50, p99 = s[0] / w[0], s[1] / w[1], s[2] / w[2]
print(f"| spidey / wrk | {ratio:.3f}x | {p50:.2f}x | {p99:.2f}x | |")
print()
print("per round (requests/s): spidey " + ", ".join(f"{r[0]:.0f}" for r in srows) + "; wrk " + ", ".join(f"{r[0]:.0f}" for r in wrows))
ok = ratio >= 0.95 and 0.75 <= p50 <= 1.25 and 0.75 <= p99 <= 1.25 and s[3] == 0 and w[3] == 0
print("verdict: " + ("PASS" if ok else "FAIL") + " (needs >= 0.95x requests/s, p50/p99 within 25%, no errors)")
sys.exit(0 if ok else 1)
EOF
