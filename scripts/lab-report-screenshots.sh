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

. "$(dirname "$0")/lib/shots.sh"

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
phone summary-400px "file://$html" 1100
shoot table 1280,900 "$(from 000-fork-how-forking-affects-latency-and-throughput)"
plots="$out/report/plots"
shoot plot-sweep 960,460 "file://$(ls "$plots"/002-*-1.svg | head -n 1)"
shoot plot-latency 960,460 "file://$(ls "$plots"/*-cdf-*.svg | head -n 1)"
shoot plot-robustness 960,460 "file://$(ls "$out"/report/robustness-*.svg | head -n 1)"
