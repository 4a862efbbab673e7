#!/usr/bin/env bash
# A/B: a mode at 01aaf9e (OLD, before the audit fixes) vs main (NEW), 1 KiB, wrk -t1 -c32 -d3s,
# order rotated each round. OLD is built from 01aaf9e in a separate worktree.
#
#   bash ab.sh [MODE] [ROUNDS] [WORKLOADS]   # defaults: uring 5 "keepalive close"
set -u
MODE=${1:-uring}; ROUNDS=${2:-5}; WORKLOADS=${3:-keepalive close}
OLD=/work/wt-old/target/release/spidey; NEW=/work/main/target/release/spidey
root=$(mktemp -d); head -c 1024 /dev/urandom > $root/f1k
run() { # bin label hdr
  $1 serve $root --port 18090 --mode $MODE -q >/dev/null 2>&1 & pid=$!; sleep 0.4
  curl -s -o /dev/null -w '%{http_code} %{size_download}' http://127.0.0.1:18090/f1k | grep -q '^200 1024$' || echo "$2 not serving"
  if [ -n "$3" ]; then r=$(wrk -t1 -c32 -d3s -H "$3" http://127.0.0.1:18090/f1k | awk '/Requests\/sec/{print $2}'); else r=$(wrk -t1 -c32 -d3s http://127.0.0.1:18090/f1k | awk '/Requests\/sec/{print $2}'); fi
  kill $pid; wait $pid 2>/dev/null; sleep 1
  echo "$2 $r"
}
for round in $(seq 1 "$ROUNDS"); do
  for w in $WORKLOADS; do
    hdr=""; [ $w = close ] && hdr="Connection: close"
    if [ $((round % 2)) = 1 ]; then a=(OLD NEW); else a=(NEW OLD); fi
    for x in "${a[@]}"; do bin=${!x}; echo "round $round $w $(run $bin $x "$hdr")"; done
  done
done
rm -rf $root
