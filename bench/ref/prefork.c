/*
 * Reference server: prefork. The parent binds, then forks WORKERS processes (default 16)
 * that each accept on the one listener and serve each connection to its end, one at a
 * time (blocking accept(2): the kernel wakes one waiting worker per connection). The
 * parent only waits: a worker that dies is reaped and replaced; on SIGTERM it ends every
 * worker (they share its process group) and reaps them before it exits. Spidey's
 * `--mode prefork` with `--workers N` (fixed).
 *
 * The HTTP/1.1 exchange is ref.h's, shared by the seven references: GET and HEAD of
 * ROOT's regular files, Content-Length, the body by sendfile(2), keep-alive and close.
 * Left out on purpose: growing and shrinking the pool of workers (Spidey's `--workers
 * MIN-MAX`) and its epoll wait on the listener (EPOLLEXCLUSIVE), timeouts, logs and every
 * HTTP feature ref.h lists as left out.
 *
 *   gcc -O2 -Wall -Wextra -o prefork bench/ref/prefork.c && ./prefork ROOT [PORT] [WORKERS]
 *
 * Binds 127.0.0.1:PORT (0, the default, for any free port), prints
 * "listening on http://127.0.0.1:PORT" once it accepts, and exits 0 on SIGTERM.
 */
#include "ref.h"

static void start_worker(int lfd) {
    pid_t pid = fork();
    if (pid < 0) ref_die("fork");
    if (pid > 0) return;
    ref_child_signals();
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) ref_serve(fd);
    }
}

int main(int argc, char **argv) {
    int workers = 16;
    int port = ref_args(argc, argv, &workers);
    int lfd = ref_listen(port, 0, 0);
    ref_on_term(1); /* SIGCHLD stays unhandled: the wait(2) below reaps */
    ref_announce(lfd);
    for (int i = 0; i < workers; i++) start_worker(lfd);
    for (;;) {
        if (wait(NULL) > 0) start_worker(lfd); /* a worker died: another takes its place */
    }
}
