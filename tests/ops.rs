//! What people expect of a file server's operations (issue 19 items 2, 3, 4, 7), in every
//! mode: IPv6 and dual-stack listeners ([`ipv6`]), several `--addr` at once ([`addrs`]), systemd socket activation
//! ([`activation`]), the Prometheus metrics ([`metrics`]), and the access log file with
//! SIGHUP reopening and SIGUSR1 metrics ([`logs`]), SIGHUP under traffic and prefork's
//! graceful worker replacement ([`reload`]).

mod common;

#[path = "ops/activation.rs"]
mod activation;
#[path = "ops/addrs.rs"]
mod addrs;
#[path = "ops/harness.rs"]
mod harness;
#[path = "ops/ipv6.rs"]
mod ipv6;
#[path = "ops/logs.rs"]
mod logs;
#[path = "ops/metrics.rs"]
mod metrics;
#[path = "ops/reload.rs"]
mod reload;
