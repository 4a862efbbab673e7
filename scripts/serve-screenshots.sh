#!/bin/sh
# Photographs what `spidey serve` shows a browser, with headless Chromium, into
# docs/screens/: a directory listing (names a browser must show as text, a long one with
# nowhere to break) and the built-in error page, each on a desktop (900 px) and as a phone
# shows it (400 px). Headless Chromium's window is at least 500 px wide, so the 400 px
# view is the page in a 400 px frame, the grey to its right outside it. Run from the
# repository root after `cargo build`.
set -eu

spidey=${SPIDEY:-./target/debug/spidey}
chromium=${CHROMIUM:-/usr/bin/chromium}
shots=docs/screens
out=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT

root="$out/site"
mkdir -p "$root/photos 2026" "$root/docs"
printf 'hello\n' >"$root/README.txt"
printf '<img src=x onerror=alert(1)>' >"$root/<img src=x onerror=alert(1)>.html"
printf 'x' >"$root/café menu.pdf"
printf 'x' >"$root/a-file-name-with-no-space-in-it-that-runs-on-well-past-the-width-of-a-phone.tar.gz"
head -c 3000000 /dev/zero >"$root/backup.img"

"$spidey" serve "$root" --port 0 -q >"$out/stdout" &
pid=$!
while ! grep -q 'listening on' "$out/stdout" 2>/dev/null; do sleep 0.1; done
base=$(sed -n 's/^spidey listening on \([^ ]*\).*/\1/p' "$out/stdout" | head -n 1)

. "$(dirname "$0")/lib/shots.sh"

mkdir -p "$shots"
shoot listing-desktop 900,600 "$base/"
phone listing-400px "$base/" 700
shoot error-page-desktop 900,400 "$base/no/such/page"
phone error-page-400px "$base/no/such/page" 700
