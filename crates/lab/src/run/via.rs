//! A host as a command prefix (`ssh user@host`, `ip netns exec NAME`): how to run a
//! program there. [`crate::run::hosts`] places the server and the load with it; the server on
//! another host (`remote_server.rs`) and its copied document root (`root_copy.rs`) use it
//! too, so none of them imports the others' module for it.

use spidey_config::ConfigError;
use std::path::Path;
use std::process::Command;

/// A command prefix, split on whitespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Via(Vec<String>);

impl Via {
    /// The prefix that runs a program here, as it is (`env`).
    pub(crate) fn local() -> Via {
        Via(vec!["env".into()])
    }

    pub(crate) fn parse(flag: &str, s: &str) -> Result<Via, ConfigError> {
        let words: Vec<String> = s.split_whitespace().map(String::from).collect();
        if words.is_empty() {
            return Err(ConfigError(format!("{flag} needs a command prefix such as 'ssh user@host'")));
        }
        Ok(Via(words))
    }

    /// `program` run through the prefix.
    pub(crate) fn command(&self, program: &str) -> Command {
        let mut c = Command::new(&self.0[0]);
        c.args(&self.0[1..]).arg(program);
        c
    }

    pub(crate) fn name(&self) -> String {
        self.0.join(" ")
    }

    /// Whether the prefix is `ssh`, which joins the words after it into one command line
    /// for the shell on the other host.
    pub(crate) fn is_ssh(&self) -> bool {
        Path::new(&self.0[0]).file_name().is_some_and(|n| n == "ssh")
    }

    /// `program` with `args` run through the prefix, each word arriving as it is: quoted
    /// for the shell on the other host behind `ssh`, passed as they are otherwise.
    pub(crate) fn command_with(&self, program: &str, args: &[String]) -> Command {
        if !self.is_ssh() {
            let mut c = self.command(program);
            c.args(args);
            return c;
        }
        let mut c = self.command(&shell_quote(program));
        c.args(args.iter().map(|a| shell_quote(a)));
        c
    }

    /// The prefix without a terminal, for a byte stream through stdin and stdout: an `ssh`
    /// prefix loses its `-t` and `-tt` and gets `-T` (a terminal would echo and translate
    /// the bytes); any other prefix is unchanged.
    pub(crate) fn untty(&self) -> Via {
        if !self.is_ssh() {
            return self.clone();
        }
        let mut words = vec![self.0[0].clone(), "-T".into()];
        words.extend(
            self.0[1..]
                .iter()
                .filter(|w| !(w.len() > 1 && w.starts_with('-') && w[1..].bytes().all(|b| b == b't')))
                .cloned(),
        );
        Via(words)
    }
}

/// `word` as one word for a POSIX shell: as it is when it holds only characters no shell
/// treats specially, else in single quotes (each `'` written `'\''`).
fn shell_quote(word: &str) -> String {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"_./:=@%+,-".contains(&b);
    if !word.is_empty() && word.bytes().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}
