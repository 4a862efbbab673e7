# The servers the benchmarks start, each with its documented high-performance settings, on
# the files of "$tmp/www", sourced by bench/vs-peers.sh, bench/syscalls.sh and
# bench/flame.sh (bash; the caller has `set -euo pipefail`).
#
# A server is NAME:LOOPS:
#   floor        the canned-reply floor (bench/floor/floor.c, built here with gcc -O2): one
#                epoll thread answering every request with the same 1 KiB reply; it serves
#                only the 1 KiB workloads (whatever the path, the same bytes);
#   lighttpd     one process (linux-sysepoll, sendfile, stat cache; LIGHTTPD_MAX_FDS and
#                LIGHTTPD_MAX_CONNS, default 32768 and 16384, set server.max-fds and
#                server.max-connections, which lighttpd caps at max-fds/2);
#   nginx:N      N worker processes (sendfile, tcp_nopush, open_file_cache; NGINX_LISTEN
#                adds to its listen directive, e.g. " http2", and NGINX_SENDFILE=off turns
#                sendfile off, as nginx over h2c needs);
#   h2o          h2o with num-threads: 1 (started as root it runs as nobody: its pid file
#                and error log are in a directory anyone may write); with H2O_TLS_CERT and
#                H2O_TLS_KEY set, its listener speaks TLS instead;
#   caddy        caddy run, admin and automatic HTTPS off, GOMAXPROCS=1;
#   ref-NAME[:N] a C reference server of bench/ref/ (iterative, fork, thread, pool, prefork,
#                epoll, uring; built here with bench/ref/build.sh), with WORKERS N where it
#                has workers (pool, prefork) or loops (epoll, uring), its own default
#                without :N; the bare architecture a Spidey mode is measured against
#                (ref-epoll:1 beside event:1, ref-prefork:4 beside prefork:4...);
#   MODE:N       a Spidey mode with --workers N (event:1, uring:1, hybrid:1...); single,
#                fork and thread take no --workers (single:1, fork:1 and thread:1 are those);
#   alt-MODE:N   the same with $SPIDEY_ALT (another build) and $SPIDEY_ALT_ARGS.
# Every Spidey server (MODE:N and alt-MODE:N) also gets $SPIDEY_SERVE_ARGS (e.g. --http2).
# No access log anywhere.
#
# The caller sets: tmp (a directory that holds www/), SPIDEY (a spidey binary), and
# declares the associative arrays pid, port, tport and cgroup. Optional: tls_wanted=1 with
# CERT, KEY and TLS_NGINX (nginx's ssl settings) for the TLS twins; SERVER_CPUS (a taskset
# CPU list every server and all it starts is pinned to; empty: not pinned); cg_kind and
# cg_root (from cpu_accounting_setup) to give each server a cgroup.

tls_wanted=${tls_wanted:-0}
SERVER_CPUS=${SERVER_CPUS:-}
cg_kind=${cg_kind:-none}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
LIGHTTPD=$(command -v lighttpd || echo /usr/sbin/lighttpd)
H2O=$(command -v h2o || echo /usr/bin/h2o)
CADDY=$(command -v caddy || echo /usr/bin/caddy)

# The Debian packages the SERVERS need (and curl for the checks), installed if missing.
install_server_packages() { # servers...
  local need=() s
  command -v curl >/dev/null || need+=(curl)
  for s in "$@"; do
    case ${s%%:*} in
      nginx) [ -x "$NGINX" ] || need+=(nginx-light) ;;
      lighttpd) [ -x "$LIGHTTPD" ] || need+=(lighttpd) ;;
      h2o) [ -x "$H2O" ] || need+=(h2o) ;;
      caddy) [ -x "$CADDY" ] || need+=(caddy) ;;
      floor | ref-*) command -v gcc >/dev/null || need+=(gcc libc6-dev) ;;&
      ref-uring) [ -e /usr/include/liburing.h ] || need+=(liburing-dev) ;;
    esac
  done
  if [ "${#need[@]}" -gt 0 ]; then
    echo "installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq "${need[@]}" >&2
  fi
}

# The files every server is checked with and measured on: $tmp/www/1k.bin and 1m.bin,
# random bytes, readable by the servers that drop to another user.
make_www() {
  mkdir -p "$tmp/www"
  head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
  head -c $((1024 * 1024)) /dev/urandom >"$tmp/www/1m.bin"
  chmod -R a+rX "$tmp/www"
}

# Starts every server, then checks each serves its files (see check_servers).
start_checked_servers() { # servers...
  local s
  for s in "$@"; do start_server "$s"; done
  check_servers "$@"
  echo "checked: every server answers 200 with the exact length" >&2
}

# Which files a server can serve: the floor answers every path with its 1 KiB reply.
files_of_server() { # server
  case ${1%%:*} in floor) echo 1k.bin ;; *) echo 1k.bin 1m.bin ;; esac
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME CMD...: runs CMD in the background, pinned to SERVER_CPUS and inside NAME's own
# cgroup (joined before exec, so nothing it forks escapes the count). With perf_cg_root set
# (a cgroup v1 perf_event hierarchy, bench/account.sh) it joins a cgroup there too, named
# in perf_cgroup[NAME], so `perf stat -G` counts every process it ever has.
start() {
  local name=$1
  shift
  local cgs="" cg pin=()
  if [ "$cg_kind" != none ]; then
    cg="$cg_root/spidey-bench-$$-${name//[:+]/-}"
    mkdir -p "$cg"
    cgroup[$name]=$cg cgs=$cg
  fi
  if [ -n "${perf_cg_root:-}" ]; then
    cg="spidey-bench-$$-${name//[:+]/-}"
    mkdir -p "$perf_cg_root/$cg"
    perf_cgroup[$name]=$cg cgs="$cgs $perf_cg_root/$cg"
  fi
  [ -z "$SERVER_CPUS" ] || pin=(taskset -c "$SERVER_CPUS")
  CGS="$cgs" "${pin[@]}" sh -c 'for cg in $CGS; do echo $$ >"$cg/cgroup.procs"; done; exec "$@"' sh "$@" &
  pid[$name]=$!
}

stop_servers() {
  local s
  for s in "${!pid[@]}"; do kill "${pid[$s]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for s in "${!cgroup[@]}"; do rmdir "${cgroup[$s]}" 2>/dev/null || true; done
  [ -z "${perf_cg_root:-}" ] || for s in "${!perf_cgroup[@]}"; do rmdir "$perf_cg_root/${perf_cgroup[$s]}" 2>/dev/null || true; done
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
    sendfile ${NGINX_SENDFILE:-on};
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
    server { listen 127.0.0.1:$p reuseport${NGINX_LISTEN:-}; root $tmp/www; }
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
server.max-connections = ${LIGHTTPD_MAX_CONNS:-16384}
server.max-fds = ${LIGHTTPD_MAX_FDS:-32768}
server.max-keep-alive-requests = 1000000
server.max-keep-alive-idle = 60
server.stat-cache-engine = "simple"
server.errorlog = "$dir/error.log"
mimetype.assign = ( "" => "application/octet-stream" )
CONF
  start "$1" "$LIGHTTPD" -D -f "$dir/lighttpd.conf"
  port[$1]=$p
}

start_h2o() { # name
  local dir="$tmp/${1//:/-}" p
  p=$(free_port)
  # Started as root, h2o switches to `nobody` after reading its configuration: its pid file
  # and error log go in a directory that user may write.
  mkdir -p "$dir"
  chmod 777 "$dir"
  # H2O_TLS_CERT and H2O_TLS_KEY: a TLS listener (ALPN h2 and http/1.1) instead of plain.
  local h2o_ssl=""
  [ -z "${H2O_TLS_CERT:-}" ] || h2o_ssl=$'\n      ssl:\n        certificate-file: '"$H2O_TLS_CERT"$'\n        key-file: '"$H2O_TLS_KEY"
  cat >"$dir/h2o.conf" <<CONF
num-threads: 1
pid-file: $dir/h2o.pid
error-log: $dir/error.log
hosts:
  default:
    listen:
      host: 127.0.0.1
      port: $p$h2o_ssl
    paths:
      /:
        file.dir: $tmp/www
CONF
  start "$1" "$H2O" -c "$dir/h2o.conf"
  port[$1]=$p
}

start_caddy() { # name
  local dir="$tmp/${1//:/-}" p
  p=$(free_port)
  mkdir -p "$dir"
  cat >"$dir/Caddyfile" <<CONF
{
	admin off
	auto_https off
}
http://127.0.0.1:$p {
	root * $tmp/www
	file_server
}
CONF
  # Caddy keeps its state under XDG_DATA_HOME and XDG_CONFIG_HOME: here, not in ~.
  XDG_DATA_HOME=$dir XDG_CONFIG_HOME=$dir GOMAXPROCS=1 \
    start "$1" "$CADDY" run --config "$dir/Caddyfile" --adapter caddyfile
  port[$1]=$p
}

start_floor() { # name
  local out="$tmp/${1//:/-}.out"
  [ -x "$tmp/floor" ] || gcc -O2 -o "$tmp/floor" bench/floor/floor.c
  start "$1" "$tmp/floor" 0
  for _ in $(seq 50); do grep -q listening "$out" 2>/dev/null && break; sleep 0.1; done
  port[$1]=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
}

# A reference server, ref-NAME or ref-NAME:N (WORKERS N). A build that fails leaves no
# port, and check_servers shows why (build.sh's message is in the server's output).
start_ref() { # name
  local out="$tmp/${1//:/-}.out" ref=${1%%:*} workers=()
  ref=${ref#ref-}
  [[ $1 != *:* ]] || workers=("${1#*:}")
  [ -x "$tmp/ref/$ref" ] || bench/ref/build.sh "$tmp/ref" "$ref" >/dev/null || return 0
  start "$1" "$tmp/ref/$ref" "$tmp/www" 0 "${workers[@]}"
  for _ in $(seq 50); do grep -q listening "$out" 2>/dev/null && break; sleep 0.1; done
  port[$1]=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
}

start_spidey() { # name mode workers [binary [serve flags...]]
  local name=$1 mode=$2 workers=$3 bin=${4:-$SPIDEY}
  shift $(($# < 4 ? $# : 4))
  local out="$tmp/${name//:/-}.out" count=(--workers "$workers")
  # single, fork and thread have no workers to count and refuse --workers (fork:1 is fork).
  case $mode in single | fork | thread) count=() ;; esac
  # shellcheck disable=SC2086 # SPIDEY_SERVE_ARGS: extra flags for every Spidey server, as words
  start "$name" "$bin" serve "$tmp/www" --port 0 --quiet --mode "$mode" "${count[@]}" \
    --max-requests 4000000000 --max-conns 100000 ${SPIDEY_SERVE_ARGS:-} "$@"
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

# Starts one server (NAME:LOOPS, see the top), and its TLS twin when TLS is wanted and it
# has one; its output goes to "$tmp/NAME.out".
start_server() { # server
  local s=$1 name=${1%%:*} loops=${1#*:} out="$tmp/${1//:/-}.out"
  [ "$loops" = "$s" ] && loops=1
  case $name in
    floor) start_floor "$s" >"$out" 2>&1 ;;
    ref-*) start_ref "$s" >"$out" 2>&1 ;;
    lighttpd) start_lighttpd "$s" >"$out" 2>&1 ;;
    nginx) start_nginx "$s" "$loops" >"$out" 2>&1 ;;
    h2o) start_h2o "$s" >"$out" 2>&1 ;;
    caddy) start_caddy "$s" >"$out" 2>&1 ;;
    # shellcheck disable=SC2086 # the extra flags are words
    alt-*) start_spidey "$s" "${name#alt-}" "$loops" "${SPIDEY_ALT:?alt- servers need SPIDEY_ALT}" ${SPIDEY_ALT_ARGS:-} >"$out" 2>&1 ;;
    *) start_spidey "$s" "$name" "$loops" >"$out" 2>&1 ;;
  esac
  if [ "$tls_wanted" = 1 ]; then
    case $name in
      alt-*) start_spidey_tls "$s" "${name#alt-}" "$loops" "$SPIDEY_ALT" ;;
      floor | ref-* | lighttpd | nginx | h2o | caddy) ;;
      *) start_spidey_tls "$s" "$name" "$loops" "$SPIDEY" ;;
    esac
  fi
}

# Each server must really serve each of its files: status 200 and the exact length, or we
# stop. Over TLS (curl, verifying the certificate) on the TLS port, for each server with one.
check_servers() { # servers...
  local s base f want got urls ca
  for s in "$@"; do
    if [ -z "${port[$s]:-}" ]; then
      echo "$s did not start: $(tail -5 "$tmp/${s//:/-}.out" 2>/dev/null)" >&2
      exit 1
    fi
    urls=("http://127.0.0.1:${port[$s]}")
    [ -z "${tport[$s]:-}" ] || urls+=("https://localhost:${tport[$s]}")
    for base in "${urls[@]}"; do
      for f in $(files_of_server "$s"); do
        want=$(stat -c %s "$tmp/www/$f") got=""
        for _ in $(seq 50); do
          ca=()
          [[ $base != https:* ]] || ca=(--cacert "$CERT")
          got=$(curl -s "${ca[@]}" -o /dev/null -w '%{http_code} %{size_download}' "$base/$f" || true)
          [ "$got" = "200 $want" ] && break
          sleep 0.1
        done
        if [ "$got" != "200 $want" ]; then
          echo "$s does not serve $base/$f (got '$got', want '200 $want'); not measuring." \
            "Its output: $(tail -5 "$tmp/${s//:/-}.out" 2>/dev/null)" >&2
          exit 1
        fi
      done
    done
  done
}

# CPU accounting, at nanosecond resolution: a cgroup per server (v1 `cpuacct.usage`, in
# nanoseconds; v2 `cpu.stat` usage_usec, in microseconds), which every process the server
# forks joins, so nginx's workers, Spidey's CGI children and io_uring's kernel workers are
# all counted, exited ones too. Without a writable cgroup hierarchy, the scheduler's own
# count (/proc/PID/task/*/schedstat, nanoseconds) summed over the server's process tree,
# which misses what exited between two readings. Never clock ticks (/proc/PID/stat).
cpu_accounting_setup() {
  cg_kind=tree
  if [ -f /sys/fs/cgroup/cgroup.controllers ] && [ -w /sys/fs/cgroup ]; then
    cg_root=/sys/fs/cgroup cg_kind=v2
  elif [ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ] && [ -w /sys/fs/cgroup/cpuacct ]; then
    cg_root=/sys/fs/cgroup/cpuacct cg_kind=v1
  elif [ -f /sys/fs/cgroup/unified/cgroup.controllers ] && [ -w /sys/fs/cgroup/unified ]; then
    cg_root=/sys/fs/cgroup/unified cg_kind=v2
  fi
}
cpu_ns() { # server -> CPU nanoseconds its processes have used so far
  case $cg_kind in
    v1) cat "${cgroup[$1]}/cpuacct.usage" ;;
    v2) awk '$1 == "usage_usec" {print $2 * 1000}' "${cgroup[$1]}/cpu.stat" ;;
    *) python3 - "${pid[$1]}" <<'PY'
import os, sys
root, kids = int(sys.argv[1]), {}
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{p}/stat").read()
    except OSError:
        continue
    kids.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(p))
total, todo = 0, [root]
while todo:
    p = todo.pop()
    todo += kids.get(p, [])
    try:
        for t in os.listdir(f"/proc/{p}/task"):
            total += int(open(f"/proc/{p}/task/{t}/schedstat").read().split()[0])
    except OSError:
        pass
print(total)
PY
      ;;
  esac
}
# The server's processes (its cgroup's, or its tree's), for tracing them.
server_pids() { # server
  if [ "$cg_kind" = v1 ] || [ "$cg_kind" = v2 ]; then
    cat "${cgroup[$1]}/cgroup.procs"
  else
    local todo=("${pid[$1]}") p
    while [ "${#todo[@]}" -gt 0 ]; do
      p=${todo[0]} todo=("${todo[@]:1}")
      echo "$p"
      todo+=($(cat /proc/"$p"/task/*/children 2>/dev/null))
    done
  fi
}

server_versions() { # -> "lighttpd 1.4.x, nginx 1.x, h2o 2.x, caddy v2.x"
  local v=()
  [ ! -x "$LIGHTTPD" ] || v+=("lighttpd $("$LIGHTTPD" -v 2>&1 | head -1 | awk '{print $1}' | sed 's/.*\///')")
  [ ! -x "$NGINX" ] || v+=("nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///')")
  [ ! -x "$H2O" ] || v+=("h2o $("$H2O" --version | head -1 | awk '{print $3}')")
  [ ! -x "$CADDY" ] || v+=("caddy $("$CADDY" version | awk '{print $1}')")
  local IFS=,
  echo "${v[*]}" | sed 's/,/, /g'
}
