# Shared by bench/syscalls.sh and bench/flame.sh (source it, then call small_load_setup):
# WORKLOAD (1k-keepalive, 1k-close, h2c-m32 or h2c-m1) as spidey bench flags in bench_flags, and the CPUs
# the server and the load generator are pinned to, SERVER_CPUS (default 0) and LOAD_CPUS
# (default 1), with the load's taskset prefix in load_pin; on one CPU nothing is pinned.
small_load_setup() {
  case $WORKLOAD in
    1k-keepalive) bench_flags=() ;;
    1k-close) bench_flags=(--no-keepalive) ;;
    # HTTP/2 by prior knowledge, 32 streams per connection (h2load -m32): Spidey's modes
    # serve with --http2 (SPIDEY_SERVE_ARGS).
    h2c-m32)
      bench_flags=(--h2 --streams 32)
      export SPIDEY_SERVE_ARGS="--http2 ${SPIDEY_SERVE_ARGS:-}"
      ;;
    # The same with one stream per connection: every response leaves the connection idle.
    h2c-m1)
      bench_flags=(--h2 --streams 1)
      export SPIDEY_SERVE_ARGS="--http2 ${SPIDEY_SERVE_ARGS:-}"
      ;;
    *) echo "WORKLOAD must be 1k-keepalive, 1k-close, h2c-m32 or h2c-m1, not '$WORKLOAD'" >&2; exit 2 ;;
  esac
  SERVER_CPUS=${SERVER_CPUS:-0}
  LOAD_CPUS=${LOAD_CPUS:-1}
  [ "$(nproc)" -ge 2 ] || SERVER_CPUS="" LOAD_CPUS=""
  load_pin=()
  [ -z "$LOAD_CPUS" ] || load_pin=(taskset -c "$LOAD_CPUS")
}
