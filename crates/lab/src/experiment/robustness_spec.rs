//! The `[robustness]` table of an experiment file (`006-robustness`): what
//! [`crate::run::robustness`] runs. Data only; the run gives it its behaviour.

use crate::experiment::ServerSpec;
use serde::{Deserialize, Serialize};

/// The `[robustness]` table of an experiment file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Spec {
    pub servers: Vec<ServerSpec>,
    pub attacks: Vec<AttackName>,
    /// Crowd sizes (0, no crowd, is always measured first as the baseline).
    pub crowd: Vec<usize>,
    /// Crowd sizes under `--quick`.
    pub quick_crowd: Option<Vec<usize>>,
    /// The legitimate client's and the mixed load's duration under `--quick`.
    pub quick_duration: Option<String>,
    /// The workload names of the small file the legitimate client (and slowloris and idle
    /// connections) request, and the large file slow readers request.
    pub small: String,
    pub large: String,
    pub legit: Legit,
    pub mixed: Option<Mixed>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum AttackName {
    Slowloris,
    Idle,
    SlowReader,
}

/// The legitimate client: `rate` new connections per second for `duration`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Legit {
    pub rate: f64,
    pub duration: String,
    pub timeout: String,
}

/// The mixed load: `rate` requests per second over keep-alive connections, `burn_share` of
/// them to the `burn` workload (a handler burning CPU) and the rest to `small`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Mixed {
    pub rate: f64,
    pub burn_share: f64,
    pub burn: String,
    pub connections: usize,
    pub duration: String,
}
