#!/usr/bin/env bash
# A/B: uring at 01aaf9e (multishot accept) vs main (poll + accept4), 1 KiB, wrk -t1 -c32 -d3s,
# keep-alive and Connection: close, order rotated each round.
set -u
OLD=/work/wt-old/target/release/spidey; NEW=/work/main/target/release/spidey
root=$(mktemp -d); head -c 1024 /dev/urandom > $root/f1k
run() { # bin label hdr
  $1 serve $root --port 18090 --mode event -q >/dev/null 2>&1 & pid=$!; sleep 0.4
  curl -s -o /dev/null -w '%{http_code} %{size_download}' http://127.0.0.1:18090/f1k | grep -q '^200 1024$' || echo "$2 not serving"
  if [ -n "$3" ]; then r=$(wrk -t1 -c32 -d3s -H "$3" http://127.0.0.1:18090/f1k | awk '/Requests\/sec/{print $2}'); else r=$(wrk -t1 -c32 -d3s http://127.0.0.1:18090/f1k | awk '/Requests\/sec/{print $2}'); fi
  kill $pid; wait $pid 2>/dev/null; sleep 1
  echo "$2 $r"
}
for round in 1 2 3; do
  for w in keepalive; do
    hdr=""; [ $w = close ] && hdr="Connection: close"
    if [ $((round % 2)) = 1 ]; then a=(OLD NEW); else a=(NEW OLD); fi
    for x in "${a[@]}"; do bin=${!x}; echo "round $round $w $(run $bin $x "$hdr")"; done
  done
done
rm -rf $root
