/*
 * Reference server: a process per connection. The parent only accepts: each connection
 * is served to its end by a child forked for it, which then exits. The parent reaps every
 * child as it ends (SIGCHLD), so none stays a zombie, and on SIGTERM ends them all (they
 * share its process group) and reaps them before it exits. Spidey's `--mode fork`.
 *
 * The HTTP/1.1 exchange is ref.h's, shared by the seven references: GET and HEAD of
 * ROOT's regular files, Content-Length, the body by sendfile(2), keep-alive and close.
 * Left out on purpose: a cap on children (a crowd of clients is a crowd of processes),
 * timeouts, logs and every HTTP feature ref.h lists as left out.
 *
 *   gcc -O2 -Wall -Wextra -o fork bench/ref/fork.c && ./fork ROOT [PORT]
 *
 * Binds 127.0.0.1:PORT (0, the default, for any free port), prints
 * "listening on http://127.0.0.1:PORT" once it accepts, and exits 0 on SIGTERM.
 */
#include "ref.h"

int main(int argc, char **argv) {
    int port = ref_args(argc, argv, NULL);
    int lfd = ref_listen(port, 0, 0);
    ref_on_term(1);
    ref_reap_on_sigchld();
    ref_announce(lfd);
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        pid_t pid = fork();
        if (pid == 0) {
            ref_child_signals();
            close(lfd);
            ref_serve(fd);
            _exit(0);
        }
        if (pid < 0) perror("fork");
        close(fd);
    }
}
