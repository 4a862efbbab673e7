//! How `spidey serve --help` and `spidey bench --help` are laid out: every flag under a
//! heading with a one-line summary for `-h` (its doc comment is the `--help` text), the
//! flags `-h` leaves to `--help`, and the examples both end with (tests/serve_help.rs runs
//! serve's and parses bench's).

use clap::{Arg, CommandFactory};

/// A flag's long name, its `-h` line, and whether `-h` shows it (the others are in
/// `--help` only).
type Flag = (&'static str, &'static str, bool);

/// Headings, each with its flags. clap orders the headings by their first flag in the
/// struct that declares them; "Options" is clap's own heading.
type Layout = &'static [(&'static str, &'static [Flag])];

/// `spidey serve`'s headings.
const SERVE: Layout = &[
    (
        "Connections",
        &[
            ("addr", "The address to listen on (repeatable) [default: 127.0.0.1]", true),
            ("port", "The port [default: 8080]; 0 picks a free one", true),
            ("mode", "The concurrency architecture", true),
            ("workers", "Workers of pool, prefork, event, uring, hybrid: N or MIN-MAX", true),
            ("max-conns", "The most connections open at once", true),
            ("http2", "Serve HTTP/2 too: ALPN h2 (TLS), prior knowledge (h2c)", true),
            ("pool-threads", "hybrid: the threads of its pool [default: 4 per core]", false),
            ("backlog", "The listen queue length", false),
        ],
    ),
    (
        "Serving",
        &[
            ("index", "A directory's index file, tried in order (repeatable)", true),
            ("fallback", "The file for GET/HEAD of paths naming nothing (SPA)", true),
            ("error-page", "A file for an error status, e.g. 404=/404.html", true),
            ("no-listing", "A directory without an index file is 404", true),
            ("show-hidden", "List and serve dotfiles", false),
            ("compress", "Compress text files and listings on the fly", true),
            ("precompressed", "Serve FILE.br, FILE.zst or FILE.gz beside FILE", false),
            ("header", "Add 'Name: value' to every response (repeatable)", true),
            ("security-headers", "Frame-Options, Referrer-Policy; HSTS over TLS", true),
            ("cache-control", "The Cache-Control value for static files", false),
        ],
    ),
    (
        "Logging",
        &[
            ("quiet", "No access log on stdout", true),
            ("access-log", "Append the access log to FILE; SIGHUP reopens it", true),
            ("log-format", "Access-log lines: combined or json", false),
            ("metrics", "Serve Prometheus counters at PATH, e.g. /-/metrics", true),
            ("health", "Answer PATH with 200 ok (503 once stopping), e.g. /-/health", false),
        ],
    ),
    (
        "Limits and timeouts",
        &[
            ("max-request-line", "The longest request line, in bytes", false),
            ("max-head", "The largest request head, in bytes", false),
            ("max-headers", "The most header fields in a request", false),
            ("max-body", "The largest request body, in bytes", true),
            ("max-requests", "The most requests on one connection", false),
            ("head-timeout", "The time a client has to send a request head", false),
            ("idle-timeout", "How long a kept-alive connection may idle", true),
            ("send-timeout", "How long one write may wait for the client", false),
            ("notsent-lowat", "TCP_NOTSENT_LOWAT for every connection", false),
            ("grace", "How long responses may run after SIGTERM", false),
        ],
    ),
    (
        "CGI and handlers",
        &[
            ("cgi", "Run CGI scripts (cgi-bin/, *.cgi); off by default", true),
            ("cgi-interpreter", "Run *.EXT through PROGRAM (implies --cgi)", true),
            ("max-cgi", "With --cgi: the most scripts at once [default: 64]", false),
            ("cgi-timeout", "With --cgi: a script's time limit [default: 30s]", false),
            ("body-timeout", "With --cgi: the time a request body may take", false),
            ("body-min-rate", "With --cgi: the body rate that extends it", false),
            ("handler", "Serve /PREFIX from an in-process handler library", true),
        ],
    ),
    (
        "Experiments",
        &[
            ("delay", "Make every request wait this long", false),
            ("cpu-work", "Burn this much CPU per request", false),
            ("fork-after-parse", "fork: the parent parses each first request (seed 000)", false),
            ("copy-loop", "Send file bodies by read and send(2) in BYTES (seed 004)", false),
        ],
    ),
    (
        "TLS",
        &[
            ("tls-cert", "Serve HTTPS with this certificate chain (PEM)", true),
            ("tls-key", "The private key of --tls-cert (PEM)", true),
            ("redirect-http", "Also redirect plain HTTP on PORT to HTTPS", false),
        ],
    ),
    (
        "Access",
        &[
            ("cors", "Allow cross-origin reads: '*' or a list of origins", true),
            ("basic-auth", "Require HTTP Basic auth: USER:HASH (repeatable)", true),
            ("basic-auth-file", "Require HTTP Basic auth: an htpasswd file", true),
            ("user", "Run as USER once the ports are bound (as root)", true),
        ],
    ),
    ("Options", &[("config", "Read flags from a TOML file; flags given here win", true)]),
];

/// `spidey bench`'s headings.
const BENCH: Layout = &[
    (
        "Load",
        &[
            ("connections", "Connections open at once, shared by the threads", true),
            ("requests", "Send exactly this many requests, then stop", true),
            ("duration", "Run for this long (after the warmup) [default: 10s]", true),
            ("no-keepalive", "A new connection for every request", true),
            ("h2", "Speak HTTP/2: ALPN h2 (https), prior knowledge (http)", true),
            ("streams", "With --h2: streams at once per connection [default: 1]", true),
            ("threads", "Threads, each with its own event loop [default: cores]", true),
            ("warmup", "Load this long before measuring", true),
            ("timeout", "A request unanswered this long is an error", true),
            ("start-at", "Begin at this Unix time in ms (several hosts)", false),
        ],
    ),
    (
        "Open loop",
        &[
            ("rate", "Send R requests per second on a fixed schedule", true),
            ("open-model", "With --rate: pool (wrk2) or per-request", true),
            ("late-after", "With --rate: sent this late counts as late", false),
        ],
    ),
    (
        "TLS",
        &[
            ("insecure", "https: accept any server certificate", true),
            ("cacert", "https: trust the certificates in this PEM file", true),
            ("no-resume", "https: a full handshake on every connection", true),
            ("tls-cipher", "https: offer only this cipher suite (repeatable)", false),
        ],
    ),
    (
        "Requests",
        &[
            ("header", "An extra request header (repeatable)", true),
            ("method", "The request method", true),
            ("body", "Send this file as the request body", true),
        ],
    ),
    (
        "Results",
        &[
            ("json", "Write the full results as JSON to FILE (- for stdout)", true),
            ("fail-on", "Exit 1 if this holds, e.g. 'p99>50ms' (repeatable)", true),
        ],
    ),
];

/// Each laid-out command and its headings.
const COMMANDS: &[(&str, Layout)] = &[("serve", SERVE), ("bench", BENCH)];

/// The examples `serve -h` ends with; `--help` shows [`LONG_EXAMPLES`].
const SHORT_EXAMPLES: &str = "\
Examples:
  spidey serve                                # . on http://127.0.0.1:8080
  spidey serve report.pdf                     # one file, at /
  spidey serve dist --fallback /index.html    # a single-page application
  spidey serve --config spidey.toml           # the flags a file names";

/// The examples `serve --help` ends with.
const LONG_EXAMPLES: &str = "\
Examples:
  spidey serve                                # . on http://127.0.0.1:8080
  spidey serve site --addr 0.0.0.0 --port 8000   # every IPv4 address, port 8000
  spidey serve report.pdf                     # one file, at / and at /report.pdf
  spidey serve dist --fallback /index.html --error-page 404=/404.html
  spidey serve site --no-listing --basic-auth-file users.htpasswd
  spidey serve site --tls-cert cert.pem --tls-key key.pem --redirect-http 8080 --security-headers
  spidey serve site --cgi-interpreter .php=/usr/bin/php-cgi --compress
  spidey serve --config spidey.toml --port 9000  # the file's flags, but this --port

A --config file names flags by their long names, and ROOT as root:
  root = \"site\"
  port = 8443
  tls-cert = \"cert.pem\"
  tls-key = \"key.pem\"
  security-headers = true
  header = [\"X-Robots-Tag: noindex\"]";

/// The examples `bench -h` and `--help` end with.
const BENCH_EXAMPLES: &str = "\
Examples:
  spidey bench http://127.0.0.1:8080/ -c 50 -d 10s            # closed loop, 50 connections
  spidey bench http://127.0.0.1:8080/ --rate 2000 -d 30s      # open loop, 2000 requests/s
  spidey bench https://127.0.0.1:8443/ --cacert cert.pem --fail-on 'p99>50ms'
  spidey bench http://127.0.0.1:8080/ --h2 -c 4 --streams 32  # HTTP/2, 128 requests in flight
  spidey bench http://127.0.0.1:8080/ -n 1000 --json run.json # results for bench merge";

/// The command line with `serve`'s and `bench`'s help laid out.
pub fn command() -> clap::Command {
    let mut cli = crate::cli::Cli::command()
        .mut_subcommand("serve", |serve| serve.after_help(SHORT_EXAMPLES).after_long_help(LONG_EXAMPLES))
        .mut_subcommand("bench", |bench| {
            bench.after_help(BENCH_EXAMPLES).mut_subcommand("merge", |merge| {
                let long = merge.get_long_about().or(merge.get_about()).cloned();
                let merge = merge.about("Combine runs' JSON results into the result of one run");
                match long {
                    Some(long) => merge.long_about(long),
                    None => merge,
                }
            })
        });
    for (name, layout) in COMMANDS {
        cli = cli.mut_subcommand(name, |mut command| {
            for (heading, flags) in *layout {
                for &(long, short, in_short_help) in *flags {
                    let id = command.get_arguments().find(|a| a.get_long() == Some(long)).map(|a| a.get_id().clone());
                    let Some(id) = id else { continue }; // a test checks that every name is a flag
                    command = command.mut_arg(id, |arg| lay_out(arg, heading, short, in_short_help));
                }
            }
            command
        });
    }
    cli
}

fn lay_out(arg: Arg, heading: &'static str, short: &'static str, in_short_help: bool) -> Arg {
    let long = arg.get_long_help().or(arg.get_help()).cloned();
    let arg = arg.help_heading((heading != "Options").then_some(heading)).help(short).hide_short_help(!in_short_help);
    match long {
        Some(long) => arg.long_help(long),
        None => arg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(name: &str) -> clap::Command {
        let mut cli = command();
        cli.build();
        cli.find_subcommand(name).unwrap().clone()
    }

    #[test]
    fn every_flag_has_one_place() {
        for (name, layout) in COMMANDS {
            let mut named: Vec<&str> = layout.iter().flat_map(|(_, flags)| flags.iter().map(|f| f.0)).collect();
            let command = sub(name);
            let mut flags: Vec<&str> =
                command.get_arguments().filter_map(Arg::get_long).filter(|l| *l != "help").collect();
            named.sort_unstable();
            flags.sort_unstable();
            assert_eq!(named, flags, "each flag of `spidey {name}` has one entry in src/help.rs");
        }
    }

    #[test]
    fn short_lines_are_short_and_long_help_is_the_doc_comment() {
        for (name, layout) in COMMANDS {
            for (heading, flags) in *layout {
                for (long, short, _) in *flags {
                    assert!(short.len() <= 64 && !short.contains('\n'), "{name} {heading} --{long}: {short:?}");
                }
            }
        }
        let port = sub("serve").get_arguments().find(|a| a.get_long() == Some("port")).cloned().unwrap();
        assert!(port.get_long_help().unwrap().to_string().contains("the startup line names it"));
        assert_eq!(port.get_help_heading(), Some("Connections"));
    }

    #[test]
    fn bench_examples_parse() {
        let examples = BENCH_EXAMPLES.lines().filter_map(|l| l.trim().strip_prefix("spidey "));
        let mut count = 0;
        for example in examples {
            // Quotes are the shell's: none of these words has a space inside them.
            let words = example.split(" # ").next().unwrap().split_whitespace().map(|w| w.trim_matches('\''));
            let argv: Vec<&str> = std::iter::once("spidey").chain(words).collect();
            let parsed = command().try_get_matches_from(&argv);
            assert!(parsed.is_ok(), "{argv:?}: {}", parsed.unwrap_err());
            count += 1;
        }
        assert_eq!(count, 5);
    }
}
