//! Who may read: `--basic-auth` (RFC 7617) and `--cors` (the Fetch standard's CORS protocol).
//!
//! **Basic auth.** `--basic-auth user:HASH` (repeatable) and the lines of
//! `--basic-auth-file` (an htpasswd file: `user:HASH` per line, `#` comments and blank
//! lines skipped) with a SHA-crypt hash, `$6$` (SHA-512, as `mkpasswd -m sha-512` or
//! `openssl passwd -6` make) or `$5$` (SHA-256), checked by the RustCrypto `sha-crypt`
//! crate, or a bcrypt hash, `$2y$`, `$2b$` or `$2a$` (as `htpasswd -B` and Caddy make),
//! checked by the `bcrypt` crate, of cost at most [`MAX_BCRYPT_COST`]. Other htpasswd
//! formats (`$apr1$` MD5, `{SHA}`, DES crypt) are weak and refused at start. Every request (static files, listings, CGI,
//! handlers) needs `Authorization: Basic` with a listed user and its password, else 401
//! with `WWW-Authenticate: Basic realm="spidey", charset="UTF-8"`. The user name is
//! compared with every listed name in constant time (`subtle`), and a password is always
//! hashed, against the first user's hash when the name is unknown, so the time taken does
//! not tell which names exist when every user's hash has the same kind and cost (a start
//! warns when they differ: [`BasicAuth::uneven_costs`]). Hashing is deliberately slow (5000
//! rounds by default, about 1.2 ms in a release build), so a credential that passed is
//! remembered: a keyed SHA-256 of the whole `Authorization` value, at most [`REMEMBERED`]
//! of them for the whole server, so a client sending the same credentials again pays one
//! SHA-256, not the rounds again. bcrypt reads at most 72 bytes of a password.
//! Failures are never remembered: every wrong guess costs the full rounds.
//!
//! A guess's cost is bounded: SHA-crypt's work grows with the password's length, so
//! credentials longer than [`MAX_CREDENTIALS`] bytes (`user:password`, decoded) are
//! refused (401) before any hashing, and the longest that is hashed costs a few times a
//! short one; a hash dearer than about a quarter of a second is refused at start (bcrypt
//! cost above [`MAX_BCRYPT_COST`], SHA-crypt `rounds=` above [`MAX_SHA_ROUNDS`]). Guesses
//! are limited per guesser (`auth_limit`): a guess takes its place in the counts of its
//! user name and its address before it is hashed, so simultaneous guesses cannot
//! overshoot; past a limit the answer is 429 with `Retry-After` and nothing is hashed.
//! Credentials that passed are remembered in a table shared by every process of the
//! server (mapped before any fork), so a user who has logged in keeps getting in, in every
//! mode, while their address is limited. Where answering happens on an event loop
//! (`event`, `uring`, `hybrid`), a password that must be hashed is checked on a worker
//! pool ([`BasicAuth::must_hash`]), never on the loop. Plain HTTP carries the password in
//! the clear; see SECURITY.md.
//!
//! **CORS.** `--cors '*'` or `--cors https://a.example,https://b.example`: a response to a
//! request with an `Origin` gets `Access-Control-Allow-Origin` (`*`, or the origin itself
//! when it is listed, with `Vary: Origin` on every response so caches keep them apart). A
//! preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered 204
//! with `Access-Control-Allow-Methods: GET, HEAD`, before authentication (browsers send
//! preflights without credentials). No `Access-Control-Allow-Credentials` is ever sent.

use super::auth_limit::Failures;
use super::compress::add_vary;
use super::Response;
use base64::Engine;
use spidey_http::{Method, Request, StatusCode};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use subtle::ConstantTimeEq;

/// The realm in `WWW-Authenticate`.
const REALM: &str = "spidey";

/// How many accepted credentials the server remembers, in all its processes together (then
/// a new one replaces the oldest).
const REMEMBERED: usize = 256;

/// The highest bcrypt cost accepted: every wrong password costs a full hash (2^12 rounds,
/// about a quarter of a second), so a dearer hash would let anyone without the password
/// buy seconds of CPU with a few requests. (Caddy's `hash-password` makes cost 14: make
/// one with `htpasswd -nB -C 12 USER` instead.)
pub const MAX_BCRYPT_COST: u32 = 12;

/// The most SHA-crypt rounds accepted (`$6$rounds=N$`): about a quarter of a second, as
/// [`MAX_BCRYPT_COST`]. The default (no `rounds=`) is 5000.
pub const MAX_SHA_ROUNDS: u32 = 1_000_000;

/// The longest `user:password` (decoded, in bytes) that is checked; longer ones are 401
/// without hashing. SHA-crypt's cost grows with the password's length.
pub const MAX_CREDENTIALS: usize = 256;

/// What [`BasicAuth::check`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// 401: no credentials, or wrong ones.
    Denied,
    /// 429: too many wrong guesses from this address; this many seconds to wait.
    Limited {
        retry_after: u64,
    },
}

/// The users `--basic-auth` lists.
#[derive(Debug, Default)]
pub struct BasicAuth {
    /// INVARIANT: at least one user, each hash [`well_formed`].
    users: Vec<(String, String)>,
    /// Keyed digests of `Authorization` values that passed (see the module docs).
    accepted: Remembered,
    /// The digest's key: random per process start, so the digests say nothing elsewhere.
    key: [u8; 16],
    /// Recent failed guesses by client address, shared by every process of the server.
    failures: Option<Failures>,
}

impl BasicAuth {
    /// Builds the list from `--basic-auth user:HASH` values; `None` when there are none.
    pub fn parse(flags: &[String]) -> Result<Option<BasicAuth>, String> {
        let mut users = Vec::new();
        for flag in flags {
            let (user, hash) = parse_user("--basic-auth", flag)?;
            users.push((user.to_string(), hash.to_string()));
        }
        let mut key = [0u8; 16];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").map_err(|e| e.to_string())?, &mut key)
            .map_err(|e| format!("--basic-auth: no random key from /dev/urandom: {e}"))?;
        if users.is_empty() {
            return Ok(None);
        }
        let failures = Failures::new().map_err(|e| format!("--basic-auth: no shared table of failed guesses: {e}"))?;
        let accepted = Remembered::new().map_err(|e| format!("--basic-auth: no shared table of credentials: {e}"))?;
        Ok(Some(BasicAuth { users, accepted, key, failures: Some(failures) }))
    }

    /// A warning for the operator when the users' hashes differ in kind or cost: a wrong
    /// password for an unknown name is checked against the first user's hash, so the time
    /// an answer takes then tells some names from others.
    pub fn uneven_costs(&self) -> Option<String> {
        let costs: Vec<String> = self.users.iter().map(|(user, hash)| format!("{user}: {}", cost_of(hash))).collect();
        let first = cost_of(&self.users[0].1);
        let uneven = self.users.iter().any(|(_, hash)| cost_of(hash) != first);
        uneven.then(|| {
            format!(
                "--basic-auth: the users' hashes differ in kind or cost ({}): the time a wrong password takes tells which user names exist; give every user the same kind and cost",
                costs.join(", ")
            )
        })
    }

    /// Whether checking `authorization` would hash a password: credentials given, not
    /// remembered. Costs one keyed SHA-256 and a look at the shared table; event loops send
    /// such a request to a worker pool.
    pub fn must_hash(&self, authorization: Option<&[u8]>) -> bool {
        authorization.is_some_and(|value| !self.accepted.holds(&self.digest(value)))
    }

    /// Whether an `Authorization` value from `peer` names a listed user with the right
    /// password. A guess takes its place in the counts of its user name and its address
    /// before it is hashed, and gives it back if it was right.
    pub fn check(&self, authorization: Option<&[u8]>, peer: IpAddr) -> Verdict {
        let Some(value) = authorization else { return Verdict::Denied };
        let digest = self.digest(value);
        if self.accepted.holds(&digest) {
            return Verdict::Allowed;
        }
        let Some((user, password)) = credentials(value) else { return Verdict::Denied };
        let reservation = match self.failures.as_ref().map(|f| f.reserve(peer, &user, Failures::now())) {
            Some(Err(retry_after)) => return Verdict::Limited { retry_after },
            Some(Ok(reservation)) => Some(reservation),
            None => None,
        };
        if !self.check_credentials(&user, &password) {
            return Verdict::Denied;
        }
        if let (Some(failures), Some(reservation)) = (&self.failures, reservation) {
            failures.give_back(reservation);
        }
        self.accepted.insert(&digest);
        Verdict::Allowed
    }

    fn digest(&self, value: &[u8]) -> [u8; 32] {
        use sha2::Digest;
        sha2::Sha256::new().chain_update(self.key).chain_update(value).finalize().into()
    }

    /// The slow check: the user name in constant time, then the password's hash.
    fn check_credentials(&self, user: &str, password: &str) -> bool {
        let mut found = subtle::Choice::from(0);
        let mut hash = &self.users[0].1;
        for (name, h) in &self.users {
            let same = name.as_bytes().ct_eq(user.as_bytes());
            found |= same;
            if bool::from(same) {
                hash = h;
            }
        }
        let password_ok = check(hash, password);
        bool::from(found) && password_ok
    }

    /// The 401 answer.
    pub fn challenge() -> Response {
        let mut r = Response::error(StatusCode::UNAUTHORIZED, "This server needs a user name and password.");
        r.fields.push(("WWW-Authenticate", format!("Basic realm=\"{REALM}\", charset=\"UTF-8\"").into()));
        r
    }

    /// The answer to a request [`BasicAuth::check`] did not allow.
    pub fn refusal(verdict: Verdict) -> Response {
        match verdict {
            Verdict::Limited { retry_after } => {
                let mut r =
                    Response::error(StatusCode::TOO_MANY_REQUESTS, "Too many wrong passwords: try again later.");
                r.fields.push(("Retry-After", retry_after.to_string().into()));
                r
            }
            _ => BasicAuth::challenge(),
        }
    }
}

/// Credentials that passed, as keyed digests cut to 128 bits, in [`REMEMBERED`] slots of
/// two words each, mapped shared before any fork (`spidey_sys::shared`) so `fork`'s
/// connection processes and `prefork`'s workers see what any of them accepted; a new one
/// takes the next slot round the table (the first word of the table says which).
///
/// INVARIANT: a slot's first word is 0 (empty, never a digest's: its low bit is set) or
/// the first half of the digest whose second half is in its second word, except while
/// [`Remembered::insert`] rewrites it: the first word is cleared first and set last, and
/// [`Remembered::holds`] reads it before and after the second, so a half-written slot
/// never matches.
#[derive(Debug, Default)]
struct Remembered {
    words: &'static [AtomicU64],
}

impl Remembered {
    fn new() -> std::io::Result<Remembered> {
        Ok(Remembered { words: spidey_sys::shared::shared_counters(1 + 2 * REMEMBERED)? })
    }

    /// The two words a digest is kept as.
    fn halves(digest: &[u8; 32]) -> (u64, u64) {
        let word = |i: usize| u64::from_le_bytes(digest[i..i + 8].try_into().expect("8 bytes"));
        (word(0) | 1, word(8))
    }

    fn holds(&self, digest: &[u8; 32]) -> bool {
        let (a, b) = Remembered::halves(digest);
        self.words
            .get(1..)
            .unwrap_or_default()
            .chunks_exact(2)
            .any(|slot| slot[0].load(Relaxed) == a && slot[1].load(Relaxed) == b && slot[0].load(Relaxed) == a)
    }

    fn insert(&self, digest: &[u8; 32]) {
        let Some((next, slots)) = self.words.split_first() else { return };
        let (a, b) = Remembered::halves(digest);
        let i = (next.fetch_add(1, Relaxed) as usize % REMEMBERED) * 2;
        slots[i].store(0, Relaxed);
        slots[i + 1].store(b, Relaxed);
        slots[i].store(a, Relaxed);
    }
}

/// A hash's kind and cost, for [`BasicAuth::uneven_costs`].
fn cost_of(hash: &str) -> String {
    if let Some(cost) = bcrypt_cost(hash) {
        return format!("bcrypt cost {cost}");
    }
    let kind = if hash.starts_with("$6$") { "SHA-512-crypt" } else { "SHA-256-crypt" };
    let rounds = hash.split('$').nth(2).and_then(|p| p.strip_prefix("rounds=")).unwrap_or("5000");
    format!("{kind} {rounds} rounds")
}

/// Checks one `user:HASH` (`what` names where it came from, for the message).
fn parse_user<'a>(what: &str, entry: &'a str) -> Result<(&'a str, &'a str), String> {
    let Some((user, hash)) = entry.split_once(':') else {
        return Err(format!("{what} takes user:HASH (a $6$ or $5$ SHA-crypt or $2y$ bcrypt hash)"));
    };
    if user.is_empty() || user.bytes().any(|b| b.is_ascii_control()) {
        return Err(format!("{what}: {user:?} is not a valid user name"));
    }
    if bcrypt_cost(hash).is_some_and(|cost| cost > MAX_BCRYPT_COST) {
        return Err(format!(
            "{what} {user}: bcrypt cost above {MAX_BCRYPT_COST} (each wrong password would cost too much; make one with: htpasswd -nB -C 10 {user})"
        ));
    }
    if sha_rounds(hash).is_some_and(|rounds| rounds > MAX_SHA_ROUNDS) {
        return Err(format!(
            "{what} {user}: SHA-crypt rounds above {MAX_SHA_ROUNDS} (each wrong password would cost too much; make one with: mkpasswd -m sha-512 -R 5000)"
        ));
    }
    if !well_formed(hash) {
        return Err(format!(
            "{what} {user}: the hash is not a $6$/$5$ SHA-crypt or $2y$/$2b$ bcrypt hash (make one with: htpasswd -nB {user}, or mkpasswd -m sha-512)"
        ));
    }
    Ok((user, hash))
}

/// The `user:HASH` lines of an htpasswd file (`--basic-auth-file`), checked, without
/// comments and blank lines; `name` is the file's, for messages.
pub fn parse_htpasswd(name: &str, text: &str) -> Result<Vec<String>, String> {
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        parse_user(&format!("--basic-auth-file {name} line {}", i + 1), line)?;
        entries.push(line.to_string());
    }
    if entries.is_empty() {
        return Err(format!("--basic-auth-file {name}: no user:HASH line"));
    }
    Ok(entries)
}

/// Whether `password` hashes to `hash` (checked [`well_formed`] at start).
fn check(hash: &str, password: &str) -> bool {
    if hash.starts_with("$6$") {
        sha_crypt::sha512_check(password, hash).is_ok()
    } else if hash.starts_with("$5$") {
        sha_crypt::sha256_check(password, hash).is_ok()
    } else {
        // Truncating at 72 bytes, as htpasswd's own bcrypt does.
        bcrypt::verify(password, hash).unwrap_or(false)
    }
}

/// The cost of a `$2y$`, `$2b$` or `$2a$` bcrypt hash, if `hash` is one.
fn bcrypt_cost(hash: &str) -> Option<u32> {
    let rest = hash.strip_prefix("$2y$").or_else(|| hash.strip_prefix("$2b$")).or_else(|| hash.strip_prefix("$2a$"))?;
    rest.get(..2)?.parse().ok()
}

/// The `rounds=` of a SHA-crypt hash that names them.
fn sha_rounds(hash: &str) -> Option<u32> {
    let mut parts = hash.split('$');
    matches!((parts.next(), parts.next()), (Some(""), Some("5" | "6")))
        .then(|| parts.next()?.strip_prefix("rounds=")?.parse().ok())
        .flatten()
}

/// A bcrypt hash of an accepted cost ([`bcrypt_cost`]), or
/// `$6$[rounds=N$]SALT$HASH` (86 characters of hash) or `$5$...` (43), as crypt(3) writes
/// them: the salt at most 16 characters, N from 1000 to [`MAX_SHA_ROUNDS`], and both in crypt's
/// base-64 alphabet. (sha-crypt's check does not say whether it failed on the format or
/// the password, so the format is checked here, once.)
fn well_formed(hash: &str) -> bool {
    if let Some(cost) = bcrypt_cost(hash) {
        // `$2y$NN$` and 53 characters of salt and hash, which the crate parses.
        return (4..=MAX_BCRYPT_COST).contains(&cost) && hash.parse::<bcrypt::HashParts>().is_ok();
    }
    let b64 = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'/');
    let mut parts: Vec<&str> = hash.split('$').collect();
    let hash_len = match parts.get(1) {
        Some(&"6") => 86,
        Some(&"5") => 43,
        _ => return false,
    };
    if parts.len() == 5 {
        let rounds = parts.remove(2).strip_prefix("rounds=").and_then(|n| n.parse::<u32>().ok());
        if !rounds.is_some_and(|n| (1000..=MAX_SHA_ROUNDS).contains(&n)) {
            return false;
        }
    }
    matches!(parts[..], ["", _, salt, digest] if salt.len() <= 16 && b64(salt) && digest.len() == hash_len && b64(digest))
}

/// `Basic base64(user:password)` → user and password (RFC 7617 §2); the scheme is
/// case-insensitive, the password may hold colons, both must be UTF-8, and together at
/// most [`MAX_CREDENTIALS`] bytes (a longer token is not even decoded).
fn credentials(value: &[u8]) -> Option<(String, String)> {
    let value = spidey_http::field::trim_ows(value);
    let (scheme, token) = value.split_at(value.iter().position(|&b| b == b' ')?);
    if !scheme.eq_ignore_ascii_case(b"basic") {
        return None;
    }
    let token = spidey_http::field::trim_ows(token);
    if token.len() > MAX_CREDENTIALS.div_ceil(3) * 4 {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(token).ok()?;
    if decoded.len() > MAX_CREDENTIALS {
        return None;
    }
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
            response.fields.push(("Access-Control-Allow-Origin", value.into()));
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
                    auth.check(header.as_deref(), PEER) == Verdict::Allowed,
                    *want,
                    "{:?}",
                    header.as_deref().map(String::from_utf8_lossy)
                );
            }
        }
        let remembered = auth.accepted.words[0].load(Relaxed);
        assert_eq!(remembered, 3, "the three accepted values, each once; failures never");
    }

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    /// Credentials are checked up to [`MAX_CREDENTIALS`] bytes: longer ones are refused
    /// unhashed, even when the password is right.
    #[test]
    fn credential_length_table() {
        let fits = "p".repeat(MAX_CREDENTIALS - "ann:".len());
        let over = "p".repeat(MAX_CREDENTIALS - "ann:".len() + 1);
        let auth = BasicAuth::parse(&[format!("ann:{}", hash(&fits))]).unwrap().unwrap();
        assert_eq!(auth.check(Some(&basic(&format!("ann:{fits}"))), PEER), Verdict::Allowed);
        let other = BasicAuth::parse(&[format!("ann:{}", hash(&over))]).unwrap().unwrap();
        assert_eq!(other.check(Some(&basic(&format!("ann:{over}"))), PEER), Verdict::Denied);
        let huge = format!("Basic {}", "QUFB".repeat(4096)).into_bytes(); // 12 KiB of "AAA"
        assert_eq!(other.check(Some(&huge), PEER), Verdict::Denied);
    }

    /// After `LIMIT` wrong guesses at one user from one address, that user gets 429 from
    /// that address and nothing is hashed (a right password is refused too), but
    /// credentials that passed before still pass, another user from the same address is
    /// not limited, and neither is another address.
    #[test]
    fn failed_guesses_are_limited_per_user_and_address() {
        use super::super::auth_limit::{LIMIT, WINDOW};
        let auth = BasicAuth::parse(&[format!("ann:{}", hash("pw")), format!("bob:{}", hash("pw2"))]).unwrap().unwrap();
        let other: IpAddr = "192.0.2.9".parse().unwrap();
        assert_eq!(auth.check(Some(&basic("ann:pw")), PEER), Verdict::Allowed);
        for _ in 0..LIMIT {
            assert_eq!(auth.check(Some(&basic("ann:wrong")), PEER), Verdict::Denied);
        }
        let limited = auth.check(Some(&basic("ann:wrong")), PEER);
        assert!(
            matches!(limited, Verdict::Limited { retry_after } if (1..=WINDOW).contains(&retry_after)),
            "{limited:?}"
        );
        assert_eq!(auth.check(Some(&basic("ann:pw")), PEER), Verdict::Allowed, "remembered");
        assert!(matches!(auth.check(Some(&basic("ann:pw ")), PEER), Verdict::Limited { .. }), "not hashed");
        assert_eq!(auth.check(Some(&basic("ann:wrong")), other), Verdict::Denied);
        assert_eq!(auth.check(Some(&basic("bob:pw2")), PEER), Verdict::Allowed, "another user");
        assert_eq!(auth.check(None, PEER), Verdict::Denied, "no credentials: the challenge");
        let r = BasicAuth::refusal(limited);
        assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(r.fields.iter().any(|(n, _)| *n == "Retry-After"));
    }

    #[test]
    fn basic_auth_flag_table() {
        assert!(BasicAuth::parse(&[]).unwrap().is_none());
        let sha256 = sha_crypt::sha256_simple("pw", &sha_crypt::Sha256Params::new(1000).unwrap()).unwrap();
        let auth = BasicAuth::parse(&[format!("u:{sha256}")]).unwrap().unwrap();
        assert_eq!(auth.check(Some(&basic("u:pw")), PEER), Verdict::Allowed);
        let good = hash("pw");
        let (head, digest) = good.rsplit_once('$').unwrap();
        let short = format!("u:{head}${}", &digest[1..]);
        let few_rounds = format!("u:{}", good.replace("rounds=1000", "rounds=10"));
        let most_rounds = format!("u:{}", good.replace("rounds=1000", &format!("rounds={MAX_SHA_ROUNDS}")));
        let too_many = format!("u:{}", good.replace("rounds=1000", &format!("rounds={}", MAX_SHA_ROUNDS + 1)));
        let billion = format!("u:{}", good.replace("rounds=1000", "rounds=999999999"));
        assert!(BasicAuth::parse(&[most_rounds]).is_ok());
        for bad in ["nocolon", "u:plaintext", "u:$1$abc$def", ":$6$x$y", "u:", &short, &few_rounds, &too_many, &billion]
        {
            let e = BasicAuth::parse(&[bad.to_string()]).unwrap_err();
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
        assert!(BasicAuth::parse(&[too_many]).unwrap_err().contains("rounds above"));
    }

    /// L2: hashes of different kinds or costs make the time of a wrong password tell names
    /// apart; the start warns then, naming each user's, and says nothing when they agree.
    #[test]
    fn uneven_costs_are_named() {
        let bcrypt4 = bcrypt::hash("pw", 4).unwrap();
        let cases: [(Vec<String>, Option<&str>); 3] = [
            (vec![format!("ann:{}", hash("a")), format!("bob:{}", hash("b"))], None),
            (
                vec![format!("ann:{}", hash("a")), format!("bob:{bcrypt4}")],
                Some("ann: SHA-512-crypt 1000 rounds, bob: bcrypt cost 4"),
            ),
            (vec![format!("ann:{bcrypt4}"), format!("bob:{}", bcrypt::hash("pw", 5).unwrap())], Some("bcrypt cost 5")),
        ];
        for (users, want) in cases {
            let warning = BasicAuth::parse(&users).unwrap().unwrap().uneven_costs();
            match want {
                None => assert_eq!(warning, None, "{users:?}"),
                Some(part) => assert!(warning.as_deref().is_some_and(|w| w.contains(part)), "{users:?}: {warning:?}"),
            }
        }
    }

    #[test]
    fn htpasswd_table() {
        let sha = hash("pw1");
        let bcrypt4 = bcrypt::hash("pw2", 4).unwrap().replacen("$2b$", "$2y$", 1);
        let text = format!("# users\n\nann:{sha}\r\nbob:{bcrypt4}\n");
        let entries = parse_htpasswd("f", &text).unwrap();
        assert_eq!(entries.len(), 2);
        let auth = BasicAuth::parse(&entries).unwrap().unwrap();
        let cases = [("ann:pw1", true), ("bob:pw2", true), ("ann:pw2", false), ("bob:pw1", false), ("eve:pw2", false)];
        for (user_pass, want) in cases {
            assert_eq!(auth.check(Some(&basic(user_pass)), PEER) == Verdict::Allowed, want, "{user_pass}");
        }
        let dear = bcrypt::hash("pw", 4).unwrap().replacen("$04$", "$13$", 1);
        let bad: &[(&str, &str)] = &[
            ("", "no user:HASH line"),
            ("# only\n", "no user:HASH line"),
            ("ann:$apr1$abc$def\n", "line 1"),
            ("ann:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n", "line 1"),
            ("\nann:plain\n", "line 2"),
            (&format!("ann:{dear}\n"), "cost above 12"),
            (&format!("ann:{}\n", &bcrypt4[..bcrypt4.len() - 1]), "line 1"),
        ];
        for (text, why) in bad {
            let e = parse_htpasswd("f", text).unwrap_err();
            assert!(e.contains(why) && !e.contains('\n'), "{text:?}: {e}");
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
