//! In-process handlers: loading a shared library (libloading, i.e. dlopen(3)) and calling
//! its C entry point. The ABI is `include/spidey_handler.h`; the `#[repr(C)]` structs here
//! mirror it field for field.

use std::ffi::{c_int, c_void};
use std::mem::ManuallyDrop;
use std::path::Path;

/// The ABI version this build speaks (`SPIDEY_HANDLER_ABI_VERSION`).
pub const ABI_VERSION: u32 = 1;
/// The largest body a handler may write.
pub const MAX_BODY: usize = 64 << 20;

#[repr(C)]
#[derive(Clone, Copy)]
struct RawStr {
    ptr: *const u8,
    len: usize,
}

impl RawStr {
    fn of(s: &[u8]) -> Self {
        RawStr { ptr: s.as_ptr(), len: s.len() }
    }
}

#[repr(C)]
struct RawHeader {
    name: RawStr,
    value: RawStr,
}

#[repr(C)]
struct RawRequest {
    method: RawStr,
    target: RawStr,
    path: RawStr,
    query: RawStr,
    headers: *const RawHeader,
    header_count: usize,
    body: *const u8,
    body_len: usize,
    peer: RawStr,
}

#[repr(C)]
struct RawResponse {
    ctx: *mut c_void,
    set_status: extern "C" fn(*mut c_void, c_int),
    add_header: extern "C" fn(*mut c_void, *const u8, usize, *const u8, usize) -> c_int,
    write: extern "C" fn(*mut c_void, *const u8, usize) -> c_int,
}

type AbiVersionFn = unsafe extern "C" fn() -> u32;
type HandleFn = unsafe extern "C" fn(*const RawRequest, *const RawResponse) -> c_int;

/// Why a handler library could not be used.
#[derive(Debug)]
pub enum LoadError {
    Open(libloading::Error),
    MissingSymbol(&'static str, libloading::Error),
    AbiMismatch { found: u32, expected: u32 },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Open(e) => write!(f, "cannot load: {e}"),
            LoadError::MissingSymbol(name, e) => write!(f, "does not export {name}: {e}"),
            LoadError::AbiMismatch { found, expected } => {
                write!(f, "speaks handler ABI version {found}, this spidey speaks version {expected}")
            }
        }
    }
}

impl std::error::Error for LoadError {}

/// A request as handed to a handler.
#[derive(Debug, Clone, Copy)]
pub struct HandlerRequest<'a> {
    pub method: &'a [u8],
    pub target: &'a [u8],
    pub path: &'a [u8],
    pub query: &'a [u8],
    pub headers: &'a [(&'a [u8], &'a [u8])],
    pub body: &'a [u8],
    pub peer: &'a [u8],
}

/// What a handler produced.
#[derive(Debug, Default)]
pub struct HandlerResponse {
    pub status: i32,
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    pub body: Vec<u8>,
    /// A field the caller's [`FieldCheck`] refused was set, or the body outgrew
    /// [`MAX_BODY`].
    pub invalid: bool,
}

/// Whether a header field a handler sets (name, value) is valid. The rule is HTTP's
/// (RFC 9110 §5), so the caller brings it (`spidey_http::field::is_field`); this crate
/// only makes `add_header` return -1 for a field it refuses, as the ABI says.
pub type FieldCheck = fn(name: &[u8], value: &[u8]) -> bool;

/// What the callbacks' `ctx` points at during a call.
struct Call {
    out: HandlerResponse,
    valid_field: FieldCheck,
}

/// A loaded handler library; it stays loaded for the life of the process.
#[derive(Debug)]
pub struct HandlerLib {
    handle: HandleFn,
    /// INVARIANT: never dlclose'd, even when this value is dropped or loading fails after
    /// dlopen: the library's initialisers may have started threads that run its code
    /// (pthread_create returns before the new thread has run at all), and dlclose(3)
    /// unmapping that code under them is a SIGSEGV, not an error. Leaking a library the
    /// operator named for the life of the process is the price.
    _lib: ManuallyDrop<libloading::Library>,
}

impl HandlerLib {
    /// Loads the library, checks its ABI version and finds `spidey_handle`.
    pub fn load(path: &Path) -> Result<HandlerLib, LoadError> {
        // SAFETY: dlopen(3) runs the library's initialisers; nothing else in this process
        // depends on their effects. Loading code the operator named with --handler is the
        // point of the feature: the library is trusted as the binary is.
        let lib = ManuallyDrop::new(unsafe { libloading::Library::new(path) }.map_err(LoadError::Open)?);
        // SAFETY: dlsym(3) returns the symbol's address; the header declares it as
        // `uint32_t spidey_handler_abi_version(void)`, which AbiVersionFn matches.
        let version: AbiVersionFn = *unsafe { lib.get::<AbiVersionFn>(b"spidey_handler_abi_version\0") }
            .map_err(|e| LoadError::MissingSymbol("spidey_handler_abi_version", e))?;
        // SAFETY: the function takes no arguments and, per include/spidey_handler.h, only
        // returns a constant.
        let found = unsafe { version() };
        if found != ABI_VERSION {
            return Err(LoadError::AbiMismatch { found, expected: ABI_VERSION });
        }
        // SAFETY: as above; the ABI version matched, so the symbol has the signature the
        // header of this version declares, which HandleFn matches. The fn pointer stays
        // valid because the Library is kept (never dlclose'd) alongside it.
        let handle: HandleFn = *unsafe { lib.get::<HandleFn>(b"spidey_handle\0") }
            .map_err(|e| LoadError::MissingSymbol("spidey_handle", e))?;
        Ok(HandlerLib { handle, _lib: lib })
    }

    /// Calls `spidey_handle`; returns its return code and what it produced. A field that
    /// `valid_field` refuses is not added, and marks the response invalid.
    pub fn call(&self, req: &HandlerRequest<'_>, valid_field: FieldCheck) -> (i32, HandlerResponse) {
        let headers: Vec<RawHeader> =
            req.headers.iter().map(|(n, v)| RawHeader { name: RawStr::of(n), value: RawStr::of(v) }).collect();
        let raw = RawRequest {
            method: RawStr::of(req.method),
            target: RawStr::of(req.target),
            path: RawStr::of(req.path),
            query: RawStr::of(req.query),
            headers: headers.as_ptr(),
            header_count: headers.len(),
            body: req.body.as_ptr(),
            body_len: req.body.len(),
            peer: RawStr::of(req.peer),
        };
        let mut call = Call { out: HandlerResponse { status: 200, ..HandlerResponse::default() }, valid_field };
        let res = RawResponse {
            ctx: (&mut call as *mut Call).cast(),
            set_status: cb_set_status,
            add_header: cb_add_header,
            write: cb_write,
        };
        // SAFETY: `raw` and `res` follow the layout of include/spidey_handler.h; every
        // pointer in them (the request's slices, `headers`, `call`) outlives this call, and
        // the header tells the handler not to keep them past it.
        let rc = unsafe { (self.handle)(&raw, &res) };
        (rc, call.out)
    }
}

/// The `Call` behind a callback's `ctx`.
///
/// # Safety
/// `ctx` must be the `&mut Call` that [`HandlerLib::call`] passed in the
/// `RawResponse`, alive and not otherwise borrowed while the handler runs; the header
/// (include/spidey_handler.h) lets the handler call back only during its call, with the
/// `ctx` it was given. The returned reference must not outlive the callback.
unsafe fn context<'a>(ctx: *mut c_void) -> &'a mut Call {
    // SAFETY: the caller upholds the contract above: the pointer came from `&mut call` in
    // `HandlerLib::call`, which is not used again until the handler has returned.
    unsafe { &mut *ctx.cast::<Call>() }
}

/// A byte slice from a (pointer, length) pair the handler passed.
///
/// # Safety
/// Unless `ptr` is null or `len` is 0, `ptr` must point at `len` readable, initialised
/// bytes that stay valid and unmodified for `'a`; the ABI (include/spidey_handler.h)
/// requires that for the duration of the callback, so callers copy the bytes before
/// returning.
unsafe fn slice<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller upholds the contract above.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

extern "C" fn cb_set_status(ctx: *mut c_void, status: c_int) {
    // SAFETY: the handler passes back the `ctx` that `call` gave it, during the call (ABI).
    unsafe { context(ctx) }.out.status = status;
}

extern "C" fn cb_add_header(
    ctx: *mut c_void,
    name: *const u8,
    name_len: usize,
    value: *const u8,
    value_len: usize,
) -> c_int {
    // SAFETY: the handler passes back the `ctx` that `call` gave it, during the call (ABI).
    let call = unsafe { context(ctx) };
    // SAFETY: the ABI requires each (pointer, length) to name readable bytes for the
    // duration of the callback; both are copied below before it returns.
    let (name, value) = unsafe { (slice(name, name_len), slice(value, value_len)) };
    if !(call.valid_field)(name, value) {
        call.out.invalid = true;
        return -1;
    }
    call.out.headers.push((name.to_vec(), value.to_vec()));
    0
}

extern "C" fn cb_write(ctx: *mut c_void, data: *const u8, len: usize) -> c_int {
    // SAFETY: the handler passes back the `ctx` that `call` gave it, during the call (ABI).
    let out = &mut unsafe { context(ctx) }.out;
    if out.body.len().saturating_add(len) > MAX_BODY {
        out.invalid = true;
        return -1;
    }
    // SAFETY: the ABI requires `data` to name `len` readable bytes for the duration of the
    // callback; they are copied into the body before it returns.
    out.body.extend_from_slice(unsafe { slice(data, len) });
    0
}
