//! The server on another host, reached through a command prefix (`--server-via`).
//!
//! Signalling the prefix's process here does not stop a server there: killing `ssh` only
//! closes the connection, and the SIGHUP a terminal (`ssh -tt`) would send is, to
//! `spidey serve`, the signal to reopen its access log. So the server starts as
//! `PREFIX sh -c 'echo $$; exec "$0" "$@"' SPIDEY ARGS…`: the shell there prints its pid
//! and becomes the server, and the lab stops it with `PREFIX kill -TERM PID`.

use crate::run::via::Via;
use std::process::{Command, Stdio};

/// The shell script that prints its pid and becomes the program after it.
const SCRIPT: &str = "echo $$; exec \"$0\" \"$@\"";

/// A server started through a prefix, by its pid on its host.
#[derive(Debug)]
pub(crate) struct RemoteServer {
    via: Via,
    pid: u32,
}

/// The command that runs `program ARGS` through `via`, its pid on the first line of stdout.
pub(crate) fn command(via: &Via, program: &str, args: &[String]) -> Command {
    let mut words = vec!["-c".to_string(), SCRIPT.to_string(), program.to_string()];
    words.extend(args.iter().cloned());
    via.command_with("sh", &words)
}

impl RemoteServer {
    /// The server whose first line of output was `line`, or None if it is not a pid.
    pub fn from_line(via: &Via, line: &str) -> Option<RemoteServer> {
        let pid: u32 = line.trim().parse().ok()?;
        (pid > 1).then(|| RemoteServer { via: via.untty(), pid })
    }

    /// Sends it SIGTERM on its host; a failure is a warning line.
    pub fn terminate(&self) {
        let out = self.via.command("kill").args(["-TERM", &self.pid.to_string()]).stdin(Stdio::null()).output();
        let why = match out {
            Ok(o) if o.status.success() => return,
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
            Err(e) => e.to_string(),
        };
        eprintln!("spidey lab: warning: cannot stop the server (pid {}) via {}: {why}", self.pid, self.via.name());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Through `env` (a prefix that runs the words as they are) and through an `ssh`
    /// stand-in that, like ssh, hands the joined words to a shell: the program gets the
    /// same arguments, and the first line is the pid of the process that ran it.
    #[test]
    fn the_program_gets_its_arguments_and_the_pid_comes_first() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = dir.path().join("ssh");
        std::fs::write(&ssh, "#!/bin/sh\nshift\nexec sh -c \"$*\"\n").unwrap();
        std::fs::set_permissions(&ssh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let args: Vec<String> = ["a b", "it's", "$HOME", "*", ""].map(String::from).to_vec();
        let script = "echo \"pid $$\"; for a in \"$@\"; do echo \"[$a]\"; done";
        for prefix in ["env".to_string(), format!("{} host", ssh.display())] {
            let via = Via::parse("--server-via", &prefix).unwrap();
            let mut words = vec!["-c".to_string(), script.to_string(), "sh".to_string()];
            words.extend(args.iter().cloned());
            let out = command(&via, "sh", &words).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 2 + args.len(), "{prefix}: {text}");
            let server = RemoteServer::from_line(&via, lines[0]).unwrap_or_else(|| panic!("{prefix}: {text}"));
            assert_eq!(lines[1], format!("pid {}", server.pid), "{prefix}: one process, the pid's");
            let got: Vec<String> = lines[2..].iter().map(|l| l.to_string()).collect();
            let want: Vec<String> = args.iter().map(|a| format!("[{a}]")).collect();
            assert_eq!(got, want, "{prefix}");
        }
    }

    #[test]
    fn pid_line_table() {
        let via = Via::parse("--server-via", "env").unwrap();
        let cases = [("1234\n", Some(1234)), ("1234\r\n", Some(1234)), ("1\n", None), ("spidey listening", None)];
        for (line, want) in cases {
            assert_eq!(RemoteServer::from_line(&via, line).map(|r| r.pid), want, "{line:?}");
        }
    }
}
