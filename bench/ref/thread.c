/*
 * Reference server: a thread per connection. The main thread only accepts: each
 * connection is served to its end by a new detached thread, which then ends. Spidey's
 * `--mode thread`.
 *
 * The HTTP/1.1 exchange is ref.h's, shared by the seven references: GET and HEAD of
 * ROOT's regular files, Content-Length, the body by sendfile(2), keep-alive and close.
 * Left out on purpose: a cap on threads (Spidey's is a semaphore; here a crowd of clients
 * is a crowd of threads), timeouts, logs and every HTTP feature ref.h lists as left out.
 *
 *   gcc -O2 -Wall -Wextra -pthread -o thread bench/ref/thread.c && ./thread ROOT [PORT]
 *
 * Binds 127.0.0.1:PORT (0, the default, for any free port), prints
 * "listening on http://127.0.0.1:PORT" once it accepts, and exits 0 on SIGTERM.
 */
#include "ref.h"
#include <pthread.h>
#include <stdint.h>

static void *connection(void *fd) {
    ref_serve((int)(intptr_t)fd);
    return NULL;
}

int main(int argc, char **argv) {
    int port = ref_args(argc, argv, NULL);
    int lfd = ref_listen(port, 0, 0);
    ref_on_term(0);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    ref_announce(lfd);
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        pthread_t t;
        int err = pthread_create(&t, &attr, connection, (void *)(intptr_t)fd);
        if (err) {
            fprintf(stderr, "pthread_create: %s\n", strerror(err));
            close(fd);
        }
    }
}
