#!/usr/bin/env bash
# HTTP/2 against the peers (issue 41's goals): h2o, lighttpd and nginx from Debian's packages
# and `spidey serve --http2`, each serving the same files, measured with h2load in rounds
# that rotate the order of the servers. Server pinned to SERVER_CPUS (default CPU 1), h2load
# to LOAD_CPUS (default CPU 0). Per workload and server: server CPU per response (its
# cgroup's CPU time over the responses, as bench/vs-peers.sh counts it), requests/s, and
# response header bytes per response (h2load's "headers" traffic); medians with ranges,
# and Spidey's ratio to each peer taken round by round.
#
#   h2c-m32     1 KiB, h2c, -c4 -m32 (4 connections, 32 streams each)
#   h2c-m1      1 KiB, h2c, -c32 -m1 (one stream per connection)
#   h1-c32      1 KiB, HTTP/1.1 (h2load --h1), -c32: the HTTP/1.1 baseline of h2c-m1
#   h2c-1m-w16  1 MiB, h2c, -c4 -m32 -w16 -W16 (64 KiB windows): requests/s matters here
#
#   bench/h2-vs-peers.sh
#   SERVERS="h2o event:1 uring:1" ROUNDS=7 N=300000 bench/h2-vs-peers.sh
#   WORKLOADS="h2c-m32" bench/h2-vs-peers.sh
#   TLS=1 SERVERS="h2o nginx:1 event:1" WORKLOADS="h2c-m32 h2c-m1" bench/h2-vs-peers.sh  # h2 over TLS
#   SPIDEY_ALT=/path/to/old/spidey SERVERS="h2o alt-event:1 event:1" bench/h2-vs-peers.sh  # before/after
#
# TLS=1 runs the same workloads over TLS 1.3 with ALPN h2 (the names keep "h2c"; h1-c32
# is then HTTP/1.1 over TLS).
# nginx runs with `listen ... http2` and sendfile off (with sendfile on, its h2c stalls near
# 720 req/s here). Every server is first checked to answer each file over h2c with 200, the
# exact length and HTTP/2. Not a test: numbers depend on the machine and its load.
set -euo pipefail
cd "$(dirname "$0")/.."

SERVERS=${SERVERS:-"h2o lighttpd nginx:1 event:1"}
WORKLOADS=${WORKLOADS:-"h2c-m32 h2c-m1 h1-c32 h2c-1m-w16"}
ROUNDS=${ROUNDS:-5}
N=${N:-200000}
N_1M=${N_1M:-2000}
SERVER_CPUS=${SERVER_CPUS:-1}
LOAD_CPUS=${LOAD_CPUS:-0}
SPIDEY=${SPIDEY:-target/release/spidey}
[ -x "$SPIDEY" ] || cargo build --release --quiet
tmp=$(mktemp -d)
chmod 755 "$tmp" # h2o runs as nobody: it must reach its directory and the files
declare -A pid port tport cgroup
# shellcheck source=bench/lib/servers.sh
. bench/lib/servers.sh
trap 'stop_servers; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
cpu_accounting_setup
install_server_packages $SERVERS
command -v h2load >/dev/null || { apt-get update -qq && apt-get install -y -qq nghttp2-client; }
mkdir -p "$tmp/www"
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"
head -c 1048576 /dev/urandom >"$tmp/www/1m.bin"
export NGINX_LISTEN=" http2" NGINX_SENDFILE=off
scheme=http
curl_h2=(--http2-prior-knowledge)
if [ "${TLS:-0}" = 1 ]; then
  # TLS=1: h2 over TLS with ALPN (TLS 1.3, one self-signed P-256 certificate for all):
  # nginx's listen gets ssl, h2o a TLS listener, Spidey --tls-cert; lighttpd takes no part
  # (Debian's needs lighttpd-mod-openssl configured).
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 2 2>/dev/null
  chmod 644 "$tmp/key.pem" "$tmp/cert.pem"
  export NGINX_LISTEN=" ssl http2; ssl_certificate $tmp/cert.pem; ssl_certificate_key $tmp/key.pem"
  export H2O_TLS_CERT="$tmp/cert.pem" H2O_TLS_KEY="$tmp/key.pem"
  scheme=https curl_h2=(--http2 -k)
fi

for s in $SERVERS; do
  name=${s%%:*} loops=${s#*:}
  [ "$loops" = "$s" ] && loops=1
  # A Spidey mode, or alt-MODE: the same mode of $SPIDEY_ALT (another build).
  mode=$name bin=$SPIDEY
  case $name in alt-*) mode=${name#alt-} bin=${SPIDEY_ALT:?alt- servers need SPIDEY_ALT} ;; esac
  case $name:${TLS:-0} in
    lighttpd:1) echo "lighttpd takes no part with TLS=1" >&2; exit 2 ;;
    h2o:* | lighttpd:* | nginx:*) start_server "$s" ;;
    *:1) start_spidey "$s" "$mode" "$loops" "$bin" --http2 --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" >"$tmp/${s//:/-}.out" 2>&1 ;;
    *) start_spidey "$s" "$mode" "$loops" "$bin" --http2 >"$tmp/${s//:/-}.out" 2>&1 ;;
  esac
done
sleep 1
for s in $SERVERS; do
  for f in 1k.bin 1m.bin; do
    want="200 $(stat -c %s "$tmp/www/$f") 2"
    for _ in $(seq 20); do # h2o takes a second or two to start
      got=$(curl -s "${curl_h2[@]}" -o /dev/null -w '%{http_code} %{size_download} %{http_version}' "$scheme://127.0.0.1:${port[$s]}/$f" || true)
      [ "$got" != "$want" ] || break
      sleep 0.5
    done
    [ "$got" = "$want" ] || { echo "$s does not serve /$f over h2c: got '$got', want '$want'" >&2; exit 1; }
  done
done

args_of() { # workload -> h2load arguments
  case $1 in
    h2c-m32) echo "-n $N -c 4 -m 32 /1k.bin" ;;
    h2c-m1) echo "-n $N -c 32 -m 1 /1k.bin" ;;
    h1-c32) echo "--h1 -n $N -c 32 /1k.bin" ;;
    h2c-1m-w16) echo "-n $N_1M -c 4 -m 32 -w 16 -W 16 /1m.bin" ;;
  esac
}

echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(server_versions)"
echo "# server CPUs $SERVER_CPUS, h2load CPUs $LOAD_CPUS, $ROUNDS rounds, $scheme"
results="$tmp/results.tsv"
read -ra order <<<"$SERVERS"
for r in $(seq "$ROUNDS"); do
  for w in $WORKLOADS; do
    for s in "${order[@]}"; do
      read -ra a <<<"$(args_of "$w")"
      path=${a[-1]}
      unset 'a[-1]'
      before=$(cpu_ns "$s")
      out=$(taskset -c "$LOAD_CPUS" h2load -t 1 "${a[@]}" "$scheme://127.0.0.1:${port[$s]}$path" 2>&1)
      after=$(cpu_ns "$s")
      ok=$(sed -n 's/^requests: .* \([0-9]*\) succeeded.*/\1/p' <<<"$out")
      rps=$(sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' <<<"$out")
      hdr=$(sed -n 's/^traffic: .* (\([0-9]*\)) headers.*/\1/p' <<<"$out")
      ok=${ok:-0}
      [ "$ok" -gt 0 ] || { ok=1 rps=0; } # a server that cannot serve the workload (nginx's h2c port speaks no HTTP/1.1)
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$w" "$s" "$(( (after - before) / ok ))" "${rps:-0}" "$(( ${hdr:-0} / ok ))" >>"$results"
    done
  done
  order=("${order[@]:1}" "${order[0]}")
done

python3 - "$results" "$SERVERS" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
servers = sys.argv[2].split()
data = {}
for r, w, s, ns, rps, hdr in rows:
    data.setdefault(w, {}).setdefault(s, {})[int(r)] = (int(ns) / 1000, float(rps), int(hdr))
def med(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"
for w, by in data.items():
    print(f"\n## {w}\n\n| server | CPU us/response | requests/s | header bytes/response |\n|---|---|---|---|")
    for s in servers:
        v = by.get(s, {}).values()
        if not v or not all(x[1] for x in v):
            print(f"| {s} | (does not serve it) | | |")
            continue
        print(f"| {s} | {med([x[0] for x in v])} | {statistics.median([x[1] for x in v]):.0f} | {statistics.median([x[2] for x in v]):.0f} |")
    spidey = [s for s in servers if s.split(':')[0] not in ("h2o", "lighttpd", "nginx")]
    peers = [s for s in servers if s not in spidey]
    for sp in spidey:
        for p in peers:
            ratios = [by[sp][r][0] / by[p][r][0] for r in by.get(sp, {}) if r in by.get(p, {}) and by[p][r][0] > 0 and by[p][r][1] > 0]
            if ratios:
                print(f"\n{sp} / {p}, CPU per response, round by round: median {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
        # A build against the build before it (alt-MODE against MODE), round by round.
        alt = "alt-" + sp
        if alt in by:
            ratios = [by[sp][r][0] / by[alt][r][0] for r in by[sp] if r in by[alt] and by[alt][r][0] > 0]
            print(f"\n{sp} / {alt}, CPU per response, round by round: median {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
# One stream per connection against the same server's HTTP/1.1 (issue 41's goal: at most 1.1x).
if "h2c-m1" in data and "h1-c32" in data:
    print("\n## h2c-m1 over h1-c32, the same server, round by round\n")
    for s in servers:
        m1, h1 = data["h2c-m1"].get(s, {}), data["h1-c32"].get(s, {})
        ratios = [m1[r][0] / h1[r][0] for r in m1 if r in h1 and h1[r][1] > 0 and m1[r][1] > 0]
        if ratios:
            print(f"- {s}: median {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
PY
