/*
 * Reference server: iterative. One process, one thread: accept a connection, serve it to
 * its end (every request on it, pipelined ones included, until the client closes or asks
 * to), then accept the next. While one client is connected every other waits in the
 * listen queue; that is the architecture (Spidey's `--mode single`).
 *
 * The HTTP/1.1 exchange is ref.h's, shared by the seven references: GET and HEAD of
 * ROOT's regular files, Content-Length, the body by sendfile(2), keep-alive and close.
 * Left out on purpose: timeouts (an idle keep-alive client holds the server until it
 * closes), logs and every HTTP feature ref.h lists as left out.
 *
 *   gcc -O2 -Wall -Wextra -o iterative bench/ref/iterative.c && ./iterative ROOT [PORT]
 *
 * Binds 127.0.0.1:PORT (0, the default, for any free port), prints
 * "listening on http://127.0.0.1:PORT" once it accepts, and exits 0 on SIGTERM.
 */
#include "ref.h"

int main(int argc, char **argv) {
    int port = ref_args(argc, argv, NULL);
    int lfd = ref_listen(port, 0, 0);
    ref_on_term(0);
    ref_announce(lfd);
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) ref_serve(fd);
    }
}
