//! Debian's Python (`/usr/bin/python3`, which has the distribution's `python3-*` modules;
//! the `python3` first on PATH may not) as a test oracle: one script fed commands on
//! stdin, one answer line each.

use std::io::Write;
use std::process::{Command, Stdio};

pub const PYTHON: &str = "/usr/bin/python3";

/// Runs `script` over `input`; its stdout's lines.
pub fn run(script: &str, input: String) -> Vec<String> {
    let mut child = Command::new(PYTHON)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start python");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("python's output");
    writer.join().unwrap().expect("write to python");
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

/// Whether [`PYTHON`] can import `module`; if not, why (the Debian package to install).
pub fn has_module(module: &str, package: &str) -> Result<(), String> {
    let import = format!("import {module}");
    let out = Command::new(PYTHON).args(["-c", &import]).output().map_err(|e| format!("{PYTHON}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{PYTHON} cannot import {module} (apt-get install {package})"))
    }
}
