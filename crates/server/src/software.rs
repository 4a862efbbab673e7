//! The name and version Spidey gives itself: the `Server` field of every response and a
//! CGI script's `SERVER_SOFTWARE`. A leaf module, so the content side and the exchanger can
//! both name it without importing the server state that imports them.

/// `spidey/` and the crate version.
pub const SOFTWARE: &str = concat!("spidey/", env!("CARGO_PKG_VERSION"));
