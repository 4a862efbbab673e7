//! `spidey bench` against servers that know the truth: tiny in-test servers that count what
//! they receive, stall once, or misbehave in one known way ([`fake_server`]); and the real
//! `spidey serve`. What it counts ([`accounting`]), its open loop ([`open_loop`]), its
//! output ([`output`]) and how it fails ([`failures`]).

mod common;

#[path = "bench/accounting.rs"]
mod accounting;
#[path = "bench/failures.rs"]
mod failures;
#[path = "bench/fake_server.rs"]
mod fake_server;
#[path = "bench/open_loop.rs"]
mod open_loop;
#[path = "bench/output.rs"]
mod output;

use common::bench::run as bench;
