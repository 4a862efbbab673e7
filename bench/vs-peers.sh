#!/usr/bin/env bash
# Spidey against the best peers from Debian's packages (lighttpd and nginx, each with its
# documented high-performance settings) on the same files and the same machine, in one run.
#
# Two measurements, each in rounds that rotate the order of the servers:
#   1. requests/s, closed loop: wrk -t$THREADS -c$CONNS -d$DURATION;
#   2. server CPU per request at a fixed rate below saturation: `spidey bench --rate R`, the
#      server's whole process tree's CPU time (its own cgroup: every worker and child counted)
#      divided by the responses it gave. Far steadier than requests/s on a shared machine.
# Every server is first checked to serve each file (status 200 and the exact length).
# Tables: each server's median (min–max), and the ratio to the best peer taken round by round.
# Not a test: numbers depend on the machine and its load; the load average is printed.
#
#   bench/vs-peers.sh
#   SERVERS="lighttpd nginx:1 event:1 uring:1" ROUNDS=5 DURATION=3s bench/vs-peers.sh
#   WORKLOADS="1m-keepalive" CPU=0 bench/vs-peers.sh        # requests/s only, one workload
#   RATE_1k_keepalive=10000 RATE_1k_close=2000 RATE_1m_keepalive=300 bench/vs-peers.sh
#
# A server is NAME:LOOPS: lighttpd (always one process), nginx:N (N worker processes),
# or a Spidey mode with --workers N (event:1, uring:2, hybrid:2...). With SPIDEY_ALT set to
# another spidey binary (another commit's build), alt-MODE:N runs that one, for A/B runs:
#   SPIDEY_ALT=/tmp/spidey-before SERVERS="lighttpd alt-event:1 event:1" bench/vs-peers.sh
# Loopback only; everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVERS=${SERVERS:-"lighttpd nginx:1 nginx:2 event:1 event:2 uring:1 uring:2"}
read -r -a workloads <<<"${WORKLOADS:-1k-keepalive 1k-close 1m-keepalive}"
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3s}
CONNS=${CONNS:-32}
THREADS=${THREADS:-1}
CPU=${CPU:-1}
CPU_DURATION=${CPU_DURATION:-3s}
RATE_1k_keepalive=${RATE_1k_keepalive:-10000}
RATE_1k_close=${RATE_1k_close:-3000}
RATE_1m_keepalive=${RATE_1m_keepalive:-300}

need=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v lighttpd >/dev/null || [ -x /usr/sbin/lighttpd ] || need+=(lighttpd)
command -v wrk >/dev/null || need+=(wrk)
command -v curl >/dev/null || need+=(curl)
if [ "${#need[@]}" -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >&2
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
LIGHTTPD=$(command -v lighttpd || echo /usr/sbin/lighttpd)

cargo build --release -q
SPIDEY=$(realpath "${CARGO_TARGET_DIR:-target}/release/spidey")

tmp=$(mktemp -d)
chmod 755 "$tmp"
declare -A pid port cgroup
cleanup() {
  for s in "${!pid[@]}"; do kill "${pid[$s]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for s in "${!cgroup[@]}"; do rmdir "${cgroup[$s]}" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

mkdir -p "$tmp/www"
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
head -c $((1024 * 1024)) /dev/urandom >"$tmp/www/1m.bin"
chmod -R a+rX "$tmp/www"

# CPU accounting: a cgroup per server (v2 `cpu.stat` usage_usec, or v1 `cpuacct.usage`),
# which every process the server forks joins, so nginx's workers and Spidey's CGI children
# are all counted. Without a writable cgroup hierarchy the CPU tables are skipped.
cg_kind=none
if [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ]; then
  cg_root=/sys/fs/cgroup cg_kind=v2
elif [ -f /sys/fs/cgroup/unified/cgroup.controllers ] && [ -w /sys/fs/cgroup/unified ]; then
  cg_root=/sys/fs/cgroup/unified cg_kind=v2
elif [ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ] && [ -w /sys/fs/cgroup/cpuacct ]; then
  cg_root=/sys/fs/cgroup/cpuacct cg_kind=v1
fi
if [ "$CPU" = 1 ] && [ "$cg_kind" = none ]; then
  echo "no writable cgroup hierarchy: CPU per request is not measured" >&2
  CPU=0
fi
cpu_us() { # cgroup -> CPU microseconds used so far
  case $cg_kind in
    v2) awk '$1 == "usage_usec" {print $2}' "$1/cpu.stat" ;;
    v1) echo $(($(cat "$1/cpuacct.usage") / 1000)) ;;
  esac
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME CMD...: runs CMD in the background inside NAME's own cgroup (joined before exec,
# so nothing it forks escapes the count).
start() {
  local name=$1
  shift
  local cg=""
  if [ "$cg_kind" != none ]; then
    cg="$cg_root/spidey-vs-peers-$$-${name//:/-}"
    mkdir -p "$cg"
    cgroup[$name]=$cg
  fi
  CG="$cg" sh -c '[ -z "$CG" ] || echo $$ >"$CG/cgroup.procs"; exec "$@"' sh "$@" &
  pid[$name]=$!
}

start_nginx() { # name workers
  local dir="$tmp/${1//:/-}" p
  p=$(free_port)
  mkdir -p "$dir"
  cat >"$dir/nginx.conf" <<CONF
worker_processes $2;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 65536; multi_accept on; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    open_file_cache max=1000 inactive=60s;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    server { listen 127.0.0.1:$p reuseport; root $tmp/www; }
}
CONF
  start "$1" "$NGINX" -c "$dir/nginx.conf" -p "$dir"
  port[$1]=$p
}

start_lighttpd() { # name
  local dir="$tmp/${1//:/-}" p
  p=$(free_port)
  mkdir -p "$dir"
  # lighttpd's performance page: one process, linux-sysepoll, sendfile, keep-alive without a
  # request cap, stat cache; no access log (nginx and Spidey run without one too).
  cat >"$dir/lighttpd.conf" <<CONF
server.document-root = "$tmp/www"
server.bind = "127.0.0.1"
server.port = $p
server.event-handler = "linux-sysepoll"
server.network-backend = "sendfile"
server.max-connections = 16384
server.max-fds = 32768
server.max-keep-alive-requests = 1000000
server.max-keep-alive-idle = 60
server.stat-cache-engine = "simple"
server.errorlog = "$dir/error.log"
mimetype.assign = ( "" => "application/octet-stream" )
CONF
  start "$1" "$LIGHTTPD" -D -f "$dir/lighttpd.conf"
  port[$1]=$p
}

start_spidey() { # name mode workers [binary]
  local out="$tmp/${1//:/-}.out"
  start "$1" "${4:-$SPIDEY}" serve "$tmp/www" --port 0 --quiet --mode "$2" --workers "$3" \
    --max-requests 4000000000 --max-conns 100000
  for _ in $(seq 50); do grep -q listening "$out" 2>/dev/null && break; sleep 0.1; done
  port[$1]=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
}

read -r -a servers <<<"$SERVERS"
for s in "${servers[@]}"; do
  name=${s%%:*} loops=${s#*:}
  [ "$loops" = "$s" ] && loops=1
  case $name in
    lighttpd) start_lighttpd "$s" ;;
    nginx) start_nginx "$s" "$loops" ;;
    alt-*) start_spidey "$s" "${name#alt-}" "$loops" "${SPIDEY_ALT:?alt- servers need SPIDEY_ALT}" >"$tmp/${s//:/-}.out" 2>&1 ;;
    *) start_spidey "$s" "$name" "$loops" >"$tmp/${s//:/-}.out" 2>&1 ;;
  esac
done

# Each server must really serve each file: status 200 and the exact length, or we stop.
for s in "${servers[@]}"; do
  for f in 1k.bin 1m.bin; do
    want=$(stat -c %s "$tmp/www/$f") got=""
    for _ in $(seq 50); do
      got=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "http://127.0.0.1:${port[$s]}/$f" || true)
      [ "$got" = "200 $want" ] && break
      sleep 0.1
    done
    if [ "$got" != "200 $want" ]; then
      echo "$s does not serve $f (got '$got', want '200 $want'); not measuring" >&2
      exit 1
    fi
  done
done
echo "checked: every server answers 200 with the exact length for 1k.bin and 1m.bin" >&2

file_of() { case $1 in 1m-*) echo 1m.bin ;; *) echo 1k.bin ;; esac; }
run_wrk() { # server workload [duration] -> req/s
  local url="http://127.0.0.1:${port[$1]}/$(file_of "$2")" hdr=()
  [ "$2" = 1k-close ] && hdr=(-H 'Connection: close')
  wrk -t"$THREADS" -c"$CONNS" -d"${3:-$DURATION}" "${hdr[@]}" "$url" | awk '/Requests\/sec/ {print $2}'
}
run_cpu() { # server workload -> server CPU microseconds per response at the workload's rate
  local url="http://127.0.0.1:${port[$1]}/$(file_of "$2")" rate_var="RATE_${2//-/_}" ka=() before after
  [ "$2" = 1k-close ] && ka=(--no-keepalive)
  before=$(cpu_us "${cgroup[$1]}")
  "$SPIDEY" bench -c "$CONNS" -d "$CPU_DURATION" --rate "${!rate_var}" "${ka[@]}" --json "$tmp/cpu.json" "$url" >/dev/null
  after=$(cpu_us "${cgroup[$1]}")
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); n=d["responses"]; print(f"{(int(sys.argv[3])-int(sys.argv[2]))/n:.2f}" if n else "nan")' \
    "$tmp/cpu.json" "$before" "$after"
}

declare -A rps cpu
rotate() { # round -> the servers, rotated so no server is always first or last
  local k=$((($1 - 1) % ${#servers[@]}))
  echo "${servers[@]:$k}" "${servers[@]:0:$k}"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for w in "${workloads[@]}"; do
  # An unmeasured second on every server first: a change of workload leaves the last one's
  # sockets (after `Connection: close`, tens of thousands in TIME_WAIT) to whoever runs next.
  for s in "${servers[@]}"; do run_wrk "$s" "$w" 1s >/dev/null; done
  for round in $(seq "$ROUNDS"); do
    for s in $(rotate "$round"); do
      r=$(run_wrk "$s" "$w")
      rps[$s,$w]+="$r "
      echo "round $round $w $s: $r req/s" >&2
    done
  done
  [ "$CPU" = 1 ] || continue
  for round in $(seq "$ROUNDS"); do
    for s in $(rotate "$round"); do
      c=$(run_cpu "$s" "$w")
      cpu[$s,$w]+="$c "
      echo "round $round $w $s: $c µs CPU per response" >&2
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

values() { tr ' ' '\n' <<<"$1" | grep -v '^$' || true; }
summary() { # values -> "median (min–max)"
  values "$1" | sort -g | awk 'function f(x) {return (x >= 100) ? sprintf("%.0f", x) : sprintf("%.3g", x)}
    {a[NR]=$1} END {if (!NR) {print "-"; exit} m = (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%s (%s–%s)", f(m), f(a[1]), f(a[NR])}'
}
median_of() { values "$1" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { # a-values b-values -> "median (min–max)" of b/a over the rounds
  paste -d' ' <(values "$1") <(values "$2") | awk '$1 > 0 {print $2 / $1}' | sort -g |
    awk '{a[NR]=$1} END {if (!NR) {print "-"; exit} m = (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.2f (%.2f–%.2f)", m, a[1], a[NR]}'
}
# The best peer of a workload: the highest median req/s (or lowest median CPU) among the peers.
best_peer() { # table workload higher|lower
  local -n t=$1
  local best="" bv=""
  for s in "${servers[@]}"; do
    case ${s%%:*} in lighttpd | nginx) ;; *) continue ;; esac
    v=$(median_of "${t[$s,$2]:-}")
    if [ -z "$best" ] || awk -v v="$v" -v b="$bv" -v d="$3" 'BEGIN {exit !((d == "higher") ? v > b : v < b)}'; then
      best=$s bv=$v
    fi
  done
  echo "$best"
}
table() { # title table-name higher|lower unit
  local -n t=$2
  echo
  echo "### $1"
  echo
  echo "| workload | server | $4, median (min–max) of $ROUNDS | ratio to the best peer, per round |"
  echo "| --- | --- | ---: | ---: |"
  for w in "${workloads[@]}"; do
    best=$(best_peer "$2" "$w" "$3")
    for s in "${servers[@]}"; do
      if [ "$s" = "$best" ]; then r="best peer"; else r=$(ratio "${t[$best,$w]:-}" "${t[$s,$w]:-}"); fi
      echo "| $w | $s | $(summary "${t[$s,$w]:-}") | $r |"
    done
  done
}
table "Requests per second (wrk -t$THREADS -c$CONNS -d$DURATION; higher is better)" rps higher "req/s"
if [ "$CPU" = 1 ]; then
  table "Server CPU per response at a fixed rate (spidey bench -c $CONNS -d $CPU_DURATION --rate: 1k-keepalive $RATE_1k_keepalive/s, 1k-close $RATE_1k_close/s, 1m-keepalive $RATE_1m_keepalive/s; lower is better)" cpu lower "µs CPU"
fi
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r);" \
  "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src crates || echo '+changes'); $ROUNDS rounds, order rotated every round;" \
  "lighttpd $("$LIGHTTPD" -v 2>&1 | head -1 | awk '{print $1}'), nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), cpu accounting: cgroup $cg_kind"
