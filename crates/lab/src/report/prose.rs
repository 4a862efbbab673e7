//! The report's long paragraphs, kept as Markdown under `docs/lab-method/` so they are
//! edited as text, not as string literals: included at build time, and [`fill`]ed with the
//! lab's values.

/// The "Appendix: method" paragraph ([`fill`] it with `kind`, `repeats`, `floor`, `other`,
/// `tick_min`, `steal`, `steal_min`, `extra`, `clean` and `keep`).
pub(crate) const METHOD: &str = include_str!("../../../../docs/lab-method/method.md");
/// How a verdict is reached ([`fill`] it with `busy` and `idle`).
pub(crate) const RULE: &str = include_str!("../../../../docs/lab-method/rule.md");

/// `template`'s paragraph: a leading `<!-- … -->` comment dropped, its lines joined with
/// single spaces, and each `{name}` replaced by the value `values` gives it.
///
/// Panics on a `{name}` without a value, a value without its `{name}`, or an unclosed
/// brace: a template and its caller out of step is a bug every report test finds.
pub(crate) fn fill(template: &str, values: &[(&str, &dyn std::fmt::Display)]) -> String {
    let text = match template.trim_start().strip_prefix("<!--") {
        Some(rest) => rest.split_once("-->").expect("the template's comment is closed").1,
        None => template,
    };
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(joined.len() + 64);
    let mut used = vec![false; values.len()];
    let mut rest = joined.as_str();
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').unwrap_or_else(|| panic!("unclosed {{ in: {}", &rest[open..]));
        let name = &rest[open + 1..open + close];
        let i = values.iter().position(|v| v.0 == name).unwrap_or_else(|| panic!("no value for {{{name}}}"));
        used[i] = true;
        out.push_str(&values[i].1.to_string());
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    let unused: Vec<&str> = values.iter().zip(&used).filter(|(_, u)| !**u).map(|(v, _)| v.0).collect();
    assert!(unused.is_empty(), "values without a placeholder: {unused:?}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines joined with single spaces, the comment dropped, every placeholder filled (a
    /// value used twice too), and a template out of step with its values refused.
    #[test]
    fn fill_joins_lines_and_fills_placeholders() {
        let t = "<!-- a note,\nover lines -->\nA {x}% share\n  of {y} s, {x}% again.\n";
        assert_eq!(fill(t, &[("x", &10.0), ("y", &"0.5")]), "A 10% share of 0.5 s, 10% again.");
        assert_eq!(fill("no comment {a}", &[("a", &1)]), "no comment 1");
        for bad in [
            std::panic::catch_unwind(|| fill("{x} {z}", &[("x", &1)])),
            std::panic::catch_unwind(|| fill("{x}", &[("x", &1), ("y", &2)])),
            std::panic::catch_unwind(|| fill("{x", &[("x", &1)])),
        ] {
            assert!(bad.is_err());
        }
    }

    /// The committed paragraphs: a comment on top, then text with no brace but its
    /// placeholders', and no line a Markdown block would start with (each file renders as the
    /// one paragraph the report prints).
    #[test]
    fn the_paragraphs_are_plain_text_with_their_placeholders() {
        for (name, template, want) in [
            (
                "method",
                METHOD,
                &["kind", "repeats", "floor", "other", "tick_min", "steal", "steal_min", "extra", "clean", "keep"][..],
            ),
            ("rule", RULE, &["busy", "idle"][..]),
        ] {
            let body = template.split_once("-->").expect("a comment on top").1;
            let mut names: Vec<&str> = body.split('{').skip(1).map(|s| s.split_once('}').expect("closed").0).collect();
            names.sort_unstable();
            names.dedup();
            let mut want = want.to_vec();
            want.sort_unstable();
            assert_eq!(names, want, "{name}'s placeholders");
            for line in body.lines().filter(|l| !l.trim().is_empty()) {
                let t = line.trim_start();
                let block = ['-', '*', '+', '#', '>', '|'].iter().any(|c| t.starts_with(*c))
                    || t.split_once(['.', ')']).is_some_and(|(n, r)| {
                        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && r.starts_with(' ')
                    });
                assert!(!block, "{name}: a line Markdown reads as a block of its own: {line:?}");
            }
            assert!(!body.contains("  "), "{name}: the report joins lines with one space; keep one between words");
        }
    }
}
