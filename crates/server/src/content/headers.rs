//! `--header 'Name: value'` and `--cache-control VALUE`: fields the operator adds.
//!
//! Both are checked once, at start: a name must be a token and a value free of control
//! bytes (so no value can end a field or the head early), and a name Spidey computes
//! itself (framing, `Content-Type`, `Content-Encoding`, validators, `Date`, `Server`...) is
//! refused rather than sent twice with two meanings. `--header` fields go on every response
//! the server writes whole (files, listings, errors, handler output, 401s, 304s);
//! `--cache-control` only on static files (listings keep `no-cache`).

use spidey_http::field::{is_field_name, is_field_value};

/// Fields Spidey writes itself, which `--header` may not add a second time.
const OWN_FIELDS: [&str; 16] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "trailer",
    "date",
    "server",
    "content-type",
    "content-encoding",
    "content-range",
    "etag",
    "last-modified",
    "location",
    "www-authenticate",
    "x-content-type-options",
];

/// Parses one `--header` value: `Name: value`.
pub fn parse_header(flag: &str) -> Result<(String, String), String> {
    let Some((name, value)) = flag.split_once(':') else {
        return Err(format!("--header {flag:?} is not 'Name: value'"));
    };
    let value = value.trim_matches([' ', '\t']);
    if !is_field_name(name.as_bytes()) {
        return Err(format!("--header {flag:?}: {name:?} is not a valid field name"));
    }
    if !is_field_value(value.as_bytes()) {
        return Err(format!("--header {flag:?}: the value has a control character"));
    }
    if OWN_FIELDS.iter().any(|own| own.eq_ignore_ascii_case(name)) {
        return Err(format!("--header {flag:?}: {name} is a field spidey writes itself"));
    }
    if name.eq_ignore_ascii_case("cache-control") {
        return Err(format!("--header {flag:?}: use --cache-control for static files"));
    }
    Ok((name.to_string(), value.to_string()))
}

/// Checks a `--cache-control` value.
pub fn parse_cache_control(value: &str) -> Result<String, String> {
    if value.is_empty() || !is_field_value(value.as_bytes()) {
        return Err(format!("--cache-control {value:?} is not a valid field value"));
    }
    Ok(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_flag_table() {
        let ok: &[(&str, (&str, &str))] = &[
            ("X-Frame-Options: DENY", ("X-Frame-Options", "DENY")),
            ("X-A:b", ("X-A", "b")),
            (
                "Strict-Transport-Security:  max-age=63072000; includeSubDomains ",
                ("Strict-Transport-Security", "max-age=63072000; includeSubDomains"),
            ),
            ("X-Empty:", ("X-Empty", "")),
        ];
        for (flag, (n, v)) in ok {
            assert_eq!(parse_header(flag), Ok((n.to_string(), v.to_string())), "{flag:?}");
        }
        let bad = [
            ("no colon", "not 'Name: value'"),
            ("Bad Name: x", "not a valid field name"),
            (": x", "not a valid field name"),
            ("X-A: a\r\nSet-Cookie: s=1", "control character"),
            ("X-A: a\nb", "control character"),
            ("X-A: a\u{7f}", "control character"),
            ("Content-Length: 5", "writes itself"),
            ("transfer-encoding: chunked", "writes itself"),
            ("Connection: close", "writes itself"),
            ("Cache-Control: no-store", "--cache-control"),
        ];
        for (flag, why) in bad {
            let e = parse_header(flag).unwrap_err();
            assert!(e.contains(why) && !e.contains('\n'), "{flag:?}: {e}");
        }
    }

    #[test]
    fn cache_control_table() {
        assert_eq!(parse_cache_control("max-age=3600, public"), Ok("max-age=3600, public".into()));
        for bad in ["", "a\r\nb", " x"] {
            assert!(parse_cache_control(bad).is_err(), "{bad:?}");
        }
    }
}
