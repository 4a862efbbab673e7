//! Spidey's server: `spidey serve`.
//!
//! Three layers, each readable alone (see ARCHITECTURE.md):
//! - the protocol, in the `spidey-http` crate: parsing, limits, heads, ranges, dates;
//! - the content side, [`content`]: what to answer (resolve, static files, listings);
//! - the modes, [`modes`]: how connections are scheduled, every driver answering through
//!   `exchange`.
//!
//! [`args::ServeArgs`] is the command's flags, [`config_file`] turns `--config FILE` into
//! them, and [`serve::run`] runs it. The load generator and the lab are crates of their
//! own (`spidey-bench`, `spidey-lab`): this one compiles no plotting or histogram code.
//!
//! `unsafe` lives only in the `spidey-sys` crate; this crate forbids it.

mod activation;
#[cfg(test)]
mod allocation_tests;
pub mod args;
mod clock;
pub mod config_file;
pub mod content;
mod exchange;
pub mod flags;
mod h1;
mod h2;
mod head;
#[cfg(test)]
mod layout_tests;
mod listen;
mod log;
mod log_sink;
pub mod metrics;
pub mod modes;
mod net;
mod redirect;
mod reload;
pub mod serve;
pub mod server;
mod signals;
mod software;
