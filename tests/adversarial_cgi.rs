//! Adversarial CGI cases, written against the documented CGI behaviour: executable files in
//! ROOT/cgi-bin/ and `*.cgi` files run as CGI, `--cgi-interpreter .php=/usr/bin/php-cgi` maps
//! an extension to an interpreter, `--cgi-timeout` bounds a script (504 beyond), malformed or
//! oversized script output is 502.
//!
//! Every case runs against every mode.

mod common;

use common::{head_field, status_of, Fixture, Spidey};
use spidey_http::chunked::ChunkedDecoder;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const MARKER_SECRET: &str = "SPIDEY_ADVERSARIAL_SECRET";

/// Writes an executable script.
fn script(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The CGI fixture: scripts that print their environment and descriptors, misbehave, or hang.
fn cgi_fixture() -> Fixture {
    let fx = Fixture::new();
    let root = fx.root();
    script(&root, "cgi-bin/env", "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nenv\n");
    script(&root, "env.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nenv\n");
    script(
        &root,
        "cgi-bin/fds",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nls -l /proc/$$/fd\necho end\n",
    );
    script(&root, "cgi-bin/garbage", "#!/bin/sh\necho 'this is not a CGI header block'\n");
    script(&root, "cgi-bin/badstatus", "#!/bin/sh\nprintf 'Status: abc\\r\\n\\r\\nx'\n");
    script(&root, "cgi-bin/nothing", "#!/bin/sh\nexit 0\n");
    script(&root, "cgi-bin/crash", "#!/bin/sh\nkill -SEGV $$\n");
    script(
        &root,
        "cgi-bin/hugehead",
        "#!/bin/sh\nprintf 'X-Big: '\nhead -c 200000 /dev/zero | tr '\\0' a\nprintf '\\r\\n\\r\\n'\n",
    );
    script(&root, "cgi-bin/hang", "#!/bin/sh\nsleep 60\n");
    script(&root, "cgi-bin/late", "#!/bin/sh\nprintf 'X-'\nsleep 0.2\nprintf 'not a header line\\n'\n");
    script(&root, "cgi-bin/noread", "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok'\n");
    script(&root, "cgi-bin/dies", "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\npartial'\nexit 3\n");
    script(&root, "cgi-bin/killed", "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\npartial'\nkill -KILL $$\n");
    script(&root, "cgi-bin/lives", "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\npartial'\nexit 0\n");
    script(
        &root,
        "cgi-bin/noisy",
        "#!/bin/sh\nprintf '127.0.0.1 - - [01/Jan/2000:00:00:00 +0000] \"GET /forged HTTP/1.1\" 200 0 \"-\" \"-\"\\nspidey: forged \\033[31mred\\n' >&2\nprintf 'Content-Type: text/plain\\r\\n\\r\\nok'\n",
    );
    std::fs::write(root.join("info.php"), "<?php echo 'PHP-RAN'; /* PHP-SOURCE-MARKER */ ?>\n").unwrap();
    fx
}

/// Starts spidey with CGI enabled and a secret in its environment.
fn start_cgi(mode: &str, root: &Path, args: &[&str]) -> Spidey {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spidey"));
    command
        .arg("serve")
        .arg(root)
        .args(["--port", "0", "--mode", mode, "--quiet", "--cgi", "--cgi-interpreter", ".php=/usr/bin/php-cgi"])
        .args(args)
        .env(MARKER_SECRET, "leaked");
    Spidey::spawn(command, mode)
}

/// Sends `request` (which asks to close) and reads the response to the end: its status and
/// its body, de-chunked when the script's output was streamed.
fn exchange(server: &Spidey, request: &[u8]) -> (u16, String) {
    let mut s = server.connect();
    s.write_all(request).unwrap();
    let mut raw = Vec::new();
    if let Err(e) = s.read_to_end(&mut raw) {
        assert!(e.kind() == std::io::ErrorKind::ConnectionReset && !raw.is_empty(), "{e}");
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a whole head") + 4;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let body = if head_field(&head, "transfer-encoding") == Some("chunked") {
        let mut out = Vec::new();
        ChunkedDecoder::new().decode(&raw[split..], &mut out).expect("valid chunked body");
        out
    } else {
        raw[split..].to_vec()
    };
    (status_of(&head), String::from_utf8_lossy(&body).into_owned())
}

fn get(server: &Spidey, target: &str, fields: &str) -> (u16, String) {
    exchange(server, format!("GET {target} HTTP/1.1\r\nHost: x\r\n{fields}Connection: close\r\n\r\n").as_bytes())
}

/// CVE-2021-41773/42013: dot segments in a CGI path never reach an interpreter outside ROOT.
fn traversal_into_an_interpreter(mode: &str) {
    let fx = cgi_fixture();
    let server = start_cgi(mode, &fx.root(), &[]);
    let body = "echo Content-Type: text/plain; echo; echo PWNED; id";
    for target in [
        "/cgi-bin/.%2e/.%2e/.%2e/.%2e/bin/sh",
        "/cgi-bin/%2e%2e/%2e%2e/%2e%2e/%2e%2e/bin/sh",
        "/cgi-bin/.%%32%65/.%%32%65/.%%32%65/bin/sh",
        "/cgi-bin/../../../../bin/sh",
        "/cgi-bin/..%2f..%2f..%2f..%2fbin/sh",
        "/cgi-bin/%2e%2e%5c%2e%2e%5cbin/sh",
    ] {
        let req = format!(
            "POST {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (status, text) = exchange(&server, req.as_bytes());
        assert!([400, 403, 404, 405].contains(&status), "{target}: {status}");
        assert!(!text.contains("PWNED") && !text.contains("uid="), "{target} ran a shell: {text}");
    }
}

/// httpoxy (CVE-2016-5385): a `Proxy:` field never becomes HTTP_PROXY; fields with an
/// underscore never pose as their dashed twin; the server's own environment is not passed on.
fn environment_is_clean(mode: &str) {
    let fx = cgi_fixture();
    let server = start_cgi(mode, &fx.root(), &[]);
    for target in ["/cgi-bin/env", "/env.cgi"] {
        let fields =
            "Proxy: http://evil.example:1\r\nX_Evil: spoof\r\nX-Good: yes\r\nProxy-Authorization: Basic c2VjcmV0\r\n";
        let (status, env) = get(&server, target, fields);
        assert_eq!(status, 200, "{target}: {env}");
        assert!(env.contains("HTTP_X_GOOD=yes"), "{target}: the env script did not run as CGI: {env}");
        assert!(!env.contains("HTTP_PROXY="), "{target}: httpoxy: {env}");
        assert!(!env.contains("HTTP_X_EVIL="), "{target}: an underscore field became a variable: {env}");
        assert!(!env.contains("c2VjcmV0"), "{target}: Proxy-Authorization reached the script: {env}");
        assert!(!env.contains(MARKER_SECRET), "{target}: the server's environment leaked: {env}");
    }
}

/// `--cgi-interpreter` runs the script named by the request, never the request body: a GET
/// runs it (python3, perl, sh), and a POST whose body is a program in that language is only
/// data (the script echoes the body's length; the marker file the body would create does
/// not appear). Before the fix the interpreter got no argument and read its program from
/// stdin: GET was 502 and the POSTed program ran.
fn interpreter_runs_the_script_not_the_body(mode: &str) {
    let fx = cgi_fixture();
    let root = fx.root();
    let marker = fx.outside.path().join("body-ran");
    let m = marker.display();
    let write = |name: &str, text: &str| std::fs::write(root.join(name), text).unwrap();
    write(
        "app.py",
        "import os, sys\nn = len(sys.stdin.buffer.read())\nprint('Content-Type: text/plain\\r\\n\\r\\nPY-SCRIPT ' + str(n), end='')\n",
    );
    write(
        "app.pl",
        "local $/; my $b = <STDIN> // '';\nprint \"Content-Type: text/plain\\r\\n\\r\\nPL-SCRIPT \" . length($b);\n",
    );
    write("app.sh", "n=$(wc -c)\nprintf 'Content-Type: text/plain\\r\\n\\r\\nSH-SCRIPT %s' $n\n");
    let server = start_cgi(
        mode,
        &root,
        &[
            "--cgi-interpreter",
            ".py=/usr/bin/python3",
            "--cgi-interpreter",
            ".pl=/usr/bin/perl",
            "--cgi-interpreter",
            ".sh=/bin/sh",
        ],
    );
    let cases = [
        (
            "/app.py",
            "PY-SCRIPT",
            format!("open('{m}', 'w').write('x')\nprint('Content-Type: text/plain\\r\\n\\r\\nBODY-RAN')\n"),
        ),
        (
            "/app.pl",
            "PL-SCRIPT",
            format!("open(my $f, '>', '{m}'); print \"Content-Type: text/plain\\r\\n\\r\\nBODY-RAN\";\n"),
        ),
        ("/app.sh", "SH-SCRIPT", format!("touch '{m}'\nprintf 'Content-Type: text/plain\\r\\n\\r\\nBODY-RAN'\n")),
    ];
    for (target, name, program) in cases {
        let (status, text) = get(&server, &format!("{target}?-c+print(1)"), "");
        assert_eq!((status, text.as_str()), (200, format!("{name} 0").as_str()), "GET {target}");
        let req = format!(
            "POST {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{program}",
            program.len()
        );
        let (status, text) = exchange(&server, req.as_bytes());
        assert_eq!((status, text.clone()), (200, format!("{name} {}", program.len())), "POST {target}");
        assert!(!marker.exists(), "POST {target}: the request body ran as a program");
    }
}

/// The script that runs is the file that was checked beneath ROOT: swapped for a symlink to
/// a script outside ROOT while the request body is held back (after the check, before the
/// exec), it still runs as it was, and the outside script never runs. Before the fix the
/// script was exec'd by name again, and the outside script ran. Also through an interpreter.
fn script_swapped_after_the_check_is_not_run(mode: &str) {
    let fx = cgi_fixture();
    let (root, outside) = (fx.root(), fx.outside.path().to_path_buf());
    let marker = outside.join("outside-ran");
    let evil =
        format!("#!/bin/sh\ntouch '{}'\nprintf 'Content-Type: text/plain\\r\\n\\r\\nOUTSIDE'\n", marker.display());
    script(&outside, "evil.cgi", &evil);
    script(&outside, "evil.sh", &evil);
    let good = "#!/bin/sh\ncat >/dev/null\nprintf 'Content-Type: text/plain\\r\\n\\r\\nINSIDE'\n";
    let server = start_cgi(mode, &root, &["--cgi-interpreter", ".sh=/bin/sh"]);
    for (name, target) in [("swap.cgi", "evil.cgi"), ("swap.sh", "evil.sh")] {
        script(&root, name, good);
        let mut s = server.connect();
        let head = format!("POST /{name} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 4\r\n\r\n");
        s.write_all(head.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(400)); // the server has resolved and checked it
        let tmp = root.join("swap.tmp");
        std::os::unix::fs::symlink(outside.join(target), &tmp).unwrap();
        std::fs::rename(&tmp, root.join(name)).unwrap();
        s.write_all(b"data").unwrap();
        let text = common::read_to_close(&mut s);
        assert!(text.contains("INSIDE") && !text.contains("OUTSIDE"), "{name}: {text}");
        assert!(!marker.exists(), "{name}: the script outside ROOT ran");
    }
}

/// php-cgi argv injection (CVE-2012-1823): a query without `=` never becomes arguments.
fn php_query_is_never_argv(mode: &str) {
    let fx = cgi_fixture();
    let server = start_cgi(mode, &fx.root(), &[]);
    let (status, text) = get(&server, "/info.php", "");
    assert_eq!((status, text.contains("PHP-RAN")), (200, true), "php did not run: {text}");
    for query in ["?-s", "?-s+%3d", "?-d+allow_url_include%3d1+-d+auto_prepend_file%3dphp://input", "?%2ds"] {
        let (_, text) = get(&server, &format!("/info.php{query}"), "");
        assert!(!text.contains("PHP-SOURCE-MARKER") && !text.contains("&lt;?php"), "{query} showed the source: {text}");
    }
}

/// A script sees no descriptor of the server's beyond stdin, stdout and stderr.
fn no_descriptor_leaks_into_scripts(mode: &str) {
    let fx = cgi_fixture();
    let server = start_cgi(mode, &fx.root(), &[]);
    // Keep another connection open so a leaked client socket would show.
    let _other = server.connect();
    let (status, text) = get(&server, "/cgi-bin/fds", "");
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("end"), "{text}");
    // `ls -l` lines read `... N -> TARGET`; beyond 0-2, only the shell's own script may be open.
    let leaked: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once(" -> "))
        .filter(|(left, _)| left.rsplit(' ').next().and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n > 2))
        .filter(|(_, target)| !target.ends_with("cgi-bin/fds"))
        .map(|(_, target)| target)
        .collect();
    assert!(leaked.is_empty(), "leaked descriptors: {leaked:?}\n{text}");
}

/// Output that is not a CGI response is 502; so is one whose head is too large.
fn malformed_script_output_is_502(mode: &str) {
    let fx = cgi_fixture();
    let server = start_cgi(mode, &fx.root(), &[]);
    for target in ["/cgi-bin/garbage", "/cgi-bin/badstatus", "/cgi-bin/nothing", "/cgi-bin/crash", "/cgi-bin/hugehead"]
    {
        let (status, _) = get(&server, target, "");
        assert_eq!(status, 502, "{target}");
    }
    assert_eq!(get(&server, "/hello.txt", "").0, 200, "the server stopped serving");
}

/// Regression: output and end-of-file arriving in one wake-up of an edge-triggered loop
/// were read only as far as the output, and the EOF was never heard of (the request hung
/// until the CGI timeout). The late script's second write and its exit come back to back.
fn output_and_eof_in_one_wakeup_are_both_seen(mode: &str) {
    let fx = cgi_fixture();
    let server = start_cgi(mode, &fx.root(), &[]);
    let replies: Vec<u16> = (0..8).map(|_| get(&server, "/cgi-bin/late", "").0).collect();
    assert!(replies.iter().all(|&s| s == 502), "{replies:?}");
}

/// A script that hangs is killed after --cgi-timeout and answered 504.
fn hanging_script_is_504(mode: &str) {
    let fx = cgi_fixture();
    let server = start_cgi(mode, &fx.root(), &["--cgi-timeout", "1s"]);
    let start = Instant::now();
    let (status, _) = get(&server, "/cgi-bin/hang", "");
    assert_eq!(status, 504);
    assert!(start.elapsed() < Duration::from_secs(4), "took {:?}", start.elapsed());
}

/// A script that never reads its stdin, sent a large body, is still answered.
fn script_that_never_reads_stdin(mode: &str) {
    let fx = cgi_fixture();
    let server = start_cgi(mode, &fx.root(), &["--cgi-timeout", "5s"]);
    let body = vec![b'x'; 900 * 1024];
    let mut req = format!(
        "POST /cgi-bin/noread HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    let (status, text) = exchange(&server, &req);
    assert_eq!((status, text.as_str()), (200, "ok"));
    assert_eq!(get(&server, "/hello.txt", "").0, 200);
}

/// After many scripts, no zombie is left among the server's children.
fn no_zombies(mode: &str) {
    let fx = cgi_fixture();
    let server = start_cgi(mode, &fx.root(), &[]);
    for _ in 0..20 {
        assert_eq!(get(&server, "/cgi-bin/noread", "").0, 200);
    }
    std::thread::sleep(Duration::from_millis(500));
    let pid = server.child.id().to_string();
    let zombies: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
            let f: Vec<&str> = rest.split(' ').collect();
            f.first() == Some(&"Z") && f.get(1) == Some(&pid.as_str())
        })
        .collect();
    assert!(zombies.is_empty(), "zombies: {zombies:?}");
}

/// Reads from `s` until the server closes it or `limit` passes: what came, and whether
/// it closed.
fn read_until_close(s: &mut common::Conn, limit: Duration) -> (Vec<u8>, bool) {
    let end = Instant::now() + limit;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let Some(left) = end.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else {
            return (out, false);
        };
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (out, true),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return (out, false),
        }
    }
}

/// A script that fails after its head (exits non-zero, or is killed) gets no last chunk:
/// the body ends with the connection, so the client knows it was cut short (as nginx ends
/// a response whose upstream failed). Before, a clean `0\r\n\r\n` made it look whole and
/// the connection stayed open. One that exits 0 still ends with the last chunk.
fn script_failing_after_its_head_gets_no_last_chunk(mode: &str) {
    let fx = cgi_fixture();
    let server = start_cgi(mode, &fx.root(), &["--cgi-timeout", "5s"]);
    // (script, whether its body is whole)
    for (target, whole) in [("/cgi-bin/dies", false), ("/cgi-bin/killed", false), ("/cgi-bin/lives", true)] {
        let mut s = server.connect();
        s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).unwrap();
        let wait = if whole { Duration::from_millis(500) } else { Duration::from_secs(4) };
        let (raw, closed) = read_until_close(&mut s, wait);
        let text = String::from_utf8_lossy(&raw);
        assert_eq!(status_of(&text), 200, "{target}: {text}");
        assert_eq!(head_field(&text, "transfer-encoding"), Some("chunked"), "{target}: {text}");
        assert!(text.contains("partial"), "{target}: {text}");
        assert_eq!(text.ends_with("\r\n0\r\n\r\n"), whole, "{target}: the last chunk: {text:?}");
        assert_eq!(closed, !whole, "{target}: closed: {text:?}");
    }
    assert_eq!(get(&server, "/hello.txt", "").0, 200);
}

/// A script's stderr reaches the server's stderr a line at a time, each prefixed with the
/// script's name and pid, control bytes escaped: a script cannot write a line that passes
/// for an access-log line or one of the server's own. Before, stderr was inherited raw.
fn script_stderr_is_prefixed_and_escaped(mode: &str) {
    let fx = cgi_fixture();
    let mut command = Command::new(env!("CARGO_BIN_EXE_spidey"));
    command
        .arg("serve")
        .arg(fx.root())
        .args(["--port", "0", "--mode", mode, "--quiet", "--cgi"])
        .stderr(std::process::Stdio::piped());
    let mut server = Spidey::spawn(command, mode);
    let stderr = std::io::BufReader::new(server.child.stderr.take().unwrap());
    let (lines, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::split(stderr, b'\n').map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    // A kept-alive connection: a `fork` child lives on while the lines are read.
    let mut s = server.connect();
    s.write_all(b"GET /cgi-bin/noisy HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    let end = Instant::now() + Duration::from_secs(5);
    let mut forged: Vec<Vec<u8>> = Vec::new();
    while forged.len() < 2 {
        let Ok(line) = heard.recv_timeout(end.saturating_duration_since(Instant::now())) else { break };
        if line.windows(6).any(|w| w == b"forged") {
            forged.push(line);
        }
    }
    drop(s);
    let shown: Vec<String> = forged.iter().map(|l| String::from_utf8_lossy(l).into_owned()).collect();
    assert_eq!(shown.len(), 2, "the script's two lines: {shown:?}");
    for line in &forged {
        let text = String::from_utf8_lossy(line);
        assert!(text.starts_with("spidey: cgi /cgi-bin/noisy["), "not prefixed: {text:?}");
        assert!(!line.iter().any(|&b| b < 0x20 || b == 0x7f), "a control byte reached stderr: {text:?}");
    }
    assert!(shown[1].ends_with("]: spidey: forged \\x1b[31mred"), "escaped: {:?}", shown[1]);
}

crate::for_each_mode!(
    script_failing_after_its_head_gets_no_last_chunk,
    script_stderr_is_prefixed_and_escaped,
    output_and_eof_in_one_wakeup_are_both_seen,
    traversal_into_an_interpreter,
    environment_is_clean,
    php_query_is_never_argv,
    interpreter_runs_the_script_not_the_body,
    script_swapped_after_the_check_is_not_run,
    no_descriptor_leaks_into_scripts,
    malformed_script_output_is_502,
    hanging_script_is_504,
    script_that_never_reads_stdin,
    no_zombies,
);
