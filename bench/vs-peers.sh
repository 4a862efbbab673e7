#!/usr/bin/env bash
# Spidey against the best peers from Debian's packages (lighttpd, nginx, h2o and Caddy, each
# with its documented high-performance settings) and against the canned-reply floor (a tiny
# epoll server that answers every request with the same bytes, bench/floor/floor.c), on the
# same files and the same machine, in one run. The servers are started by bench/lib/servers.sh.
# The C reference servers of bench/ref/ (ref-iterative, ref-fork, ref-thread, ref-pool,
# ref-prefork, ref-epoll, ref-uring: each architecture bare, serving the same files) can
# join any run, to see how close each Spidey mode comes to its own architecture.
#
# Two measurements, each in rounds that rotate the order of the servers:
#   1. requests/s, closed loop: wrk -t$THREADS -c$CONNS -d$DURATION;
#   2. server CPU per request at a fixed rate below saturation: `spidey bench --rate R`, the
#      server's whole process tree's CPU time in nanoseconds (its own cgroup: every worker
#      and child counted; see cpu_ns in bench/lib/servers.sh) divided by the responses it
#      gave (late ones included: a server that cannot keep up answers late, not never).
#      Far steadier than requests/s on a shared machine.
# Every server is pinned to SERVER_CPUS and the load generator to LOAD_CPUS (taskset; CPU 0
# and CPU 1 by default, PIN=0 to pin nothing), so a server with several loops or workers
# shares one CPU among them unless SERVER_CPUS names more.
# Every server is first checked to serve each file (status 200 and the exact length); the
# floor serves only the 1 KiB workloads, and lighttpd, h2o, Caddy, the floor and the
# reference servers take no part in the TLS ones.
# Tables: each server's median (min–max), the ratio to the best peer (lighttpd, nginx, h2o,
# Caddy) and, with the floor in the run, the ratio to the floor, both taken round by round.
# Not a test: numbers depend on the machine and its load; the load average is printed.
#
# TLS workloads (tls-*; lighttpd takes no part: Debian's needs lighttpd-mod-openssl): nginx
# serves them on a second, `ssl` port of the same process; each Spidey server has a TLS twin
# (`spidey serve --tls-cert --tls-key`, its own cgroup). One certificate for all, made here
# with openssl (RSA 2048, self-signed, for localhost). The cipher suite is pinned: nginx is
# configured with it alone, and the client offers it alone, so Spidey (which picks from the
# client's offer) negotiates it too; TLS=1.3 (default): TLS_AES_128_GCM_SHA256 (X25519);
# TLS=1.2: ECDHE-RSA-AES128-GCM-SHA256. The load is `spidey bench https://` (closed loop,
# same -t/-c/-d as wrk), not wrk: wrk has no switch for session resumption (on reconnect it
# calls SSL_shutdown and SSL_clear on the same SSL object and never SSL_set_session, so
# whether it resumes is left to OpenSSL) and cannot pin a TLS 1.3 suite; spidey bench sets
# both (--no-resume, --tls-cipher) and reports the handshakes, full and resumed, and the
# suite negotiated, which are checked every round:
#   tls-1k-keepalive  1 KiB, keep-alive (one handshake per connection)
#   tls-1k-close      1 KiB, a new connection and a full handshake per request (--no-resume)
#   tls-1k-resume     1 KiB, a new connection per request, resuming (TLS 1.3 tickets)
#   tls-1m-keepalive  1 MiB, keep-alive
#
#   bench/vs-peers.sh
#   SERVERS="floor lighttpd nginx:1 event:1 uring:1" ROUNDS=5 DURATION=3s bench/vs-peers.sh
#   SERVERS="ref-epoll:1 event:1 ref-uring:1 uring:1 ref-prefork:4 prefork:4" WORKLOADS="1k-keepalive 1m-keepalive" bench/vs-peers.sh
#   PIN=0 SERVERS="nginx:2 event:2" bench/vs-peers.sh        # two workers, on both CPUs
#   WORKLOADS="1m-keepalive" CPU=0 bench/vs-peers.sh        # requests/s only, one workload
#   RATE_1k_keepalive=10000 RATE_1k_close=2000 RATE_1m_keepalive=300 bench/vs-peers.sh
#   SERVERS="nginx:1 event:1" WORKLOADS="tls-1k-keepalive tls-1k-close tls-1k-resume tls-1m-keepalive" bench/vs-peers.sh
#   TLS=1.2 WORKLOADS="tls-1k-close" bench/vs-peers.sh
#
# A server is NAME:LOOPS (bench/lib/servers.sh): floor, lighttpd, h2o and caddy (one loop
# each), nginx:N (N worker processes), ref-NAME:N (a reference server with WORKERS N; bare
# ref-NAME: its own default), or a Spidey mode with --workers N (event:1, uring:2,
# hybrid:2...). With SPIDEY_ALT set to
# another spidey binary (another commit's build), alt-MODE:N runs that one, for A/B runs:
#   SPIDEY_ALT=/tmp/spidey-before SERVERS="lighttpd alt-event:1 event:1" bench/vs-peers.sh
# SPIDEY_ALT_ARGS adds serve flags to the alt- servers (plain ones), so one binary can be
# compared with itself under a flag, e.g. the cost of --metrics:
#   SPIDEY_ALT=target/release/spidey SPIDEY_ALT_ARGS="--metrics /-/metrics" SERVERS="alt-event:1 event:1" bench/vs-peers.sh
# Loopback only; everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

SPIDEY_ALT_ARGS=${SPIDEY_ALT_ARGS:-}
SERVERS=${SERVERS:-"floor lighttpd nginx:1 h2o caddy event:1 uring:1 hybrid:1"}
read -r -a workloads <<<"${WORKLOADS:-1k-keepalive 1k-close 1m-keepalive tls-1k-keepalive tls-1k-close tls-1k-resume tls-1m-keepalive}"
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3s}
CONNS=${CONNS:-32}
THREADS=${THREADS:-1}
CPU=${CPU:-1}
CPU_DURATION=${CPU_DURATION:-3s}
RATE_1k_keepalive=${RATE_1k_keepalive:-10000}
RATE_1k_close=${RATE_1k_close:-3000}
RATE_1m_keepalive=${RATE_1m_keepalive:-300}
RATE_tls_1k_keepalive=${RATE_tls_1k_keepalive:-5000}
RATE_tls_1k_close=${RATE_tls_1k_close:-300}
RATE_tls_1k_resume=${RATE_tls_1k_resume:-1000}
RATE_tls_1m_keepalive=${RATE_tls_1m_keepalive:-200}
TLS=${TLS:-1.3}
case $TLS in
  1.3) TLS_NGINX="ssl_protocols TLSv1.3; ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;"
    TLS_SUITE=TLS13_AES_128_GCM_SHA256 TLS_NEGOTIATED="TLSv1_3 TLS13_AES_128_GCM_SHA256" ;;
  1.2) TLS_NGINX="ssl_protocols TLSv1.2; ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256;"
    TLS_SUITE=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 TLS_NEGOTIATED="TLSv1_2 TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" ;;
  *) echo "TLS must be 1.3 or 1.2, not '$TLS'" >&2; exit 2 ;;
esac
tls_wanted=0
for w in "${workloads[@]}"; do case $w in tls-*) tls_wanted=1 ;; esac; done
PIN=${PIN:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
if [ "$PIN" = 1 ] && [ "$(nproc)" -lt 2 ]; then
  echo "one CPU: server and load generator are not pinned apart" >&2
  PIN=0
fi
[ "$PIN" = 1 ] || SERVER_CPUS="" LOAD_CPUS=""
load_pin=()
[ -z "$LOAD_CPUS" ] || load_pin=(taskset -c "$LOAD_CPUS")

declare -A pid port tport cgroup
source bench/lib/servers.sh
read -r -a servers <<<"$SERVERS"
install_server_packages "${servers[@]}"
need=()
plain_wanted=0
for w in "${workloads[@]}"; do case $w in tls-*) ;; *) plain_wanted=1 ;; esac; done
[ "$plain_wanted" = 0 ] || command -v wrk >/dev/null || need+=(wrk)
command -v openssl >/dev/null || need+=(openssl)
if [ "${#need[@]}" -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >&2
fi

# The load generator is always this checkout's build; SPIDEY=BINARY serves with that build
# instead (e.g. an A/B of two old commits, with SPIDEY_ALT the other).
cargo build --release -q
BENCH=$(realpath "${CARGO_TARGET_DIR:-target}/release/spidey")
SPIDEY=${SPIDEY:-$BENCH}
if [ "$tls_wanted" = 1 ]; then
  for s in $SERVERS; do
    case ${s%%:*} in floor | ref-* | lighttpd | nginx | h2o | caddy) continue ;; alt-*) bin=${SPIDEY_ALT:-} ;; *) bin=$SPIDEY ;; esac
    if ! "$bin" serve --help 2>/dev/null | grep -q -- '--tls-cert'; then
      echo "$bin has no 'serve --tls-cert' (issue 18's TLS server is not in this build): cannot run" \
        "the tls-* workloads for $s; build one that has it, or leave them out (WORKLOADS=...)" >&2
      exit 1
    fi
  done
  if ! "$BENCH" bench --help | grep -q -- '--tls-cipher'; then
    echo "$BENCH bench has no --tls-cipher: the tls-* workloads need it" >&2
    exit 1
  fi
fi

tmp=$(mktemp -d)
chmod 755 "$tmp"
cleanup() {
  stop_servers
  rm -rf "$tmp"
}
trap cleanup EXIT

mkdir -p "$tmp/www" "$tmp/tls"
# The one certificate every TLS server shows; verified by the client (--cacert).
CERT=$tmp/tls/cert.pem KEY=$tmp/tls/key.pem
if [ "$tls_wanted" = 1 ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -keyout "$KEY" -out "$CERT" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -addext "basicConstraints=critical,CA:FALSE" 2>/dev/null
  chmod 644 "$KEY"
fi
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
head -c $((1024 * 1024)) /dev/urandom >"$tmp/www/1m.bin"
chmod -R a+rX "$tmp/www"

cpu_accounting_setup
[ "$CPU" = 0 ] || echo "CPU accounting: $cg_kind" >&2

for s in "${servers[@]}"; do start_server "$s"; done

file_of() { case $1 in 1m-* | tls-1m-*) echo 1m.bin ;; *) echo 1k.bin ;; esac; }
# Which servers take part in a workload: all, but only Spidey and nginx serve TLS here, and
# the floor only the 1 KiB workloads.
serves() { # server workload
  case $2,${1%%:*} in tls-*,lighttpd | tls-*,h2o | tls-*,caddy | tls-*,floor | tls-*,ref-* | 1m-*,floor) return 1 ;; *) return 0 ;; esac
}
url_of() { # server workload
  local f
  f=$(file_of "$2")
  case $2 in
    tls-*) echo "https://localhost:${tport[$1]}/$f" ;;
    *) echo "http://127.0.0.1:${port[$1]}/$f" ;;
  esac
}
tls_flags() { # workload -> spidey bench's flags for it
  case $1 in
    tls-1k-close) echo --cacert "$CERT" --tls-cipher "$TLS_SUITE" --no-keepalive --no-resume ;;
    tls-1k-resume) echo --cacert "$CERT" --tls-cipher "$TLS_SUITE" --no-keepalive ;;
    tls-*) echo --cacert "$CERT" --tls-cipher "$TLS_SUITE" ;;
  esac
}
accounted_as() { # server workload -> the server whose CPU the workload costs (a TLS twin)
  if [ -n "${pid[$1+tls]:-}" ] && [[ $2 == tls-* ]]; then echo "$1+tls"; else echo "$1"; fi
}
# A TLS run's JSON must show the pinned suite and the handshakes its workload means.
check_tls_run() { # json workload server
  python3 - "$1" "$2" "$3" "$TLS_NEGOTIATED" <<'PY'
import json, sys
d, w, s, want = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
h, got = d.get("handshakes") or {}, d.get("tls_negotiated")
full, resumed = h.get("full", 0), h.get("resumed", 0)
why = None
if d["errors"].get("tls"):
    why = f"{d['errors']['tls']} TLS errors ({d.get('tls_error')})"
elif got != want:
    why = f"negotiated '{got}', not the pinned '{want}'"
elif w == "tls-1k-close" and resumed:
    why = f"{resumed} resumed handshakes with --no-resume"
elif w == "tls-1k-resume" and resumed < full:
    why = f"only {resumed} of {full + resumed} handshakes resumed: the server does not resume"
if why:
    sys.exit(f"{s} {w}: {why}; not measuring")
print(f"{full} full + {resumed} resumed handshakes, {got}", file=sys.stderr)
PY
}

check_servers "${servers[@]}"
echo "checked: every server answers 200 with the exact length for its files$([ "$tls_wanted" = 0 ] || echo ', over http and https')" >&2

run_wrk() { # server workload [duration] -> req/s
  local url hdr=() tls=()
  url=$(url_of "$1" "$2")
  if [[ $2 == tls-* ]]; then
    read -r -a tls <<<"$(tls_flags "$2")"
    "${load_pin[@]}" "$BENCH" bench -t"$THREADS" -c"$CONNS" -d"${3:-$DURATION}" "${tls[@]}" --json "$tmp/tls.json" "$url" >/dev/null
    check_tls_run "$tmp/tls.json" "$2" "$1" || exit 1
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.2f" % d["requests_per_sec"])' "$tmp/tls.json"
    return
  fi
  [ "$2" = 1k-close ] && hdr=(-H 'Connection: close')
  "${load_pin[@]}" wrk -t"$THREADS" -c"$CONNS" -d"${3:-$DURATION}" "${hdr[@]}" "$url" | awk '/Requests\/sec/ {print $2}'
}
run_cpu() { # server workload -> server CPU microseconds per response at the workload's rate
  local url rate_var="RATE_${2//-/_}" ka=() before after acc
  url=$(url_of "$1" "$2") acc=$(accounted_as "$1" "$2")
  [ "$2" = 1k-close ] && ka=(--no-keepalive)
  [[ $2 == tls-* ]] && read -r -a ka <<<"$(tls_flags "$2")"
  before=$(cpu_ns "$acc")
  "${load_pin[@]}" "$BENCH" bench -c "$CONNS" -d "$CPU_DURATION" --rate "${!rate_var}" "${ka[@]}" --json "$tmp/cpu.json" "$url" >/dev/null
  [[ $2 != tls-* ]] || check_tls_run "$tmp/cpu.json" "$2" "$1" || exit 1
  after=$(cpu_ns "$acc")
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); n=d["responses"]+d["errors"].get("late",0); print(f"{(int(sys.argv[3])-int(sys.argv[2]))/n/1000:.2f}" if n else "nan")' \
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
  for s in "${servers[@]}"; do serves "$s" "$w" && { run_wrk "$s" "$w" 1s >/dev/null || exit 1; }; done
  for round in $(seq "$ROUNDS"); do
    for s in $(rotate "$round"); do
      serves "$s" "$w" || continue
      r=$(run_wrk "$s" "$w") || exit 1
      rps[$s,$w]+="$r "
      echo "round $round $w $s: $r req/s" >&2
    done
  done
  [ "$CPU" = 1 ] || continue
  for round in $(seq "$ROUNDS"); do
    for s in $(rotate "$round"); do
      serves "$s" "$w" || continue
      c=$(run_cpu "$s" "$w") || exit 1
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
    case ${s%%:*} in lighttpd | nginx | h2o | caddy) ;; *) continue ;; esac
    [ -n "${t[$s,$2]:-}" ] || continue
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
  local floor="" f
  for s in "${servers[@]}"; do [ "${s%%:*}" != floor ] || floor=$s; done
  if [ -n "$floor" ]; then
    echo "| workload | server | $4, median (min–max) of $ROUNDS | ratio to the best peer, per round | ratio to the floor, per round |"
    echo "| --- | --- | ---: | ---: | ---: |"
  else
    echo "| workload | server | $4, median (min–max) of $ROUNDS | ratio to the best peer, per round |"
    echo "| --- | --- | ---: | ---: |"
  fi
  for w in "${workloads[@]}"; do
    best=$(best_peer "$2" "$w" "$3")
    for s in "${servers[@]}"; do
      serves "$s" "$w" || continue
      if [ -z "$best" ]; then
        r="no peer in this run"
      elif [ "$s" = "$best" ]; then
        r="best peer"
      else
        r=$(ratio "${t[$best,$w]:-}" "${t[$s,$w]:-}")
      fi
      if [ -z "$floor" ]; then
        echo "| $w | $s | $(summary "${t[$s,$w]:-}") | $r |"
        continue
      fi
      if ! serves "$floor" "$w"; then f="-"; elif [ "$s" = "$floor" ]; then f="floor"; else f=$(ratio "${t[$floor,$w]:-}" "${t[$s,$w]:-}"); fi
      echo "| $w | $s | $(summary "${t[$s,$w]:-}") | $r | $f |"
    done
  done
}
table "Requests per second (wrk -t$THREADS -c$CONNS -d$DURATION; tls-*: spidey bench https:// with the same -t -c -d, TLS $TLS $TLS_SUITE; higher is better)" rps higher "req/s"
if [ "$CPU" = 1 ]; then
  table "Server CPU per response at a fixed rate (spidey bench -c $CONNS -d $CPU_DURATION --rate: 1k-keepalive $RATE_1k_keepalive/s, 1k-close $RATE_1k_close/s, 1m-keepalive $RATE_1m_keepalive/s, tls-1k-keepalive $RATE_tls_1k_keepalive/s, tls-1k-close $RATE_tls_1k_close/s, tls-1k-resume $RATE_tls_1k_resume/s, tls-1m-keepalive $RATE_tls_1m_keepalive/s; lower is better)" cpu lower "µs CPU"
fi
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r);" \
  "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src crates bench/floor bench/ref || echo '+changes'); $ROUNDS rounds, order rotated every round;" \
  "$(server_versions); CPU accounting: $cg_kind;" \
  "$([ "$PIN" = 1 ] && echo "servers pinned to CPU $SERVER_CPUS, load generator to CPU $LOAD_CPUS" || echo "not pinned")"
[ "$SPIDEY" = "$BENCH" ] || echo "spidey servers: $SPIDEY"
[ -z "${SPIDEY_ALT:-}" ] || echo "alt- servers: $SPIDEY_ALT $SPIDEY_ALT_ARGS"
