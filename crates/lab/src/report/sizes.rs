//! The sizes a sweep ran with, in words, for its titles and the claims checked against it:
//! an experiment file writes `{n}` where a title states a count, and the report fills it
//! from the plan that ran (a quick run says 20 requests, a full one 100).
//!
//! - `{n}`: the requests of each point (`10,000`; `20 to 100` when the points differ);
//! - `{n_per_client}`: the requests each connection sends (`n ÷ c`);
//! - `{duration}`: each point's duration (`2 s`, `300 ms`);
//! - `{repeats}`: the repeats of each point.

use crate::experiment::plan::Active;
use crate::experiment::ClientSpec;
use crate::judge::sample::Sample;

/// `text` with the placeholders above replaced by the sizes of `a`'s points.
pub(crate) fn fill(text: &str, a: &Active<'_>) -> String {
    if !text.contains('{') {
        return text.to_string();
    }
    let n: Vec<u64> = a.clients.iter().filter_map(|c| c.n).collect();
    let per: Vec<u64> = a.clients.iter().filter_map(|c| c.n.map(|n| n / u64::from(c.c.max(1)))).collect();
    let durations: Vec<String> = a.clients.iter().filter_map(|c| c.duration.as_deref().map(duration)).collect();
    text.replace("{n}", &span(&n))
        .replace("{n_per_client}", &span(&per))
        .replace("{duration}", &words(durations))
        .replace("{repeats}", &a.repeats.to_string())
}

/// `a` with only the client settings `samples` have measurements for (all of them when
/// none has): a title filled from it states what ran, not what the plan would run today.
pub(crate) fn measured<'a>(a: &Active<'a>, samples: &[Sample]) -> Active<'a> {
    let ran = |c: &ClientSpec| samples.iter().any(|s| !s.runs.is_empty() && s.client.label() == c.label());
    let clients: Vec<ClientSpec> = a.clients.iter().filter(|c| ran(c)).cloned().collect();
    Active {
        sweep: a.sweep,
        servers: a.servers.clone(),
        workloads: a.workloads.clone(),
        clients: if clients.is_empty() { a.clients.clone() } else { clients },
        repeats: a.repeats,
    }
}

/// `100`, or `20 to 100` when the counts differ; `?` with none.
fn span(counts: &[u64]) -> String {
    match (counts.iter().min(), counts.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => thousands(*lo),
        (Some(lo), Some(hi)) => format!("{} to {}", thousands(*lo), thousands(*hi)),
        _ => "?".into(),
    }
}

fn words(mut items: Vec<String>) -> String {
    items.dedup();
    if items.is_empty() {
        "?".into()
    } else {
        items.join(" or ")
    }
}

/// `10000` as `10,000`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `2s` as `2 s`, `300ms` as `300 ms`.
fn duration(d: &str) -> String {
    let split = d.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(d.len());
    let (num, unit) = d.split_at(split);
    format!("{num} {unit}").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Experiment;

    #[test]
    fn words_table() {
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(100), "100");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(span(&[100, 100]), "100");
        assert_eq!(span(&[10, 100_000]), "10 to 100,000");
        assert_eq!(duration("2s"), "2 s");
        assert_eq!(duration("300ms"), "300 ms");
    }

    /// Every placeholder of the built-in experiments is filled, and a title that states a
    /// count says the quick run's count in a quick run and the full run's in a full one.
    #[test]
    fn titles_state_the_sizes_that_ran() {
        let sources = crate::experiment::sources::find(None, &[]).unwrap();
        let exps: Vec<Experiment> = sources.iter().map(|s| Experiment::parse(s).unwrap()).collect();
        for quick in [false, true] {
            for exp in &exps {
                for a in crate::experiment::plan::active(exp, quick) {
                    let mut texts = vec![a.sweep.title.clone()];
                    texts.extend(a.sweep.plots.iter().map(|p| p.title.clone()));
                    texts.extend(a.sweep.seed_note.clone());
                    texts.extend(exp.claims.iter().filter(|c| c.sweep() == a.sweep.name).map(|c| c.text().to_string()));
                    for t in texts {
                        let filled = fill(&t, &a);
                        let unfilled = filled.contains('{')
                            || (t.contains('{') && filled.matches('?').count() > t.matches('?').count());
                        assert!(!unfilled, "{}: {filled}", exp.id);
                    }
                }
            }
        }
        let delay = exps.iter().find(|e| e.id == "001-delay").unwrap();
        let title = |quick| {
            let a = crate::experiment::plan::active(delay, quick);
            fill(&a[0].sweep.title, &a[0])
        };
        assert!(title(false).starts_with("100 requests"), "{}", title(false));
        assert!(title(true).starts_with("20 requests"), "{}", title(true));
    }

    /// A title states the sizes that were measured: with only N = 10 and 100 in the
    /// results, 002's title says so though its full plan goes up to 100,000.
    #[test]
    fn titles_follow_the_measured_points() {
        let sources = crate::experiment::sources::find(None, &[]).unwrap();
        let exps: Vec<Experiment> = sources.iter().map(|s| Experiment::parse(s).unwrap()).collect();
        let threads = exps.iter().find(|e| e.id == "002-threads").unwrap();
        let a = &crate::experiment::plan::active(threads, false)[0];
        let sample = |c: &ClientSpec, measured: bool| Sample {
            server: "thread".into(),
            workload: "mix".into(),
            client: c.clone(),
            runs: if measured { vec![crate::run::measurement::Measurement::default()] } else { Vec::new() },
        };
        let all: Vec<Sample> = a.clients.iter().map(|c| sample(c, true)).collect();
        let two: Vec<Sample> = a.clients.iter().map(|c| sample(c, c.n.unwrap_or(0) <= 100)).collect();
        let none: Vec<Sample> = a.clients.iter().map(|c| sample(c, false)).collect();
        let title = |samples: &[Sample]| fill(&a.sweep.title, &measured(a, samples));
        assert!(title(&all).contains("N = 10 to 100,000 requests"), "{}", title(&all));
        assert!(title(&two).contains("N = 10 to 100 requests"), "{}", title(&two));
        assert_eq!(title(&none), title(&all), "nothing measured: the plan's sizes");
    }
}
