//! The crate's modules checked against the source: no two sibling modules import each
//! other, directly or around a longer loop, outside tests. A module may use its parent's
//! other children and its own; a cycle means two files that can only be read together.
//! The scanner is `spidey-layout-check`'s, shared with `spidey-lab`'s layout test.

use std::path::Path;

/// The source scans of `modes/seam_tests.rs`.
pub(crate) use spidey_layout_check::{production_text, rust_files};

#[test]
fn no_two_modules_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let report = spidey_layout_check::import_cycles(&src, 20);
    assert!(report.is_empty(), "modules that import each other:\n{}", report.join("\n"));
}
