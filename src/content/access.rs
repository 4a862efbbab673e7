//! Who may read: `--basic-auth` (RFC 7617) and `--cors` (the Fetch standard's CORS protocol).
//!
//! **Basic auth.** `--basic-auth user:HASH` (repeatable) with a SHA-crypt hash, `$6$`
//! (SHA-512, as `mkpasswd -m sha-512` or `openssl passwd -6` make) or `$5$` (SHA-256),
//! checked by the RustCrypto `sha-crypt` crate. Every request (static files, listings, CGI,
//! handlers) needs `Authorization: Basic` with a listed user and its password, else 401
//! with `WWW-Authenticate: Basic realm="spidey", charset="UTF-8"`. The user name is
//! compared with every listed name in constant time (`subtle`), and a password is always
//! hashed, against the first user's hash when the name is unknown, so the time taken does
//! not tell which names exist. Hashing is deliberately slow (5000 rounds by default, about
//! 1.2 ms in a release build), so a credential that passed is remembered: a keyed SHA-256
//! of the whole `Authorization` value, at most [`REMEMBERED`] of them per process, so a
//! client sending the same credentials again pays one SHA-256, not the rounds again.
//! Failures are never remembered: every wrong guess costs the full rounds.
//! Plain HTTP carries the password in the clear; see SECURITY.md.
//!
//! **CORS.** `--cors '*'` or `--cors https://a.example,https://b.example`: a response to a
//! request with an `Origin` gets `Access-Control-Allow-Origin` (`*`, or the origin itself
//! when it is listed, with `Vary: Origin` on every response so caches keep them apart). A
//! preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered 204
//! with `Access-Control-Allow-Methods: GET, HEAD`, before authentication (browsers send
//! preflights without credentials). No `Access-Control-Allow-Credentials` is ever sent.

use super::compress::add_vary;
use super::Response;
use base64::Engine;
use spidey_http::{Method, Request, StatusCode};
use subtle::ConstantTimeEq;

/// The realm in `WWW-Authenticate`.
const REALM: &str = "spidey";

/// How many accepted credentials a process remembers (then it forgets them all).
const REMEMBERED: usize = 64;

/// The users `--basic-auth` lists.
#[derive(Debug, Default)]
pub struct BasicAuth {
    /// INVARIANT: at least one user, each hash a well-formed `$5$` or `$6$` SHA-crypt hash.
    users: Vec<(String, String)>,
    /// Keyed digests of `Authorization` values that passed (see the module docs).
    accepted: std::sync::Mutex<Vec<[u8; 32]>>,
    /// The digest's key: random per process start, so the digests say nothing elsewhere.
    key: [u8; 16],
}

impl BasicAuth {
    /// Builds the list from `--basic-auth user:HASH` values; `None` when there are none.
    pub fn parse(flags: &[String]) -> Result<Option<BasicAuth>, String> {
        let mut users = Vec::new();
        for flag in flags {
            let Some((user, hash)) = flag.split_once(':') else {
                return Err("--basic-auth takes user:HASH (a $6$ or $5$ SHA-crypt hash)".into());
            };
            if user.is_empty() || user.bytes().any(|b| b.is_ascii_control()) {
                return Err(format!("--basic-auth: {user:?} is not a valid user name"));
            }
            if !well_formed(hash) {
                return Err(format!(
                    "--basic-auth {user}: the hash is not a $6$ or $5$ SHA-crypt hash (make one with: mkpasswd -m sha-512)"
                ));
            }
            users.push((user.to_string(), hash.to_string()));
        }
        let mut key = [0u8; 16];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").map_err(|e| e.to_string())?, &mut key)
            .map_err(|e| format!("--basic-auth: no random key from /dev/urandom: {e}"))?;
        Ok((!users.is_empty()).then(|| BasicAuth { users, accepted: Default::default(), key }))
    }

    /// Whether an `Authorization` value names a listed user with the right password.
    pub fn allows(&self, authorization: Option<&[u8]>) -> bool {
        let Some(value) = authorization else { return false };
        let digest = self.digest(value);
        let remembered = self.accepted.lock().unwrap_or_else(|e| e.into_inner());
        if remembered.iter().any(|d| bool::from(d.ct_eq(&digest))) {
            return true;
        }
        drop(remembered);
        let ok = self.check_credentials(value);
        if ok {
            let mut remembered = self.accepted.lock().unwrap_or_else(|e| e.into_inner());
            if remembered.len() >= REMEMBERED {
                remembered.clear();
            }
            remembered.push(digest);
        }
        ok
    }

    fn digest(&self, value: &[u8]) -> [u8; 32] {
        use sha2::Digest;
        sha2::Sha256::new().chain_update(self.key).chain_update(value).finalize().into()
    }

    /// The slow check: the user name in constant time, then the password's hash.
    fn check_credentials(&self, value: &[u8]) -> bool {
        let Some((user, password)) = credentials(value) else {
            return false;
        };
        let mut found = subtle::Choice::from(0);
        let mut hash = &self.users[0].1;
        for (name, h) in &self.users {
            let same = name.as_bytes().ct_eq(user.as_bytes());
            found |= same;
            if bool::from(same) {
                hash = h;
            }
        }
        let password_ok = check(hash, &password);
        bool::from(found) && password_ok
    }

    /// The 401 answer.
    pub fn challenge() -> Response {
        let mut r = Response::error(StatusCode::UNAUTHORIZED, "This server needs a user name and password.");
        r.fields.push(("WWW-Authenticate", format!("Basic realm=\"{REALM}\", charset=\"UTF-8\"")));
        r
    }
}

/// Whether `password` hashes to `hash` (checked [`well_formed`] at start).
fn check(hash: &str, password: &str) -> bool {
    if hash.starts_with("$6$") {
        sha_crypt::sha512_check(password, hash).is_ok()
    } else {
        sha_crypt::sha256_check(password, hash).is_ok()
    }
}

/// `$6$[rounds=N$]SALT$HASH` (86 characters of hash) or `$5$...` (43), as crypt(3) writes
/// them: the salt at most 16 characters, N from 1000 to 999,999,999, and both in crypt's
/// base-64 alphabet. (sha-crypt's check does not say whether it failed on the format or
/// the password, so the format is checked here, once.)
fn well_formed(hash: &str) -> bool {
    let b64 = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'/');
    let mut parts: Vec<&str> = hash.split('$').collect();
    let hash_len = match parts.get(1) {
        Some(&"6") => 86,
        Some(&"5") => 43,
        _ => return false,
    };
    if parts.len() == 5 {
        let rounds = parts.remove(2).strip_prefix("rounds=").and_then(|n| n.parse::<u32>().ok());
        if !rounds.is_some_and(|n| (1000..=999_999_999).contains(&n)) {
            return false;
        }
    }
    matches!(parts[..], ["", _, salt, digest] if salt.len() <= 16 && b64(salt) && digest.len() == hash_len && b64(digest))
}

/// `Basic base64(user:password)` → user and password (RFC 7617 §2); the scheme is
/// case-insensitive, the password may hold colons, both must be UTF-8.
fn credentials(value: &[u8]) -> Option<(String, String)> {
    let value = spidey_http::field::trim_ows(value);
    let (scheme, token) = value.split_at(value.iter().position(|&b| b == b' ')?);
    if !scheme.eq_ignore_ascii_case(b"basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(spidey_http::field::trim_ows(token)).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// The origins `--cors` allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cors {
    /// `*`: any origin, answered with `*`.
    Any,
    /// These origins (`scheme://host[:port]`), each answered with itself.
    Listed(Vec<String>),
}

impl Cors {
    pub fn parse(flag: &str) -> Result<Cors, String> {
        if flag.trim() == "*" {
            return Ok(Cors::Any);
        }
        let mut origins = Vec::new();
        for origin in flag.split(',').map(str::trim) {
            let Some((scheme, host)) = origin.split_once("://") else {
                return Err(format!("--cors: {origin:?} is not an origin (scheme://host[:port]) or *"));
            };
            let valid = matches!(scheme, "http" | "https")
                && !host.is_empty()
                && host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
            if !valid {
                return Err(format!("--cors: {origin:?} is not an origin (scheme://host[:port]) or *"));
            }
            origins.push(origin.to_ascii_lowercase());
        }
        Ok(Cors::Listed(origins))
    }

    /// The `Access-Control-Allow-Origin` value for a request's `Origin`, if it is allowed.
    fn allow(&self, origin: Option<&[u8]>) -> Option<String> {
        let origin = origin?;
        match self {
            Cors::Any => Some("*".into()),
            Cors::Listed(list) => {
                let origin = std::str::from_utf8(origin).ok()?;
                list.iter().any(|o| o.eq_ignore_ascii_case(origin)).then(|| origin.to_string())
            }
        }
    }

    /// The answer to a preflight, or `None` if `req` is not one.
    pub fn preflight(&self, req: &Request<'_, '_>) -> Option<Response> {
        if req.method != Method::Options || req.header("access-control-request-method").is_none() {
            return None;
        }
        let origin = req.header("origin")?;
        let mut r = Response::new(StatusCode::NO_CONTENT, Vec::new(), super::Body::Empty);
        if self.allow(Some(origin)).is_some() {
            r.fields.push(("Access-Control-Allow-Methods", "GET, HEAD".into()));
            r.fields.push(("Access-Control-Allow-Headers", "Range, If-None-Match, If-Modified-Since, If-Range".into()));
            r.fields.push(("Access-Control-Max-Age", "86400".into()));
        }
        Some(r)
    }

    /// Adds `Access-Control-Allow-Origin` (and `Vary: Origin` for a list) to a response.
    pub fn decorate(&self, req: &Request<'_, '_>, response: &mut Response) {
        if let Some(value) = self.allow(req.header("origin")) {
            response.fields.push(("Access-Control-Allow-Origin", value));
        }
        if let Cors::Listed(_) = self {
            add_vary(&mut response.fields, "Origin");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mkpasswd -m sha-512 --rounds=1000 secret saltsalt`, made with sha-crypt's own
    /// function in the test below and checked against it.
    fn hash(password: &str) -> String {
        let params = sha_crypt::Sha512Params::new(1000).unwrap();
        sha_crypt::sha512_simple(password, &params).unwrap()
    }

    fn basic(user_pass: &str) -> Vec<u8> {
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(user_pass)).into_bytes()
    }

    #[test]
    fn basic_auth_table() {
        let auth =
            BasicAuth::parse(&[format!("ann:{}", hash("s3cr:et")), format!("bob:{}", hash("pw"))]).unwrap().unwrap();
        let cases: &[(Option<Vec<u8>>, bool)] = &[
            (None, false),
            (Some(basic("ann:s3cr:et")), true),
            (Some(basic("bob:pw")), true),
            (Some(basic("ann:pw")), false),
            (Some(basic("bob:s3cr:et")), false),
            (Some(basic("eve:pw")), false),
            (Some(basic("ann")), false),
            (Some(basic(":")), false),
            (Some(b"basic YW5uOnMzY3I6ZXQ=".to_vec()), true),
            (Some(b"Bearer YW5uOnMzY3I6ZXQ=".to_vec()), false),
            (Some(b"Basic !!notbase64".to_vec()), false),
            (Some(b"Basic".to_vec()), false),
        ];
        // Twice: the second round answers accepted credentials from memory.
        for _ in 0..2 {
            for (header, want) in cases {
                assert_eq!(
                    auth.allows(header.as_deref()),
                    *want,
                    "{:?}",
                    header.as_deref().map(String::from_utf8_lossy)
                );
            }
        }
        let remembered = auth.accepted.lock().unwrap().len();
        assert_eq!(remembered, 3, "the three accepted values, each once; failures never");
    }

    #[test]
    fn basic_auth_flag_table() {
        assert!(BasicAuth::parse(&[]).unwrap().is_none());
        let sha256 = sha_crypt::sha256_simple("pw", &sha_crypt::Sha256Params::new(1000).unwrap()).unwrap();
        assert!(BasicAuth::parse(&[format!("u:{sha256}")]).unwrap().unwrap().allows(Some(&basic("u:pw"))));
        let good = hash("pw");
        let (head, digest) = good.rsplit_once('$').unwrap();
        let short = format!("u:{head}${}", &digest[1..]);
        let few_rounds = format!("u:{}", good.replace("rounds=1000", "rounds=10"));
        for bad in ["nocolon", "u:plaintext", "u:$1$abc$def", ":$6$x$y", "u:", &short, &few_rounds] {
            let e = BasicAuth::parse(&[bad.to_string()]).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn cors_flag_table() {
        assert_eq!(Cors::parse("*"), Ok(Cors::Any));
        assert_eq!(
            Cors::parse("https://a.example, http://B.example:8080"),
            Ok(Cors::Listed(vec!["https://a.example".into(), "http://b.example:8080".into()]))
        );
        for bad in ["", "a.example", "https://", "ftp://a", "https://a/path", "https://a\r\nX: y"] {
            assert!(Cors::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn cors_allow_table() {
        let listed = Cors::parse("https://a.example").unwrap();
        let cases: &[(&Cors, Option<&str>, Option<&str>)] = &[
            (&Cors::Any, Some("https://x"), Some("*")),
            (&Cors::Any, None, None),
            (&listed, Some("https://a.example"), Some("https://a.example")),
            (&listed, Some("https://A.example"), Some("https://A.example")),
            (&listed, Some("https://b.example"), None),
            (&listed, Some("https://a.example.evil"), None),
            (&listed, None, None),
        ];
        for (cors, origin, want) in cases {
            assert_eq!(cors.allow(origin.map(str::as_bytes)).as_deref(), *want, "{cors:?} {origin:?}");
        }
    }
}
