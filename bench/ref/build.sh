#!/usr/bin/env bash
# Builds the reference servers of bench/ref/ (one C file per architecture, see each file's
# header and docs/performance.md, "The reference servers") with gcc -O2 -Wall -Wextra
# -Werror, into OUTDIR (default: target/ref, which git ignores), one binary per name:
#
#   bench/ref/build.sh [OUTDIR [NAME...]]
#   bench/ref/build.sh /tmp/ref                 # all seven
#   bench/ref/build.sh /tmp/ref epoll uring     # those two
#
# NAME is iterative, fork, thread, pool, prefork, epoll or uring. uring links liburing
# (Debian's liburing-dev, for <liburing.h>); without it that one fails to build, saying so.
# Prints each binary's path; exits non-zero if any failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(cd "$here/../.." && pwd)/target/ref}
[ $# -eq 0 ] || shift
names=("$@")
[ "${#names[@]}" -gt 0 ] || names=(iterative fork thread pool prefork epoll uring)
mkdir -p "$out"
status=0
for n in "${names[@]}"; do
  case $n in
    iterative | fork | thread | pool | prefork | epoll) libs=() ;;
    uring) libs=(-luring) ;;
    *) echo "build.sh: no reference server '$n' (iterative fork thread pool prefork epoll uring)" >&2; exit 2 ;;
  esac
  if [ "$n" = uring ] && ! echo '#include <liburing.h>' | gcc -E - >/dev/null 2>&1; then
    echo "build.sh: uring needs <liburing.h>: apt-get install liburing-dev" >&2
    status=1
    continue
  fi
  if gcc -O2 -Wall -Wextra -Werror -pthread -o "$out/$n" "$here/$n.c" "${libs[@]}"; then
    echo "$out/$n"
  else
    status=1
  fi
done
exit $status
