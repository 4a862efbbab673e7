#!/usr/bin/env bash
# A legitimate HTTP/2 client's latency while each known attack on HTTP/2 servers runs
# against the same `spidey serve --http2` (the limits are SECURITY.md's "HTTP/2" table).
#
# Per mode, per round (the attacks' order rotated each round): the legitimate client is
# `spidey bench --h2` in an open loop (RATE requests/s of a 1 KiB file, 4 connections of
# 4 streams, DURATION), alone ("none": the baseline) and then beside each attack. An
# attack is tests/h2/client.py's case of that name run over and over, one connection after
# another, for as long as the client runs. `get` is the control: the same Python client
# making one plain request per connection, so what it raises too is the attacker's own CPU
# beside the client (on a 2-CPU machine they share one), not the attack. Reported: the client's p99 corrected for
# coordinated omission (from each request's intended send time, so a client slowed by the
# attacker's own CPU shows too) and uncorrected (from the actual send: the server's
# answer time), each as its median over the rounds and as its ratio to the baseline's
# taken round by round (median and range); the attack connections made; and the
# requests left unanswered over all rounds (asked less answered). The server runs with
# --max-requests 100000, so the client's connections are not renewed mid-run (at the
# default 1000 each of them would be, several times). Server pinned to SERVER_CPUS, the
# client and the attacker to LOAD_CPUS.
#
#   bench/h2-abuse.sh
#   MODES="event hybrid thread" ROUNDS=5 DURATION=10s bench/h2-abuse.sh
#   ATTACKS="rapid-reset zero-window" bench/h2-abuse.sh
#
# Not a test: numbers depend on the machine and its load (a 2-CPU machine puts the
# attacker and the client on one CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

MODES=${MODES:-"event hybrid thread"}
ATTACKS=${ATTACKS:-"get rapid-reset made-you-reset continuation-flood hpack-bomb settings-flood ping-flood empty-data-flood priority-flood too-many-streams zero-window"}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
RATE=${RATE:-2000}
SERVER_CPUS=${SERVER_CPUS:-1}
LOAD_CPUS=${LOAD_CPUS:-0}
SPIDEY=${SPIDEY:-target/release/spidey}
PYTHON=/usr/bin/python3 # Debian's, with python3-hpack
[ -x "$SPIDEY" ] || cargo build --release --quiet
tmp=$(mktemp -d)
server=
attacker=
cleanup() {
  [ -n "$attacker" ] && kill -- "-$attacker" 2>/dev/null || true
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The site client.py asks for: "/" (index.html, 13 bytes) and a 1 MiB file; and the
# legitimate client's 1 KiB file.
mkdir -p "$tmp/www"
printf '<p>hello</p>\n' >"$tmp/www/index.html"
head -c 1048576 /dev/urandom >"$tmp/www/big.bin"
head -c 1024 /dev/urandom >"$tmp/www/1k.bin"

# p99 PORT ATTACK: runs the client (beside the attack, unless "none"); one line
# "p99_us uncorrected_p99_us answered requests attack_connections".
p99() {
  local port=$1 attack=$2 out="$tmp/run.json" count="$tmp/attacks"
  : >"$count"
  if [ "$attack" != none ]; then
    setsid taskset -c "$LOAD_CPUS" bash -c "while :; do timeout 20 $PYTHON tests/h2/client.py $port 0 - $attack >/dev/null 2>&1; echo >>$count; done" &
    attacker=$!
    sleep 0.3
  fi
  taskset -c "$LOAD_CPUS" "$SPIDEY" bench --h2 --streams 4 -c 4 --rate "$RATE" -d "$DURATION" \
    "http://127.0.0.1:$port/1k.bin" --json "$out" >/dev/null 2>&1 || true
  if [ -n "$attacker" ]; then
    kill -- "-$attacker" 2>/dev/null || true
    wait "$attacker" 2>/dev/null || true
    attacker=
  fi
  $PYTHON -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["latency"]["p99_us"], r["latency_uncorrected"]["p99_us"], r["responses"], r["requests"], end=" ")' "$out"
  wc -l <"$count"
}

printf '%-8s %-20s %9s %20s %14s %20s %8s %s\n' mode attack "p99 ms" "p99 / baseline" "uncorr. p99 ms" "uncorr. / baseline" attacks unanswered
for mode in $MODES; do
  taskset -c "$SERVER_CPUS" "$SPIDEY" serve "$tmp/www" --mode "$mode" --port 0 -q --http2 --idle-timeout 2s --max-requests 100000 \
    >"$tmp/stdout" 2>"$tmp/stderr" &
  server=$!
  for _ in $(seq 50); do grep -q 'listening on' "$tmp/stdout" && break; sleep 0.1; done
  port=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/stdout" | head -n 1)
  curl -sf --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$port/1k.bin" || { echo "$mode does not serve h2c" >&2; exit 1; }
  declare -A results=()
  list=($ATTACKS)
  for r in $(seq 0 $((ROUNDS - 1))); do
    # Rotate the attacks each round; the baseline first.
    rotated=("${list[@]:$((r % ${#list[@]}))}" "${list[@]:0:$((r % ${#list[@]}))}")
    for attack in none "${rotated[@]}"; do
      results[$attack]+="$(p99 "$port" "$attack");"
    done
  done
  for attack in none $ATTACKS; do
    $PYTHON - "$mode" "$attack" "${results[none]}" "${results[$attack]}" <<'EOF'
import statistics, sys
mode, attack, base, runs = sys.argv[1:5]
rows = lambda s: [list(map(int, r.split())) for r in s.strip(";").split(";")]
base, runs = rows(base), rows(runs)
def ratio(i):
    rs = sorted(r[i] / b[i] for r, b in zip(runs, base))
    return "%.2fx [%.2f-%.2f]" % (statistics.median(rs), rs[0], rs[-1])
ms = lambda i: statistics.median(r[i] for r in runs) / 1000  # noqa: E731
unanswered = sum(r[3] - r[2] for r in runs)
print("%-8s %-20s %9.2f %20s %14.2f %20s %8d %d" % (
    mode, attack, ms(0), ratio(0), ms(1), ratio(1), sum(r[4] for r in runs), unanswered))
EOF
  done
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=
  unset results
done
