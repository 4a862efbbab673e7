# Screenshots with headless Chromium, for the scripts that make docs' pictures. The caller
# sets $chromium (the browser), $out (a scratch directory) and $shots (where PNGs go).

# shoot NAME WIDTH,HEIGHT URL: one screenshot of URL at that window size, as $shots/NAME.png.
shoot() {
    profile=$(mktemp -d -p "$out")
    "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars --allow-file-access-from-files \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --window-size="$2" --timeout=20000 \
        --screenshot="$shots/$1.png" "$3" 2>/dev/null
    test -s "$shots/$1.png" || { echo "no screenshot $1" >&2; exit 1; }
    echo "$shots/$1.png"
}

# phone NAME URL HEIGHT: URL as a phone shows it. Headless Chromium's window is at least
# 500 px wide, so the page is in a 400 px frame, the grey to its right outside it.
phone() {
    printf '<!DOCTYPE html><html><body style="margin:0;background:#bbb"><iframe src="%s" style="width:400px;height:%spx;border:0;background:#fff"></iframe></body></html>\n' "$2" "$3" >"$out/$1.html"
    shoot "$1" "500,$3" "file://$out/$1.html"
}
