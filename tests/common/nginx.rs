//! Debian's nginx as a test peer: run in the foreground as one process (no daemon, no
//! master), with its own prefix, temp paths and error log in a temporary directory, on a
//! free loopback port; killed and reaped on drop. Used by the differential test (plain
//! HTTP, autoindex) and the https load-generator tests (ssl, tickets).

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const NGINX: &str = "/usr/sbin/nginx";

pub struct Nginx {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    /// Serves `root` with one `server` block: `listen 127.0.0.1:PORT` followed by
    /// `directives` (e.g. `ssl` and its certificate, or `autoindex on;`); `listen_flags` go
    /// on the listen line (`"ssl"` or `""`). Waits until it accepts connections.
    pub fn start(root: &Path, listen_flags: &str, directives: &str) -> Nginx {
        assert!(
            Path::new(NGINX).exists(),
            "{NGINX} not found: these tests need nginx from Debian's package (apt-get install nginx-light)"
        );
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let d = dir.path().display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log {d}/error.log info;\npid {d}/nginx.pid;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
             default_type application/octet-stream;\n  \
             server {{\n    listen 127.0.0.1:{port} {listen_flags};\n    root {};\n    {directives}\n  }}\n}}\n",
            root.display()
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = Command::new(NGINX)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {NGINX} (apt-get install nginx-light): {e}"));
        let mut nginx = Nginx { child, port, dir };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = nginx.child.try_wait() {
                let log = std::fs::read_to_string(nginx.dir.path().join("error.log")).unwrap_or_default();
                panic!("nginx exited at start ({status}):\n{log}");
            }
            assert!(start.elapsed() < Duration::from_secs(10), "nginx did not listen on {port} within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
