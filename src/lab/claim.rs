//! The seeds' claims as data (`[[claims]]` in an experiment file), and the selection of
//! points they speak about. [`crate::lab::verdict`] checks each against the numbers.

use crate::lab::experiment::Dim;
use crate::lab::metric::Metric;
use crate::lab::table::Sample;
use serde::Deserialize;

/// One claim of a seed study, checked against one sweep.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Claim {
    /// `a` is better than `b` on `metric` at every point `at` selects (each point of `a`
    /// paired with its twin: the same coordinates but those `b` names).
    Beats {
        text: String,
        sweep: String,
        metric: Metric,
        a: Select,
        b: Select,
        #[serde(default)]
        at: Select,
        /// The seed's ratio when its tables do not give it (charts only).
        seed_ratio: Option<f64>,
    },
    /// `a` and `b` are within `within` (a fraction, 0.1 = 10%) of each other.
    Level {
        text: String,
        sweep: String,
        metric: Metric,
        a: Select,
        b: Select,
        #[serde(default)]
        at: Select,
        #[serde(default = "ten_percent")]
        within: f64,
    },
    /// How `metric` moves along `over` across the points `at` selects (one series).
    Trend {
        text: String,
        sweep: String,
        metric: Metric,
        over: Dim,
        at: Select,
        expect: Shape,
        /// For a rising series: the least `(y_last / x_last) / (y_first / x_first)` that
        /// still counts as linear (1 = perfectly linear).
        linear_min: Option<f64>,
        /// Reports the first coordinate where the median passes this value (an onset).
        onset_above: Option<f64>,
    },
    /// `metric` stays at or below `limit` at every point `at` selects.
    AtMost { text: String, sweep: String, metric: Metric, at: Select, limit: f64 },
    /// `server` is the best of `among` (all servers when empty) at the points `at` selects.
    Best {
        text: String,
        sweep: String,
        metric: Metric,
        server: String,
        #[serde(default)]
        among: Vec<String>,
        #[serde(default)]
        at: Select,
    },
}

/// The shape a trend claim expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Shape {
    Rising,
    Falling,
    /// Rises to an interior peak, then falls (a collapse).
    Peak,
}

impl Claim {
    pub fn text(&self) -> &str {
        match self {
            Claim::Beats { text, .. }
            | Claim::Level { text, .. }
            | Claim::Trend { text, .. }
            | Claim::AtMost { text, .. }
            | Claim::Best { text, .. } => text,
        }
    }

    pub fn sweep(&self) -> &str {
        match self {
            Claim::Beats { sweep, .. }
            | Claim::Level { sweep, .. }
            | Claim::Trend { sweep, .. }
            | Claim::AtMost { sweep, .. }
            | Claim::Best { sweep, .. } => sweep,
        }
    }

    /// The servers a claim names, for the experiment file's check.
    pub fn servers(&self) -> Vec<&str> {
        fn sel(s: &Select) -> Vec<&str> {
            s.server.as_deref().into_iter().collect()
        }
        match self {
            Claim::Beats { a, b, at, .. } | Claim::Level { a, b, at, .. } => [sel(a), sel(b), sel(at)].concat(),
            Claim::Trend { at, .. } | Claim::AtMost { at, .. } => sel(at),
            Claim::Best { server, among, at, .. } => {
                [vec![server.as_str()], among.iter().map(String::as_str).collect(), sel(at)].concat()
            }
        }
    }
}

/// Which points: every field given must match (absent fields match anything).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Select {
    pub server: Option<String>,
    pub workload: Option<String>,
    pub c: Option<u32>,
    pub c_min: Option<u32>,
    pub c_max: Option<u32>,
    pub n: Option<u64>,
    pub rate: Option<f64>,
    pub rate_min: Option<f64>,
    pub rate_max: Option<f64>,
}

impl Select {
    pub fn matches(&self, s: &Sample) -> bool {
        let c = s.client.c;
        let rate = s.client.rate;
        self.server.as_ref().map_or(true, |x| *x == s.server)
            && self.workload.as_ref().map_or(true, |x| *x == s.workload)
            && self.c.map_or(true, |x| x == c)
            && self.c_min.map_or(true, |x| c >= x)
            && self.c_max.map_or(true, |x| c <= x)
            && self.n.map_or(true, |x| Some(x) == s.client.n)
            && self.rate.map_or(true, |x| Some(x) == rate)
            && self.rate_min.map_or(true, |x| rate.is_some_and(|r| r >= x))
            && self.rate_max.map_or(true, |x| rate.is_some_and(|r| r <= x))
    }
}

impl Select {
    /// Whether a seed row may be one of the selected points (a field the row does not
    /// give matches anything).
    pub fn matches_seed(&self, r: &crate::lab::experiment::SeedRow) -> bool {
        let eq = |want: &Option<String>, have: &Option<String>| {
            want.as_ref().map_or(true, |w| have.as_ref().map_or(true, |h| w == h))
        };
        let c_ok = r.c.map_or(true, |c| {
            self.c.map_or(true, |x| x == c)
                && self.c_min.map_or(true, |x| c >= x)
                && self.c_max.map_or(true, |x| c <= x)
        });
        let rate_ok = r.rate.map_or(true, |v| {
            self.rate.map_or(true, |x| x == v)
                && self.rate_min.map_or(true, |x| v >= x)
                && self.rate_max.map_or(true, |x| v <= x)
        });
        let n_ok = r.n.map_or(true, |n| self.n.map_or(true, |x| x == n));
        eq(&self.server, &r.server) && eq(&self.workload, &r.workload) && c_ok && rate_ok && n_ok
    }
}

/// The twin of `s` on the `b` side: the sample whose coordinates are `s`'s, except those
/// `b` names. Naming a client count frees the request count too (seeds scale requests
/// with clients); naming a server but no workload falls back to the server's only
/// workload when it has its own (CGI's script against the handler's path).
pub(crate) fn twin<'a, T: AsRef<Sample>>(s: &Sample, b: &Select, samples: &'a [T]) -> Option<&'a Sample> {
    let fits = |t: &Sample, strict_workload: bool| {
        b.matches(t)
            && (b.server.is_some() || t.server == s.server)
            && (b.workload.is_some() || !strict_workload || t.workload == s.workload)
            && (b.c.is_some() || t.client.c == s.client.c)
            && (b.c.is_some() || b.n.is_some() || t.client.n == s.client.n)
            && (b.rate.is_some() || t.client.rate == s.client.rate)
            && t.client.keepalive == s.client.keepalive
    };
    let all = || samples.iter().map(AsRef::as_ref).filter(|t| !t.runs.is_empty());
    all().find(|t| fits(t, true)).or_else(|| all().find(|t| fits(t, false)))
}

impl AsRef<Sample> for Sample {
    fn as_ref(&self) -> &Sample {
        self
    }
}

fn ten_percent() -> f64 {
    0.1
}

/// The coordinate along `over` of a seed row (NaN when the row does not give it).
pub(crate) fn seed_coord(row: &crate::lab::experiment::SeedRow, over: Dim) -> f64 {
    match over {
        Dim::Connections | Dim::Clients => row.c.map(f64::from).unwrap_or(f64::NAN),
        Dim::Requests => row.n.map(|n| n as f64).unwrap_or(f64::NAN),
        Dim::Rate => row.rate.unwrap_or(f64::NAN),
        Dim::Server | Dim::Workload | Dim::Connection => f64::NAN,
    }
}
