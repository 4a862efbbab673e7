//! Where experiment files come from: built into the binary (so `spidey lab` runs from any
//! directory), or read from `--experiments-dir`; and the C sources experiments compile.

use anyhow::Context;
use std::path::Path;

/// The experiment files built into the binary, so `spidey lab` runs from any directory
/// (`--experiments-dir` reads a directory instead).
const BUILT_IN: [(&str, &str); 15] = [
    ("000-fork.toml", include_str!("../../../../experiments/000-fork.toml")),
    ("001-delay.toml", include_str!("../../../../experiments/001-delay.toml")),
    ("002-threads.toml", include_str!("../../../../experiments/002-threads.toml")),
    ("003-cgi.toml", include_str!("../../../../experiments/003-cgi.toml")),
    ("004-fork-thread-pool.toml", include_str!("../../../../experiments/004-fork-thread-pool.toml")),
    ("005-modes.toml", include_str!("../../../../experiments/005-modes.toml")),
    ("006-robustness.toml", include_str!("../../../../experiments/006-robustness.toml")),
    ("007-tls.toml", include_str!("../../../../experiments/007-tls.toml")),
    ("008-explain-000-rtt.toml", include_str!("../../../../experiments/008-explain-000-rtt.toml")),
    ("009-explain-002-cpus.toml", include_str!("../../../../experiments/009-explain-002-cpus.toml")),
    ("010-explain-002-n-cold.toml", include_str!("../../../../experiments/010-explain-002-n-cold.toml")),
    ("011-explain-003-cgi.toml", include_str!("../../../../experiments/011-explain-003-cgi.toml")),
    ("012-explain-004-seed-servers.toml", include_str!("../../../../experiments/012-explain-004-seed-servers.toml")),
    ("013-explain-000-parse-cpus.toml", include_str!("../../../../experiments/013-explain-000-parse-cpus.toml")),
    ("014-multiplexing.toml", include_str!("../../../../experiments/014-multiplexing.toml")),
];

/// The source files experiments compile (`{repo}` in a server's `prepare`), built in for
/// the same reason and written into each run's scratch directory.
pub(crate) const SOURCES: [(&str, &str); 2] = [
    ("examples/handlers/page.c", include_str!("../../../../examples/handlers/page.c")),
    ("include/spidey_handler.h", include_str!("../../../../include/spidey_handler.h")),
];

/// An experiment file's name and text, built in or read from a directory.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub name: String,
    pub text: String,
}

/// The experiment files to run: the built-in ones, or `dir/*.toml` when a directory is
/// given; all of them when `wanted` is empty, else each argument as [`pick`] reads it.
pub(crate) fn find(dir: Option<&Path>, wanted: &[String]) -> anyhow::Result<Vec<Source>> {
    let all = match dir {
        None => BUILT_IN.iter().map(|(name, text)| Source { name: name.to_string(), text: text.to_string() }).collect(),
        Some(dir) => read_dir(dir)?,
    };
    if wanted.is_empty() {
        return Ok(all);
    }
    wanted.iter().map(|w| pick(&all, w)).collect()
}

fn read_dir(dir: &Path) -> anyhow::Result<Vec<Source>> {
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read experiment directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths.iter().map(|p| read_file(p)).collect()
}

fn read_file(path: &Path) -> anyhow::Result<Source> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(Source { name, text })
}

/// One experiment argument: with a `/` it is a file (`./000.toml`, `/path/x.toml`), read as
/// given; without one it is an id prefix in `all` (`000` finds `000-fork.toml`), never a
/// file of the current directory, which may be a shared one (`/tmp`) holding anyone's `000`.
fn pick(all: &[Source], wanted: &str) -> anyhow::Result<Source> {
    if wanted.contains('/') {
        return read_file(Path::new(wanted));
    }
    let hits: Vec<&Source> = all.iter().filter(|s| s.name.starts_with(wanted)).collect();
    match hits.as_slice() {
        [one] => Ok((*one).clone()),
        [] => {
            let ids: Vec<&str> = all.iter().map(|s| s.name.trim_end_matches(".toml")).collect();
            let msg = format!("no experiment matches '{wanted}'; the experiments are {}", ids.join(", "));
            Err(spidey_config::ConfigError(msg).into())
        }
        _ => Err(spidey_config::ConfigError(format!("'{wanted}' matches several experiments")).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::{find, BUILT_IN};
    use crate::experiment::Experiment;

    /// Regression: the lab read `experiments/` from the current directory, so it ran only
    /// from the repository; every built-in experiment must parse.
    #[test]
    fn built_in_experiments_parse() {
        let all = find(None, &[]).unwrap();
        assert_eq!(all.len(), BUILT_IN.len());
        for source in &all {
            Experiment::parse(source).unwrap_or_else(|e| panic!("{}: {e:#}", source.name));
        }
    }

    /// Every file in `experiments/` is built in (a new one left out of the list would be
    /// neither run nor checked).
    #[test]
    fn every_experiment_file_is_built_in() {
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments"));
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .collect();
        files.sort();
        let built_in: Vec<&str> = BUILT_IN.iter().map(|(name, _)| *name).collect();
        assert_eq!(files, built_in);
    }
}
