//! Why requests fail: [`ErrorClass`] for one request, [`ErrorCounts`] for a run, and the
//! errno classification of socket errors (fd and port exhaustion apart from refusals).

use serde::{Deserialize, Serialize};
use std::io;

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorClass {
    /// The connection could not be established (refused, unreachable, ...).
    Connect,
    /// No complete response within `--timeout`.
    Timeout,
    /// The connection was reset (ECONNRESET, EPIPE) while a request was in flight.
    Reset,
    /// The server closed the connection before the response was complete.
    Closed,
    /// The response was not valid HTTP/1.x, or framing was broken.
    Malformed,
    /// No file descriptor for a new socket (EMFILE, ENFILE).
    FdExhausted,
    /// No free local port for a new connection (EADDRNOTAVAIL).
    PortsExhausted,
    /// The TLS handshake failed (a certificate not trusted, no common protocol or cipher,
    /// an alert, a connection closed mid-handshake), or a record could not be decrypted.
    Tls,
    /// Any other I/O error.
    Other,
}

/// Requests that got no answer, by class. Every such request is counted in exactly one
/// class; a request that got an answer (whatever its status, however late it was sent) is a
/// response, never an error.
///
/// `unsent` is the open loop's own class, always present (zero in a closed loop): requests
/// scheduled before the end but never sent (no free connection, or the generator fell
/// behind).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    pub connect: u64,
    pub timeout: u64,
    pub reset: u64,
    pub closed: u64,
    pub malformed: u64,
    pub fd_exhausted: u64,
    pub ports_exhausted: u64,
    pub other: u64,
    /// https: TLS failures ([`ErrorClass::Tls`]).
    #[serde(default)]
    pub tls: u64,
    #[serde(default)]
    pub unsent: u64,
}

impl ErrorCounts {
    pub(crate) fn add(&mut self, class: ErrorClass) {
        *match class {
            ErrorClass::Connect => &mut self.connect,
            ErrorClass::Timeout => &mut self.timeout,
            ErrorClass::Reset => &mut self.reset,
            ErrorClass::Closed => &mut self.closed,
            ErrorClass::Malformed => &mut self.malformed,
            ErrorClass::FdExhausted => &mut self.fd_exhausted,
            ErrorClass::PortsExhausted => &mut self.ports_exhausted,
            ErrorClass::Tls => &mut self.tls,
            ErrorClass::Other => &mut self.other,
        } += 1;
    }

    /// The requests that got no answer.
    pub fn total(&self) -> u64 {
        self.named().iter().map(|(_, n)| n).sum()
    }

    /// The class that failed the most requests, with its count; None when every request
    /// was answered.
    pub fn most_common(&self) -> Option<(&'static str, u64)> {
        let named = self.named();
        named.iter().filter(|(_, n)| *n > 0).copied().reduce(|best, c| if c.1 > best.1 { c } else { best })
    }

    /// Each class with its name, in report order.
    pub fn named(&self) -> [(&'static str, u64); 10] {
        [
            ("connect", self.connect),
            ("timeout", self.timeout),
            ("reset", self.reset),
            ("closed", self.closed),
            ("malformed", self.malformed),
            ("fd exhausted (EMFILE/ENFILE)", self.fd_exhausted),
            ("ports exhausted (EADDRNOTAVAIL)", self.ports_exhausted),
            ("tls", self.tls),
            ("other", self.other),
            ("unsent", self.unsent),
        ]
    }

    pub(crate) fn merge(&mut self, o: &ErrorCounts) {
        self.connect += o.connect;
        self.timeout += o.timeout;
        self.reset += o.reset;
        self.closed += o.closed;
        self.malformed += o.malformed;
        self.fd_exhausted += o.fd_exhausted;
        self.ports_exhausted += o.ports_exhausted;
        self.other += o.other;
        self.tls += o.tls;
        self.unsent += o.unsent;
    }
}

/// How an I/O error reads in a report: `connection refused`, not `Connection refused (os
/// error 111)`.
pub(crate) fn describe_io(e: &io::Error) -> String {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    let mut chars = text.chars();
    chars.next().map(|c| c.to_lowercase().chain(chars).collect()).unwrap_or_default()
}

/// The class of an error from socket(2) or connect(2).
pub(crate) fn classify_connect(e: &io::Error) -> ErrorClass {
    use rustix::io::Errno;
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        Some(Errno::MFILE | Errno::NFILE) => ErrorClass::FdExhausted,
        Some(Errno::ADDRNOTAVAIL) => ErrorClass::PortsExhausted,
        _ => ErrorClass::Connect,
    }
}

/// The class of an error from read(2) or write(2) on an established connection.
pub(crate) fn classify_io(e: &io::Error) -> ErrorClass {
    match e.kind() {
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted => {
            ErrorClass::Reset
        }
        io::ErrorKind::TimedOut => ErrorClass::Timeout,
        _ => ErrorClass::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_common_is_the_largest_class_the_first_on_a_tie() {
        let none = ErrorCounts::default();
        let refused = ErrorCounts { connect: 5, timeout: 2, unsent: 1, ..ErrorCounts::default() };
        let tie = ErrorCounts { connect: 3, tls: 3, ..ErrorCounts::default() };
        let cases = [(&none, None), (&refused, Some(("connect", 5))), (&tie, Some(("connect", 3)))];
        for (counts, want) in cases {
            assert_eq!(counts.most_common(), want, "{counts:?}");
        }
        assert_eq!(refused.total(), 8);
    }

    #[test]
    fn io_errors_read_as_words() {
        let cases = [
            (io::Error::from_raw_os_error(111), "connection refused"),
            (io::Error::from_raw_os_error(113), "no route to host"),
            (io::Error::other("Odd thing"), "odd thing"),
        ];
        for (e, want) in cases {
            assert_eq!(describe_io(&e), want);
        }
    }
}
