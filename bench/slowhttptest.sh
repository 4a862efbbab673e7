#!/usr/bin/env bash
# Slow-client attacks with Debian's slowhttptest against one spidey mode (not run in CI).
#
#   bench/slowhttptest.sh [mode] [seconds]      (default: single 30)
#
# Three attacks, one after another, each against a fresh server with short timeouts
# (--head-timeout 2s --idle-timeout 2s --send-timeout 2s):
#   slowloris  (-H)  headers trickled forever
#   slow body  (-B)  a POST body trickled forever
#   slow read  (-X)  a large response read a few bytes at a time with a tiny window
# slowhttptest prints, every few seconds, how many connections are pending, connected,
# closed, and whether the service is still available to a probe request; the summary at
# the end of each attack is what to look at ("service available: YES"; connections
# closed by the server rather than left "connected").
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-single}"
seconds="${2:-30}"
command -v slowhttptest >/dev/null || { echo "slowhttptest is not installed (apt-get install slowhttptest)"; exit 2; }
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-target}/release/spidey"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
head -c $((8 << 20)) /dev/urandom >"$root/big.bin"
echo "hello" >"$root/index.html"

run_attack() { # name, slowhttptest args...
  local name="$1"
  shift
  local out="$root/server.out"
  "$bin" serve "$root" --port 0 --mode "$mode" --quiet \
    --head-timeout 2s --idle-timeout 2s --send-timeout 2s >"$out" 2>&1 &
  local pid=$!
  for _ in $(seq 50); do grep -q listening "$out" 2>/dev/null && break; sleep 0.1; done
  local port
  port="$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out" | head -n1)"
  echo "=== $name against mode $mode (port $port, pid $pid) ==="
  slowhttptest -u "http://127.0.0.1:$port/$URL_PATH" -l "$seconds" -c 500 -r 100 -p 3 "$@" 2>&1 |
    grep -E 'test type|number of connections|interval between|slow read|Exit status|pending|connected|closed|service available|^\s*$' |
    tail -n 12 || true
  if kill -0 "$pid" 2>/dev/null; then
    echo "server alive after the attack; fds open: $(ls /proc/$pid/fd | wc -l)"
    kill -TERM "$pid"
    wait "$pid" || true
  else
    echo "SERVER DIED during $name"
  fi
}

URL_PATH="" run_attack slowloris -H -i 1 -x 24
URL_PATH="" run_attack "slow body" -B -i 1 -s 100000 -x 10
URL_PATH="big.bin" run_attack "slow read" -X -w 16 -y 32 -n 2 -z 16 -k 1
