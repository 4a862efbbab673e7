//! Placing the scratch directory on a server host, through prefixes that need no root:
//! `env` (a host that shares this filesystem) and `false` (a host that runs nothing).

use super::*;
use std::os::unix::fs::PermissionsExt;

fn via(s: &str) -> Via {
    Via::parse("--server-via", s).unwrap()
}

/// A scratch directory like the lab's: a file, an executable in a subdirectory, data.
fn scratch() -> tempfile::TempDir {
    let base = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(base.path().join("root/cgi-bin")).unwrap();
    std::fs::create_dir_all(base.path().join("data")).unwrap();
    std::fs::write(base.path().join("root/file.bin"), vec![b'x'; 70_000]).unwrap();
    std::fs::write(base.path().join("root/cgi-bin/page.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(base.path().join("root/cgi-bin/page.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(base.path().join("data/page.html"), "<p>data</p>").unwrap();
    base
}

#[test]
fn mktemp_output_table() {
    let cases = [
        ("/tmp/spidey-lab-copy-Ab3dE6gH\n", Some("/tmp/spidey-lab-copy-Ab3dE6gH")),
        ("/tmp/spidey-lab-copy-Ab3dE6gH\r\n", Some("/tmp/spidey-lab-copy-Ab3dE6gH")),
        ("/tmp/spidey-lab-copy-Ab3dE6g\n", None),
        ("/tmp/spidey-lab-copy-Ab3dE6gHi\n", None),
        ("/tmp/spidey-lab-copy-../../etc\n", None),
        ("/tmp/spidey-lab-copy-Ab3d E6g\n", None),
        ("/tmp/spidey-lab-copy-Ab3dE6gH\n/tmp/x\n", None),
        ("/\n", None),
        ("", None),
    ];
    for (stdout, want) in cases {
        assert_eq!(made_dir(stdout), want.map(PathBuf::from), "{stdout:?}");
    }
}

#[test]
fn a_host_that_sees_the_path_uses_it_in_place() {
    let base = scratch();
    let mut slot = None;
    let at = place(&via("env"), base.path(), &mut slot, false).unwrap();
    assert_eq!(at, base.path());
    assert!(slot.as_ref().is_some_and(|p| p.copy.is_none()), "not copied");
    assert_eq!(place(&via("env"), base.path(), &mut slot, true).unwrap(), base.path(), "nor after a prepare");
}

#[test]
fn a_copy_has_every_file_and_mode_is_refreshed_and_is_removed_on_drop() {
    let base = scratch();
    let env = via("env");
    let copy = Copy { dir: make_dir(&env).unwrap(), via: env };
    assert!(copy.dir.starts_with("/tmp") && copy.dir != base.path());
    send(&copy.via, base.path(), &copy.dir).unwrap();
    for file in ["root/file.bin", "root/cgi-bin/page.sh", "data/page.html"] {
        let (a, b) = (base.path().join(file), copy.dir.join(file));
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "{file}");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&a), mode(&b), "{file}'s mode");
    }
    // A prepare command builds a file; the copy is refreshed in place.
    std::fs::write(base.path().join("root/cgi-bin/page.cgi"), "built").unwrap();
    send(&copy.via, base.path(), &copy.dir).unwrap();
    assert_eq!(std::fs::read_to_string(copy.dir.join("root/cgi-bin/page.cgi")).unwrap(), "built");
    let dir = copy.dir.clone();
    drop(copy);
    assert!(!dir.exists(), "{} removed", dir.display());
}

#[test]
fn a_host_that_runs_nothing_is_an_error_naming_the_prefix() {
    let base = scratch();
    let mut slot = None;
    let err = place(&via("false"), base.path(), &mut slot, false).unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("via false"), "{text}");
    assert!(slot.is_none());
}

#[test]
fn copying_into_a_missing_directory_fails_clearly() {
    let base = scratch();
    let err = send(&via("env"), base.path(), Path::new("/nonexistent/spidey-lab-copy")).unwrap_err();
    assert!(format!("{err:#}").contains("cannot copy the document root to /nonexistent/spidey-lab-copy via env"));
}
