#!/bin/sh
# Renders the committed full run's lab report (`spidey lab --report`, measuring nothing) and
# photographs it with headless Chromium into docs/lab-report/: the summary and verdict table,
# one experiment's tables, and each kind of plot (a sweep with the seed's series, a latency
# distribution, the robustness chart); the summary again in a 400 px window, as a phone
# shows it. Run from the repository root after `cargo build`.
set -eu

run=docs/runs/lab-full-c69ce8d
spidey=${SPIDEY:-./target/debug/spidey}
chromium=${CHROMIUM:-/usr/bin/chromium}
shots=docs/lab-report
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$spidey" lab --report "$run/results.jsonl.gz" --out "$out/report" >/dev/null
mkdir -p "$shots"

# shoot NAME WIDTH,HEIGHT URL: one screenshot of URL at that window size.
shoot() {
    profile=$(mktemp -d -p "$out")
    "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars --allow-file-access-from-files \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --window-size="$2" --timeout=20000 \
        --screenshot="$shots/$1.png" "$3" 2>/dev/null
    test -s "$shots/$1.png" || { echo "no screenshot $1" >&2; exit 1; }
    echo "$shots/$1.png"
}

# A page that shows the report from the element with id $1 on: Chromium's --screenshot
# photographs the top of a page, so each view is the report's own HTML (its styles and
# SVGs) with everything before that element hidden.
from() {
    page="$out/report/from-$1.html"
    sed "s|</style>|body>*:has(~[id=\"$1\"]){display:none}</style>|" "$out/report/report.html" >"$page"
    echo "file://$page"
}

html="$out/report/report.html"
shoot summary 1280,1100 "file://$html"
# Headless Chromium's window is at least 500 px wide: the 400 px view is the report in a
# 400 px frame, the grey to its right outside it.
printf '%s\n' '<!DOCTYPE html><html><body style="margin:0;background:#bbb"><iframe src="report.html" style="width:400px;height:1100px;border:0;background:#fff"></iframe></body></html>' >"$out/report/frame-400.html"
shoot summary-400px 500,1100 "file://$out/report/frame-400.html"
shoot table 1280,900 "$(from 000-fork-how-forking-affects-latency-and-throughput)"
plots="$out/report/plots"
shoot plot-sweep 960,460 "file://$(ls "$plots"/002-*-1.svg | head -n 1)"
shoot plot-latency 960,460 "file://$(ls "$plots"/*-cdf-*.svg | head -n 1)"
shoot plot-robustness 960,460 "file://$(ls "$out"/report/robustness-*.svg | head -n 1)"
