//! The content side: what to answer for a request.
//!
//! [`Site::respond_from`] turns a parsed request into a [`Response`]: a status, the content's own
//! header fields, and a [`Body`] that says where the bytes come from without moving them.
//! Nothing here touches a socket, so the same answers serve blocking and event-driven modes
//! alike; the modes move the bytes (write, sendfile) at their own pace.
//!
//! - [`resolve`]: request path → an open file or directory beneath ROOT, never outside it.
//! - [`static_file`]: conditional GET, ranges and the fields of a file response.
//! - [`compress`]: precompressed siblings and on-the-fly gzip/zstd/brotli.
//! - [`listing`]: directory listings in HTML and JSON.
//! - [`access`]: `--basic-auth` and `--cors`; [`headers`]: `--header`, `--cache-control`.
//! - [`page`]: the small HTML bodies of error responses.
//! - [`serving`]: `--index`, `--fallback`, `--error-page`, and one file as the root.
//! - [`cgi`] (a folder: the script's resolution and start in `mod.rs`, its environment,
//!   request-body intake, run, process and stderr in a file each): CGI/1.1 scripts, a
//!   body source ([`Body::Cgi`]) whose events the exchange hands to the connection's protocol.
//! - [`handler`]: in-process handlers loaded from shared libraries.

pub mod access;
mod auth_limit;
pub mod cgi;
pub mod compress;
mod encoded_cache;
mod file_cache;
pub mod handler;
pub mod headers;
pub mod listing;
pub mod page;
pub mod resolve;
pub mod serving;
pub mod static_file;

use spidey_http::{Method, Request, StatusCode};
use std::borrow::Cow;
use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where a response's body comes from: the one body type, from the content side to the
/// socket. `S` is what a script's answer is at each stage: the content side's running
/// script ([`cgi::run::CgiRun`]), then the exchange's response around it
/// (`crate::exchange::CgiResponse`).
#[derive(Debug)]
pub enum Body<S = Box<cgi::run::CgiRun>> {
    Empty,
    /// Bytes built in memory (listings, error pages, handler output).
    Bytes(Vec<u8>),
    /// `range` of bytes kept in memory and shared, without a copy (a small file's bytes
    /// in the open-file cache).
    Shared(Arc<[u8]>, std::ops::Range<usize>),
    /// `len` bytes of `file` from `offset`, to be sent with sendfile. Shared with the
    /// thread's open-file cache ([`file_cache`]), so every use reads at its own offset.
    File {
        file: Arc<File>,
        offset: u64,
        len: u64,
    },
    /// A CGI script, run as the response goes out. Its head is not known yet: the script
    /// yields head, body bytes and end as events, which the exchange hands to the
    /// connection's protocol and logs. Dropping it kills and reaps the script.
    Cgi(S),
}

impl<S> Body<S> {
    /// The number of body bytes, which becomes `Content-Length` (0 for a script's).
    pub fn len(&self) -> u64 {
        match self {
            Body::Empty => 0,
            Body::Bytes(b) => b.len() as u64,
            Body::Shared(_, range) => range.len() as u64,
            Body::File { len, .. } => *len,
            Body::Cgi(_) => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body if it is whole (any script type fits it), or the script it is.
    pub fn whole<T>(self) -> Result<Body<T>, S> {
        Ok(match self {
            Body::Empty => Body::Empty,
            Body::Bytes(b) => Body::Bytes(b),
            Body::Shared(bytes, range) => Body::Shared(bytes, range),
            Body::File { file, offset, len } => Body::File { file, offset, len },
            Body::Cgi(script) => return Err(script),
        })
    }
}

/// A field value of a [`Response`]: a constant, a value shared with a cache (a cached
/// file's ETag and Last-Modified, formatted once per version), or one made for this
/// response. Only the last costs an allocation per response. Values are equal when their
/// text is, wherever it is kept.
#[derive(Debug, Clone)]
pub enum FieldValue {
    Static(&'static str),
    Shared(Arc<str>),
    Owned(String),
}

impl std::ops::Deref for FieldValue {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            FieldValue::Static(s) => s,
            FieldValue::Shared(s) => s,
            FieldValue::Owned(s) => s,
        }
    }
}

impl PartialEq for FieldValue {
    fn eq(&self, other: &FieldValue) -> bool {
        **self == **other
    }
}

impl Eq for FieldValue {}

impl From<&'static str> for FieldValue {
    fn from(s: &'static str) -> FieldValue {
        FieldValue::Static(s)
    }
}

impl From<String> for FieldValue {
    fn from(s: String) -> FieldValue {
        FieldValue::Owned(s)
    }
}

impl From<Arc<str>> for FieldValue {
    fn from(s: Arc<str>) -> FieldValue {
        FieldValue::Shared(s)
    }
}

/// An answer, before it is framed and written.
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    /// The content's own fields; `Date`, `Server`, framing and `Connection` are added later.
    pub fields: Vec<(&'static str, FieldValue)>,
    pub body: Body,
    /// Whether the connection must close after this response.
    pub close: bool,
    /// Fields whose names are not known in advance (from handlers), written after `fields`.
    pub extra_fields: Vec<(String, String)>,
    /// A HEAD answered without making its body (an on-the-fly encoding not made yet): its
    /// head says no `Content-Length`, as RFC 9110 §9.3.2 allows for a field known only
    /// while generating the content. Ignored for any other method.
    pub length_unknown: bool,
    /// Whether the body is a built-in error page ([`Response::error`]), which an
    /// `--error-page` may replace.
    pub builtin_page: bool,
}

impl Response {
    pub fn new(status: StatusCode, fields: Vec<(&'static str, FieldValue)>, body: Body) -> Self {
        Response {
            status,
            fields,
            body,
            close: false,
            extra_fields: Vec::new(),
            length_unknown: false,
            builtin_page: false,
        }
    }

    /// An error page for `status`, with `detail` as its one sentence.
    pub fn error(status: StatusCode, detail: &str) -> Self {
        let body = page::error_page(status, detail);
        let fields = vec![("Content-Type", "text/html; charset=utf-8".into())];
        Response { builtin_page: true, ..Response::new(status, fields, Body::Bytes(body)) }
    }
}

/// A request's path, percent-decoded and normalised once ([`resolve::decode_path`]): the
/// exchanger makes it, [`Site::is_heavy`] reads it, and [`Site::respond_from`] finds handler
/// mounts, static files and scripts by it, so no request decodes its path twice.
#[derive(Debug)]
pub struct DecodedPath<'b>(Result<Cow<'b, [u8]>, resolve::ResolveError>);

impl<'b> DecodedPath<'b> {
    pub fn of(req: &Request<'_, 'b>) -> Self {
        DecodedPath(resolve::decode_path(req.target.path))
    }
}

/// Options of the content side, from the command line.
#[derive(Debug, Default)]
pub struct SiteOptions {
    /// `--show-hidden`: list dotfiles in directory listings and serve paths with
    /// dot-segments (by default both are hidden, `/.well-known/` aside; see [`resolve`]).
    pub show_hidden: bool,
    /// `--no-listing`: a directory without an index is 404, not listed.
    pub no_listing: bool,
    /// CGI scripts (`--cgi`; off by default).
    pub cgi: cgi::CgiOptions,
    /// In-process handlers, by URL prefix (`--handler`).
    pub handlers: Vec<handler::Mount>,
    /// `--delay`: how long every answer waits, as if on I/O (see `Answer::delay`).
    pub delay: Option<Duration>,
    /// `--cpu-work`: how much CPU every request burns before it is answered.
    pub cpu_work: Option<Duration>,
    /// `--precompressed`, `--compress`.
    pub compress: compress::CompressOptions,
    /// `--basic-auth`.
    pub auth: Option<access::BasicAuth>,
    /// `--cors`.
    pub cors: Option<access::Cors>,
    /// `--header`: added to every response written whole (see `Exchanger`).
    pub response_headers: Vec<(String, String)>,
    /// `--cache-control`: for static files.
    pub cache_control: Option<String>,
    /// `--index`: a directory's index file names, in order (empty: [`serving::DEFAULT_INDEX`]).
    pub index_names: Vec<Vec<u8>>,
    /// `--fallback`: the file (decoded path) that answers a GET for a path naming nothing.
    pub fallback: Option<Vec<u8>>,
    /// `--error-page`: statuses and the files (decoded paths) that answer them.
    pub error_pages: Vec<(u16, Vec<u8>)>,
    /// `--health`: the path (decoded) that says whether the server is up.
    pub health: Option<Vec<u8>>,
}

/// The served tree: a directory handle for ROOT and the rules for answering from it.
#[derive(Debug)]
pub struct Site {
    root: resolve::Root,
    /// ROOT's real path, for `DOCUMENT_ROOT` and `PATH_TRANSLATED`.
    root_path: PathBuf,
    options: SiteOptions,
    /// When ROOT is a file: its name in its directory, the one thing served.
    single: Option<Vec<u8>>,
}

/// The methods a static resource takes, for `Allow`.
const STATIC_METHODS: &str = "GET, HEAD";

impl Site {
    /// Opens ROOT: a directory, or a regular file served alone ([`serving`]; CGI is then
    /// off). Fails if it is neither or the kernel lacks openat2.
    pub fn open(root: &Path, mut options: SiteOptions) -> std::io::Result<Site> {
        use std::os::unix::ffi::OsStrExt;
        let mut root_path = root.canonicalize()?;
        let mut single = None;
        if root_path.is_file() {
            single = root_path.file_name().map(|name| name.as_bytes().to_vec());
            root_path.pop();
            options.cgi.enabled = false;
            // Only that file: not its `.gz`/`.br`/`.zst` siblings, which may say anything.
            options.compress.precompressed = false;
        }
        if options.index_names.is_empty() {
            options.index_names = serving::DEFAULT_INDEX.iter().map(|n| n.as_bytes().to_vec()).collect();
        }
        // A single file is served whatever its name: nothing else is reachable.
        let root = resolve::Root::open(&root_path, options.show_hidden || single.is_some())?;
        Ok(Site { root, root_path, options, single })
    }

    pub fn options(&self) -> &SiteOptions {
        &self.options
    }

    /// The port the server listens on, for CGI's `SERVER_PORT` (known once bound).
    pub(crate) fn set_port(&mut self, port: u16) {
        self.options.cgi.port = port;
    }

    /// Counts this site's scripts in `from`'s `--max-cgi` slots (a reload that keeps the
    /// limit keeps counting the scripts still running), when both run scripts.
    pub(crate) fn keep_cgi_slots(&mut self, from: &Site) {
        if self.options.cgi.slots.is_some() && from.options.cgi.slots.is_some() {
            self.options.cgi.slots.clone_from(&from.options.cgi.slots);
        }
    }

    /// Whether answering `req` may block or burn CPU, so `hybrid` answers it on its worker
    /// pool rather than on an event loop: `--cpu-work`, an in-process handler, a path that
    /// may name a CGI script (judged by its name alone, erring towards the pool), any
    /// request when the `--fallback` may be a script (a front controller answers most), a
    /// directory (a listing of a large one reads and stats every entry), a password to hash
    /// ([`Site::must_hash`]), or a GET that may
    /// encode a file on the fly ([`Site::may_encode`]). Cheap: no system call, no
    /// allocation (`path` is `req`'s, decoded by the caller).
    pub fn is_heavy(&self, req: &Request<'_, '_>, path: &DecodedPath<'_>) -> bool {
        if self.options.cpu_work.is_some() || req.target.path.ends_with('/') || self.must_hash(req) {
            return true;
        }
        let Ok(relative) = &path.0 else { return false };
        handler::find(&self.options.handlers, relative).is_some()
            || cgi::may_run(&self.options.cgi, relative)
            || self.options.fallback.as_deref().is_some_and(|page| cgi::may_run(&self.options.cgi, page))
            || self.may_encode(req, relative)
    }

    /// Whether answering `req` would hash a password (`--basic-auth`, credentials that are
    /// not remembered): a wrong guess costs up to a quarter of a second of CPU, which an
    /// event loop hands to a worker pool. One keyed SHA-256, no system call.
    pub fn must_hash(&self, req: &Request<'_, '_>) -> bool {
        self.options.auth.as_ref().is_some_and(|auth| auth.must_hash(req.header("authorization")))
    }

    /// Whether a request may encode the file at `relative` now (`--compress`): a GET
    /// without a range, for a name of a compressible type, with a coding the client takes
    /// whose encoding of that file is not kept ([`encoded_cache::holds`]). Judged by the
    /// name, erring towards the pool (the file may be too small or too large to encode).
    fn may_encode(&self, req: &Request<'_, '_>, relative: &[u8]) -> bool {
        let asks = self.options.compress.on_the_fly && req.method == Method::Get && req.header("range").is_none();
        if !asks || !compress::compressible(static_file::content_type(relative), relative) {
            return false;
        }
        let coding = spidey_http::negotiate::choose_coding(req.header("accept-encoding"), |_| true);
        coding.is_some_and(|coding| !encoded_cache::holds(self.root.id(), relative, coding))
    }

    /// Decides the answer to `req` from `peer`; `path` is `req`'s ([`DecodedPath::of`]).
    /// `body` is the request body when it is already whole in the receive buffer (only
    /// handlers look at it).
    ///
    /// Access comes first: a CORS preflight is answered before authentication (browsers
    /// send it without credentials), then `--basic-auth` guards everything else, the
    /// `--metrics` path (matched on the decoded path, answered before any lookup) included.
    pub fn respond_from(
        &self,
        req: &Request<'_, '_>,
        path: DecodedPath<'_>,
        peer: SocketAddr,
        body: &[u8],
    ) -> Response {
        if matches!((&path.0, &self.options.health), (Ok(relative), Some(health)) if relative == health) {
            return health_page(req);
        }
        if matches!(&path.0, Ok(relative) if crate::metrics::is_endpoint(relative)) {
            return self.refusal(req, peer).unwrap_or_else(|| metrics_page(req));
        }
        let preflight = self.options.cors.as_ref().and_then(|cors| cors.preflight(req));
        let response = match preflight {
            Some(preflight) => preflight,
            None => match self.refusal(req, peer) {
                Some(refusal) => refusal,
                None => self.answer(req, path, peer, body),
            },
        };
        let mut response = self.with_error_page(req, peer, response);
        if let Some(cors) = &self.options.cors {
            cors.decorate(req, &mut response);
        }
        // (A script's response keeps its fields: the exchanger hands them, with
        // `--header`'s, to the head the script's output writes later.)
        response
    }

    /// `--basic-auth`'s answer (401, or 429 after too many wrong guesses from `peer`), if
    /// it does not let `req` through.
    fn refusal(&self, req: &Request<'_, '_>, peer: SocketAddr) -> Option<Response> {
        let auth = self.options.auth.as_ref()?;
        match auth.check(req.header("authorization"), peer.ip()) {
            access::Verdict::Allowed => None,
            refused => Some(access::BasicAuth::refusal(refused)),
        }
    }

    fn answer(&self, req: &Request<'_, '_>, path: DecodedPath<'_>, peer: SocketAddr, body: &[u8]) -> Response {
        // Decoded once: handler mounts, static files and scripts are all found by this path.
        let relative = path.0;
        if let Ok(relative) = &relative {
            if let Some(mount) = handler::find(&self.options.handlers, relative) {
                return mount.respond(req, peer, body);
            }
        }
        let relative = match &self.single {
            Some(name) => serving::single_file(name, relative),
            None => relative,
        };
        if let Method::Other(_) = req.method {
            return Response::error(StatusCode::NOT_IMPLEMENTED, "This method is not implemented.");
        }
        if req.target.path == "*" {
            return Response::error(StatusCode::BAD_REQUEST, "The asterisk target is for OPTIONS only.");
        }
        let opts = &self.options.cgi;
        // One resolution decides everything: a script (or a forbidden one), or static.
        let resolved = match relative.as_deref().map_err(|e| *e).and_then(|r| self.root.resolve_decoded(r)) {
            Ok(resolve::Resolved::File(file, meta)) => match cgi::script(opts, req.target.path, "", &file, &meta) {
                Some(found) => return self.run_script(req, peer, found.map_err(resolve::ResolveError::response)),
                None => Ok(resolve::Resolved::File(file, meta)),
            },
            Err(resolve::ResolveError::NotFound) => match cgi::find_with_path_info(&self.root, opts, req.target.path) {
                Some(found) => return self.run_script(req, peer, found),
                None => Err(resolve::ResolveError::NotFound),
            },
            other => other,
        };
        // A resolution error answers whatever the method (404 for POST to nothing, as nginx
        // and Apache do); 405 is only for a static resource that exists.
        let resolved = match resolved {
            Ok(resolved) => resolved,
            Err(resolve::ResolveError::NotFound) => {
                return self
                    .fallback(req, peer, relative.as_deref().unwrap_or_default())
                    .unwrap_or_else(|| resolve::ResolveError::NotFound.response())
            }
            Err(e) => return e.response(),
        };
        if !matches!(req.method, Method::Get | Method::Head) {
            let mut r = Response::error(StatusCode::METHOD_NOT_ALLOWED, "This resource takes GET and HEAD only.");
            r.fields.push(("Allow", STATIC_METHODS.into()));
            return r;
        }
        match resolved {
            // The content type comes from the name that was opened, decoded.
            resolve::Resolved::File(file, meta) => self.file(req, file, &meta, relative.as_deref().unwrap_or_default()),
            resolve::Resolved::Dir(dir) => self.directory(req, peer, dir),
        }
    }

    /// The `--fallback` page for a GET or HEAD of `relative`, which names nothing, when
    /// [`serving::fallback_allowed`] says it may answer.
    fn fallback(&self, req: &Request<'_, '_>, peer: SocketAddr, relative: &[u8]) -> Option<Response> {
        let page = self.options.fallback.as_deref()?;
        if !serving::fallback_allowed(req, relative, &self.options.cgi) {
            return None;
        }
        match self.root.resolve_decoded(page) {
            Ok(resolve::Resolved::File(file, meta)) => Some(self.page(req, peer, file, &meta, page)),
            _ => None,
        }
    }

    /// A page at `relative` (an index or the fallback, opened): a script if its own
    /// address would run it ([`cgi::page_script`]), else the file.
    fn page(
        &self,
        req: &Request<'_, '_>,
        peer: SocketAddr,
        file: Arc<File>,
        meta: &std::fs::Metadata,
        relative: &[u8],
    ) -> Response {
        match cgi::page_script(&self.options.cgi, relative, &file, meta) {
            Some(found) => self.run_script(req, peer, found.map_err(resolve::ResolveError::response)),
            None => self.file(req, file, meta, relative),
        }
    }

    /// `response` with its status's `--error-page`, if it is a built-in error page and that
    /// page is a regular file now (see [`serving`]: a script page runs, for GET and HEAD,
    /// with the error's status); otherwise `response` unchanged.
    fn with_error_page(&self, req: &Request<'_, '_>, peer: SocketAddr, response: Response) -> Response {
        if !response.builtin_page {
            return response;
        }
        let Some((_, page)) = self.options.error_pages.iter().find(|(status, _)| *status == response.status.0) else {
            return response;
        };
        let Ok(resolve::Resolved::File(file, meta)) = self.root.resolve_decoded(page) else {
            return response;
        };
        match cgi::page_script(&self.options.cgi, page, &file, &meta) {
            None => serving::file_page(response, page, file, meta.len()),
            Some(Ok(script)) if matches!(req.method, Method::Get | Method::Head) => {
                let run = cgi::respond(&self.options.cgi, &self.root_path, req, script, peer);
                serving::script_page(response, run)
            }
            Some(_) => response,
        }
    }

    fn run_script(&self, req: &Request<'_, '_>, peer: SocketAddr, found: Result<cgi::Script, Response>) -> Response {
        match found {
            Ok(script) => cgi::respond(&self.options.cgi, &self.root_path, req, script, peer),
            Err(response) => response,
        }
    }

    fn directory(&self, req: &Request<'_, '_>, peer: SocketAddr, dir: resolve::OpenDir) -> Response {
        let index = self.root.index(&dir, &self.options.index_names);
        if !req.target.path.ends_with('/') {
            // With --no-listing a directory with no index answers nothing at either address:
            // a redirect would tell that it exists.
            if self.options.no_listing && index.is_none() {
                return resolve::ResolveError::NotFound.response();
            }
            return redirect_to_slash(req);
        }
        match index {
            Some((file, meta, path)) => self.page(req, peer, file, &meta, &path),
            // 404 rather than 403: a directory's existence is not disclosed either.
            None if self.options.no_listing => resolve::ResolveError::NotFound.response(),
            None => listing::respond(req, &dir, &self.options),
        }
    }

    /// A regular file at `relative` (decoded): its representation is negotiated, then sent.
    fn file(&self, req: &Request<'_, '_>, file: Arc<File>, meta: &std::fs::Metadata, relative: &[u8]) -> Response {
        let content_type = static_file::content_type(relative);
        let choice = compress::choose(&self.root, self.options.compress, req, relative, meta, content_type);
        // A small file's bytes from memory, when the file itself is sent (not a sibling, not
        // encoded now): its head and body then leave in one send.
        let small = match choice.encoding {
            compress::Encoding::Identity => self.root.small_contents(relative, meta),
            _ => None,
        };
        static_file::respond(
            req,
            static_file::Source { file, small, kept_as: (self.root.id(), relative) },
            meta,
            content_type,
            choice,
            self.options.cache_control.as_deref(),
        )
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
    r.fields.push(("Location", location.into()));
    r
}

/// A `--metrics` path as [`Site::respond_from`] matches requests against it: decoded and
/// normalised as a request's path is, relative to ROOT (a path that cannot be decoded is
/// kept as given, less its leading slashes).
pub(crate) fn endpoint_path(path: &str) -> Vec<u8> {
    resolve::decode_path(path).map_or_else(|_| path.trim_start_matches('/').as_bytes().to_vec(), Cow::into_owned)
}

/// The answer at the `--health` path (any query): 200 `ok` while the server runs, 503
/// `stopping` once it is shutting down (SIGTERM or SIGINT, in any worker process); 405 for
/// a method but GET and HEAD.
fn health_page(req: &Request<'_, '_>) -> Response {
    if !matches!(req.method, Method::Get | Method::Head) {
        let mut r = Response::error(StatusCode::METHOD_NOT_ALLOWED, "The health check takes GET and HEAD only.");
        r.fields.push(("Allow", "GET, HEAD".into()));
        return r;
    }
    let (status, text) = match crate::net::Shutdown::begun() {
        false => (StatusCode::OK, "ok\n"),
        true => (StatusCode::SERVICE_UNAVAILABLE, "stopping\n"),
    };
    let fields = vec![("Content-Type", "text/plain; charset=utf-8".into()), ("Cache-Control", "no-store".into())];
    Response::new(status, fields, Body::Bytes(text.as_bytes().to_vec()))
}

/// The answer at the `--metrics` path (any query): the metrics for GET and HEAD, 405
/// otherwise.
fn metrics_page(req: &Request<'_, '_>) -> Response {
    if !matches!(req.method, Method::Get | Method::Head) {
        let mut r = Response::error(StatusCode::METHOD_NOT_ALLOWED, "The metrics take GET and HEAD only.");
        r.fields.push(("Allow", "GET, HEAD".into()));
        return r;
    }
    let fields = vec![("Content-Type", crate::metrics::CONTENT_TYPE.into()), ("Cache-Control", "no-store".into())];
    Response::new(StatusCode::OK, fields, Body::Bytes(crate::metrics::render().into_bytes()))
}
