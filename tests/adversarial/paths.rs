//! Paths: no spelling of a path reaches outside ROOT, names a device or FIFO, or makes a
//! redirect that a browser would take to another host.

use super::table::get;
use crate::common::{head_field, status_of, Fixture, Spidey, HELLO};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Request target → status. The fixture's outside directory holds `secret.txt`; nothing
/// in this table may ever return its content.
const PATH_CASES: &[(&str, u16)] = &[
    ("/../secret.txt", 400),
    ("/../../../../etc/passwd", 400),
    ("/list/../../etc/passwd", 400),
    ("/%2e%2e/%2e%2e/etc/passwd", 400),
    ("/%2E%2E/etc/passwd", 400),
    ("/%2e%2E/etc/passwd", 400),
    ("/.%2e/.%2e/etc/passwd", 400),
    ("/%2e./etc/passwd", 400),
    ("/list/%2e%2e%2f%2e%2e%2fetc%2fpasswd", 400),
    ("/%252e%252e/%252e%252e/etc/passwd", 404),
    ("/%25252e%25252e/etc/passwd", 404),
    ("/..%5c..%5cetc%5cpasswd", 404),
    ("/..\\..\\etc\\passwd", 404),
    ("/%5c..%5c..%5cetc/passwd", 404),
    ("/..%c0%af..%c0%afetc/passwd", 404),
    ("/%c0%ae%c0%ae/etc/passwd", 404),
    ("/hello.txt%00.html", 400),
    ("/%00", 400),
    ("/hello.txt%", 400),
    ("/hello.txt%2", 400),
    ("/hello.txt%g0", 400),
    ("/./hello.txt", 200),
    ("//hello.txt", 200),
    ("/hello.txt/", 404),
    ("/hello.txt/.", 404),
    ("/hello.txt%2f", 404),
    ("/out-file", 403),
    ("/out-dir/secret.txt", 403),
    ("/out-dir/", 403),
    ("/out-dir", 403),
    ("/out-dir/../hello.txt", 400),
    ("/in-link", 200),
    ("/fifo", 403),
    ("/proc-link/self/environ", 403),
    ("/abs-link", 403),
];

fn hostile_paths(mode: &str) {
    let fx = Fixture::new();
    std::os::unix::fs::symlink("/proc", fx.root().join("proc-link")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", fx.root().join("abs-link")).unwrap();
    let server = Spidey::start(mode, &fx.root(), &["--quiet"]);
    let mut failures = Vec::new();
    for &(target, want) in PATH_CASES {
        let (head, body) = get(&server, target, "");
        let text = String::from_utf8_lossy(&body);
        if status_of(&head) != want || text.contains("TOP SECRET") || text.contains("root:") {
            failures.push(format!("{target}: {head:?} {text:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A NUL byte and other raw controls in the request-target never reach the file system.
fn raw_nul_in_target(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), &["--quiet"]);
    for target in [&b"/hello.txt\0.html"[..], b"/hello\x01.txt", b"/hello\x7f.txt"] {
        let mut req = b"GET ".to_vec();
        req.extend_from_slice(target);
        req.extend_from_slice(b" HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(status_of(&server.raw(&req)), 400, "{target:?}");
    }
}

/// Devices and FIFOs beneath ROOT are refused without ever being opened for reading: the
/// lookup opens with O_PATH, checks the type, and reopens only regular files and
/// directories. inotify reports every real open (IN_OPEN; O_PATH opens report none), so
/// the watched nodes must see no event. The device (made with mknod, like /dev/null) is
/// skipped where mknod is not permitted; the FIFO always runs.
fn devices_and_fifos_are_never_opened(mode: &str) {
    use rustix::fs::inotify;
    let fx = Fixture::new();
    let made = std::process::Command::new("mknod").arg(fx.root().join("null")).args(["c", "1", "3"]).status();
    let mut nodes = vec!["fifo"];
    if made.is_ok_and(|s| s.success()) {
        nodes.push("null");
    } else {
        eprintln!("the device case is skipped: mknod is not permitted here");
    }
    let watch = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC).unwrap();
    for node in &nodes {
        inotify::add_watch(&watch, fx.root().join(node), inotify::WatchFlags::OPEN).unwrap();
    }
    let server = Spidey::start(mode, &fx.root(), &["--quiet"]);
    for node in &nodes {
        let (head, _) = get(&server, &format!("/{node}"), "");
        assert_eq!(status_of(&head), 403, "/{node}: {head}");
    }
    // The server is still there and answering after them.
    assert_eq!(status_of(&get(&server, "/hello.txt", "").0), 200);
    let mut events = [0u8; 1024];
    match rustix::io::read(&watch, &mut events) {
        Err(rustix::io::Errno::AGAIN) => {}
        other => panic!("a device or FIFO was opened by the server: inotify read {other:?}"),
    }
}

/// A symlinked `index.html` that stays inside ROOT is the directory's index (it is looked
/// up from ROOT, not from the directory); one that leads outside is never served.
fn index_symlink_inside_root_is_served(mode: &str) {
    let fx = Fixture::new();
    let root = fx.root();
    std::fs::create_dir(root.join("docs")).unwrap();
    std::os::unix::fs::symlink("../site/index.html", root.join("docs/index.html")).unwrap();
    std::fs::create_dir(root.join("leaky")).unwrap();
    std::os::unix::fs::symlink(fx.outside.path().join("secret.txt"), root.join("leaky/index.html")).unwrap();
    let server = Spidey::start(mode, &root, &["--quiet"]);
    let (head, body) = get(&server, "/docs/", "");
    assert_eq!((status_of(&head), body.as_slice()), (200, &b"<h1>index</h1>\n"[..]), "{head}");
    assert_eq!(head_field(&head, "content-type"), Some("text/html; charset=utf-8"));
    let (head, body) = get(&server, "/leaky/", "");
    assert!(!String::from_utf8_lossy(&body).contains("TOP SECRET"), "{head}");
}

/// Dot-segments (`.git`, `.env`, `.hidden`, however encoded) are 404 unless
/// `--show-hidden`; `/.well-known/` (RFC 8615) is the one exception, and only at the top.
fn dotfiles_are_not_served(mode: &str) {
    let fx = Fixture::new();
    let root = fx.root();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), b"GIT CONFIG").unwrap();
    std::fs::write(root.join(".env"), b"SECRET=1").unwrap();
    std::fs::create_dir_all(root.join(".well-known")).unwrap();
    std::fs::write(root.join(".well-known/security.txt"), b"Contact: x").unwrap();
    std::fs::write(root.join(".well-known/.private"), b"PRIVATE").unwrap();
    std::fs::create_dir_all(root.join("list/.well-known")).unwrap();
    std::fs::write(root.join("list/.well-known/x.txt"), b"NESTED").unwrap();
    let cases: &[(&str, u16, u16)] = &[
        // target, default status, status with --show-hidden
        ("/.git/config", 404, 200),
        ("/%2egit/config", 404, 200),
        ("/%2Egit/config", 404, 200),
        ("//.git//config", 404, 200),
        ("/./.git/config", 404, 200),
        ("/.git/", 404, 200),
        ("/.git", 404, 301),
        ("/.env", 404, 200),
        ("/list/.hidden", 404, 200),
        ("/list/%2ehidden", 404, 200),
        ("/.well-known/security.txt", 200, 200),
        ("/.well-known/.private", 404, 200),
        ("/list/.well-known/x.txt", 404, 200),
        ("/hello.txt", 200, 200),
    ];
    for (flags, column) in [(&["--quiet"][..], 0), (&["--quiet", "--show-hidden"][..], 1)] {
        let server = Spidey::start(mode, &root, flags);
        for &(target, default, shown) in cases {
            let want = if column == 0 { default } else { shown };
            let (head, body) = get(&server, target, "");
            assert_eq!(status_of(&head), want, "{target} with {flags:?}: {head}");
            if want == 404 {
                let text = String::from_utf8_lossy(&body);
                assert!(!["GIT CONFIG", "SECRET=1", "PRIVATE", "NESTED", "secret"].iter().any(|s| text.contains(s)));
            }
        }
    }
}

/// Directory redirects: `Location` never starts with `//` or `/\` (both mean another host
/// to a browser), whatever slashes and backslashes the request began with.
fn redirects_stay_on_this_host(mode: &str) {
    let fx = Fixture::new();
    // A directory whose name starts with a backslash (not a separator on Unix).
    std::fs::create_dir(fx.root().join(["\\", "evil.com"].concat())).unwrap();
    let server = Spidey::start(mode, &fx.root(), &["--quiet"]);
    let cases = [
        ("//evil.com", "/evil.com/"),
        ("///evil.com", "/evil.com/"),
        ("//evil.com?x=1", "/evil.com/?x=1"),
        ("/%2fevil.com", "/%2fevil.com/"),
        ("/\\evil.com", "/%5Cevil.com/"),
        ("//\\evil.com", "/%5Cevil.com/"),
        ("/%5cevil.com", "/%5cevil.com/"),
        ("/./evil.com", "/./evil.com/"),
    ];
    for (target, want) in cases {
        let (head, _) = get(&server, target, "");
        let location = head_field(&head, "location").unwrap_or("");
        assert_eq!((status_of(&head), location), (301, want), "{target}");
        assert!(!location.starts_with("//") && !location.starts_with("/\\"), "{target} → {location}");
    }
}

/// Swaps `link` between `inside` and `outside` (atomically, by renaming a fresh symlink over
/// it) until `stop`.
fn flip(link: &Path, inside: &Path, outside: &Path, stop: &AtomicBool) {
    let tmp = link.with_extension("tmp");
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let target = if n % 2 == 0 { inside } else { outside };
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(target, &tmp).unwrap();
        std::fs::rename(&tmp, link).unwrap();
        n += 1;
    }
}

struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A thread flips symlinks between an inside and an outside target while requests run:
/// the outside content is never served, and both outcomes are seen (the race is real).
fn symlink_swapped_while_serving(mode: &str) {
    let fx = Fixture::new();
    let root = fx.root();
    std::fs::create_dir(root.join("inside-dir")).unwrap();
    std::fs::write(root.join("inside-dir/secret.txt"), b"inside").unwrap();
    // Inside targets are relative: an absolute one is outside ROOT as far as openat2 knows.
    std::os::unix::fs::symlink("hello.txt", root.join("flip-file")).unwrap();
    std::os::unix::fs::symlink("inside-dir", root.join("flip-dir")).unwrap();
    let server = Spidey::start(mode, &root, &["--quiet"]);
    let stop = AtomicBool::new(false);
    let (mut served, mut refused) = (0, 0);
    std::thread::scope(|s| {
        s.spawn(|| flip(&root.join("flip-file"), Path::new("hello.txt"), &fx.outside.path().join("secret.txt"), &stop));
        s.spawn(|| flip(&root.join("flip-dir"), Path::new("inside-dir"), fx.outside.path(), &stop));
        // Stops the flippers however this closure ends: a failed assertion below must not
        // leave the scope waiting for them forever.
        let _stop = StopOnDrop(&stop);
        // The open-file cache trusts a resolution for a second (`file_cache::TTL`), so each
        // target is looked up afresh about once a second, finding the link inside or outside
        // by chance: 3 s alone left both outcomes unseen in about 1 run in 60 (all served,
        // none refused). Go on, up to 20 s, until both have been seen.
        let start = Instant::now();
        let seen_both = |served: u32, refused: u32| served > 0 && refused > 0;
        while start.elapsed() < Duration::from_secs(3)
            || (!seen_both(served, refused) && start.elapsed() < Duration::from_secs(20))
        {
            for target in ["/flip-file", "/flip-dir/secret.txt"] {
                let (head, body) = get(&server, target, "");
                assert_ne!(body, b"TOP SECRET", "{target} served the outside file");
                match status_of(&head) {
                    200 => {
                        assert!(body == HELLO.as_bytes() || body == b"inside", "{body:?}");
                        served += 1;
                    }
                    403 | 404 => refused += 1,
                    other => panic!("{target}: unexpected {other}"),
                }
            }
        }
    });
    assert!(served > 0 && refused > 0, "the race was not exercised: {served} served, {refused} refused");
}

crate::for_each_mode!(
    hostile_paths,
    raw_nul_in_target,
    devices_and_fifos_are_never_opened,
    index_symlink_inside_root_is_served,
    dotfiles_are_not_served,
    redirects_stay_on_this_host,
    symlink_swapped_while_serving
);
