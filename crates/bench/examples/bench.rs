//! `spidey bench` on its own: the same flags and the same code (`spidey_bench::run`), built
//! without the server and the lab, so that a release build for a measurement takes a few
//! minutes on a busy machine instead of many (bench/bench-vs-h2load.sh uses it):
//!
//!     cargo build --release -p spidey-bench --example bench
//!     target/release/examples/bench --h2 -c 4 --streams 8 -d 3s http://127.0.0.1:8080/file

use clap::Parser;

#[derive(Parser)]
#[command(name = "bench")]
struct Cli {
    #[command(flatten)]
    bench: spidey_bench::BenchArgs,
}

fn main() -> anyhow::Result<()> {
    spidey_bench::run(Cli::parse().bench)
}
