//! The content side: what to answer for a request.
//!
//! [`Site::respond`] turns a parsed request into a [`Response`]: a status, the content's own
//! header fields, and a [`Body`] that says where the bytes come from without moving them.
//! Nothing here touches a socket, so the same answers serve blocking and event-driven modes
//! alike; the modes move the bytes (write, sendfile) at their own pace.
//!
//! - [`resolve`]: request path → an open file or directory beneath ROOT, never outside it.
//! - [`static_file`]: conditional GET, ranges and the fields of a file response.
//! - [`listing`]: directory listings in HTML and JSON.
//! - [`page`]: the small HTML bodies of error responses.

pub mod listing;
pub mod page;
pub mod resolve;
pub mod static_file;

use spidey_http::{Method, Request, StatusCode};
use std::fs::File;
use std::path::Path;

/// Where a response's body comes from.
#[derive(Debug)]
pub enum Body {
    Empty,
    /// Bytes built in memory (listings, error pages).
    Bytes(Vec<u8>),
    /// `len` bytes of `file` from `offset`, to be sent with sendfile.
    File {
        file: File,
        offset: u64,
        len: u64,
    },
}

impl Body {
    /// The number of body bytes, which becomes `Content-Length`.
    pub fn len(&self) -> u64 {
        match self {
            Body::Empty => 0,
            Body::Bytes(b) => b.len() as u64,
            Body::File { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An answer, before it is framed and written.
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    /// The content's own fields; `Date`, `Server`, framing and `Connection` are added later.
    pub fields: Vec<(&'static str, String)>,
    pub body: Body,
    /// Whether the connection must close after this response.
    pub close: bool,
}

impl Response {
    pub fn new(status: StatusCode, fields: Vec<(&'static str, String)>, body: Body) -> Self {
        Response { status, fields, body, close: false }
    }

    /// An error page for `status`, with `detail` as its one sentence.
    pub fn error(status: StatusCode, detail: &str) -> Self {
        let body = page::error_page(status, detail);
        Response::new(status, vec![("Content-Type", "text/html; charset=utf-8".into())], Body::Bytes(body))
    }
}

/// Options of the content side, from the command line.
#[derive(Debug, Clone, Default)]
pub struct SiteOptions {
    /// List dotfiles in directory listings (they are served either way).
    pub show_hidden: bool,
}

/// The served tree: a directory handle for ROOT and the rules for answering from it.
#[derive(Debug)]
pub struct Site {
    root: resolve::Root,
    options: SiteOptions,
}

/// The methods a static resource takes, for `Allow`.
const STATIC_METHODS: &str = "GET, HEAD";

impl Site {
    /// Opens ROOT. Fails if it is not a directory or the kernel lacks openat2.
    pub fn open(root: &Path, options: SiteOptions) -> std::io::Result<Site> {
        Ok(Site { root: resolve::Root::open(root)?, options })
    }

    /// Decides the answer to `req`.
    pub fn respond(&self, req: &Request<'_, '_>) -> Response {
        match req.method {
            Method::Get | Method::Head => {}
            Method::Other(_) => return Response::error(StatusCode::NOT_IMPLEMENTED, "This method is not implemented."),
            _ => {
                let mut r = Response::error(StatusCode::METHOD_NOT_ALLOWED, "This resource takes GET and HEAD only.");
                r.fields.push(("Allow", STATIC_METHODS.into()));
                return r;
            }
        }
        if req.target.path == "*" {
            return Response::error(StatusCode::BAD_REQUEST, "The asterisk target is for OPTIONS only.");
        }
        match self.root.resolve(req.target.path) {
            Ok(resolve::Resolved::File(file, meta)) => static_file::respond(req, file, &meta),
            Ok(resolve::Resolved::Dir(dir)) => self.directory(req, dir),
            Err(e) => e.response(),
        }
    }

    fn directory(&self, req: &Request<'_, '_>, dir: resolve::OpenDir) -> Response {
        if !req.target.path.ends_with('/') {
            return redirect_to_slash(req);
        }
        match dir.index() {
            Some((file, meta)) => static_file::respond(req, file, &meta),
            None => listing::respond(req, &dir, &self.options),
        }
    }
}

/// 301 to the same path with a trailing slash. Leading slashes are collapsed to one and
/// backslashes percent-encoded, so the `Location` is never `//host/...` or `/\host/...`,
/// which a browser would take for another site (Python http.server CVE-2021-28861).
fn redirect_to_slash(req: &Request<'_, '_>) -> Response {
    let path = req.target.path.trim_start_matches('/').replace('\\', "%5C");
    let mut location = format!("/{path}/");
    if let Some(q) = req.target.query {
        location.push('?');
        location.push_str(q);
    }
    let mut r = Response::error(StatusCode::MOVED_PERMANENTLY, "This directory's address ends with a slash.");
    r.fields.push(("Location", location));
    r
}
