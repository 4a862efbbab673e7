#!/usr/bin/env bash
# The same 102,400-byte dynamic page (examples/handlers/page.c) served two ways by one
# spidey: fork-exec CGI (page.c built as a CGI program in cgi-bin/) and the in-process
# handler (page.c built as a shared library, --handler /app=page.so). Measured with wrk
# against 127.0.0.1 only, bounded in time.
#
#   bench/cgi-vs-handler.sh [MODE] [SECONDS] [CONNECTIONS]
#
# MODE defaults to `event` when this build has it, else `single`. The single mode serves
# one connection at a time, so there CONNECTIONS should stay 1.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${2:-5}
conns=${3:-1}
cargo build --release --quiet
bin=${CARGO_TARGET_DIR:-target}/release/spidey
mode=${1:-}
if [[ -z $mode ]]; then
    probe=$("$bin" serve --mode event --port 0 /nonexistent 2>&1 || true)
    if [[ $probe == *"not available"* ]]; then mode=single; else mode=event; fi
fi
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/root/cgi-bin"
cc -O2 -shared -fPIC -Iinclude -o "$work/page.so" examples/handlers/page.c
cc -O2 -DSPIDEY_CGI_MAIN -Iinclude -o "$work/root/cgi-bin/page" examples/handlers/page.c
"$bin" serve "$work/root" --port 0 --mode "$mode" --quiet --cgi --handler "/app=$work/page.so" >"$work/out" &
pid=$!
for _ in $(seq 50); do grep -q listening "$work/out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/out")
echo "mode $mode, wrk -t1 -c$conns -d${secs}s, $(nproc) cores"
echo "| path | served by | requests/s | non-2xx or socket errors | body bytes |"
echo "| --- | --- | ---: | ---: | ---: |"
for path in /cgi-bin/page /app/page; do
    size=$(curl -s "http://127.0.0.1:$port$path" | wc -c)
    out=$(wrk -t1 -c"$conns" -d"${secs}s" "http://127.0.0.1:$port$path")
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
    sockerr=$(awk '/Socket errors/ {gsub(",", ""); print $4+$6+$8+$10}' <<<"$out")
    kind=$([[ $path == /cgi-bin/* ]] && echo "fork-exec CGI" || echo "in-process handler")
    echo "| $path | $kind | $rps | $(( ${non2xx:-0} + ${sockerr:-0} )) | $size |"
done
