//! The crate's modules checked against the source, as `spidey-server`'s are (the scanner is
//! `spidey-layout-check`'s): no two sibling modules import each other, directly or around
//! a longer loop, outside tests. A module may use its parent's other children and its own;
//! a cycle means files a newcomer can only read, and change, together.

use std::path::Path;

#[test]
fn no_two_modules_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let report = spidey_layout_check::import_cycles(&src, 20);
    assert!(report.is_empty(), "modules that import each other:\n{}", report.join("\n"));
}

/// The scanner on a small crate laid out in folders as this one is: a loop between two
/// stages through a child's `super::super::` path and a parent's `crate::` path is found,
/// and a child using its parent's other children is not a loop.
#[test]
fn the_cycle_check_finds_a_loop_between_folders() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("lib.rs", "mod experiment; mod run; mod report;"),
        ("experiment/mod.rs", "mod plan; pub struct Dim;"),
        ("experiment/plan.rs", "use super::Dim;"),
        ("run/mod.rs", "mod load; mod results;"),
        ("run/load.rs", "use crate::experiment::Dim; use super::results::Record;"),
        ("run/results.rs", "use super::super::report::table::Row;"),
        ("report/mod.rs", "pub mod table;"),
        ("report/table.rs", "use crate::run::results::Record; use crate::experiment::Dim;"),
    ];
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let edges = spidey_layout_check::sibling_edges(dir.path());
    let found: Vec<Vec<String>> = spidey_layout_check::cycles(&edges)
        .iter()
        .map(|c| {
            let mut names: Vec<String> = c.iter().map(|m| m.join("::")).collect();
            names.sort();
            names
        })
        .collect();
    assert_eq!(found, [["report", "run"]]);
}
