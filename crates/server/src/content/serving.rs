//! What the tree answers beyond one lookup: the `--index` names of a directory, the
//! `--fallback` page of a single-page application, the `--error-page` bodies, and one
//! file served as the whole site.
//!
//! Every page these flags name is a URL path (`/index.html`), decoded as requests are and
//! checked once at start: not a directory, no dot-segment. At request time it is looked up
//! like any request ([`Root::resolve_decoded`](super::resolve::Root::resolve_decoded)),
//! so it can never lie outside ROOT; a page that has gone missing since is simply not
//! used (the built-in answer stands).
//!
//! - **Index names.** A directory is answered by the first of its `--index` names that is
//!   a regular file (default `index.html`, then `index.htm`), else by its listing.
//! - **Fallback.** A GET or HEAD for a path that names nothing (404) gets the fallback
//!   file with 200, so a client-side router sees every address. Never for a path with a
//!   dot-segment (`/.git/x`, `/a/./b`, `/%2e/x`: they stay 404 or 400), never where a CGI
//!   script could answer (`cgi-bin/`, a `.cgi` or `--cgi-interpreter` extension), never
//!   under a `--handler` mount (the handler answers first), never for another method.
//! - **Error pages.** A built-in error answer ([`Response::error`]) whose status has an
//!   `--error-page` gets that file's bytes and type instead, with the same status and the
//!   same other fields (`Allow`, `WWW-Authenticate`, `Location`...). Answers made before
//!   the request is understood (400, 408, 413, 414, 431, 503 busy) keep the built-in page,
//!   as do the answers of scripts and handlers.
//! - **Pages that are scripts.** With CGI on, every page goes through the same
//!   script-or-file decision as a request's own path ([`cgi::page_script`]), so a page is
//!   never served as its source where its own address would run it: an index or fallback
//!   script runs (`SCRIPT_NAME` is the page, `REQUEST_URI` the request's, as nginx's
//!   `try_files $uri /index.php` gives a front controller); an error-page script runs for
//!   GET and HEAD with the error's status, which its `Status:` cannot change (for another
//!   method the built-in page stands); a page that is a forbidden script (not executable
//!   under `cgi-bin/`) is never sent: 403 for an index or fallback, the built-in page for
//!   an error.
//! - **One file as the root.** `spidey serve report.pdf` serves that file at `/` and at
//!   `/report.pdf` (as miniserve does) and nothing else: every other path is 404. The file
//!   is found once at start (symlinks followed there); CGI is off.

use super::resolve::{self, decode_path};
use super::{cgi, Body, Response};
use spidey_http::{Method, Request};
use std::borrow::Cow;

/// The index names when `--index` is not given, tried in this order.
pub const DEFAULT_INDEX: [&str; 2] = ["index.html", "index.htm"];

/// Checks one `--index NAME`: a single file name, not hidden, without control bytes.
pub fn parse_index(name: &str) -> Result<Vec<u8>, String> {
    let bad = name.is_empty() || name.starts_with('.') || name.contains('/') || name.chars().any(|c| c.is_control());
    if bad {
        return Err(format!("--index {name:?}: expected a file name such as index.html (no '/', not a dotfile)"));
    }
    Ok(name.as_bytes().to_vec())
}

/// Checks the URL path of a page (`--fallback`, `--error-page`) and returns it decoded,
/// relative to ROOT.
pub fn parse_page_path(flag: &str, value: &str) -> Result<Vec<u8>, String> {
    let why = if !value.starts_with('/') {
        "expected a path inside the root such as /index.html"
    } else if value.contains(['?', '#']) {
        "a page is a file: no '?' or '#'"
    } else {
        match decode_path(value) {
            Err(_) => "the path is malformed or has a '..' segment",
            Ok(relative) if *relative == *b"." || relative.ends_with(b"/") => "the path names a directory, not a file",
            Ok(relative) if resolve::hidden(&relative) => "the path has a dot-segment",
            Ok(relative) => return Ok(relative.into_owned()),
        }
    };
    Err(format!("{flag} {value:?}: {why}"))
}

/// Checks one `--error-page STATUS=/PATH` (STATUS from 400 to 599).
pub fn parse_error_page(value: &str) -> Result<(u16, Vec<u8>), String> {
    let Some((status, path)) = value.split_once('=') else {
        return Err(format!("--error-page {value:?}: expected STATUS=/PATH, e.g. 404=/404.html"));
    };
    match status.trim().parse::<u16>() {
        Ok(code @ 400..=599) => Ok((code, parse_page_path("--error-page", path.trim())?)),
        _ => Err(format!("--error-page {value:?}: the status must be a number from 400 to 599")),
    }
}

/// Whether the fallback may answer `req` for its decoded path `relative` (see the module
/// docs): GET or HEAD, no dot-segment in the raw or decoded path, no script's address.
pub(crate) fn fallback_allowed(req: &Request<'_, '_>, relative: &[u8], cgi: &cgi::CgiOptions) -> bool {
    matches!(req.method, Method::Get | Method::Head)
        && !resolve::has_dot_segment(req.target.path)
        && !resolve::hidden(relative)
        && !cgi::may_run(cgi, relative)
}

/// The request path a single-file site answers: `/` and `/NAME` become NAME, anything
/// else is not found.
pub(crate) fn single_file<'p>(
    name: &'p [u8],
    relative: Result<Cow<'_, [u8]>, resolve::ResolveError>,
) -> Result<Cow<'p, [u8]>, resolve::ResolveError> {
    match relative {
        Ok(r) if *r == *b"." || *r == *name => Ok(Cow::Borrowed(name)),
        Ok(_) => Err(resolve::ResolveError::NotFound),
        Err(e) => Err(e),
    }
}

/// The `--error-page` file for `response` (a built-in error page whose status has one):
/// that file's bytes and type, with the same status and the same other fields.
pub(crate) fn file_page(
    mut response: Response,
    page: &[u8],
    file: std::sync::Arc<std::fs::File>,
    len: u64,
) -> Response {
    response.fields.retain(|(name, _)| !name.eq_ignore_ascii_case("content-type"));
    response.fields.push(("Content-Type", super::static_file::content_type(page).into()));
    response.body = Body::File { file, offset: 0, len };
    response.builtin_page = false;
    response
}

/// The `--error-page` script's answer for `response`: `run` (a script's response) with
/// `response`'s status, which the script cannot change, and its other fields (`Allow`,
/// `WWW-Authenticate`, `Location`...); `response` itself when `run` is not a script's
/// (it could not be prepared: the built-in page stands).
pub(crate) fn script_page(response: Response, mut run: Response) -> Response {
    let Body::Cgi(script) = &mut run.body else { return response };
    script.answer_with(response.status);
    run.status = response.status;
    run.close |= response.close;
    run.fields = response.fields.into_iter().filter(|(name, _)| !name.eq_ignore_ascii_case("content-type")).collect();
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_flag_table() {
        assert_eq!(parse_index("default.htm"), Ok(b"default.htm".to_vec()));
        assert_eq!(parse_index("<i>ndex\".html"), Ok(b"<i>ndex\".html".to_vec()));
        for bad in ["", ".index.html", "a/index.html", "..", "in\ndex", "/index.html"] {
            let e = parse_index(bad).unwrap_err();
            assert!(e.starts_with("--index") && !e.contains('\n'), "{bad:?}: {e}");
        }
    }

    #[test]
    fn page_path_table() {
        let ok: &[(&str, &[u8])] = &[
            ("/index.html", b"index.html"),
            ("/app/shell.html", b"app/shell.html"),
            ("//a//b.html", b"a/b.html"),
            ("/caf%C3%A9.html", "café.html".as_bytes()),
            ("/.well-known/x.html", b".well-known/x.html"),
        ];
        for (value, want) in ok {
            assert_eq!(parse_page_path("--fallback", value).as_deref(), Ok(*want), "{value}");
        }
        for bad in ["index.html", "/", "/dir/", "/../etc/passwd", "/%2e%2e/x", "/.env", "/a/.git/x", "/x?y", "/%zz", ""]
        {
            let e = parse_page_path("--fallback", bad).unwrap_err();
            assert!(e.starts_with("--fallback") && !e.contains('\n'), "{bad:?}: {e}");
        }
    }

    #[test]
    fn error_page_flag_table() {
        assert_eq!(parse_error_page("404=/404.html"), Ok((404, b"404.html".to_vec())));
        assert_eq!(parse_error_page("503 = /down.html"), Ok((503, b"down.html".to_vec())));
        for bad in ["404", "200=/x.html", "399=/x.html", "600=/x.html", "abc=/x.html", "404=x.html", "404=/"] {
            let e = parse_error_page(bad).unwrap_err();
            assert!(e.starts_with("--error-page") && !e.contains('\n'), "{bad:?}: {e}");
        }
    }

    #[test]
    fn single_file_table() {
        use resolve::ResolveError::*;
        type Path<'a> = Result<&'a [u8], resolve::ResolveError>;
        let cases: &[(Path, Path)] = &[
            (Ok(b"."), Ok(b"r.pdf")),
            (Ok(b"r.pdf"), Ok(b"r.pdf")),
            (Ok(b"r.pdf/"), Err(NotFound)),
            (Ok(b"other.txt"), Err(NotFound)),
            (Ok(b"a/r.pdf"), Err(NotFound)),
            (Err(BadPath), Err(BadPath)),
        ];
        for (input, want) in cases {
            let got = single_file(b"r.pdf", input.map(std::borrow::Cow::Borrowed));
            assert_eq!(got.as_deref().map_err(|e| *e), *want, "{input:?}");
        }
    }
}
