//! The documentation's own guard: the README stays a front door of under 300 lines, and
//! nothing in it, in docs/*.md, SECURITY.md or ARCHITECTURE.md points at a file, a heading
//! or an issue a reader of the repository does not have (the run records under docs/runs
//! are held to their links only). Plain Rust over the Markdown files (pulldown-cmark
//! parses them); no server is started.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const README_MAX_LINES: usize = 300;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents a reader navigates: the README, the book in docs/, and the two top-level
/// references it links to.
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut docs = vec![root.join("README.md"), root.join("SECURITY.md"), root.join("ARCHITECTURE.md")];
    let mut book: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    book.sort();
    assert!(!book.is_empty(), "docs/ holds no .md file");
    docs.extend(book);
    docs
}

/// The records of measured runs under docs/runs (their READMEs and the lab's reports),
/// which the book links to: their links must resolve too, but they quote the lab's own
/// output as it was, so the reference rules do not apply to them.
fn run_records() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut records = Vec::new();
    walk(&root().join("docs/runs"), &mut records);
    records.sort();
    records
}

/// The README and the book: the documents held to the no-bare-reference rule.
fn front_documents() -> Vec<PathBuf> {
    let (readme, book) = (root().join("README.md"), root().join("docs"));
    documents().into_iter().filter(|p| *p == readme || p.parent() == Some(book.as_path())).collect()
}

/// One Markdown file, as a reader meets it.
struct Doc {
    path: PathBuf,
    text: String,
    /// Every link and image destination.
    links: Vec<String>,
    /// The text a reader reads as prose: outside links, inline code and code blocks.
    prose: String,
    /// The anchors its headings get (GitHub's rule: see `slug`).
    anchors: HashSet<String>,
}

fn read(path: &Path) -> Doc {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut links = Vec::new();
    let mut prose = String::new();
    let mut anchors = HashSet::new();
    let mut heading: Option<String> = None;
    let (mut in_link, mut in_code_block) = (0usize, false);
    for event in Parser::new_ext(&text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Start(Tag::Link { dest_url, .. }) | Event::Start(Tag::Image { dest_url, .. }) => {
                links.push(dest_url.to_string());
                in_link += 1;
            }
            Event::End(TagEnd::Link) | Event::End(TagEnd::Image) => in_link -= 1,
            Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let mut anchor = base.clone();
                let mut n = 0;
                while !anchors.insert(anchor.clone()) {
                    n += 1;
                    anchor = format!("{base}-{n}");
                }
            }
            Event::Text(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
                if in_link == 0 && !in_code_block {
                    prose.push_str(&t);
                }
            }
            Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
                prose.push(' ');
            }
            Event::SoftBreak | Event::HardBreak => prose.push(' '),
            _ => {}
        }
    }
    Doc { path: path.to_path_buf(), text, links, prose, anchors }
}

/// A heading's anchor as GitHub makes it: lower case, every character that is not a
/// letter, a digit, `-`, `_` or a space dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// References to an issue that are not links: `issue 17`, `Issue 17's`, `issues 15`, `#17`.
fn bare_references(prose: &str) -> Vec<String> {
    let mut found = Vec::new();
    // ASCII lower case keeps every byte where it was, so `lower`'s indices are `prose`'s.
    let lower = prose.to_ascii_lowercase();
    for (i, _) in lower.match_indices("issue") {
        let before = lower[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric()) {
            continue;
        }
        let rest = lower[i + "issue".len()..].strip_prefix('s').unwrap_or(&lower[i + "issue".len()..]);
        let gap = rest.len() - rest.trim_start().len();
        let rest = rest.trim_start().strip_prefix('#').unwrap_or(rest.trim_start());
        if gap > 0 && rest.starts_with(|c: char| c.is_ascii_digit()) {
            found.push(prose[i..].chars().take(16).collect());
        }
    }
    for (i, _) in prose.match_indices('#') {
        let before = prose[..i].chars().next_back();
        let after = prose[i + 1..].chars().next();
        if after.is_some_and(|c| c.is_ascii_digit()) && !before.is_some_and(|c| c.is_alphanumeric() || c == '&') {
            found.push(prose[i..].chars().take(8).collect());
        }
    }
    found
}

/// Where a relative link leads, or None for one that leaves the repository (`https:`,
/// `mailto:`).
fn target(doc: &Path, link: &str) -> Option<(PathBuf, Option<String>)> {
    if link.contains("://") || link.starts_with("mailto:") {
        return None;
    }
    let (path, fragment) = match link.split_once('#') {
        Some((p, f)) => (p, Some(f.to_string())),
        None => (link, None),
    };
    let file = if path.is_empty() { doc.to_path_buf() } else { doc.parent().unwrap().join(path) };
    Some((file, fragment))
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines < README_MAX_LINES,
        "README.md has {lines} lines; keep it under {README_MAX_LINES} and move detail to docs/"
    );
}

#[test]
fn every_relative_link_resolves() {
    let root = root().canonicalize().unwrap();
    let mut broken = Vec::new();
    for path in documents().into_iter().chain(run_records()) {
        let doc = read(&path);
        for link in &doc.links {
            let Some((file, fragment)) = target(&doc.path, link) else { continue };
            let Ok(file) = file.canonicalize() else {
                broken.push(format!("{}: {link}: no such file", path.display()));
                continue;
            };
            if !file.starts_with(&root) {
                broken.push(format!("{}: {link}: outside the repository", path.display()));
                continue;
            }
            if !file.is_file() {
                broken.push(format!("{}: {link}: not a file", path.display()));
                continue;
            }
            if let (Some(fragment), Some("md")) = (fragment, file.extension().and_then(|e| e.to_str())) {
                if !read(&file).anchors.contains(&fragment) {
                    broken.push(format!("{}: {link}: no heading makes #{fragment}", path.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn no_reference_a_reader_cannot_follow() {
    let mut found = Vec::new();
    for path in documents() {
        let doc = read(&path);
        for gone in ["../shared", "shared/REFERENCE", "seeds/"] {
            if doc.text.contains(gone) {
                found.push(format!("{}: mentions `{gone}`, which is not in the repository", path.display()));
            }
        }
    }
    for path in front_documents() {
        for reference in bare_references(&read(&path).prose) {
            found.push(format!("{}: bare issue reference {reference:?}: link it or say what it was", path.display()));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_lab_page_holds_one_verdict_block() {
    let lab = std::fs::read_to_string(root().join("docs/lab.md")).unwrap();
    let begin: Vec<_> = lab.match_indices("<!-- verdicts:begin -->").collect();
    let end: Vec<_> = lab.match_indices("<!-- verdicts:end -->").collect();
    assert_eq!((begin.len(), end.len()), (1, 1), "docs/lab.md needs one verdicts:begin and one verdicts:end marker");
    let block = &lab[begin[0].0 + "<!-- verdicts:begin -->".len()..end[0].0];
    assert!(block.contains("| Seed |") && block.contains("| Verdict |"), "the verdict block holds no verdict table");
    // The block is the generated table (docs/lab-verdicts.md, which the lab's own test
    // regenerates from the committed full run), not a typed copy of it.
    let generated = std::fs::read_to_string(root().join("docs/lab-verdicts.md")).unwrap();
    let body = generated.split_once('\n').map_or("", |(_, rest)| rest);
    assert_eq!(block.trim(), body.trim(), "docs/lab.md's verdict block differs from docs/lab-verdicts.md");
}

#[test]
fn slugs_are_githubs() {
    let cases = [
        ("Concurrency: the modes", "concurrency-the-modes"),
        ("`prefork`'s shared accept queue", "preforks-shared-accept-queue"),
        ("Run 4 (commit 5b25693): TCP_NOTSENT_LOWAT (plain HTTP)", "run-4-commit-5b25693-tcp_notsent_lowat-plain-http"),
        ("Over TLS: against nginx's OpenSSL", "over-tls-against-nginxs-openssl"),
        ("The lab: `spidey lab`", "the-lab-spidey-lab"),
    ];
    for (heading, anchor) in cases {
        assert_eq!(slug(heading), anchor, "{heading}");
    }
}

#[test]
fn bare_references_are_found() {
    let cases: [(&str, &[&str]); 8] = [
        ("as issue 17 says", &["issue 17 says"]),
        ("Issue 17's goals", &["Issue 17's goals"]),
        ("see issues 15", &["issues 15"]),
        ("Caddy issue #7096", &["issue #7096", "#7096"]),
        ("fixed in #42.", &["#42."]),
        ("the issue is the clock", &[]),
        ("C# and &#38; and file#3", &[]),
        ("reissue 5 times", &[]),
    ];
    for (prose, expected) in cases {
        assert_eq!(bare_references(prose), expected, "{prose}");
    }
}

/// Every `<!-- why:begin RESULTS -->` block (in docs/lab.md) is what `spidey lab --why
/// RESULTS` prints for that committed run, and every `<!-- why-brief:begin RESULTS -->`
/// block (the README's one paragraph) what `spidey lab --why RESULTS --brief` prints: the
/// text saying why the seeds' results differ here is generated from the explain
/// experiments' verdicts, never typed. The README holds the brief form only.
#[test]
fn the_why_it_differs_text_is_generated_from_a_run() {
    let mut found = std::collections::BTreeMap::new();
    for doc in ["README.md", "docs/lab.md"] {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        for (marker, brief) in [("why", false), ("why-brief", true)] {
            let (begin, end_marker) = (format!("<!-- {marker}:begin "), format!("<!-- {marker}:end -->"));
            for (at, _) in text.match_indices(&begin) {
                let head_end = at + text[at..].find("-->").expect("a closed marker");
                let results = text[at + begin.len()..head_end].trim();
                let end = head_end + text[head_end..].find(&end_marker).expect("an end marker");
                let block = text[head_end + 3..end].trim();
                let mut args = vec!["lab", "--why", results];
                if brief {
                    args.push("--brief");
                }
                let out = std::process::Command::new(env!("CARGO_BIN_EXE_spidey"))
                    .current_dir(root())
                    .args(&args)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "spidey {args:?}: {}", String::from_utf8_lossy(&out.stderr));
                let generated = String::from_utf8(out.stdout).unwrap();
                assert!(!generated.trim().is_empty(), "spidey {args:?} printed nothing");
                assert_eq!(
                    block,
                    generated.trim(),
                    "{doc}'s {marker} block for {results} differs from `spidey {args:?}`"
                );
                *found.entry((doc, marker)).or_insert(0) += 1;
            }
        }
    }
    assert_eq!(found.get(&("README.md", "why-brief")), Some(&1), "README.md needs one why-brief block: {found:?}");
    assert_eq!(found.get(&("README.md", "why")), None, "the full why block belongs in docs/lab.md: {found:?}");
    assert!(found.contains_key(&("docs/lab.md", "why")), "docs/lab.md keeps the full why block: {found:?}");
}
