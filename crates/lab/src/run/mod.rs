//! Measuring: the servers started, the load run against them, each point's
//! [`measurement::Measurement`] appended to `results.jsonl`. Reads the experiment stage
//! (`crate::experiment`), nothing of the judging or the report.

pub(crate) mod adversary;
pub(crate) mod capacity;
pub(crate) mod cold;
pub(crate) mod cpu;
pub(crate) mod delay_line;
pub(crate) mod docroot;
pub(crate) mod hosts;
pub(crate) mod listing;
pub(crate) mod load;
pub(crate) mod measurement;
pub(crate) mod out_dir;
pub(crate) mod remote_server;
pub(crate) mod results;
pub(crate) mod robustness;
pub(crate) mod root_copy;
pub(crate) mod runner;
pub(crate) mod server;
pub(crate) mod server_counts;
pub(crate) mod tls;
pub(crate) mod via;
