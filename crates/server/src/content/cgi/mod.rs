//! CGI/1.1 (RFC 3875): which files are scripts, and the command that runs one.
//!
//! CGI is off unless `--cgi` (or a `--cgi-interpreter`) turns it on: then every file is
//! static, scripts included (served as bytes, as nginx and Caddy do). With CGI on, a file
//! is a script when it is executable and lies under `cgi-bin/` or ends in `.cgi`, or its
//! extension has a `--cgi-interpreter`; a non-executable file under `cgi-bin/` or named
//! `*.cgi` is 403. Scripts are found through
//! the same beneath-ROOT resolution as static files ([`super::resolve`]), so a `.%2e`
//! climb into `/bin/sh` is refused before any file is looked at (Apache CVE-2021-41773).
//! A path that does not resolve is retried one segment shorter at a time: the first
//! script on the way is run, and the rest of the path becomes `PATH_INFO`.
//!
//! The child runs the file that was checked, not its name again: the descriptor the
//! beneath-ROOT resolution opened becomes the child's fd 3 ([`SCRIPT_FD`], open across
//! exec) and the child execs `/proc/self/fd/3`, a magic link to that very file (what
//! glibc's fexecve does), so a script swapped for a symlink after the check is never run.
//! A `#!` script's interpreter is given that path by the kernel; a `--cgi-interpreter` is
//! given it as its one argument (`python3 /proc/self/fd/3`), and opening it reopens the
//! checked file. The interpreter never reads its program from stdin, which carries the
//! request body, and nothing from the request ever reaches argv (a query string on argv is
//! php-cgi CVE-2012-1823 / CVE-2024-4577). `SCRIPT_FILENAME` keeps the real path. php-cgi
//! ignores its argument in CGI mode and opens `SCRIPT_FILENAME` by name: for it alone the
//! file is opened again by path (a known limit).
//!
//! The child is executed directly (never through a shell), with an environment built
//! from scratch ([`env`]), its own directory as working directory, only fds 0,
//! 1 and 2 and the script itself, read-only, at 3 (every other Spidey fd is close-on-exec),
//! and its own process group so that killing it also kills whatever it started. Running
//! it is [`run::CgiRun`]'s job.

mod env;
mod intake;
mod options;
pub mod process;
pub mod run;
mod stderr;

use crate::content::resolve::{decode_path, ResolveError, Resolved, Root};
use crate::content::{Response, StatusCode};
pub(crate) use env::Script;
pub use options::{parse_interpreter, CgiOptions};
use run::CgiRun;
use spidey_http::Request;
use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// How a resolved regular file is to be answered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Static,
    /// Run it, through this interpreter if any.
    Script(Option<PathBuf>),
    Forbidden,
}

/// Whether a request for `relative` (decoded) may run a script, by its name alone: under
/// `cgi-bin/`, or a segment named `*.cgi` or with an interpreter's extension (a script may
/// take the rest of the path as `PATH_INFO`). False positives only cost `hybrid` a trip
/// through its pool.
pub(crate) fn may_run(opts: &CgiOptions, relative: &[u8]) -> bool {
    if !opts.enabled {
        return false;
    }
    relative.starts_with(b"cgi-bin/")
        || relative.split(|&b| b == b'/').any(|segment| {
            let ext = segment.iter().rposition(|&b| b == b'.').map(|i| &segment[i + 1..]);
            ext.is_some_and(|e| e == b"cgi" || opts.interpreters.iter().any(|(x, _)| x.as_bytes() == e))
        })
}

/// Decides what a regular file at `relative` (decoded, relative to ROOT) is.
pub(crate) fn kind(opts: &CgiOptions, relative: &[u8], meta: &Metadata) -> Kind {
    let name = relative.rsplit(|&b| b == b'/').next().unwrap_or(relative);
    let in_cgi_bin = relative.starts_with(b"cgi-bin/");
    let dot_cgi = name.ends_with(b".cgi");
    let ext = name.iter().rposition(|&b| b == b'.').map(|i| &name[i + 1..]);
    let interpreter = ext.and_then(|e| opts.interpreters.iter().find(|(x, _)| x.as_bytes() == e)).map(|(_, p)| p);
    let executable = meta.permissions().mode() & 0o111 != 0;
    if !opts.enabled {
        return Kind::Static;
    }
    match interpreter {
        Some(program) => Kind::Script(Some(program.clone())),
        None if in_cgi_bin || dot_cgi => {
            if executable {
                Kind::Script(None)
            } else {
                Kind::Forbidden
            }
        }
        None => Kind::Static,
    }
}

/// Looks for a script on the way to a path that did not resolve: `/cgi-bin/x.sh/a/b` runs
/// `x.sh` with `PATH_INFO=/a/b`. `None` when there is none (the original error stands).
pub(crate) fn find_with_path_info(root: &Root, opts: &CgiOptions, raw_path: &str) -> Option<Result<Script, Response>> {
    if !opts.enabled {
        return None;
    }
    let segments: Vec<&str> = raw_path.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
    for k in 1..segments.len() {
        let prefix = format!("/{}", segments[..k].join("/"));
        match root.resolve(&prefix) {
            Ok(Resolved::Dir(_)) => continue,
            Ok(Resolved::File(file, meta)) => {
                let rest = format!("/{}", segments[k..].join("/"));
                return script(opts, &prefix, &rest, &file, &meta).map(|r| r.map_err(|e| e.response()));
            }
            Err(_) => return None,
        }
    }
    None
}

/// The script at `raw_script` (already opened), or `None` if the file is not one (never
/// without `--cgi`, decided before the path is decoded a second time).
pub(crate) fn script(
    opts: &CgiOptions,
    raw_script: &str,
    raw_rest: &str,
    file: &File,
    meta: &Metadata,
) -> Option<Result<Script, ResolveError>> {
    if !opts.enabled {
        return None;
    }
    let relative = decode_path(raw_script).ok()?;
    let path_info = match raw_rest {
        "" | "/" => String::new(),
        rest => match decode_path(rest) {
            Ok(p) => format!("/{}", String::from_utf8_lossy(&p)),
            Err(e) => return Some(Err(e)),
        },
    };
    let script_name =
        format!("/{}", raw_script.split('/').filter(|s| !s.is_empty() && *s != ".").collect::<Vec<_>>().join("/"));
    decide(opts, &relative, script_name, path_info, file, meta)
}

/// The script a page names (an `--index` name, the `--fallback`, an `--error-page`), by
/// its decoded path `relative`, or `None` if the file is not one: the same decision as for
/// a request's own path, so a page is never served as its source when its own address
/// would run it. Its `SCRIPT_NAME` is the page's path (`/index.php`), as nginx's
/// `fastcgi_index` and `try_files ... /index.php` give it; the request keeps its own URI.
pub(crate) fn page_script(
    opts: &CgiOptions,
    relative: &[u8],
    file: &File,
    meta: &Metadata,
) -> Option<Result<Script, ResolveError>> {
    if !opts.enabled {
        return None;
    }
    let script_name = format!("/{}", String::from_utf8_lossy(relative));
    decide(opts, relative, script_name, String::new(), file, meta)
}

/// The script-or-file decision for the opened `file` at `relative` (decoded).
fn decide(
    opts: &CgiOptions,
    relative: &[u8],
    script_name: String,
    path_info: String,
    file: &File,
    meta: &Metadata,
) -> Option<Result<Script, ResolveError>> {
    let interpreter = match kind(opts, relative, meta) {
        Kind::Script(interpreter) => interpreter,
        Kind::Forbidden => return Some(Err(ResolveError::Forbidden)),
        Kind::Static => return None,
    };
    let Ok(filename) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) else {
        return Some(Err(ResolveError::Internal));
    };
    let Ok(file) = file.try_clone() else {
        return Some(Err(ResolveError::Internal));
    };
    Some(Ok(Script { filename, interpreter, file, script_name, path_info }))
}

/// The answer for a request to a script: a [`CgiRun`] that will run it (and take its
/// `--max-cgi` slot then, once the request body is whole).
pub(crate) fn respond(
    opts: &CgiOptions,
    document_root: &std::path::Path,
    req: &Request<'_, '_>,
    script: Script,
    peer: SocketAddr,
) -> Response {
    use spidey_http::Method;
    if !matches!(req.method, Method::Get | Method::Head | Method::Post) {
        let mut r = Response::error(StatusCode::METHOD_NOT_ALLOWED, "Scripts take GET, HEAD and POST.");
        r.fields.push(("Allow", "GET, HEAD, POST".into()));
        return r;
    }
    let env = env::build(req, &script, peer, opts, document_root);
    let name = script.script_name.clone();
    let command = match command(script, env) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("spidey: cannot prepare CGI script: {e}");
            return Response::error(StatusCode::INTERNAL_SERVER_ERROR, "The script could not be started.");
        }
    };
    Response::new(StatusCode::OK, Vec::new(), super::Body::Cgi(Box::new(CgiRun::new(command, name, req, opts))))
}

/// The descriptor a script's file has in the script's process.
pub(crate) const SCRIPT_FD: RawFd = 3;
/// The name of [`SCRIPT_FD`] in the script's process: what is exec'd, or given to the
/// interpreter as its one argument.
const SCRIPT_PATH: &str = "/proc/self/fd/3";

/// The command that runs `script` from its checked descriptor (see the module docs): the
/// file itself, or its interpreter with the file as the one argument; a clean environment,
/// its own directory, its own process group.
fn command(script: Script, env: Vec<(OsString, OsString)>) -> std::io::Result<Command> {
    let mut command = match &script.interpreter {
        Some(program) => {
            let mut c = Command::new(program);
            c.arg(SCRIPT_PATH);
            c
        }
        None => {
            let mut c = Command::new(SCRIPT_PATH);
            c.arg0(&script.filename);
            c
        }
    };
    command.env_clear().envs(env).process_group(0);
    if let Some(dir) = script.filename.parent() {
        command.current_dir(dir);
    }
    // At SCRIPT_FD or above, so that std's stdio set-up in the child cannot overwrite it.
    let fd = rustix::io::fcntl_dupfd_cloexec(&script.file, SCRIPT_FD)?;
    spidey_sys::process::inherit_fd(&mut command, fd, SCRIPT_FD)?;
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreter_flag_table() {
        let cases = [
            (".php=/usr/bin/php-cgi", Ok(("php".to_string(), PathBuf::from("/usr/bin/php-cgi")))),
            ("py=/usr/bin/python3", Ok(("py".to_string(), PathBuf::from("/usr/bin/python3")))),
            (".php", Err(())),
            ("=/bin/x", Err(())),
            (".php=", Err(())),
        ];
        for (input, want) in cases {
            assert_eq!(parse_interpreter(input).map_err(|_| ()), want, "{input}");
        }
    }

    #[test]
    fn kind_table() {
        let dir = tempfile::tempdir().unwrap();
        let exec = dir.path().join("x");
        let plain = dir.path().join("y");
        std::fs::write(&exec, "").unwrap();
        std::fs::write(&plain, "").unwrap();
        std::fs::set_permissions(&exec, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (x, p) = (std::fs::metadata(&exec).unwrap(), std::fs::metadata(&plain).unwrap());
        let on = CgiOptions {
            enabled: true,
            interpreters: vec![("php".into(), "/usr/bin/php-cgi".into())],
            ..CgiOptions::default()
        };
        let off = CgiOptions { enabled: false, ..on.clone() };
        // With CGI off a script is a file like any other (its bytes, never run).
        let php = Kind::Script(Some("/usr/bin/php-cgi".into()));
        let cases: [(&CgiOptions, &str, &Metadata, Kind); 12] = [
            (&on, "cgi-bin/env.sh", &x, Kind::Script(None)),
            (&on, "cgi-bin/readme.txt", &p, Kind::Forbidden),
            (&on, "a/b/tool.cgi", &x, Kind::Script(None)),
            (&on, "a/b/tool.cgi", &p, Kind::Forbidden),
            (&on, "a/index.php", &p, php),
            (&on, "a/run.sh", &x, Kind::Static),
            (&on, "hello.txt", &p, Kind::Static),
            (&off, "cgi-bin/env.sh", &x, Kind::Static),
            (&off, "cgi-bin/readme.txt", &p, Kind::Static),
            (&off, "tool.cgi", &x, Kind::Static),
            (&off, "tool.cgi", &p, Kind::Static),
            (&off, "a/index.php", &p, Kind::Static),
        ];
        for (opts, path, meta, want) in cases {
            assert_eq!(kind(opts, path.as_bytes(), meta), want, "{path} enabled={}", opts.enabled);
        }
    }
}
