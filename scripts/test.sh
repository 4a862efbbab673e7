#!/usr/bin/env bash
# The README's test command: installs what the tests need on a bare Debian machine (only
# what is missing; needs root and Debian's package archive), then runs the whole suite.
#
#   bash scripts/test.sh [extra cargo test arguments]
#
# What the tests use, and why:
#   curl            an independent HTTP client (tests/serve.rs, tests/cgi.rs)
#   php-cgi         CGI through an interpreter (tests/cgi.rs)
#   python3, perl   CGI scripts in the languages people write them in
#   gcc             builds the example C handler (tests/handler.rs) and the C reference
#                   servers of bench/ref (tests/reference_servers.rs)
#   liburing-dev    <liburing.h> for bench/ref/uring.c, the io_uring reference server
#                   (tests/reference_servers.rs; without it that one case says it skipped)
#   nginx-light     the peer of the differential test (tests/differential_nginx.rs), and
#                   the real HTTP/2 server (its http_v2 module) spidey bench --h2 is counted
#                   against, h2c and TLS with ALPN h2 (tests/bench_h2.rs; skipped, saying so,
#                   without it)
#   nghttp2-client  h2load, the HTTP/2 load generator that checks Spidey's streams are
#                   multiplexed in every mode, h2c and TLS (tests/h2.rs)
#   httpwg-cli      (from crates.io, `cargo install httpwg-cli@0.2.5 --locked`, not Debian)
#                   the 107 RFC 9113 conformance cases (tests/h2.rs, required here:
#                   SPIDEY_REQUIRE_HTTPWG=1 below)
#   openssl         makes a --basic-auth hash as the README says (tests/features_access.rs)
#   (curl and python3 are also the independent TLS clients of tests/tls.rs)
#   coreutils, util-linux, procps   mkfifo, prlimit, ps
#   iproute2        network namespaces, veth pairs and a bridge (tests/netns.rs, as root)
#   iputils-ping    ping, one of the two clients that check the delay line (tests/delay_line.rs)
#   openssh-server, openssh-client   sshd and ssh: the lab across hosts over ssh (tests/lab_ssh.rs, as root)
#   (systemd's systemd-socket-activate, where the machine has it: the example units in
#   examples/systemd are run through it, tests/ops/activation.rs; skipped, saying so, without)
#   chromium        a real browser (headless): the listing and --compress as a browser sees
#                   them (tests/browser.rs); required here (SPIDEY_REQUIRE_CHROMIUM=1 below),
#                   so a missing browser fails that test instead of skipping it
#   python3-hpack   Python's HPACK (RFC 7541), the independent encoder and decoder our HPACK is
#                   checked against (crates/http/tests/hpack_python.rs, which runs
#                   /usr/bin/python3 and says it skipped when that cannot import hpack)
#   python3-h2      Python's HTTP/2 client (hyper-h2): a client speaking HTTP/2 by prior
#                   knowledge must read Spidey's refusal as HTTP/2 (tests/http_strict.rs);
#                   it brings python3-hyperframe, the frame layer our HTTP/2 frames are
#                   checked against (crates/http/tests/h2_frame_python.rs, skipped, saying
#                   so, when /usr/bin/python3 cannot import hyperframe)
#   python3-pip     to install HdrHistogram's Python implementation from PyPI, which decodes
#                   spidey bench's histograms (tests/bench_merge.rs); optional: the test says
#                   it skipped when the module cannot be had
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(curl php-cgi python3 python3-hpack python3-h2 python3-pip nghttp2-client perl gcc liburing-dev nginx-light openssl apache2-utils coreutils util-linux procps iproute2 iputils-ping openssh-server openssh-client chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "test: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "test: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Debian starts a service on install (nginx, sshd); the tests start their own. A
  # policy-rc.d that answers 101 ("action forbidden", invoke-rc.d(8)) keeps it from
  # starting at all, so nothing of the user's own is ever stopped. Any existing policy is
  # put back afterwards.
  policy=/usr/sbin/policy-rc.d
  saved=""
  if [ -e "$policy" ]; then saved=$(mktemp); cp -p "$policy" "$saved"; fi
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
  status=0
  apt-get install -y -qq --no-install-recommends "${missing[@]}" || status=$?
  if [ -n "$saved" ]; then mv "$saved" "$policy"; else rm -f "$policy"; fi
  [ "$status" -eq 0 ] || exit "$status"
fi

if ! python3 -c 'import hdrh.histogram' 2>/dev/null; then
  echo "test: installing HdrHistogram's Python implementation (pip install hdrhistogram)"
  python3 -m pip install --quiet hdrhistogram 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages hdrhistogram \
    || echo "test: could not install the Python hdrhistogram package; its test will say it skipped"
fi

if ! command -v httpwg >/dev/null && [ ! -x "$HOME/.cargo/bin/httpwg" ]; then
  echo "test: installing httpwg-cli 0.2.5 (cargo install httpwg-cli@0.2.5 --locked)"
  cargo install --quiet httpwg-cli@0.2.5 --locked
fi

# tests/browser.rs fails rather than skips when chromium is missing (it was installed above),
# and tests/h2.rs when httpwg-cli is.
export SPIDEY_REQUIRE_CHROMIUM=1
export SPIDEY_REQUIRE_HTTPWG=1
# Four tests at a time in each binary, not one per core: most of a test's time is spent
# waiting on a server's deadline (slow clients, idle timeouts), not computing. Tests that
# share a machine-wide resource take a lock of their own (the delay line, the browser).
# A value set by the caller wins.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
echo "test: cargo test --workspace"
cargo test --workspace "$@"

# The TLS pass: every test binary whose cases run through for_each_mode! (in its file or
# its directory of modules) runs again with SPIDEY_TEST_TLS=1, so each server starts with
# a test certificate made by rcgen and every harness client speaks TLS (tests/common/tls.rs).
# Left out: tls (TLS already) and ops, whose own harness (IPv6 addresses, inherited
# sockets, its plain clients) does not go through Spidey::spawn.
suites=()
for f in tests/*.rs; do
  n=$(basename "$f" .rs)
  case "$n" in tls | ops) continue ;; esac
  if grep -qs 'for_each_mode!(' "$f" "tests/$n"/*.rs; then suites+=(--test "$n"); fi
done
echo "test: over TLS: SPIDEY_TEST_TLS=1 cargo test ${suites[*]}"
start=$(date +%s)
SPIDEY_TEST_TLS=1 cargo test "${suites[@]}" "$@"
echo "test: the TLS pass took $(( $(date +%s) - start )) s"
