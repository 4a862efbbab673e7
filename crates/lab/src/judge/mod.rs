//! Judging: a run's measurements gathered per point ([`sample::Sample`]), medians and
//! intervals ([`stats`]), the pooled test of a comparison claim ([`rule`]), what a series
//! does ([`shape`]), computed findings ([`finding`]) and a verdict per claim ([`verdict`]).
//! Reads the experiment and run stages, nothing of the report.

pub(crate) mod finding;
pub(crate) mod rule;
pub(crate) mod sample;
pub(crate) mod shape;
pub(crate) mod stats;
pub(crate) mod verdict;
