//! A network delay line: two network namespaces, a client's and a server's, joined by a pair
//! of TUN devices, with this process carrying every IP packet from one device to the other
//! after a fixed one-way delay. The kernel's TCP on both sides sees the round trip, the
//! handshake included, as it would across a real network. Where the kernel has `sch_netem`,
//! `tc qdisc ... netem delay` does the same inside the kernel; this needs only TUN.
//! Bandwidth, when asked for, is `tbf` on both devices.
//!
//! The addresses are fixed (10.79.0.1 and 10.79.0.2, and 10.79.1.0/30 for the control
//! path): one delay line runs at a time.
//!
//! The delay is calibrated: the line's own cost (a read, a hand-over between threads, a
//! timer's wake-up, a write, in each direction) is measured at the operating point with TCP
//! connects across it, and taken off the sleep, so the round trip a connect measures is the
//! one asked for.

use anyhow::Context;
use spidey_config::ConfigError;
use std::collections::BTreeMap;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::num::NonZeroU64;
use std::os::fd::AsFd;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The client's end of the link.
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 79, 0, 1);
/// The server's end of the link.
pub const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 79, 0, 2);

/// This namespace's end of the control path to the server's namespace.
const CONTROL_HERE: Ipv4Addr = Ipv4Addr::new(10, 79, 1, 1);
/// The server namespace's end of the control path.
const CONTROL_THERE: Ipv4Addr = Ipv4Addr::new(10, 79, 1, 2);

/// The pause between two calibrating connects.
const CALIBRATION_GAP: Duration = Duration::from_millis(2);

/// Calibration measures the line in this many batches and keeps the lowest median
/// (see `DelayLine::steady_rtt`)...
const CALIBRATION_BATCHES: usize = 3;
/// ...of this many connects each.
const CALIBRATION_CONNECTS: usize = 21;

/// How long a forwarding thread with nothing queued waits before it looks at `stop` again.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// The delay line's threads' SCHED_FIFO priority: above ordinary threads, below the
/// kernel's own real-time threads (which use 50 and up).
const REALTIME_PRIORITY: i32 = 10;

/// What the link between client and server should look like.
#[derive(Debug, Clone)]
pub struct LinkSpec {
    /// The round-trip time a TCP connect across the link takes.
    pub rtt: Duration,
    /// A bandwidth limit for each direction in tc's syntax (`100mbit`), if any.
    pub rate: Option<String>,
    /// Prefix of the namespaces (`NAME-client`, `NAME-server`) and devices.
    pub name: String,
}

/// A running delay line; dropping it stops the forwarding and removes the namespaces, the
/// control veth and its route, and returns once they are gone.
pub struct DelayLine {
    spec: LinkSpec,
    one_way_ns: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// The round trip with no delay added: the line's own cost.
    own: Duration,
    /// Each round trip asked for so far, with what a connect measured after calibration.
    measured: Mutex<BTreeMap<Duration, Duration>>,
    /// The round trip asked for now.
    target_ns: AtomicU64,
    /// The one-way sleep each round trip was calibrated to, so a sweep that comes back to a
    /// round trip gets the same line.
    one_way_for: Mutex<BTreeMap<Duration, u64>>,
    /// Stops the thread that removes the line on SIGINT, SIGTERM or SIGHUP.
    on_signal: Option<signal_hook::iterator::Handle>,
}

impl DelayLine {
    /// Creates the namespaces and devices, starts forwarding and calibrates the delay.
    pub fn start(spec: LinkSpec) -> anyhow::Result<DelayLine> {
        if spec.name.is_empty() || spec.name.len() > 12 || !spec.name.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(ConfigError(format!("link name {:?} must be 1 to 12 letters or digits", spec.name)).into());
        }
        let (cns, sns) = (client_ns(&spec.name), server_ns(&spec.name));
        remove_stale_lines(&spec.name)?;
        let on_signal = remove_on_signal(spec.name.clone())?;
        for ns in [&cns, &sns] {
            ip(&["netns", "add", ns])?;
        }
        let mut line = DelayLine {
            one_way_ns: Arc::new(AtomicU64::new(spec.rtt.as_nanos() as u64 / 2)),
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            own: Duration::ZERO,
            measured: Mutex::new(BTreeMap::new()),
            target_ns: AtomicU64::new(0),
            one_way_for: Mutex::new(BTreeMap::new()),
            on_signal: Some(on_signal),
            spec,
        };
        let (cdev, sdev) = (format!("{}c", line.spec.name), format!("{}s", line.spec.name));
        let ctun = spidey_sys::tun::open(&cdev).with_context(|| format!("cannot open TUN device {cdev}"))?;
        let stun = spidey_sys::tun::open(&sdev).with_context(|| format!("cannot open TUN device {sdev}"))?;
        configure(&cns, &cdev, CLIENT_IP, SERVER_IP, line.spec.rate.as_deref())?;
        configure(&sns, &sdev, SERVER_IP, CLIENT_IP, line.spec.rate.as_deref())?;
        control_path(&line.spec.name, &sns)?;
        let (c2, s2) = (ctun.try_clone()?, stun.try_clone()?);
        line.forward(ctun, s2, "client to server");
        line.forward(stun, c2, "server to client");
        line.one_way_ns.store(0, Ordering::Relaxed);
        line.own = line.steady_rtt()?;
        line.retarget(line.spec.rtt)?;
        Ok(line)
    }

    /// The namespace the clients run in.
    pub fn client_ns(&self) -> String {
        client_ns(&self.spec.name)
    }

    /// The namespace the server runs in.
    pub fn server_ns(&self) -> String {
        server_ns(&self.spec.name)
    }

    /// The round trip asked for now.
    pub fn rtt(&self) -> Duration {
        Duration::from_nanos(self.target_ns.load(Ordering::Relaxed))
    }

    /// The line's own round trip, with no delay added (a round trip asked for below it
    /// cannot be had).
    pub fn own_rtt(&self) -> Duration {
        self.own
    }

    /// What a connect measured after calibrating for `rtt` (zero if it was never asked).
    pub fn measured_at(&self, rtt: Duration) -> Duration {
        self.measured.lock().map(|m| m.get(&rtt).copied().unwrap_or_default()).unwrap_or_default()
    }

    /// Carries packets read from `from` to `to` after the one-way delay, in order, on one
    /// thread: it reads every packet that has arrived, stamps it with its time to leave,
    /// writes every packet whose time has come, and sleeps in ppoll(2) until the next one's
    /// time or the next arrival.
    fn forward(&mut self, mut from: File, mut to: File, what: &'static str) {
        let stop = Arc::clone(&self.stop);
        let delay = Arc::clone(&self.one_way_ns);
        self.threads.push(std::thread::spawn(move || {
            // A timer slack of 1 ns (the default 50 µs would be added to every sleep), and
            // real time where allowed, as the kernel's netem runs in softirq: a packet is
            // picked up when it arrives and sent when it is due, not when the scheduler next
            // gets round to this thread.
            let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1));
            let _ = spidey_sys::process::make_thread_realtime(REALTIME_PRIORITY);
            if let Err(e) = rustix::io::ioctl_fionbio(&from, true) {
                return eprintln!("delay line ({what}): {e}");
            }
            let mut queue: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
            let mut buf = vec![0u8; 65536];
            while !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                while queue.front().is_some_and(|(due, _)| *due <= now) {
                    let (_, packet) = queue.pop_front().expect("checked above");
                    // A packet the device refuses (it is down, its queue full) is lost, as
                    // on a wire; TCP resends it.
                    let _ = to.write(&packet);
                }
                let wait = queue.front().map_or(IDLE_WAIT, |(due, _)| due.saturating_duration_since(now));
                let timeout =
                    rustix::event::Timespec { tv_sec: wait.as_secs() as i64, tv_nsec: wait.subsec_nanos() as i64 };
                let mut fds = [rustix::event::PollFd::new(&from, rustix::event::PollFlags::IN)];
                match rustix::event::poll(&mut fds, Some(&timeout)) {
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return eprintln!("delay line ({what}): poll: {e}"),
                }
                loop {
                    match from.read(&mut buf) {
                        Ok(n) => {
                            let due = Instant::now() + Duration::from_nanos(delay.load(Ordering::Relaxed));
                            queue.push_back((due, buf[..n].to_vec()));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        // The device goes with its namespace when the line stops.
                        Err(_) if stop.load(Ordering::Relaxed) => return,
                        Err(e) => return eprintln!("delay line ({what}): read: {e}"),
                    }
                }
            }
        }));
    }

    /// Sets the line to a new round trip, calibrated: the one-way sleep is set so a TCP
    /// connect across the line takes `rtt` (measure at the nominal setting, take the excess
    /// off, measure again). Returns what a connect measured. Below the line's own round
    /// trip, the sleep is zero.
    pub fn retarget(&self, rtt: Duration) -> anyhow::Result<Duration> {
        self.target_ns.store(rtt.as_nanos() as u64, Ordering::Relaxed);
        if let Some(&known) = self.measured.lock().ok().as_ref().and_then(|m| m.get(&rtt)) {
            let one_way = self.one_way_for.lock().ok().and_then(|m| m.get(&rtt).copied()).unwrap_or(0);
            self.one_way_ns.store(one_way, Ordering::Relaxed);
            return Ok(known);
        }
        let target = rtt.as_nanos() as i64;
        let mut one_way = (target - self.own.as_nanos() as i64).max(0) / 2;
        let mut measured = self.own;
        for _ in 0..4 {
            self.one_way_ns.store(one_way.max(0) as u64, Ordering::Relaxed);
            measured = self.steady_rtt()?;
            let excess = measured.as_nanos() as i64 - target;
            if excess.abs() * 50 < target.max(1) || (one_way <= 0 && excess > 0) {
                break;
            }
            one_way = (one_way - excess / 2).max(0);
        }
        if let Ok(mut m) = self.measured.lock() {
            m.insert(rtt, measured);
        }
        if let Ok(mut m) = self.one_way_for.lock() {
            m.insert(rtt, one_way.max(0) as u64);
        }
        Ok(measured)
    }

    /// The round trip of the line when nothing else disturbs it: the lowest of
    /// `CALIBRATION_BATCHES` medians of `CALIBRATION_CONNECTS` connects each. A busy machine
    /// only ever adds time (a thread woken late, a packet written late), so one disturbed
    /// batch must not set the line: calibrating on an inflated round trip would set the
    /// sleep short for every quiet moment after it.
    fn steady_rtt(&self) -> anyhow::Result<Duration> {
        let mut lowest = Duration::MAX;
        for _ in 0..CALIBRATION_BATCHES {
            lowest = lowest.min(self.connect_rtt(CALIBRATION_CONNECTS)?);
        }
        Ok(lowest)
    }

    /// The median time of `n` TCP connects from the client namespace to a listener in the
    /// server namespace (connect returns when the SYN-ACK arrives: one round trip).
    pub fn connect_rtt(&self, n: usize) -> anyhow::Result<Duration> {
        let listener = in_netns(&self.server_ns(), || TcpListener::bind((SERVER_IP, 0)))??;
        let addr = listener.local_addr()?;
        let times = in_netns(&self.client_ns(), move || -> std::io::Result<Vec<Duration>> {
            // Timed at real-time priority, so the time is the link's, not a busy
            // machine's delay in waking this thread.
            let _ = spidey_sys::process::make_thread_realtime(REALTIME_PRIORITY);
            let mut times = Vec::with_capacity(n);
            for _ in 0..n {
                let t = Instant::now();
                let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
                times.push(t.elapsed());
                drop(s);
                let _ = listener.accept();
                // Spaced as a client's packets usually are: a line that has just sent
                // something answers faster than one waking from idle, and calibrating on
                // back-to-back connects alone would set it short for everything else.
                std::thread::sleep(CALIBRATION_GAP);
            }
            Ok(times)
        })??;
        Ok(median(times))
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // The threads see `stop` within IDLE_WAIT; the TUN devices go with their files.
        if let Err(e) = remove_line(&self.spec.name) {
            eprintln!("delay line: {e:#}");
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(h) = self.on_signal.take() {
            h.close();
        }
    }
}

/// A process stopped by SIGINT, SIGTERM or SIGHUP runs no destructor: this thread removes
/// the line (`remove_line`) and then exits with the status the signal would have given, so
/// a stopped lab run leaves nothing behind. SIGKILL cannot be caught: the next line to start
/// removes what a killed one left (`remove_stale_lines`).
fn remove_on_signal(name: String) -> anyhow::Result<signal_hook::iterator::Handle> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let handle = signals.handle();
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            if let Err(e) = remove_line(&name) {
                eprintln!("delay line: {e:#}");
            }
            std::process::exit(128 + sig);
        }
    });
    Ok(handle)
}

/// How long removing a line may take before it is reported as left behind.
const REMOVAL_DEADLINE: Duration = Duration::from_secs(10);

/// The alias the control veth's host end carries (`ip link set dev .. alias ..`): the mark
/// by which a later line knows a line of ours, and the process that made it.
const ALIAS_PREFIX: &str = "spidey-delay-line pid=";

/// Removes everything line `name` made, and waits until it is gone: the processes still
/// running in its namespaces are killed, the host end of the control veth is deleted (the
/// route to the server through it goes with it, at once: deleting a device is synchronous,
/// while a namespace's devices go only when the kernel gets round to destroying the
/// namespace), then the namespaces' names. Removing what is not there is not an error.
fn remove_line(name: &str) -> anyhow::Result<()> {
    let (cns, sns) = (client_ns(name), server_ns(name));
    for ns in [&cns, &sns] {
        kill_inside(ns);
    }
    let here = control_device(name);
    if device_exists(&here) {
        let _ = ip(&["link", "del", "dev", &here]);
    }
    for ns in [&cns, &sns] {
        if Path::new(&format!("/run/netns/{ns}")).exists() {
            let _ = ip(&["netns", "del", ns]);
        }
    }
    let deadline = Instant::now() + REMOVAL_DEADLINE;
    loop {
        let left: Vec<String> = [
            device_exists(&here).then(|| format!("device {here}")),
            Path::new(&format!("/run/netns/{cns}")).exists().then(|| format!("namespace {cns}")),
            Path::new(&format!("/run/netns/{sns}")).exists().then(|| format!("namespace {sns}")),
            route_to_server().filter(|r| r.contains(&format!(" dev {here}"))).map(|r| format!("route {r}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if left.is_empty() {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "delay line {name}: still there {}s after removal: {}",
            REMOVAL_DEADLINE.as_secs(),
            left.join(", ")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Before a line starts: removes a line of the same name, and every line of ours whose
/// process is gone (killed with SIGKILL, say: it ran no clean-up); then refuses, in one
/// line, if the addresses the line needs are taken by something else.
fn remove_stale_lines(name: &str) -> anyhow::Result<()> {
    let ours = lines_of_ours();
    for (device, pid) in &ours {
        if !spidey_is_running(*pid) {
            let stale = device.strip_suffix('r').unwrap_or(device);
            remove_line(stale)?;
            eprintln!("delay line: removed {stale}, left behind by process {pid}, which is gone");
        }
    }
    // A line of this name that carries no mark (stopped before its veth was made) is
    // stale too; one whose process is running is refused below.
    if !ours.iter().any(|(d, pid)| *d == control_device(name) && spidey_is_running(*pid)) {
        remove_line(name)?;
    }
    if let Some(route) = route_to_server() {
        let owner = lines_of_ours().into_iter().find(|(d, _)| route.contains(&format!(" dev {d}")));
        return Err(ConfigError(match owner {
            Some((device, pid)) => format!(
                "another delay line ({}, process {pid}) is running: one runs at a time (its addresses are fixed)",
                device.strip_suffix('r').unwrap_or(&device)
            ),
            None => {
                format!("{SERVER_IP} is already routed here ({route}), not by a delay line: remove that route first")
            }
        })
        .into());
    }
    let taken = Command::new("ip").args(["-o", "addr", "show", "to", &format!("{CONTROL_HERE}/32")]).output()?;
    let taken = String::from_utf8_lossy(&taken.stdout);
    if let Some(line) = taken.lines().next() {
        let device = line.split_whitespace().nth(1).unwrap_or("?");
        return Err(ConfigError(format!(
            "{CONTROL_HERE}, the delay line's control address, is already on device {device}: remove it first"
        ))
        .into());
    }
    Ok(())
}

/// The host ends of control veths a delay line of ours made, with the process that made
/// each (from the alias it carries).
fn lines_of_ours() -> Vec<(String, u32)> {
    let Ok(entries) = std::fs::read_dir("/sys/class/net") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let alias = std::fs::read_to_string(e.path().join("ifalias")).ok()?;
            let pid = alias.trim().strip_prefix(ALIAS_PREFIX)?.parse().ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), pid))
        })
        .collect()
}

/// Whether `pid` is a running Spidey other than this process (a pid reused by another
/// program does not keep a stale line alive).
fn spidey_is_running(pid: u32) -> bool {
    pid != std::process::id()
        && std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end().starts_with("spidey"))
}

/// This namespace's route to the server's address, as `ip route` prints it, if any.
fn route_to_server() -> Option<String> {
    let out = Command::new("ip").args(["route", "show", "to", &format!("{SERVER_IP}/32")]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next().map(|l| l.trim().to_string()).filter(|l| !l.is_empty())
}

fn device_exists(dev: &str) -> bool {
    Path::new(&format!("/sys/class/net/{dev}")).exists()
}

/// The host end of line `name`'s control veth.
fn control_device(name: &str) -> String {
    format!("{name}r")
}

/// SIGKILL to every process in namespace `ns` but this one (`ip netns pids`).
fn kill_inside(ns: &str) {
    if !Path::new(&format!("/run/netns/{ns}")).exists() {
        return;
    }
    let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() else { return };
    let me = std::process::id();
    for pid in String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse::<u32>().ok()) {
        if pid == me {
            continue;
        }
        if let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

fn client_ns(name: &str) -> String {
    format!("{name}-client")
}

fn server_ns(name: &str) -> String {
    format!("{name}-server")
}

/// Moves `dev` into `ns`, gives it `local` with `peer` at the other end, brings it and the
/// namespace's loopback up, and limits its rate with tbf if asked.
fn configure(ns: &str, dev: &str, local: Ipv4Addr, peer: Ipv4Addr, rate: Option<&str>) -> anyhow::Result<()> {
    ip(&["link", "set", "dev", dev, "netns", ns])?;
    ip(&["-n", ns, "addr", "add", &local.to_string(), "peer", &peer.to_string(), "dev", dev])?;
    ip(&["-n", ns, "link", "set", "dev", dev, "up"])?;
    ip(&["-n", ns, "link", "set", "dev", "lo", "up"])?;
    if let Some(rate) = rate {
        command(
            "tc",
            &["-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "64kb", "latency", "100ms"],
        )?;
    }
    Ok(())
}

/// A path from this namespace to the server's, outside the delay line, for the lab's own
/// look at the server (is it up yet?): a veth pair, and a route to the server's address
/// through it. The clients' namespace has only the delay line.
fn control_path(name: &str, sns: &str) -> anyhow::Result<()> {
    let (here, there) = (control_device(name), format!("{name}p"));
    ip(&["link", "add", &here, "type", "veth", "peer", "name", &there, "netns", sns])?;
    ip(&["link", "set", "dev", &here, "alias", &format!("{ALIAS_PREFIX}{}", std::process::id())])?;
    ip(&["addr", "add", &format!("{CONTROL_HERE}/30"), "dev", &here])?;
    ip(&["link", "set", "dev", &here, "up"])?;
    ip(&["-n", sns, "addr", "add", &format!("{CONTROL_THERE}/30"), "dev", &there])?;
    ip(&["-n", sns, "link", "set", "dev", &there, "up"])?;
    ip(&["route", "add", &format!("{SERVER_IP}/32"), "via", &CONTROL_THERE.to_string()])
}

/// Runs `f` on a thread that has joined network namespace `ns` (setns(2) with the file
/// `ip netns` keeps under /run/netns), so the sockets it makes live there.
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> anyhow::Result<T> {
    let file = File::open(format!("/run/netns/{ns}")).with_context(|| format!("no network namespace {ns}"))?;
    std::thread::spawn(move || -> anyhow::Result<T> {
        rustix::thread::move_into_link_name_space(file.as_fd(), Some(rustix::thread::LinkNameSpaceType::Network))
            .context("setns")?;
        Ok(f())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("a thread in {ns} panicked"))?
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn ip(args: &[&str]) -> anyhow::Result<()> {
    command("ip", args)
}

/// Runs a command; its stderr's first line on failure.
fn command(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new(program).args(args).output().with_context(|| format!("cannot run {program}"))?;
    anyhow::ensure!(
        out.status.success(),
        "{program} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or("failed")
    );
    Ok(())
}

/// The flags of `spidey delay-line`.
#[derive(Debug, clap::Args)]
pub struct DelayLineArgs {
    /// The round trip between the namespaces, e.g. `1.5ms`.
    #[arg(long, value_parser = spidey_config::duration)]
    pub rtt: Duration,
    /// Limit each direction's bandwidth (tc's syntax: `100mbit`, `1gbit`).
    #[arg(long)]
    pub rate: Option<String>,
    /// Name of the namespaces: NAME-client and NAME-server.
    #[arg(long, default_value = "spidey")]
    pub name: String,
}

/// `spidey delay-line`: starts the line, prints where things are, and runs until its
/// standard input closes or it gets SIGINT or SIGTERM.
pub fn run(args: DelayLineArgs) -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let line = DelayLine::start(LinkSpec { rtt: args.rtt, rate: args.rate, name: args.name })?;
    println!(
        "delay-line: client netns {} ({CLIENT_IP}), server netns {} ({SERVER_IP}), rtt {:?} (a connect measured {:?})",
        line.client_ns(),
        line.server_ns(),
        line.rtt(),
        line.measured_at(line.rtt())
    );
    println!(
        "delay-line: for the lab: --server-via 'ip netns exec {}' --client-via 'ip netns exec {}' --server-addr {SERVER_IP}",
        line.server_ns(),
        line.client_ns()
    );
    let stdin_closed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stdin_closed);
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        flag.store(true, Ordering::Relaxed);
    });
    while !stop.load(Ordering::Relaxed) && !stdin_closed.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(line);
    Ok(())
}
