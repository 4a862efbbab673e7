//! The small HTML bodies of error responses, and HTML escaping.

use spidey_http::StatusCode;

/// The rules every page Spidey writes shares (error pages, listings): readable on a phone
/// and a desktop, no external resource.
pub(crate) const STYLE: &str =
    "body{font:15px/1.5 system-ui,sans-serif;margin:2em auto;max-width:60em;padding:0 1em;color:#222}\
h1{font-size:1.3em}a{color:#0645ad;text-decoration:none}a:hover{text-decoration:underline}\
.n,address{color:#777;font-size:.9em;font-style:normal}hr{border:0;border-top:1px solid #eee}";

/// `<!DOCTYPE html>` page naming the status, with one escaped sentence of detail.
pub fn error_page(status: StatusCode, detail: &str) -> Vec<u8> {
    let title = format!("{} {}", status.0, status.reason());
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>{STYLE}</style></head>\n\
         <body><h1>{title}</h1><p>{}</p><hr><address>spidey</address></body></html>\n",
        escape_html(detail)
    )
    .into_bytes()
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_table() {
        let cases = [
            ("plain", "plain"),
            ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
            ("a\"b'c&d", "a&quot;b&#39;c&amp;d"),
        ];
        for (input, want) in cases {
            assert_eq!(escape_html(input), want);
        }
    }
}
