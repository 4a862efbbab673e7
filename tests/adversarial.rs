//! The adversarial suite: hostile input, hostile timing and resource exhaustion, each class
//! a table of cases, run against every mode through `for_each_mode!`.
//!
//! Classes: [`framing`] (smuggling, field and line syntax), [`limits`], [`max_conns`]
//! (one connection bound, queueing beyond it), [`paths`], [`pipelining`] (request streams
//! far longer than any buffer), [`ranges`], [`slow`] (slowloris, slow body, slow reader),
//! [`exhaustion`] (descriptor floods, resets). CGI cases live in `adversarial_cgi.rs`.

mod common;

#[path = "adversarial/exhaustion.rs"]
mod exhaustion;
#[path = "adversarial/framing.rs"]
mod framing;
#[path = "adversarial/limits.rs"]
mod limits;
#[path = "adversarial/max_conns.rs"]
mod max_conns;
#[path = "adversarial/paths.rs"]
mod paths;
#[path = "adversarial/pipelining.rs"]
mod pipelining;
#[path = "adversarial/ranges.rs"]
mod ranges;
#[path = "adversarial/slow.rs"]
mod slow;
#[path = "adversarial/table.rs"]
mod table;
