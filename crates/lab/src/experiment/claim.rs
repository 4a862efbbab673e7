//! The seeds' claims as data (`[[claims]]` in an experiment file), and the selection of
//! points they speak about. [`crate::judge::verdict`] checks each against the numbers.

use crate::experiment::metric::Metric;
use crate::experiment::Dim;
use serde::Deserialize;

/// One claim of a seed study: what it says, where the seed says it, and how it is checked.
///
/// Written in an experiment file as a table whose `kind` names the check; the fields every
/// kind shares are read here, the rest by [`Kind`] (unknown fields are refused by both).
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    pub text: String,
    /// The sweep it is checked against (none for a claim not testable here).
    pub sweep: String,
    /// Where the seed says it: `004:107` (seed file and line).
    pub source: String,
    /// The seed's words, quoted from that line (or its table's numbers).
    pub quote: String,
    /// The size the seed states, with the tolerance it is held to.
    pub size: Option<Size>,
    /// Why the claim holds by construction of the setup (the seed's or the lab's): checked
    /// and shown, but not counted as evidence.
    pub by_construction: Option<String>,
    /// Why the lab's method cannot test the claim though it measures its points: its own
    /// design decides the outcome, or the seed's figures cannot be what the seed says they
    /// are (the arithmetic). Checked and shown, but not counted as evidence. `{batches}` is
    /// filled with the batches each of the claim's points ran ([`crate::judge::verdict`]).
    pub untestable: Option<String>,
    /// What elsewhere in the same seed says otherwise (the report lists the seeds'
    /// internal contradictions).
    pub contradicts: Option<String>,
    /// A name for the claim, unique across the experiments, that an explanation's
    /// `explains` refers to (`000-fork-latency`).
    pub id: Option<String>,
    /// On an explain experiment's prediction: the seed claim whose difference it puts to
    /// the test, and the cause its sweep changes ([`crate::report::why`]).
    pub explains: Option<Explains>,
    pub kind: Kind,
}

/// What a prediction puts to the test: one suspected cause of a seed claim's difference.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Explains {
    /// The `id` of the seed's claim.
    pub claim: String,
    /// The cause the prediction's sweep changes, in a few words (`a 1.5 ms round trip`).
    pub cause: String,
    /// What the prediction holding says about the cause.
    #[serde(default)]
    pub if_held: IfHeld,
    /// The CPUs a machine needs for the sweep to change only the cause (a second server
    /// CPU that is not the load generator's): on fewer, the cause is not testable there.
    pub needs_cpus: Option<usize>,
    /// What a machine that could decide it needs, shown when a run could not.
    pub needs: Option<String>,
}

/// What a held prediction says about its cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IfHeld {
    /// The prediction is the seed's result under the cause: holding, the cause explains it.
    #[default]
    Explains,
    /// The prediction is "the cause changes nothing": holding, the cause is ruled out.
    RulesOut,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Common {
    text: String,
    #[serde(default)]
    sweep: String,
    source: String,
    quote: String,
    size: Option<Size>,
    by_construction: Option<String>,
    untestable: Option<String>,
    contradicts: Option<String>,
    id: Option<String>,
    explains: Option<Explains>,
}

const COMMON: [&str; 10] =
    ["text", "sweep", "source", "quote", "size", "by_construction", "untestable", "contradicts", "id", "explains"];

impl<'de> Deserialize<'de> for Claim {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut rest = toml::Table::deserialize(d)?;
        let mut common = toml::Table::new();
        for key in COMMON {
            if let Some(v) = rest.remove(key) {
                common.insert(key.to_string(), v);
            }
        }
        let c = Common::deserialize(toml::Value::Table(common)).map_err(D::Error::custom)?;
        let kind =
            Kind::deserialize(toml::Value::Table(rest)).map_err(|e| D::Error::custom(format!("{}: {e}", c.text)))?;
        let Common { text, sweep, source, quote, size, by_construction, untestable, contradicts, id, explains } = c;
        Ok(Claim { text, sweep, source, quote, size, by_construction, untestable, contradicts, id, explains, kind })
    }
}

/// The size a claim states, and how far from it still counts as the same size.
///
/// A ratio is an effect: its distance from 1, on a log scale, is its size. `tolerance = 0.25`
/// accepts an effect within 25% of the stated one, `exp(ln r · 0.75)` to `exp(ln r · 1.25)`:
/// 1.68× to 2.38× for a stated 2× ("halved"), 1.10× to 1.39× for a stated 1.13–1.30×
/// (the seed's points span that range, and the band spans both ends' bands), 1.68×
/// upward for `at_least = 2` ("over twice as high"), with no upper end. A value a trend
/// ends at (`last`) is held to a factor of `1 + tolerance` either way (32.96 to 51.5 for
/// 41.2 ms). The size is reproduced when the claim's 95% interval meets that band, and not
/// when the interval lies wholly outside it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Size {
    /// A ratio (beats, best, larger_gain; for a trend, its last point over its first).
    pub ratio: Option<Stated>,
    /// A least ratio ("over twice as high").
    pub at_least: Option<f64>,
    /// The value a trend's last point has.
    pub last: Option<f64>,
    #[serde(default = "quarter")]
    pub tolerance: f64,
}

/// A stated number, or the range the seed's points span.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub(crate) enum Stated {
    One(f64),
    Range([f64; 2]),
}

impl Size {
    /// The band of sizes that count as the stated one.
    pub fn band(&self) -> (f64, f64) {
        let t = self.tolerance;
        // An effect `r` scaled by `k` on a log scale: `exp(ln r · k)`.
        let effect = |r: f64, k: f64| (r.ln() * k).exp();
        let ends = |lo: f64, hi: f64| {
            let all = [effect(lo, 1.0 - t), effect(lo, 1.0 + t), effect(hi, 1.0 - t), effect(hi, 1.0 + t)];
            (all.iter().copied().fold(f64::INFINITY, f64::min), all.iter().copied().fold(0.0, f64::max))
        };
        match (self.ratio, self.at_least, self.last) {
            (Some(Stated::One(x)), ..) => ends(x, x),
            (Some(Stated::Range([lo, hi])), ..) => ends(lo, hi),
            (_, Some(x), _) => (ends(x, x).0, f64::INFINITY),
            (_, _, Some(v)) => (v / (1.0 + t), v * (1.0 + t)),
            _ => (f64::NAN, f64::NAN),
        }
    }

    /// `2.00–2.24× (effect ±25%: 1.68–2.74×)`, `≥ 2.00× (…)`, `ends at 41.20 (±25%: …)`.
    pub fn text(&self) -> String {
        let (lo, hi) = self.band();
        let t = self.tolerance * 100.0;
        let band = if hi.is_finite() { format!("{lo:.2}–{hi:.2}") } else { format!("≥ {lo:.2}") };
        match (self.ratio, self.at_least, self.last) {
            (Some(Stated::One(x)), ..) => format!("{x:.2}× (effect ±{t:.0}%: {band}×)"),
            (Some(Stated::Range([a, b])), ..) => format!("{a:.2}–{b:.2}× (effect ±{t:.0}%: {band}×)"),
            (_, Some(x), _) => format!("≥ {x:.2}× (effect −{t:.0}%: {band}×)"),
            (_, _, Some(v)) => {
                format!("ends at {} (×/÷ {:.2}: {band})", crate::experiment::metric::format(v), 1.0 + self.tolerance)
            }
            _ => "–".into(),
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        let given =
            usize::from(self.ratio.is_some()) + usize::from(self.at_least.is_some()) + usize::from(self.last.is_some());
        anyhow::ensure!(given == 1, "a size gives one of ratio, at_least, last");
        anyhow::ensure!(self.tolerance > 0.0, "a size's tolerance is above 0");
        Ok(())
    }
}

fn quarter() -> f64 {
    0.25
}

/// How a claim is checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Kind {
    /// `a` is better than `b` on `metric` at the points `at` selects (each point of `a`
    /// paired with its twin: the same coordinates but those `b` names). Within `within` of
    /// each other (a fraction), with a tight interval, they are level.
    Beats {
        metric: Metric,
        a: Select,
        b: Select,
        #[serde(default)]
        at: Select,
        /// The seed's ratio when its tables do not give it (charts only).
        seed_ratio: Option<f64>,
        #[serde(default = "five_percent")]
        within: f64,
    },
    /// `a` and `b` are within `within` (a fraction, 0.1 = 10%) of each other.
    Level {
        metric: Metric,
        a: Select,
        b: Select,
        #[serde(default)]
        at: Select,
        #[serde(default = "ten_percent")]
        within: f64,
    },
    /// `a`'s advantage over `b` is larger at the points `at` selects than at those `than`
    /// selects (a ratio of ratios: "fork gains most on CGI").
    LargerGain { metric: Metric, a: Select, b: Select, at: Select, than: Select },
    /// How `metric` moves along `over` across the points `at` selects (one series).
    Trend {
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
    AtMost { metric: Metric, at: Select, limit: f64 },
    /// `server` is the best of `among` (all servers when empty) at the points `at` selects.
    Best {
        metric: Metric,
        server: String,
        #[serde(default)]
        among: Vec<String>,
        #[serde(default)]
        at: Select,
    },
    /// The lab's setup removes what the claim is about (a hypervisor setting, a machine
    /// the seed had): `reason` says what.
    NotTestable { reason: String },
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
        &self.text
    }

    pub fn sweep(&self) -> &str {
        &self.sweep
    }

    /// The metric the claim is about (none for a claim not testable here).
    pub fn metric(&self) -> Option<Metric> {
        match &self.kind {
            Kind::Beats { metric, .. }
            | Kind::Level { metric, .. }
            | Kind::LargerGain { metric, .. }
            | Kind::Trend { metric, .. }
            | Kind::AtMost { metric, .. }
            | Kind::Best { metric, .. } => Some(*metric),
            Kind::NotTestable { .. } => None,
        }
    }

    /// The servers a claim names, for the experiment file's check.
    pub fn servers(&self) -> Vec<&str> {
        fn sel(s: &Select) -> Vec<&str> {
            s.server.as_deref().into_iter().chain(s.server_in.iter().flatten().map(String::as_str)).collect()
        }
        match &self.kind {
            Kind::Beats { a, b, at, .. } | Kind::Level { a, b, at, .. } => [sel(a), sel(b), sel(at)].concat(),
            Kind::LargerGain { a, b, at, than, .. } => [sel(a), sel(b), sel(at), sel(than)].concat(),
            Kind::Trend { at, .. } | Kind::AtMost { at, .. } => sel(at),
            Kind::Best { server, among, at, .. } => {
                [vec![server.as_str()], among.iter().map(String::as_str).collect(), sel(at)].concat()
            }
            Kind::NotTestable { .. } => Vec::new(),
        }
    }

    /// What an experiment file must get right beyond its syntax: a source like `004:107`,
    /// a sweep unless not testable, a size only where the kind has one to compare.
    pub fn check(&self) -> anyhow::Result<()> {
        let line = self
            .source
            .split_once(':')
            .and_then(|(seed, line)| (seed.len() == 3 && seed.bytes().all(|b| b.is_ascii_digit())).then_some(line));
        let lines_ok = line.is_some_and(|l| l.split(['-', ',']).all(|n| n.trim().parse::<u32>().is_ok_and(|n| n > 0)));
        anyhow::ensure!(lines_ok, "source '{}' is not SEED:LINE (e.g. 004:107, 003:40-48)", self.source);
        anyhow::ensure!(!self.quote.trim().is_empty(), "no quote from the seed");
        let testable = !matches!(self.kind, Kind::NotTestable { .. });
        anyhow::ensure!(testable != self.sweep.is_empty(), "a sweep is given exactly when the claim is testable");
        if self.untestable.is_some() {
            anyhow::ensure!(testable, "a not_testable claim has its reason already: no untestable");
            anyhow::ensure!(self.by_construction.is_none(), "a claim is true by construction or untestable, not both");
        }
        if let Some(size) = &self.size {
            size.check()?;
            let fits = match &self.kind {
                Kind::Beats { .. } | Kind::Best { .. } | Kind::LargerGain { .. } => size.last.is_none(),
                Kind::Trend { .. } => size.at_least.is_none(),
                _ => false,
            };
            anyhow::ensure!(fits, "this kind of claim has no size of that form");
        }
        Ok(())
    }
}

/// Which points: every field given must match (absent fields match anything).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Select {
    pub server: Option<String>,
    /// Any of these servers.
    pub server_in: Option<Vec<String>>,
    pub workload: Option<String>,
    /// Any of these workloads.
    pub workload_in: Option<Vec<String>>,
    pub c: Option<u32>,
    pub c_min: Option<u32>,
    pub c_max: Option<u32>,
    pub n: Option<u64>,
    pub rate: Option<f64>,
    pub rate_min: Option<f64>,
    pub rate_max: Option<f64>,
}

impl Select {
    /// Whether a seed row may be one of the selected points (a field the row does not
    /// give matches anything).
    pub fn matches_seed(&self, r: &crate::experiment::SeedRow) -> bool {
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
        let within = |want: &Option<Vec<String>>, have: &Option<String>| {
            want.as_ref().map_or(true, |w| have.as_ref().map_or(true, |h| w.contains(h)))
        };
        eq(&self.server, &r.server)
            && eq(&self.workload, &r.workload)
            && within(&self.server_in, &r.server)
            && within(&self.workload_in, &r.workload)
            && c_ok
            && rate_ok
            && n_ok
    }
}

fn ten_percent() -> f64 {
    0.1
}

fn five_percent() -> f64 {
    0.05
}

/// The coordinate along `over` of a seed row (NaN when the row does not give it).
pub(crate) fn seed_coord(row: &crate::experiment::SeedRow, over: Dim) -> f64 {
    match over {
        Dim::Connections | Dim::Clients => row.c.map(f64::from).unwrap_or(f64::NAN),
        Dim::Requests => row.n.map(|n| n as f64).unwrap_or(f64::NAN),
        Dim::Rate => row.rate.unwrap_or(f64::NAN),
        Dim::Server | Dim::Workload | Dim::Connection | Dim::Share | Dim::Streams => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The band a size accepts: the effect within the tolerance on a log scale, a trend's
    /// last value within a factor.
    #[test]
    fn size_bands_table() {
        let size = |t: &str| toml::from_str::<Size>(t).unwrap();
        let cases: [(&str, (f64, f64)); 5] = [
            ("ratio = 2.0", (1.68, 2.38)),
            ("ratio = [1.13, 1.30]", (1.10, 1.39)),
            ("ratio = 4.0\ntolerance = 0.5", (2.0, 8.0)),
            ("at_least = 2.0", (1.68, f64::INFINITY)),
            ("last = 41.2", (32.96, 51.5)),
        ];
        for (text, (lo, hi)) in cases {
            let (l, h) = size(text).band();
            assert!((l - lo).abs() < 0.01 && (h == hi || (h - hi).abs() < 0.01), "{text}: {l:.3}–{h:.3}");
        }
    }
}
