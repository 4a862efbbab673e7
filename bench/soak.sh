#!/usr/bin/env bash
# Soak: minutes of mixed load against each mode, sampling the server's resident memory and
# open descriptors every second (not run in CI).
#
#   bench/soak.sh [seconds-per-mode] [modes...]     (default: 600 s, every mode)
#
# Load, all at once, for the whole period:
#   wrk  -c 16 keep-alive GETs of a 64 KiB static file;
#   ab   -c 4  one-request connections (no keep-alive) to a directory listing;
#   curl -c 1  a CGI script in a loop, when the build has CGI (ROOT/cgi-bin/hello).
# Modes the build does not have are skipped. For each mode it prints the samples' first and
# last RSS after warm-up (the first 10% of the run), the most descriptors seen, and the
# load generators' error counts. Pass: no RSS growth beyond 10% after warm-up, descriptors
# back to the start, no errors. Samples go to $OUT (default target/soak) as CSV.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
modes=("$@")
[ "${#modes[@]}" -gt 0 ] || modes=(single fork thread pool prefork event uring)
out="${OUT:-target/soak}"
mkdir -p "$out"
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/spidey"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
head -c 65536 /dev/urandom >"$root/static.bin"
mkdir -p "$root/dir" "$root/cgi-bin"
for i in $(seq 200); do echo "$i" >"$root/dir/file-$i.txt"; done
printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\nhello from cgi\\n"\n' >"$root/cgi-bin/hello"
chmod +x "$root/cgi-bin/hello"

# Resident memory (KiB) and open descriptors of a server and its child processes.
sample() {
  local pid=$1 rss=0 fds=0 p
  for p in $pid $(pgrep -P "$pid" || true); do
    # A child may exit between pgrep and the read: count it as 0, not as an empty operand.
    local r
    r=$(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null)
    rss=$((rss + ${r:-0}))
    fds=$((fds + $(ls "/proc/$p/fd" 2>/dev/null | wc -l)))
  done
  echo "$rss,$fds"
}

soak_mode() {
  local mode=$1 log="$out/$1.server.log"
  "$bin" serve "$root" --port 0 --mode "$mode" --quiet --cgi >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 50); do grep -q listening "$log" 2>/dev/null && break; sleep 0.1; done
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "$mode: skipped ($(head -n1 "$log"))"
    return
  fi
  local port url
  port="$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -n1)"
  url="http://127.0.0.1:$port"
  local cgi=no
  # Without CGI the script is served as a static file (its source), which is not a match.
  [ "$(curl -fsS "$url/cgi-bin/hello" 2>/dev/null)" = "hello from cgi" ] && cgi=yes
  local start_fds
  start_fds="$(sample "$pid" | cut -d, -f2)"
  wrk -t 1 -c 16 -d "${seconds}s" "$url/static.bin" >"$out/$mode.wrk" 2>&1 &
  local wrk=$!
  ab -q -c 4 -t "$seconds" -n 100000000 "$url/dir/" >"$out/$mode.ab" 2>&1 &
  local ab=$!
  local cgi_loop=""
  if [ "$cgi" = yes ]; then
    (end=$((SECONDS + seconds)); while [ $SECONDS -lt $end ]; do
      curl -fsS "$url/cgi-bin/hello" >/dev/null || echo "cgi error"; done) >"$out/$mode.cgi" 2>&1 &
    cgi_loop=$!
  fi
  echo "t,rss_kib,fds" >"$out/$mode.csv"
  for t in $(seq "$seconds"); do
    echo "$t,$(sample "$pid")" >>"$out/$mode.csv"
    sleep 1
  done
  wait "$wrk" "$ab" || true
  [ -z "$cgi_loop" ] || wait "$cgi_loop" || true
  sleep 1
  local end_fds alive=yes
  end_fds="$(sample "$pid" | cut -d, -f2)"
  kill -0 "$pid" 2>/dev/null || alive=no
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  local warm=$((seconds / 10 + 1))
  local rss_warm rss_end max_fds
  rss_warm="$(awk -F, -v w="$warm" 'NR == w + 1 {print $2}' "$out/$mode.csv")"
  rss_end="$(tail -n1 "$out/$mode.csv" | cut -d, -f2)"
  max_fds="$(awk -F, 'NR > 1 && $3 > m {m = $3} END {print m}' "$out/$mode.csv")"
  local wrk_req wrk_err ab_req ab_fail cgi_err=0
  wrk_req="$(awk '/requests in/ {print $1}' "$out/$mode.wrk")"
  wrk_err="$(grep -E 'Socket errors|Non-2xx' "$out/$mode.wrk" | tr '\n' ' ' || true)"
  ab_req="$(awk '/Complete requests/ {print $3}' "$out/$mode.ab")"
  ab_fail="$(awk '/Failed requests/ {print $3}' "$out/$mode.ab")"
  [ -z "$cgi_loop" ] || cgi_err="$(grep -c 'cgi error' "$out/$mode.cgi" || true)"
  echo "$mode: ${seconds}s alive=$alive rss_kib warm=$rss_warm end=$rss_end fds start=$start_fds max=$max_fds end=$end_fds" \
    "wrk=${wrk_req:-?} req ${wrk_err:-no errors} ab=${ab_req:-?} req failed=${ab_fail:-?} cgi=$cgi errors=$cgi_err"
}

for mode in "${modes[@]}"; do soak_mode "$mode"; done
