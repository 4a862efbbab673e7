//! `spidey serve --config spidey.toml`: flags from a TOML file, so a deployment is a file
//! under version control.
//!
//! Every key is a long flag of `serve` (`port = 8443`, `tls-cert = "cert.pem"`, `mode =
//! "event"`), or `root` for the directory. A value is a string, a number, a boolean (a
//! flag without a value: `compress = true` gives `--compress`, `false` nothing) or, for a
//! repeatable flag, an array (`header = ["X-A: 1", "X-B: 2"]`). The file is turned into
//! arguments before clap parses the command line, so every value is checked exactly as
//! the same flag typed by hand; a flag given on the command line replaces the file's (a
//! repeatable one wholly), and drops a file's flag it cannot be given with (`-q` drops the
//! file's `access-log`). An unknown key, a value of the wrong shape or a TOML syntax
//! error is one line and exit code 2, before anything binds.

use crate::args::ServeArgs;
use clap::ArgAction;
use spidey_config::ConfigError;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::Path;

/// The largest `--config` file read (a configuration is a few kilobytes).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// `args` (the whole command line, program name first) with the `--config` file of a
/// `serve` command turned into arguments; any other command line unchanged.
pub fn expand(args: Vec<OsString>) -> Result<Vec<OsString>, ConfigError> {
    if args.get(1).map(OsString::as_os_str) != Some(OsStr::new("serve")) {
        return Ok(args);
    }
    let serve = &<ServeArgs as clap::Args>::augment_args(clap::Command::new("serve"));
    let given = scan(serve, &args[2..]);
    let Some(path) = given.config.clone() else { return Ok(args) };
    let text = spidey_config::read_bounded("--config", &path, MAX_CONFIG_BYTES)?;
    let (flags, root) = arguments(serve, &given, &path, &text)?;
    let mut out = args[..2].to_vec();
    out.extend(flags);
    out.extend_from_slice(&args[2..]);
    if let Some(root) = root {
        if !given.positional && !args.iter().any(|a| a == "--") {
            out.push("--".into());
        }
        out.push(root);
    }
    Ok(out)
}

/// What the command line itself gives: the ids of its flags, whether it names ROOT, and
/// the `--config` file.
#[derive(Debug, Default)]
struct Given {
    ids: HashSet<String>,
    positional: bool,
    config: Option<std::path::PathBuf>,
}

fn scan(serve: &clap::Command, args: &[OsString]) -> Given {
    let mut given = Given::default();
    let mut tokens = args.iter();
    while let Some(token) = tokens.next() {
        let text = token.to_string_lossy();
        if text == "--" {
            given.positional |= tokens.next().is_some();
            break;
        }
        let arg = if let Some(long) = text.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(n, _)| n);
            serve.get_arguments().find(|a| a.get_long() == Some(name) || has_alias(a, name))
        } else if let Some(short) = text.strip_prefix('-').filter(|s| !s.is_empty()) {
            short.chars().next().and_then(|c| serve.get_arguments().find(|a| a.get_short() == Some(c)))
        } else {
            given.positional = true;
            continue;
        };
        let Some(arg) = arg else { continue }; // clap reports it
        let inline = text.starts_with("--") && text.contains('=');
        let value = match (arg.get_action().takes_values(), inline) {
            (true, true) => text.split_once('=').map(|(_, v)| OsString::from(v)),
            (true, false) => tokens.next().cloned(),
            (false, _) => None,
        };
        if arg.get_id() == "config" {
            given.config = value.map(Into::into);
        }
        given.ids.insert(arg.get_id().to_string());
    }
    given
}

/// Whether `a` declares that it cannot be given with `b`.
fn excludes(serve: &clap::Command, a: &clap::Arg, b: &clap::Arg) -> bool {
    serve.get_arg_conflicts_with(a).iter().any(|c| c.get_id() == b.get_id())
}

fn has_alias(arg: &clap::Arg, name: &str) -> bool {
    arg.get_all_aliases().is_some_and(|aliases| aliases.contains(&name))
}

/// The flags the file gives (those the command line does not) and its `root`.
fn arguments(
    serve: &clap::Command,
    given: &Given,
    path: &Path,
    text: &str,
) -> Result<(Vec<OsString>, Option<OsString>), ConfigError> {
    let file = path.display();
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map_or(1, |span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        ConfigError(format!("--config {file} line {line}: {}", e.message().trim().replace('\n', " ")))
    })?;
    let mut flags = Vec::new();
    let mut root = None;
    // The flags the file sets (those the command line leaves it), to refuse two it sets
    // that exclude each other as the file's mistake, not as a command line's.
    let mut in_file: Vec<&clap::Arg> = Vec::new();
    for (key, value) in &table {
        let wrong = |what: &str| ConfigError(format!("--config {file}: {key} {what}"));
        if key == "root" {
            let toml::Value::String(dir) = value else { return Err(wrong("takes a string, the directory to serve")) };
            root = (!given.positional).then(|| OsString::from(dir));
            continue;
        }
        let arg =
            serve.get_arguments().find(|a| a.get_long() == Some(key) && !matches!(key.as_str(), "config" | "help"));
        let Some(arg) = arg else {
            let hint = match nearest_key(serve, key) {
                Some(near) => format!("did you mean {near:?}?"),
                None => "keys are the long flags of spidey serve, e.g. port, and root".to_string(),
            };
            return Err(ConfigError(format!("--config {file}: unknown key {key:?} ({hint})")));
        };
        if let Some(other) = in_file.iter().find(|other| excludes(serve, other, arg) || excludes(serve, arg, other)) {
            let other = other.get_long().unwrap_or_default();
            return Err(ConfigError(format!("--config {file}: {key} and {other} cannot both be set")));
        }
        let excluded = serve
            .get_arguments()
            .filter(|other| given.ids.contains(other.get_id().as_str()))
            .any(|other| excludes(serve, other, arg) || excludes(serve, arg, other));
        if given.ids.contains(arg.get_id().as_str()) || excluded {
            continue; // the command line's wins, over the same flag and over one it excludes
        }
        in_file.push(arg);
        if !arg.get_action().takes_values() {
            match value {
                toml::Value::Boolean(true) => flags.push(format!("--{key}").into()),
                toml::Value::Boolean(false) => {}
                _ => return Err(wrong("takes true or false")),
            }
            continue;
        }
        let values = match value {
            toml::Value::Array(items) if matches!(arg.get_action(), ArgAction::Append) => items.iter().collect(),
            toml::Value::Array(_) => return Err(wrong("takes one value, not a list")),
            single => vec![single],
        };
        for value in values {
            let text = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(x) => x.to_string(),
                _ => return Err(wrong("takes a string or a number")),
            };
            let flag = format!("--{key}={text}");
            check_value(serve, &flag).map_err(|why| wrong(&format!("= {text:?}: {why}")))?;
            flags.push(flag.into());
        }
    }
    Ok((flags, root))
}

/// The key a mistyped `key` most likely meant: a long flag of `serve` (or `root`) close
/// to it by Jaro-Winkler similarity, as clap's own suggestions are found.
fn nearest_key(serve: &clap::Command, key: &str) -> Option<String> {
    let longs = serve.get_arguments().filter_map(|a| a.get_long()).filter(|l| !matches!(*l, "config" | "help"));
    longs
        .chain(["root"])
        .map(|l| (strsim::jaro_winkler(key, l), l))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, l)| l.to_string())
}

/// Whether clap accepts `flag` (`--NAME=VALUE`) on its own: the value checked as typed by
/// hand, but the mistake reported as the file's, in one line.
fn check_value(serve: &clap::Command, flag: &str) -> Result<(), String> {
    let alone = serve.clone().no_binary_name(true).try_get_matches_from([flag]);
    alone.map(drop).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        first.trim_start_matches("error: ").to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_with(file: &str, cli: &[&str]) -> Result<Vec<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spidey.toml");
        std::fs::write(&path, file).unwrap();
        let mut args: Vec<OsString> = ["spidey", "serve", "--config"].iter().map(Into::into).collect();
        args.push(path.clone().into());
        args.extend(cli.iter().map(Into::into));
        let out = expand(args).map_err(|e| e.0.replace(&path.display().to_string(), "F"))?;
        Ok(out[2..].iter().map(|a| a.to_string_lossy().replace(&path.display().to_string(), "F")).collect())
    }

    #[test]
    fn expansion_table() {
        // file, command line → arguments after `serve`
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("port = 8443\ncompress = true", &[], &["--compress", "--port=8443", "--config", "F"]),
            ("compress = false", &[], &["--config", "F"]),
            ("header = [\"X-A: 1\", \"-b: x\"]", &[], &["--header=X-A: 1", "--header=-b: x", "--config", "F"]),
            (
                "port = 1\nmode = \"pool\"",
                &["--port", "0", "--mode=event"],
                &["--config", "F", "--port", "0", "--mode=event"],
            ),
            ("header = [\"X-A: 1\"]", &["--header", "X-B: 2"], &["--config", "F", "--header", "X-B: 2"]),
            ("show-hidden = true", &["--allow-hidden"], &["--config", "F", "--allow-hidden"]),
            ("quiet = true", &["-q"], &["--config", "F", "-q"]),
            ("access-log = \"x.log\"", &["-q"], &["--config", "F", "-q"]),
            ("quiet = true", &["--access-log", "x.log"], &["--config", "F", "--access-log", "x.log"]),
            ("root = \"/srv\"", &[], &["--config", "F", "--", "/srv"]),
            ("root = \"/srv\"", &["/here"], &["--config", "F", "/here"]),
            ("grace = 2.5", &[], &["--grace=2.5", "--config", "F"]),
        ];
        for (file, cli, want) in cases {
            assert_eq!(expand_with(file, cli).unwrap(), *want, "{file:?} {cli:?}");
        }
    }

    #[test]
    fn mistakes_table() {
        let cases = [
            ("prot = 8080", "unknown key \"prot\" (did you mean \"port\"?)"),
            ("max-con = 8", "unknown key \"max-con\" (did you mean \"max-conns\"?)"),
            ("roots = \"/srv\"", "unknown key \"roots\" (did you mean \"root\"?)"),
            ("\"<script>\" = 1", "unknown key \"<script>\" (keys are the long flags"),
            ("quiet = true\naccess-log = \"x.log\"", "quiet and access-log cannot both be set"),
            ("config = \"other.toml\"", "unknown key \"config\""),
            ("help = true", "unknown key \"help\""),
            ("port = [1, 2]", "port takes one value"),
            ("compress = \"yes\"", "compress takes true or false"),
            ("port = true", "port takes a string or a number"),
            ("port = 70000", "port = \"70000\": invalid value '70000' for '--port <PORT>'"),
            ("mode = \"evnt\"", "mode = \"evnt\": invalid value 'evnt'"),
            ("head-timeout = \"soon\"", "head-timeout = \"soon\": invalid value"),
            ("root = 3", "root takes a string"),
            ("port = 80\nport = 81", "line 2"),
            ("[serve]\nport = 1", "unknown key \"serve\""),
            ("port = ", "line 1"),
        ];
        for (file, want) in cases {
            let e = expand_with(file, &[]).unwrap_err();
            assert!(e.contains(want) && !e.contains('\n'), "{file:?}: {e}");
        }
        let e = expand(["spidey", "serve", "--config", "/nonexistent.toml"].iter().map(Into::into).collect());
        assert!(e.unwrap_err().0.starts_with("cannot read --config /nonexistent.toml"));
    }

    #[test]
    fn other_commands_are_untouched() {
        let args: Vec<OsString> = ["spidey", "bench", "--config", "x"].iter().map(Into::into).collect();
        assert_eq!(expand(args.clone()).unwrap(), args);
    }
}
