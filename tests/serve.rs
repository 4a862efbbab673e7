//! The core suite: every bullet of `spidey serve`'s contract, run against every mode, one
//! file per part of the contract: [`files`], [`directories`], [`refusals`], [`connection`]
//! and [`lifecycle`].

mod common;

#[path = "serve/connection.rs"]
mod connection;
#[path = "serve/directories.rs"]
mod directories;
#[path = "serve/files.rs"]
mod files;
#[path = "serve/lifecycle.rs"]
mod lifecycle;
#[path = "serve/refusals.rs"]
mod refusals;

use common::*;

fn start(mode: &str, args: &[&str]) -> (Fixture, Spidey) {
    let fx = Fixture::new();
    let s = Spidey::start(mode, &fx.root(), &[&["--quiet"], args].concat());
    (fx, s)
}

fn get_raw(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").into_bytes()
}
