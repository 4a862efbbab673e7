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
#   SERVERS="lighttpd nginx:1 event:1 uring:1" ROUNDS=5 DURATION=3s bench/vs-peers.sh
#   WORKLOADS="1m-keepalive" CPU=0 bench/vs-peers.sh        # requests/s only, one workload
#   RATE_1k_keepalive=10000 RATE_1k_close=2000 RATE_1m_keepalive=300 bench/vs-peers.sh
#   SERVERS="nginx:1 event:1" WORKLOADS="tls-1k-keepalive tls-1k-close tls-1k-resume tls-1m-keepalive" bench/vs-peers.sh
#   TLS=1.2 WORKLOADS="tls-1k-close" bench/vs-peers.sh
#
# A server is NAME:LOOPS: lighttpd (always one process), nginx:N (N worker processes),
# or a Spidey mode with --workers N (event:1, uring:2, hybrid:2...). With SPIDEY_ALT set to
# another spidey binary (another commit's build), alt-MODE:N runs that one, for A/B runs:
#   SPIDEY_ALT=/tmp/spidey-before SERVERS="lighttpd alt-event:1 event:1" bench/vs-peers.sh
# SPIDEY_ALT_ARGS adds serve flags to the alt- servers (plain ones), so one binary can be
# compared with itself under a flag, e.g. the cost of --metrics:
#   SPIDEY_ALT=target/release/spidey SPIDEY_ALT_ARGS="--metrics /-/metrics" SERVERS="alt-event:1 event:1" bench/vs-peers.sh
# Loopback only; everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

SPIDEY_ALT_ARGS=${SPIDEY_ALT_ARGS:-}
SERVERS=${SERVERS:-"lighttpd nginx:1 nginx:2 event:1 event:2 uring:1 uring:2"}
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

need=()
plain_wanted=0
for w in "${workloads[@]}"; do case $w in tls-*) ;; *) plain_wanted=1 ;; esac; done
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
case " $SERVERS " in *" lighttpd "*) command -v lighttpd >/dev/null || [ -x /usr/sbin/lighttpd ] || need+=(lighttpd) ;; esac
[ "$plain_wanted" = 0 ] || command -v wrk >/dev/null || need+=(wrk)
command -v openssl >/dev/null || need+=(openssl)
command -v curl >/dev/null || need+=(curl)
if [ "${#need[@]}" -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >&2
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
LIGHTTPD=$(command -v lighttpd || echo /usr/sbin/lighttpd)

# The load generator is always this checkout's build; SPIDEY=BINARY serves with that build
# instead (e.g. an A/B of two old commits, with SPIDEY_ALT the other).
cargo build --release -q
BENCH=$(realpath "${CARGO_TARGET_DIR:-target}/release/spidey")
SPIDEY=${SPIDEY:-$BENCH}
if [ "$tls_wanted" = 1 ]; then
  for s in $SERVERS; do
    case ${s%%:*} in lighttpd | nginx) continue ;; alt-*) bin=${SPIDEY_ALT:-} ;; *) bin=$SPIDEY ;; esac
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
declare -A pid port tport cgroup
cleanup() {
  for s in "${!pid[@]}"; do kill "${pid[$s]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for s in "${!cgroup[@]}"; do rmdir "${cgroup[$s]}" 2>/dev/null || true; done
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
  local dir="$tmp/${1//:/-}" p tp tls_server=""
  p=$(free_port)
  mkdir -p "$dir"
  if [ "$tls_wanted" = 1 ]; then
    tp=$(free_port)
    tport[$1]=$tp
    tls_server="server { listen 127.0.0.1:$tp ssl reuseport; root $tmp/www; ssl_certificate $CERT; ssl_certificate_key $KEY; $TLS_NGINX ssl_session_cache shared:SSL:10m; ssl_session_tickets on; }"
  fi
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
    $tls_server
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

start_spidey() { # name mode workers [binary [tls flags...]]
  local name=$1 mode=$2 workers=$3 bin=${4:-$SPIDEY}
  shift $(($# < 4 ? $# : 4))
  local out="$tmp/${name//:/-}.out"
  start "$name" "$bin" serve "$tmp/www" --port 0 --quiet --mode "$mode" --workers "$workers" \
    --max-requests 4000000000 --max-conns 100000 "$@"
  for _ in $(seq 50); do grep -q listening "$out" 2>/dev/null && break; sleep 0.1; done
  port[$name]=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
}
# A Spidey server's TLS twin, "NAME+tls": the same mode and workers over TLS, its own cgroup.
start_spidey_tls() { # name mode workers binary
  start_spidey "$1+tls" "$2" "$3" "$4" --tls-cert "$CERT" --tls-key "$KEY" >"$tmp/${1//:/-}+tls.out" 2>&1
  tport[$1]=${port[$1+tls]}
  grep -q 'listening on https://' "$tmp/${1//:/-}+tls.out" || {
    echo "$1's TLS twin did not say 'listening on https://': $(cat "$tmp/${1//:/-}+tls.out")" >&2
    exit 1
  }
}

read -r -a servers <<<"$SERVERS"
for s in "${servers[@]}"; do
  name=${s%%:*} loops=${s#*:}
  [ "$loops" = "$s" ] && loops=1
  case $name in
    lighttpd) start_lighttpd "$s" ;;
    nginx) start_nginx "$s" "$loops" ;;
    alt-*) start_spidey "$s" "${name#alt-}" "$loops" "${SPIDEY_ALT:?alt- servers need SPIDEY_ALT}" $SPIDEY_ALT_ARGS >"$tmp/${s//:/-}.out" 2>&1 ;;
    *) start_spidey "$s" "$name" "$loops" >"$tmp/${s//:/-}.out" 2>&1 ;;
  esac
  if [ "$tls_wanted" = 1 ]; then
    case $name in
      lighttpd | nginx) ;;
      alt-*) start_spidey_tls "$s" "${name#alt-}" "$loops" "$SPIDEY_ALT" ;;
      *) start_spidey_tls "$s" "$name" "$loops" "$SPIDEY" ;;
    esac
  fi
done

file_of() { case $1 in 1m-* | tls-1m-*) echo 1m.bin ;; *) echo 1k.bin ;; esac; }
# Which servers take part in a workload: all, but lighttpd has no TLS here.
serves() { # server workload
  case $2,${1%%:*} in tls-*,lighttpd) return 1 ;; *) return 0 ;; esac
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
cgroup_of() { # server workload -> the cgroup whose CPU the workload costs
  if [ -n "${cgroup[$1+tls]:-}" ] && [[ $2 == tls-* ]]; then echo "${cgroup[$1+tls]}"; else echo "${cgroup[$1]}"; fi
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

# Each server must really serve each file: status 200 and the exact length, or we stop.
# Over TLS (curl, verifying the certificate) on the TLS port, for each server with one.
for s in "${servers[@]}"; do
  urls=("http://127.0.0.1:${port[$s]}")
  [ -z "${tport[$s]:-}" ] || urls+=("https://localhost:${tport[$s]}")
  for base in "${urls[@]}"; do
    for f in 1k.bin 1m.bin; do
      want=$(stat -c %s "$tmp/www/$f") got=""
      for _ in $(seq 50); do
        ca=()
        [[ $base != https:* ]] || ca=(--cacert "$CERT")
        got=$(curl -s "${ca[@]}" -o /dev/null -w '%{http_code} %{size_download}' "$base/$f" || true)
        [ "$got" = "200 $want" ] && break
        sleep 0.1
      done
      if [ "$got" != "200 $want" ]; then
        echo "$s does not serve $base/$f (got '$got', want '200 $want'); not measuring" >&2
        exit 1
      fi
    done
  done
done
echo "checked: every server answers 200 with the exact length for 1k.bin and 1m.bin$([ "$tls_wanted" = 0 ] || echo ', over http and https')" >&2

run_wrk() { # server workload [duration] -> req/s
  local url hdr=() tls=()
  url=$(url_of "$1" "$2")
  if [[ $2 == tls-* ]]; then
    read -r -a tls <<<"$(tls_flags "$2")"
    "$BENCH" bench -t"$THREADS" -c"$CONNS" -d"${3:-$DURATION}" "${tls[@]}" --json "$tmp/tls.json" "$url" >/dev/null
    check_tls_run "$tmp/tls.json" "$2" "$1" || exit 1
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.2f" % d["requests_per_sec"])' "$tmp/tls.json"
    return
  fi
  [ "$2" = 1k-close ] && hdr=(-H 'Connection: close')
  wrk -t"$THREADS" -c"$CONNS" -d"${3:-$DURATION}" "${hdr[@]}" "$url" | awk '/Requests\/sec/ {print $2}'
}
run_cpu() { # server workload -> server CPU microseconds per response at the workload's rate
  local url rate_var="RATE_${2//-/_}" ka=() before after cg
  url=$(url_of "$1" "$2") cg=$(cgroup_of "$1" "$2")
  [ "$2" = 1k-close ] && ka=(--no-keepalive)
  [[ $2 == tls-* ]] && read -r -a ka <<<"$(tls_flags "$2")"
  before=$(cpu_us "$cg")
  "$BENCH" bench -c "$CONNS" -d "$CPU_DURATION" --rate "${!rate_var}" "${ka[@]}" --json "$tmp/cpu.json" "$url" >/dev/null
  [[ $2 != tls-* ]] || check_tls_run "$tmp/cpu.json" "$2" "$1" || exit 1
  after=$(cpu_us "$cg")
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
    case ${s%%:*} in lighttpd | nginx) ;; *) continue ;; esac
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
  echo "| workload | server | $4, median (min–max) of $ROUNDS | ratio to the best peer, per round |"
  echo "| --- | --- | ---: | ---: |"
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
      echo "| $w | $s | $(summary "${t[$s,$w]:-}") | $r |"
    done
  done
}
table "Requests per second (wrk -t$THREADS -c$CONNS -d$DURATION; tls-*: spidey bench https:// with the same -t -c -d, TLS $TLS $TLS_SUITE; higher is better)" rps higher "req/s"
if [ "$CPU" = 1 ]; then
  table "Server CPU per response at a fixed rate (spidey bench -c $CONNS -d $CPU_DURATION --rate: 1k-keepalive $RATE_1k_keepalive/s, 1k-close $RATE_1k_close/s, 1m-keepalive $RATE_1m_keepalive/s, tls-1k-keepalive $RATE_tls_1k_keepalive/s, tls-1k-close $RATE_tls_1k_close/s, tls-1k-resume $RATE_tls_1k_resume/s, tls-1m-keepalive $RATE_tls_1m_keepalive/s; lower is better)" cpu lower "µs CPU"
fi
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), Linux $(uname -r);" \
  "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src crates || echo '+changes'); $ROUNDS rounds, order rotated every round;" \
  "lighttpd $({ [ -x "$LIGHTTPD" ] && "$LIGHTTPD" -v 2>&1; } | head -1 | awk '{print $1}'), nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///'), cpu accounting: cgroup $cg_kind"
[ "$SPIDEY" = "$BENCH" ] || echo "spidey servers: $SPIDEY"
[ -z "${SPIDEY_ALT:-}" ] || echo "alt- servers: $SPIDEY_ALT $SPIDEY_ALT_ARGS"
