/*
 * Reference server: a fixed pool of threads fed by a bounded queue. The main thread
 * accepts and queues each connection; WORKERS threads (default 16) each take the oldest
 * queued connection and serve it to its end. While the queue is full the main thread
 * waits before it accepts again, so new clients wait in the kernel's listen queue. While
 * every worker holds a connection (a keep-alive client holds its worker until it closes),
 * queued connections wait. Spidey's `--mode pool` with `--workers N` (fixed).
 *
 * The HTTP/1.1 exchange is ref.h's, shared by the seven references: GET and HEAD of
 * ROOT's regular files, Content-Length, the body by sendfile(2), keep-alive and close.
 * Left out on purpose: growing and shrinking the pool (Spidey's `--workers MIN-MAX`),
 * timeouts, logs and every HTTP feature ref.h lists as left out.
 *
 *   gcc -O2 -Wall -Wextra -pthread -o pool bench/ref/pool.c && ./pool ROOT [PORT] [WORKERS]
 *
 * Binds 127.0.0.1:PORT (0, the default, for any free port), prints
 * "listening on http://127.0.0.1:PORT" once it accepts, and exits 0 on SIGTERM.
 */
#include "ref.h"
#include <pthread.h>

#define QUEUE 1024 /* connections accepted and not yet taken by a worker, at most */

static int queue[QUEUE];
static size_t first, queued;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, room = PTHREAD_COND_INITIALIZER;

static void *worker(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!queued) pthread_cond_wait(&work, &lock);
        int fd = queue[first];
        first = (first + 1) % QUEUE, queued--;
        pthread_cond_signal(&room);
        pthread_mutex_unlock(&lock);
        ref_serve(fd);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int workers = 16;
    int port = ref_args(argc, argv, &workers);
    int lfd = ref_listen(port, 0, 0);
    ref_on_term(0);
    for (int i = 0; i < workers; i++) {
        pthread_t t;
        int err = pthread_create(&t, NULL, worker, NULL);
        if (err) {
            fprintf(stderr, "pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    ref_announce(lfd);
    for (;;) {
        pthread_mutex_lock(&lock);
        while (queued == QUEUE) pthread_cond_wait(&room, &lock);
        pthread_mutex_unlock(&lock);
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        pthread_mutex_lock(&lock);
        queue[(first + queued++) % QUEUE] = fd;
        pthread_cond_signal(&work);
        pthread_mutex_unlock(&lock);
    }
}
