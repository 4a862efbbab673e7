#!/usr/bin/env bash
# What N idle keep-alive connections cost each server: bytes per connection, Spidey's
# event-loop modes against nginx and lighttpd in one run, and (PROBE) a legitimate
# client's latency while they sit open.
#
# For each server (bench/lib/servers.sh), in turn: start it, check it serves the file, send
# a few requests, read its memory; open N connections from one client process, send one
# request on each and read its answer, so every connection has been served and now idles
# in keep-alive; wait SETTLE seconds and read its memory again; check the connections are
# all still open; close them and stop the server. Memory is
#   - the server's Pss (proportional set size, /proc/PID/smaps_rollup) summed over its
#     whole process tree (nginx's master and worker, Spidey's threads are in one), so
#     shared pages count once, and
#   - the kernel's TCP socket buffer memory (/proc/net/sockstat, `TCP: ... mem`, pages):
#     machine-wide and both ends of each loopback connection (the client's sockets too),
#   - the kernel's slab memory (/proc/slabinfo, active objects x size, summed): machine-wide,
#     both ends (socket, file, epoll and io_uring objects are here), and whatever else the
#     machine did meanwhile; read it as a difference between servers, not alone.
# Each is reported as (after - before) / connections held. With PROBE=D (a duration, e.g.
# 3s), a legitimate client (spidey bench -c 8 at RATE requests/s on a 1 KiB file) is
# measured before the crowd comes and while it idles: p50/p99. That is a timing: run it on
# a quiet machine; PROBE=0 (the default) leaves it out.
#
#   bench/idle-connections.sh                              # N=18000, five servers
#   N=9000 SERVERS="event:1 lighttpd" bench/idle-connections.sh
#   PROBE=3s RATE=2000 SERVERS="event:1 uring:1" bench/idle-connections.sh
#   H2=1 N=9000 SERVERS="event:1 h2o nginx:1" bench/idle-connections.sh   # h2c connections
#
# H2=1: every connection speaks HTTP/2 by prior knowledge (h2c): the crowd sends the
# preface, an empty SETTINGS and one GET, and reads stream 1's answer; Spidey runs with
# --http2 and nginx with `listen ... http2`.
#
# RLIMIT_NOFILE: the server and the client each hold N sockets. The script raises the soft
# limit to the hard limit for everything it starts; N must leave CLIENT_SPARE descriptors
# below the hard limit (the hard limit cannot be raised without CAP_SYS_RESOURCE in the
# machine's user namespace). lighttpd holds at most server.max-fds / 2 connections (its
# server.c), so it gets max-fds = the hard limit and a crowd of at most half of it, less
# 100; its row says how many it held.
#
# Bounded: the crowd stops opening after 20 failed connects in a row and gives every
# answer at most CROWD_TIMEOUT seconds in all; each server gets at most that much again to
# shed its crowd. Loopback only (the client connects from 127.0.0.2 and up); everything it
# starts is stopped on exit. Without PROBE it measures memory, not timing: it may run
# while the machine is busy.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVERS=${SERVERS:-"event:1 uring:1 hybrid:1 nginx:1 lighttpd"}
N=${N:-18000}
SETTLE=${SETTLE:-2}
CROWD_TIMEOUT=${CROWD_TIMEOUT:-120}
CLIENT_SPARE=${CLIENT_SPARE:-100}
PROBE=${PROBE:-0}
H2=${H2:-0}
h2_flag=()
curl_h2=()
if [ "$H2" = 1 ]; then h2_flag=(--http2) curl_h2=(--http2-prior-knowledge); export NGINX_LISTEN=" http2"; fi
RATE=${RATE:-2000}

hard=$(ulimit -Hn)
[ "$hard" = unlimited ] && hard=1048576
ulimit -n "$hard"
if [ $((N + CLIENT_SPARE)) -gt "$hard" ]; then
  echo "N=$N and $CLIENT_SPARE spare descriptors do not fit the hard RLIMIT_NOFILE $hard: lower N" >&2
  exit 2
fi
export LIGHTTPD_MAX_FDS=$hard LIGHTTPD_MAX_CONNS=$((hard / 2))

declare -A pid port tport cgroup
tmp=$(mktemp -d)
chmod 755 "$tmp"
source bench/lib/servers.sh
read -r -a servers <<<"$SERVERS"
install_server_packages "${servers[@]}"

cargo build --release -q
SPIDEY=${SPIDEY:-$(realpath "${CARGO_TARGET_DIR:-target}/release/spidey")}

crowd=""
cleanup() {
  [ -z "$crowd" ] || kill "$crowd" 2>/dev/null || true
  stop_servers
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/www"
printf 'idle\n' >"$tmp/www/idle.txt"
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
head -c $((1024 * 1024)) /dev/urandom >"$tmp/www/1m.bin"
chmod -R a+rX "$tmp/www"

cat >"$tmp/crowd.py" <<'PY'
# The crowd: opens up to N keep-alive connections to 127.0.0.1:PORT from 127.0.0.2 and up,
# sends one request on each, and reads every answer (epoll, at most TIMEOUT seconds in
# all). Prints "opened O answered A", then holds them; on the line "check" on stdin it
# prints "open K" (the answered connections the server has not closed); it closes them all
# when stdin closes.
import re, select, socket, sys, time
port, n, timeout = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
h2 = len(sys.argv) > 4 and sys.argv[4] == "1"
req = b"GET /idle.txt HTTP/1.1\r\nHost: idle\r\n\r\n"
if h2:  # h2c by prior knowledge: the preface, empty SETTINGS, one GET (HPACK, static names)
    block = b"\x82\x86\x04\x09/idle.txt\x41\x04idle"
    req = (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\0\0\0\x04\0\0\0\0\0"
           + len(block).to_bytes(3, "big") + b"\x01\x05\0\0\0\x01" + block)
per_source = 10000  # well under the ~28k ephemeral ports of one source address
conns, failed_in_a_row = {}, 0
for i in range(n):
    s = socket.socket()
    s.setsockopt(socket.SOL_IP, 24, 1)  # IP_BIND_ADDRESS_NO_PORT: the port is chosen at connect
    s.bind((f"127.0.0.{2 + i // per_source}", 0))
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(req)
    except OSError:
        s.close()
        failed_in_a_row += 1
        if failed_in_a_row >= 20:
            break
        continue
    failed_in_a_row = 0
    s.setblocking(False)
    conns[s.fileno()] = [s, b""]
ep = select.epoll()
for fd in conns:
    ep.register(fd, select.EPOLLIN)
pending, answered, end = set(conns), set(), time.monotonic() + timeout
def frames(got):  # (type, flags, stream, payload) of each whole frame
    at = 0
    while at + 9 <= len(got):
        n = int.from_bytes(got[at:at + 3], "big")
        if at + 9 + n > len(got):
            return
        yield got[at + 3], got[at + 4], int.from_bytes(got[at + 5:at + 9], "big"), got[at + 9:at + 9 + n]
        at += 9 + n
def ok(got):
    if h2:  # stream 1 answered :status 200 (static index 8)
        return any(t == 1 and s == 1 and p[:1] == b"\x88" for t, _, s, p in frames(got))
    return got.startswith(b"HTTP/1.1 200")
def whole(got):
    if h2:
        return any(t in (0, 1) and s == 1 and f & 1 for t, f, s, _ in frames(got))
    head, sep, body = got.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
    return sep and m and len(body) >= int(m.group(1))
while pending and time.monotonic() < end:
    for fd, _ in ep.poll(1):
        s, got = conns[fd]
        try:
            chunk = s.recv(65536)
        except BlockingIOError:
            continue
        except OSError:
            chunk = b""
        conns[fd][1] = got = got + chunk
        if not chunk or whole(got):
            pending.discard(fd)
            ep.unregister(fd)
            if chunk and ok(got):
                answered.add(fd)
print(f"opened {len(conns)} answered {len(answered)}", flush=True)
for line in sys.stdin:
    if line.strip() == "check":
        still = 0
        for fd in answered:
            try:
                still += conns[fd][0].recv(1, socket.MSG_PEEK) != b""  # b"": closed
            except BlockingIOError:
                still += 1  # nothing to read, not closed
            except OSError:
                pass
        print(f"open {still}", flush=True)
PY

pss_kib() { # server -> the Pss of its process tree, KiB
  local total=0 p v
  for p in $(server_pids "$1"); do
    v=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
    total=$((total + ${v:-0}))
  done
  echo "$total"
}
tcp_mem_pages() { awk '$1 == "TCP:" {for (i = 2; i < NF; i++) if ($i == "mem") print $(i + 1)}' /proc/net/sockstat; }
slab_kib() { awk 'NR > 2 {t += $2 * $4} END {printf "%d\n", t / 1024}' /proc/slabinfo; }
probe() { # server -> "p50/p99" in µs of a legitimate client at $RATE req/s, or "-"
  [ "$PROBE" != 0 ] || { echo -; return; }
  "$SPIDEY" bench -c 8 -d "$PROBE" --rate "$RATE" --json "$tmp/probe.json" "http://127.0.0.1:${port[$1]}/1k.bin" >/dev/null
  python3 - "$tmp/probe.json" <<'PY'
import json, sys
lat = {k.replace("_us", ""): v for k, v in json.load(open(sys.argv[1]))["latency"].items()}
print(f"{lat['p50']}/{lat['p99']}")
PY
}
tcp_inuse() { awk '$1 == "TCP:" {for (i = 2; i < NF; i++) if ($i == "inuse") print $(i + 1)}' /proc/net/sockstat; }

echo "| server | processes | connections held | Pss before (KiB) | Pss with them (KiB) | Pss per connection (bytes) | kernel TCP buffers per connection (bytes, both ends) | kernel slab per connection (bytes, both ends, machine-wide) | legit p50/p99 before (µs) | legit p50/p99 with them (µs) |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in "${servers[@]}"; do
  name=${s%%:*} want=$N
  [ "$name" != lighttpd ] || want=$((N < hard / 2 - 100 ? N : hard / 2 - 100))
  case $name in
    floor | ref-* | lighttpd | nginx | h2o | caddy) start_server "$s" ;;
    *) start_spidey "$s" "$name" "${s#*:}" "$SPIDEY" --idle-timeout 600s "${h2_flag[@]}" >"$tmp/${s//:/-}.out" 2>&1 ;;
  esac
  check_servers "$s"
  url="http://127.0.0.1:${port[$s]}/idle.txt"
  for _ in 1 2 3 4 5; do curl -s "${curl_h2[@]}" -o /dev/null "$url"; done
  legit0=$(probe "$s")
  sleep "$SETTLE"
  before=$(pss_kib "$s") tcp0=$(tcp_mem_pages) slab0=$(slab_kib)
  coproc CROWD { python3 "$tmp/crowd.py" "${port[$s]}" "$want" "$CROWD_TIMEOUT" "$H2"; }
  crowd=$CROWD_PID
  read -r -t $((CROWD_TIMEOUT * 3)) line <&"${CROWD[0]}" || line="no answer from the crowd"
  sleep "$SETTLE"
  after=$(pss_kib "$s") tcp1=$(tcp_mem_pages) slab1=$(slab_kib)
  procs=$(server_pids "$s" | wc -l)
  legit1=$(probe "$s")
  echo check >&"${CROWD[1]}"
  read -r -t 60 open <&"${CROWD[0]}" || open="open 0"
  held=${open#open }
  exec {CROWD[1]}>&-
  wait "$crowd" 2>/dev/null || true
  crowd=""
  echo "$s: $line, $held still open when measured (wanted $want)" >&2
  if [ "$held" -gt 0 ]; then
    per() { echo $(((($2) - ($1)) * $3 / held)); }
    printf '| %s | %d | %d | %d | %d | %d | %d | %d | %s | %s |\n' "$s" "$procs" "$held" "$before" "$after" \
      "$(per "$before" "$after" 1024)" "$(per "$tcp0" "$tcp1" 4096)" "$(per "$slab0" "$slab1" 1024)" "$legit0" "$legit1"
  else
    printf '| %s | %d | 0 (%s) | %d | - | - | - | - | %s | %s |\n' "$s" "$procs" "$line" "$before" "$legit0" "$legit1"
  fi
  kill "${pid[$s]}" 2>/dev/null || true
  wait "${pid[$s]}" 2>/dev/null || true
  unset "pid[$s]"
  # The next server starts once this one's sockets are gone.
  for _ in $(seq "$CROWD_TIMEOUT"); do [ "$(tcp_inuse)" -lt 1000 ] && break; sleep 1; done
done
echo
echo "N=$N (lighttpd at most $((hard / 2 - 100))), RLIMIT_NOFILE $hard (soft raised to hard), SETTLE=${SETTLE}s," \
  "PROBE=$PROBE$([ "$PROBE" = 0 ] || echo " (spidey bench -c 8 --rate $RATE on 1 KiB)");" \
  "each connection served one 5-byte GET, then idle; commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src crates || echo '+changes');" \
  "$(server_versions); Linux $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
