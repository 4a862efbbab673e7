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

# shoot NAME WIDTH,HEIGHT URL: one screenshot of URL at that window size.
shoot() {
    profile=$(mktemp -d -p "$out")
    "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --window-size="$2" --timeout=20000 \
        --screenshot="$shots/$1.png" "$3" 2>/dev/null
    test -s "$shots/$1.png" || { echo "no screenshot $1" >&2; exit 1; }
    echo "$shots/$1.png"
}

# phone NAME URL: URL in a 400 px frame.
phone() {
    printf '<!DOCTYPE html><html><body style="margin:0;background:#bbb"><iframe src="%s" style="width:400px;height:700px;border:0;background:#fff"></iframe></body></html>\n' "$2" >"$out/$1.html"
    shoot "$1" 500,700 "file://$out/$1.html"
}

mkdir -p "$shots"
shoot listing-desktop 900,600 "$base/"
phone listing-400px "$base/"
shoot error-page-desktop 900,400 "$base/no/such/page"
phone error-page-400px "$base/no/such/page"
