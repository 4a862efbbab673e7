#!/usr/bin/env bash
# Spidey's event-driven modes against nginx on the same files, the same worker count and
# the same machine, measured with wrk in one run: rounds alternate the servers; the first
# table reports each server's median, the second the median (and range) of the ratios taken
# round by round. Not a test: numbers depend on the machine and its load.
#
#   bench/vs-nginx.sh                  # defaults below
#   WORKERS=2 ROUNDS=5 DURATION=5s CONNS=64 THREADS=2 bench/vs-nginx.sh
#   WORKLOADS="1k-close 1m-keepalive" MODES=uring bench/vs-nginx.sh   # a subset
#
# Loopback only; everything it starts is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

WORKERS=${WORKERS:-$(nproc)}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-64}
THREADS=${THREADS:-2}
MODES=${MODES:-"event uring"}

need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v wrk >/dev/null || need+=(wrk)
if [ "${#need[@]}" -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >&2
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

cargo build --release -q
SPIDEY=${CARGO_TARGET_DIR:-target}/release/spidey

tmp=$(mktemp -d)
chmod 755 "$tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

mkdir -p "$tmp/www"
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
head -c $((1024 * 1024)) /dev/urandom >"$tmp/www/1m.bin"
chmod -R a+rX "$tmp/www"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# nginx: its own config, in the foreground of a background job.
nginx_port=$(free_port)
mkdir -p "$tmp/nginx"
cat >"$tmp/nginx/nginx.conf" <<CONF
worker_processes $WORKERS;
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 8192; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path $tmp/nginx/body;
    proxy_temp_path $tmp/nginx/proxy;
    fastcgi_temp_path $tmp/nginx/fastcgi;
    uwsgi_temp_path $tmp/nginx/uwsgi;
    scgi_temp_path $tmp/nginx/scgi;
    server {
        listen 127.0.0.1:$nginx_port;
        root $tmp/www;
    }
}
CONF
"$NGINX" -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" &
pids+=($!)

declare -A port
port[nginx]=$nginx_port
for mode in $MODES; do
  out="$tmp/spidey-$mode.out"
  "$SPIDEY" serve "$tmp/www" --port 0 --quiet --mode "$mode" --workers "$WORKERS" \
    --max-requests 4000000000 --max-conns 100000 >"$out" &
  pids+=($!)
  for _ in $(seq 50); do grep -q listening "$out" && break; sleep 0.1; done
  port[$mode]=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
done
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$nginx_port/1k.bin" -o /dev/null && break; sleep 0.1; done

servers=(nginx $MODES)
read -r -a workloads <<<"${WORKLOADS:-1k-keepalive 1k-close 1m-keepalive}"
run_wrk() { # server workload -> req/s
  local url="http://127.0.0.1:${port[$1]}"
  case $2 in
    1k-keepalive) wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" "$url/1k.bin" ;;
    1k-close) wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" -H 'Connection: close' "$url/1k.bin" ;;
    1m-keepalive) wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" "$url/1m.bin" ;;
  esac | awk '/Requests\/sec/ {print $2}'
}

echo "load before: $(uptime)" >&2
declare -A results
for w in "${workloads[@]}"; do
  # A workload's rounds run back to back, after an unmeasured second on every server: the
  # run that follows a change of workload pays for the last one (after `Connection: close`,
  # tens of thousands of sockets in TIME_WAIT), and without this it was always measured.
  for s in "${servers[@]}"; do DURATION=1s run_wrk "$s" "$w" >/dev/null; done
  for round in $(seq "$ROUNDS"); do
    # Rotate the order each round so no server always runs first (or last).
    order=("${servers[@]:$(((round - 1) % ${#servers[@]}))}" "${servers[@]:0:$(((round - 1) % ${#servers[@]}))}")
    for s in "${order[@]}"; do
      rps=$(run_wrk "$s" "$w")
      results[$s,$w]+="$rps "
      echo "round $round $w $s: $rps req/s" >&2
    done
  done
done
echo "load after: $(uptime)" >&2

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo
echo "| server | workload | req/s (median of $ROUNDS) | ratio to nginx |"
echo "| --- | --- | ---: | ---: |"
for w in "${workloads[@]}"; do
  base=$(echo "${results[nginx,$w]}" | median)
  for s in "${servers[@]}"; do
    m=$(echo "${results[$s,$w]}" | median)
    printf '| %s | %s | %.0f | %.2f |\n' "$s" "$w" "$m" "$(awk -v m="$m" -v b="$base" 'BEGIN {print (b > 0) ? m / b : 0}')"
  done
done

# The same comparison made round by round: each round measures every server within seconds
# of the others, so a ratio taken inside a round cancels most of the machine's drift
# (a shared host's steal time, a neighbour's burst), which the medians above keep.
values() { tr ' ' '\n' <<<"${results[$1,$2]}" | grep -v '^$'; }
paired() { # a b workload -> "median (min–max)" of b/a over the rounds
  paste -d' ' <(values "$1" "$3") <(values "$2" "$3") | awk '$1 > 0 {print $2 / $1}' | sort -g |
    awk '{a[NR] = $1} END {m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.2f (%.2f–%.2f)", m, a[1], a[NR]}'
}
pairs=()
for s in $MODES; do pairs+=("nginx $s"); done
modes=($MODES)
for ((i = 1; i < ${#modes[@]}; i++)); do pairs+=("${modes[0]} ${modes[i]}"); done
echo
printf '| workload |'
for p in "${pairs[@]}"; do set -- $p; printf ' %s / %s per round |' "$2" "$1"; done
echo
printf '| --- |'
for _ in "${pairs[@]}"; do printf ' ---: |'; done
echo
for w in "${workloads[@]}"; do
  printf '| %s |' "$w"
  for p in "${pairs[@]}"; do set -- $p; printf ' %s |' "$(paired "$1" "$2" "$w")"; done
  echo
done
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r);" \
  "workers $WORKERS, wrk -t$THREADS -c$CONNS -d$DURATION, $ROUNDS rounds"
