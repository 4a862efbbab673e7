//! A crate's modules checked against its source: no two sibling modules import each other,
//! directly or around a longer loop, outside tests. A module may use its parent's other
//! children and its own; a cycle means two files that can only be read together.
//!
//! Only tests use it, as a dev-dependency: a crate's `layout_tests.rs` calls
//! [`import_cycles`] on its own `src/`. It reads text, not syntax:
//! `use` trees and `crate::`/`super::`/`self::` paths, outside comments and outside a
//! file's trailing `#[cfg(test)] mod tests { .. }` and `*_tests.rs` files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module as its path from the crate root: `modes::evloop` is `["modes", "evloop"]`.
pub type Module = Vec<String>;

/// Every `.rs` file below `dir`, into `out` (also the source scans of the server's
/// `modes/seam_tests.rs`).
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's text without its inline `mod tests { .. }` (tests may call and import anything).
pub fn production_text(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The module a file is: `src/modes/evloop/mod.rs` is `modes::evloop`.
fn module_of(src: &Path, path: &Path) -> Module {
    let rel = path.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The paths a use tree names: `a::{b, c::{d, e}}` is `a::b`, `a::c::d`, `a::c::e`.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<Module>) {
    let tree = tree.trim();
    if let Some(inner) = tree.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(prefix, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(prefix, &inner[start..], out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let (head, rest) = match tree.find("::{") {
        Some(i) => (&tree[..i], Some(&tree[i + 2..])),
        None => (tree, None),
    };
    let mut path = prefix.to_vec();
    path.extend(head.split("::").map(|p| p.split(" as ").next().unwrap_or(p).trim().to_string()));
    match rest {
        Some(rest) => expand(&path, rest, out),
        None => out.push(path),
    }
}

/// What `path` names from module `me`: `crate::`, `super::` and `self::` resolved.
fn resolve(me: &Module, path: &[String]) -> Option<Module> {
    let mut base = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super" | "self") => me.clone(),
        _ => return None,
    };
    let mut rest = &path[1..];
    if path[0] == "super" {
        base.pop();
    }
    while rest.first().is_some_and(|p| p == "super") {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The edges between sibling modules: `a -> b` when a file of `a` names something in `b`
/// and `a` and `b` have the same parent. Each edge keeps a file that makes it.
pub fn sibling_edges(src: &Path) -> BTreeMap<(Module, Module), PathBuf> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges = BTreeMap::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let me = module_of(src, &path);
        let text = production_text(&path);
        let code: String = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        let mut named = Vec::new();
        for stmt in code.split("use ").skip(1) {
            let Some(end) = stmt.find(';') else { continue };
            expand(&[], &stmt[..end], &mut named);
        }
        for word in code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')) {
            if word.starts_with("crate::") || word.starts_with("super::") || word.starts_with("self::") {
                named.push(word.split("::").filter(|p| !p.is_empty()).map(String::from).collect());
            }
        }
        for target in named.iter().filter_map(|p| resolve(&me, p)) {
            let common = me.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common < me.len() && common < target.len() {
                let (a, b) = (me[..=common].to_vec(), target[..=common].to_vec());
                edges.entry((a, b)).or_insert_with(|| path.clone());
            }
        }
    }
    edges
}

/// Every set of modules that import each other around a loop (Tarjan's strongly connected
/// components of more than one module).
pub fn cycles(edges: &BTreeMap<(Module, Module), PathBuf>) -> Vec<Vec<Module>> {
    let mut next: BTreeMap<&Module, Vec<&Module>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    struct Tarjan<'a> {
        next: &'a BTreeMap<&'a Module, Vec<&'a Module>>,
        index: BTreeMap<&'a Module, (usize, usize)>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        found: Vec<Vec<Module>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a Module) {
            let i = self.index.len();
            self.index.insert(v, (i, i));
            self.stack.push(v);
            self.on_stack.insert(v);
            for &w in &self.next[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[v].1.min(self.index[w].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.on_stack.contains(w) {
                    let low = self.index[v].1.min(self.index[w].0);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut t =
        Tarjan { next: &next, index: BTreeMap::new(), stack: Vec::new(), on_stack: BTreeSet::new(), found: Vec::new() };
    for v in next.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.found
}

/// The loops among `src`'s modules, each as its members and the edges between them with a
/// file that makes each edge; empty when there is none. Panics if the scan finds
/// `min_edges` edges or fewer, which would mean it no longer reads the crate.
pub fn import_cycles(src: &Path, min_edges: usize) -> Vec<String> {
    let edges = sibling_edges(src);
    assert!(edges.len() > min_edges, "the scan found {} edges: is it still reading the crate?", edges.len());
    cycles(&edges)
        .iter()
        .map(|component| {
            let names: Vec<String> = component.iter().map(|m| m.join("::")).collect();
            let by: Vec<String> = edges
                .iter()
                .filter(|((a, b), _)| component.contains(a) && component.contains(b))
                .map(|((a, b), file)| format!("{} -> {} ({})", a.join("::"), b.join("::"), file.display()))
                .collect();
            format!("{names:?}: {by:?}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checker on a small crate of its own: it must find a loop of three and nothing else.
    #[test]
    fn the_cycle_check_finds_a_loop_it_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("lib.rs", "mod a; mod b; mod c; mod d;"),
            ("a.rs", "use crate::b::B;"),
            ("b.rs", "use super::{c::C, d};"),
            ("c.rs", "pub fn f() { crate::a::g() }"),
            ("d.rs", "// use crate::a; (a comment)\nuse crate::d::inner::X;"),
        ];
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let found = cycles(&sibling_edges(dir.path()));
        let names: Vec<Vec<String>> = found
            .iter()
            .map(|c| c.iter().map(|m| m.join("::")).collect::<BTreeSet<_>>().into_iter().collect())
            .collect();
        assert_eq!(names, [["a", "b", "c"]]);
    }
}
