//! A real browser: Debian's headless Chromium against `spidey serve --port 0`, in every
//! mode (issue 19: "curl plus a real headless browser confirm compression and the
//! listing"; curl's side is `tests/features.rs`).
//!
//! - `--dump-dom` of the fixture's hostile listing shows each name as text (HTML-escaped
//!   in the serialized DOM), and the browser built no element from a name;
//! - with `--compress`, a text file fetched with the browser's own `Accept-Encoding`
//!   (`gzip, deflate, br, zstd` from Chromium 156) arrives whole in the DOM, and the access
//!   log says far fewer bytes went out than the file holds;
//! - in `event` only (the default mode; the picture does not depend on the mode), a
//!   `--screenshot` of the listing is a PNG of plausible size;
//! - the server runs with `--http2`: over HTTPS the browser speaks HTTP/2 (ALPN `h2`), in
//!   clear text HTTP/1.1, and the access log says which.
//!
//! Over HTTPS (the TLS pass, `SPIDEY_TEST_TLS=1`, where `s.url()` is https with the test
//! CA) Chromium trusts exactly the server's certificate and nothing else:
//! `--ignore-certificate-errors-spki-list` with the SHA-256 of the leaf's public key
//! (Chromium 156 honours it in headless mode with a fresh `--user-data-dir`, no policy
//! needed; checked by hand: without it, or with another pin, the load fails with
//! ERR_CERT_AUTHORITY_INVALID). `https_listing_with_its_own_certificate` checks the same
//! in the plain pass, with a certificate of its own, and that an unpinned browser refuses.
//!
//! Chromium runs one at a time in this binary (a lock), so eight modes do not start eight
//! browsers on a small machine. `scripts/test.sh` installs chromium and sets
//! SPIDEY_REQUIRE_CHROMIUM=1: then a missing browser fails the test. Run another way
//! without chromium, the test prints SKIPPED with the reason and passes.

mod common;

use common::{Fixture, Spidey};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
static ONE_BROWSER_AT_A_TIME: Mutex<()> = Mutex::new(());
/// A line repeated to make a compressible text file (50,000 bytes).
const LINE: &str = "spidey compressible line\n";
const LINES: usize = 2000;

/// The browser, or `None` (with a SKIPPED line) where it is missing and not required.
fn chromium(test: &str) -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os("SPIDEY_CHROMIUM").unwrap_or_else(|| CHROMIUM.into()));
    if path.exists() {
        return Some(path);
    }
    let required = std::env::var("SPIDEY_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1");
    assert!(!required, "{test}: SPIDEY_REQUIRE_CHROMIUM=1 (scripts/test.sh) but {} is missing", path.display());
    eprintln!("SKIPPED {test}: {} not found (apt-get install chromium, or run scripts/test.sh)", path.display());
    None
}

/// Which certificate the browser accepts besides its own roots.
#[derive(Clone, Copy)]
enum Trust<'a> {
    /// Only its roots (so a test certificate is refused).
    Roots,
    /// Also the certificate whose SubjectPublicKeyInfo has this SHA-256 pin (base64).
    Pinned(&'a str),
}

impl Trust<'_> {
    /// What the server `s` needs: its test certificate's pin in the TLS pass.
    fn for_server(s: &Spidey) -> Trust<'static> {
        if s.tls {
            Trust::Pinned(&common::tls::pki().spki_pin)
        } else {
            Trust::Roots
        }
    }
}

/// Runs headless Chromium on `url` with `action` (`--dump-dom`, `--screenshot=FILE`) in a
/// fresh profile; its stdout. A page that fails to load (a refused certificate) still
/// exits 0, with an empty DOM and no screenshot.
fn browse(browser: &Path, action: &str, url: &str, trust: Trust) -> String {
    let _one = ONE_BROWSER_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let profile = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=900,560",
            "--timeout=20000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(match trust {
            Trust::Roots => None,
            Trust::Pinned(pin) => Some(format!("--ignore-certificate-errors-spki-list={pin}")),
        })
        .arg(action)
        .arg(url)
        .output()
        .expect("run chromium");
    eprintln!("chromium {action} {url}: {:?}", started.elapsed());
    assert!(
        out.status.success(),
        "chromium {action} {url}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits (up to 10 s) for an access-log line containing `needle`, and returns it.
fn logged(file: &Path, needle: &str) -> String {
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains(needle)) {
            return line.to_string();
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no access-log line with {needle:?}:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn browser_sees_the_listing_and_decodes_compression(mode: &str) {
    let test = format!("{mode}::browser_sees_the_listing_and_decodes_compression");
    let Some(browser) = chromium(&test) else { return };
    let fx = Fixture::new();
    std::fs::write(fx.root().join("text.txt"), LINE.repeat(LINES)).unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("access.log");
    let s = Spidey::start(mode, &fx.root(), &["--compress", "--http2", "--access-log", log.to_str().unwrap()]);

    let trust = Trust::for_server(&s);
    let dom = browse(&browser, "--dump-dom", &s.url("/list/"), trust);
    assert_listing_shown(mode, &dom);

    let dom = browse(&browser, "--dump-dom", &s.url("/text.txt"), trust);
    assert_eq!(dom.matches(LINE.trim_end()).count(), LINES, "{mode}: the decoded text in the DOM");
    let line = logged(&log, "GET /text.txt ");
    // Over HTTPS the browser and `--http2` agree on h2 by ALPN; in clear text a browser
    // speaks HTTP/1.1 (no browser sends HTTP/2's preface unasked).
    let protocol = if s.tls { "HTTP/2.0" } else { "HTTP/1.1" };
    assert!(line.contains(&format!("GET /text.txt {protocol}\"")), "{mode}: {line}");
    let fields: Vec<&str> = line.split('"').nth(2).unwrap_or("").split_whitespace().collect();
    let (status, bytes): (u16, usize) = (fields[0].parse().unwrap(), fields[1].parse().unwrap());
    assert_eq!(status, 200, "{mode}: {line}");
    assert!(
        bytes * 10 < LINE.len() * LINES,
        "{mode}: {bytes} bytes sent for a {} byte file: {line}",
        LINE.len() * LINES
    );

    if mode == "event" {
        screenshot(&browser, &s.url("/list/"), trust, "SPIDEY_KEEP_SCREENSHOT");
        // On a phone: a listing with a long name, and an error page, no wider than 400 px.
        std::fs::write(fx.root().join("list").join(LONG_NAME), "x").unwrap();
        const PHONE: u32 = 400;
        for path in ["/list/", "/no-such-page"] {
            let width = width_in_frame(&browser, &s, &fx.root(), path, PHONE);
            assert!(width <= PHONE, "{mode}: {path} is {width} px wide in a {PHONE} px frame");
        }
    }
}

/// A file name with no place to break it.
const LONG_NAME: &str = "a-file-name-with-no-space-in-it-that-runs-on-well-past-the-width-of-a-phone.tar.gz";

/// How wide (CSS px, `scrollWidth`) the page at `path` is in a frame `width` px wide.
/// Headless Chromium's window is at least 500 px, so the page is shown in an iframe of a
/// page served from `root` (same origin, so the frame's document can be read), which
/// writes the width into the DOM it dumps.
fn width_in_frame(browser: &Path, s: &Spidey, root: &Path, path: &str, width: u32) -> u32 {
    let page = format!(
        "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"f\" src=\"{path}\" style=\"width:{width}px;\
         height:800px;border:0\"></iframe><script>document.getElementById('f').onload=function(){{\
         document.body.dataset.width=this.contentDocument.documentElement.scrollWidth}}</script></body></html>"
    );
    std::fs::write(root.join("frame.html"), page).unwrap();
    let dom = browse(browser, "--dump-dom", &s.url("/frame.html"), Trust::for_server(s));
    let at = dom.find("data-width=\"").unwrap_or_else(|| panic!("the probe did not run: {dom}")) + 12;
    dom[at..at + dom[at..].find('"').unwrap()].parse().unwrap()
}

/// The fixture's hostile listing, as the browser's DOM shows it: each name as text.
fn assert_listing_shown(mode: &str, dom: &str) {
    for shown in ["&lt;img src=x onerror=alert(1)&gt;", "q\"uote's", "café", "plain.txt"] {
        assert!(dom.contains(shown), "{mode}: the listing's DOM lacks {shown:?}:\n{dom}");
    }
    assert!(!dom.contains("<img"), "{mode}: a file name became an element:\n{dom}");
    assert!(!dom.contains(".hidden"), "{mode}: a hidden file is listed:\n{dom}");
}

/// A screenshot of `url`: a PNG of plausible size, copied to the file named by the
/// environment variable `keep` if set.
fn screenshot(browser: &Path, url: &str, trust: Trust, keep: &str) {
    let shots = tempfile::tempdir().unwrap();
    let png = shots.path().join("listing.png");
    browse(browser, &format!("--screenshot={}", png.display()), url, trust);
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot of {url}: {e}"));
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{url}: a PNG");
    assert!((5_000..2_000_000).contains(&bytes.len()), "{url}: a {} byte screenshot", bytes.len());
    if let Some(keep) = std::env::var_os(keep) {
        std::fs::copy(&png, keep).unwrap();
    }
}

for_each_mode!(browser_sees_the_listing_and_decodes_compression);

/// HTTPS without the TLS pass: `spidey serve` with a self-signed rcgen certificate of its
/// own; Chromium with that certificate's pin shows the listing (DOM and screenshot), and
/// Chromium without it refuses the page. The HTTPS browser check so exists under a plain
/// `cargo test`. One mode (event, the default): the TLS pass runs the for_each_mode test
/// above over HTTPS in all eight.
#[test]
fn https_listing_with_its_own_certificate() {
    let test = "https_listing_with_its_own_certificate";
    let Some(browser) = chromium(test) else { return };
    let fx = Fixture::new();
    let pki = tempfile::tempdir().unwrap();
    let (cert, key, pin) = common::tls::self_signed(pki.path());
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let s = Spidey::start("event", &fx.root(), &["--tls-cert", cert, "--tls-key", key]);
    assert!(s.tls, "{test}: the server did not say https");
    let url = s.url("/list/");
    assert!(url.starts_with("https://"), "{url}");

    let refused = browse(&browser, "--dump-dom", &url, Trust::Roots);
    assert!(!refused.contains("plain.txt"), "{test}: an unpinned browser loaded the page:\n{refused}");

    let dom = browse(&browser, "--dump-dom", &url, Trust::Pinned(&pin));
    assert_listing_shown(test, &dom);
    screenshot(&browser, &url, Trust::Pinned(&pin), "SPIDEY_KEEP_HTTPS_SCREENSHOT");
}
