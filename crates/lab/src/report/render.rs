//! The report's document model and its two renderings: Markdown (`report.md`, plots as SVG
//! files beside it) and a self-contained HTML page (`report.html`: the same SVGs inlined,
//! every piece of text rendered from its Markdown by pulldown-cmark, verdicts coloured).
//!
//! Text read from a run's files (a point's note, the machine's description) is data, never
//! markup: it enters the document through [`literal`], which escapes it as Markdown, and the
//! HTML rendering ([`html`]) writes no raw HTML and no link but to the page itself, a
//! relative file or http(s), whatever Markdown it is given.

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};
use std::fmt::Write as _;

/// The directory beside the report that holds its plots.
pub(crate) const PLOTS: &str = "plots";

/// The most columns a table may have: wider ones do not fit a laptop screen.
pub(crate) const MAX_COLUMNS: usize = 7;

/// A block of the report. Text is Markdown (inline, except in [`Block::Markdown`]).
pub(crate) enum Block {
    /// A heading; its anchor is [`slug`] of its text, in both renderings.
    Heading(u8, String),
    Para(String),
    Table(Table),
    /// An SVG, written as `name` in the output directory's [`PLOTS`].
    Plot {
        name: String,
        title: String,
        svg: String,
    },
    Bullets(Vec<String>),
    /// A section written as Markdown elsewhere (the robustness experiment's); its images
    /// are SVG files in the output directory, inlined in the HTML by `svgs`.
    Markdown {
        text: String,
        svgs: Vec<(String, String)>,
    },
}

/// A table; `classes` gives the cells of one column a CSS class each (the verdict colours).
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub classes: Option<(usize, Vec<&'static str>)>,
}

impl Table {
    pub fn new(headers: Vec<String>, rows: Vec<Vec<String>>) -> Table {
        Table { headers, rows, classes: None }
    }
}

/// Data as Markdown that reads as itself in both renderings: each character Markdown gives
/// a meaning inline (emphasis, code, links, images, raw HTML, entities, strikethrough) is
/// backslash-escaped, and control characters (line breaks, which could start a block)
/// become spaces. A table cell's `|` is escaped by the table.
pub(crate) fn literal(data: &str) -> String {
    let mut md = String::with_capacity(data.len());
    for c in data.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '!' | '&' | '~' => {
                md.push('\\');
                md.push(c);
            }
            c if c.is_control() => md.push(' '),
            c => md.push(c),
        }
    }
    md
}

/// Markdown text with its backslash escapes undone: what [`literal`] and a table cell's `\|`
/// made, read back.
pub(crate) fn unescape(md: &str) -> String {
    let mut text = String::with_capacity(md.len());
    let mut chars = md.chars().peekable();
    while let Some(c) = chars.next() {
        match chars.peek() {
            Some(&next) if c == '\\' && next.is_ascii_punctuation() => {
                text.push(next);
                chars.next();
            }
            _ => text.push(c),
        }
    }
    text
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped (but `-` and
/// `_`), spaces to `-`.
pub(crate) fn slug(text: &str) -> String {
    text.chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

pub(crate) fn markdown(doc: &[Block]) -> String {
    let mut s = String::new();
    for block in doc {
        match block {
            Block::Heading(level, text) => _ = writeln!(s, "{} {text}\n", "#".repeat(usize::from(*level))),
            Block::Para(text) => _ = writeln!(s, "{text}\n"),
            Block::Table(t) => {
                let line = |cells: &[String]| {
                    format!("| {} |", cells.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | "))
                };
                _ = writeln!(s, "{}", line(&t.headers));
                _ = writeln!(s, "|{}", "---|".repeat(t.headers.len()));
                for row in &t.rows {
                    _ = writeln!(s, "{}", line(row));
                }
                s.push('\n');
            }
            Block::Plot { name, title, .. } => _ = writeln!(s, "![{title}]({PLOTS}/{name})\n"),
            Block::Bullets(items) => {
                for item in items {
                    _ = writeln!(s, "- {item}");
                }
                s.push('\n');
            }
            Block::Markdown { text, .. } => _ = writeln!(s, "{}\n", text.trim_end()),
        }
    }
    s
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222;line-height:1.45;overflow-wrap:break-word}\
div.wide{overflow-x:auto;max-width:100%}\
@media (max-width:40rem){table.verdicts td:nth-child(2){min-width:12rem}table.verdicts td[class^=v-]{min-width:6rem}body{margin:1rem auto}}\
table{border-collapse:collapse;margin:1rem 0;font-size:.85rem}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}figure{margin:1.5rem 0}figcaption{color:#555;font-size:.9rem}\
svg{width:100%;height:auto}code{font-size:.9em;background:#f3f3f3;padding:0 .2em;border-radius:3px}\
table.verdicts td,table.verdicts th{text-align:left}table.verdicts td:nth-child(2){min-width:16rem}\
table.verdicts td[class^=v-]{font-weight:600;min-width:8rem}table.verdicts td:nth-child(2) a{color:inherit;text-decoration-color:#aaa}\
.v-reproduced{background:#d8f0d8;color:#155d15}.v-direction{background:#ecf5d0;color:#4d5d10}.v-not{background:#f8d7d7;color:#8a1616}\
.v-level{background:#d9e7f7;color:#1a4b80}.v-inconclusive{background:#e6e6e6;color:#444}.v-client{background:#f6e8d0;color:#7a4a00}.v-muted{color:#888}table.verdicts td.v-muted{font-weight:400}";

pub(crate) fn html(doc: &[Block]) -> String {
    let mut s = format!("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>Spidey lab report</title><style>{STYLE}</style></head><body>\n");
    for block in doc {
        match block {
            Block::Heading(level, text) => {
                _ = writeln!(s, "<h{level} id=\"{}\">{}</h{level}>", slug(text), inline(text));
            }
            Block::Para(text) => s.push_str(&render(text, &[])),
            Block::Table(t) => {
                let verdicts = t.classes.is_some();
                // A wide table scrolls in its own box, not the page (a phone's 400 px).
                s.push_str(if verdicts {
                    "<div class=\"wide\"><table class=\"verdicts\">"
                } else {
                    "<div class=\"wide\"><table>"
                });
                s.push_str("<thead><tr>");
                t.headers.iter().for_each(|h| _ = write!(s, "<th>{}</th>", inline(h)));
                s.push_str("</tr></thead><tbody>\n");
                for (r, row) in t.rows.iter().enumerate() {
                    s.push_str("<tr>");
                    for (c, cell) in row.iter().enumerate() {
                        match &t.classes {
                            Some((col, classes)) if *col == c => {
                                _ = write!(s, "<td class=\"{}\">{}</td>", classes[r], inline(cell));
                            }
                            _ if numeric(cell) => _ = write!(s, "<td class=\"n\">{}</td>", inline(cell)),
                            _ => _ = write!(s, "<td>{}</td>", inline(cell)),
                        }
                    }
                    s.push_str("</tr>\n");
                }
                s.push_str("</tbody></table></div>\n");
            }
            Block::Plot { title, svg, .. } => {
                _ = writeln!(s, "<figure>{}<figcaption>{}</figcaption></figure>", svg_body(svg), inline(title));
            }
            Block::Bullets(items) => {
                s.push_str("<ul>");
                items.iter().for_each(|i| _ = write!(s, "<li>{}</li>", inline(i)));
                s.push_str("</ul>\n");
            }
            Block::Markdown { text, svgs } => s.push_str(&render(text, svgs)),
        }
    }
    s.push_str("</body></html>\n");
    s
}

/// Whether a cell is a number (aligned right): it starts with a digit, or is `–`.
fn numeric(cell: &str) -> bool {
    cell == "–" || cell.starts_with(|c: char| c.is_ascii_digit())
}

/// An SVG document without its XML prologue, for inlining.
fn svg_body(svg: &str) -> &str {
    svg.find("<svg").map(|i| &svg[i..]).unwrap_or(svg)
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH
}

/// Markdown blocks as HTML; an image whose address is one of `svgs` is replaced by that
/// SVG, inlined.
fn render(md: &str, svgs: &[(String, String)]) -> String {
    let mut events = Vec::new();
    let mut in_svg = false;
    for e in inert(Parser::new_ext(md, options())) {
        match e {
            Event::Start(Tag::Image { ref dest_url, .. }) => {
                let url = dest_url.trim_start_matches("./");
                if let Some((_, svg)) = svgs.iter().find(|(name, _)| name == url) {
                    events.push(Event::Html(CowStr::from(format!("<figure>{}</figure>", svg_body(svg)))));
                    in_svg = true;
                } else {
                    events.push(e);
                }
            }
            Event::End(TagEnd::Image) if in_svg => in_svg = false,
            _ if in_svg => {}
            // A wide table scrolls in its own box, as the report's own tables do.
            Event::Start(Tag::Table(_)) => {
                events.push(Event::Html(CowStr::from("<div class=\"wide\">")));
                events.push(e);
            }
            Event::End(TagEnd::Table) => {
                events.push(e);
                events.push(Event::Html(CowStr::from("</div>\n")));
            }
            e => events.push(e),
        }
    }
    name_headings(&mut events);
    let mut out = String::new();
    html::push_html(&mut out, events.into_iter());
    out
}

/// Gives each heading without an id the [`slug`] of its text, as [`Block::Heading`]s have,
/// so a link into a Markdown section lands.
fn name_headings(events: &mut [Event<'_>]) {
    for i in 0..events.len() {
        if !matches!(&events[i], Event::Start(Tag::Heading { id: None, .. })) {
            continue;
        }
        let text: String = events[i + 1..]
            .iter()
            .take_while(|e| !matches!(e, Event::End(TagEnd::Heading(_))))
            .filter_map(|e| match e {
                Event::Text(t) | Event::Code(t) => Some(t.as_ref()),
                _ => None,
            })
            .collect();
        if let Event::Start(Tag::Heading { id, .. }) = &mut events[i] {
            *id = Some(CowStr::from(slug(&text)));
        }
    }
}

/// One line of Markdown as inline HTML (no enclosing paragraph).
pub(crate) fn inline(md: &str) -> String {
    let mut out = String::new();
    let events = inert(Parser::new_ext(md, options()))
        .filter(|e| !matches!(e, Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph)));
    html::push_html(&mut out, events);
    out.trim_end().to_string()
}

/// Markdown's events with nothing left that could run in a browser: raw HTML becomes text
/// (escaped when written), and a link or an image whose address is not [`safe_address`]
/// becomes its text alone.
fn inert<'a>(events: impl Iterator<Item = Event<'a>>) -> impl Iterator<Item = Event<'a>> {
    let (mut unsafe_link, mut unsafe_image) = (false, false);
    events.filter_map(move |e| match e {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link { ref dest_url, .. }) if !safe_address(dest_url) => {
            unsafe_link = true;
            None
        }
        Event::End(TagEnd::Link) if unsafe_link => {
            unsafe_link = false;
            None
        }
        Event::Start(Tag::Image { ref dest_url, .. }) if !safe_address(dest_url) => {
            unsafe_image = true;
            None
        }
        Event::End(TagEnd::Image) if unsafe_image => {
            unsafe_image = false;
            None
        }
        e => Some(e),
    })
}

/// Whether a link may point there: into the page (`#…`), at a relative file, or over
/// http(s). Anything before a `:` that comes ahead of any `/`, `?` or `#` is a scheme, and
/// only `http` and `https` are kept (`javascript:`, `data:`, ` javascript:` are not).
fn safe_address(url: &str) -> bool {
    match url.find([':', '/', '?', '#']) {
        Some(at) if url[at..].starts_with(':') => {
            let scheme = &url[..at];
            scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_table() {
        let cases = [
            ("000-fork: How forking affects latency", "000-fork-how-forking-affects-latency"),
            ("Verdicts on the seeds' claims", "verdicts-on-the-seeds-claims"),
            ("1 KB file, 4 connections, 2 s", "1-kb-file-4-connections-2-s"),
        ];
        for (text, want) in cases {
            assert_eq!(slug(text), want);
        }
    }

    #[test]
    fn inline_markdown_is_rendered_not_escaped() {
        let cases = [
            ("spidey's `--metrics`", "spidey's <code>--metrics</code>"),
            ("[000](#000-fork)", "<a href=\"#000-fork\">000</a>"),
            ("**breaks at N = 16**", "<strong>breaks at N = 16</strong>"),
            ("1.2× [1.1–1.3] & more", "1.2× [1.1–1.3] &amp; more"),
        ];
        for (md, want) in cases {
            assert_eq!(inline(md), want);
        }
    }

    /// Regression (audit M5): data with markup in it reads as itself in both renderings,
    /// and comes back whole from the Markdown (bar its line breaks, made spaces).
    #[test]
    fn data_is_literal_in_both_renderings() {
        let cases = [
            ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
            ("\" onmouseover=\"x", "\" onmouseover=\"x"),
            ("[click](javascript:alert(1))", "[click](javascript:alert(1))"),
            ("](javascript:x)", "](javascript:x)"),
            ("<img src=x onerror=y>", "&lt;img src=x onerror=y&gt;"),
            ("<javascript:alert(2)>", "&lt;javascript:alert(2)&gt;"),
            ("**bold** `code` ~~gone~~ &amp; \\", "**bold** `code` ~~gone~~ &amp;amp; \\"),
            ("a line\n\n<b>x</b>", "a line  &lt;b&gt;x&lt;/b&gt;"),
        ];
        for (data, html) in cases {
            let md = literal(data);
            assert_eq!(inline(&md), html, "{data:?}");
            assert_eq!(unescape(&md), data.replace('\n', " "), "{data:?}");
        }
    }

    /// Regression (audit M5): whatever Markdown the HTML is rendered from, it gets no raw
    /// HTML and no link but into the page, to a relative file or over http(s).
    #[test]
    fn html_has_no_raw_html_and_only_safe_links() {
        let cases = [
            ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
            ("x <img src=x onerror=y>", "x &lt;img src=x onerror=y&gt;"),
            ("[click](javascript:alert(1))", "click"),
            ("[click]( JavaScript:alert(1))", "click"),
            ("[click](<javascript:alert(1)>)", "click"),
            ("<javascript:alert(1)>", "javascript:alert(1)"),
            ("![x](data:image/svg+xml,y)", "x"),
            ("[000](#000-fork)", "<a href=\"#000-fork\">000</a>"),
            ("[run](runs/x.md)", "<a href=\"runs/x.md\">run</a>"),
            ("[seed](https://example.org/a:b)", "<a href=\"https://example.org/a:b\">seed</a>"),
        ];
        for (md, html) in cases {
            assert_eq!(inline(md), html, "{md:?}");
        }
        let block = render("<div onmouseover=\"x\">\n<script>alert(1)</script>\n</div>\n", &[]);
        assert!(!block.contains("<script") && !block.contains("<div"), "{block}");
    }

    #[test]
    fn markdown_images_of_known_svgs_are_inlined() {
        let svgs = vec![("a.svg".to_string(), "<?xml version=\"1.0\"?><svg>x</svg>".to_string())];
        let got = render("Text\n\n![chart](./a.svg)\n\n![other](b.png)\n", &svgs);
        assert!(got.contains("<figure><svg>x</svg></figure>"), "{got}");
        assert!(got.contains("<img src=\"b.png\""), "{got}");
        assert!(!got.contains("chart"), "the alt text goes with the image: {got}");
    }

    #[test]
    fn markdown_headings_get_their_slug_as_id() {
        let got = render("## What breaks `single`\n\n### Mixed {#own}\n", &[]);
        assert!(got.contains("<h2 id=\"what-breaks-single\">What breaks <code>single</code></h2>"), "{got}");
        assert!(got.contains("<h3>Mixed {#own}</h3>") || got.contains("id=\"mixed-own\""), "{got}");
    }
}
