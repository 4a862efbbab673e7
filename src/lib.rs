//! Spidey: a web server laboratory.
//!
//! Three layers, each readable alone (see ARCHITECTURE.md):
//! - the protocol, in the `spidey-http` crate: parsing, limits, heads, ranges, dates;
//! - the content side, [`content`]: what to answer (resolve, static files, listings);
//! - the modes, [`modes`]: how connections are scheduled, every driver answering through
//!   [`exchange`].
//!
//! `unsafe` lives only in the `spidey-sys` crate; this crate forbids it.

mod activation;
pub mod bench;
pub mod cli;
pub mod config;
pub mod content;
pub mod exchange;
mod flags;
pub mod lab;
mod listen;
pub mod log;
mod log_sink;
pub mod metrics;
pub mod modes;
pub mod net;
pub mod serve;
pub mod server;
mod signals;
pub mod software;
