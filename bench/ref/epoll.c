/*
 * Reference server: an epoll event loop, the floor (bench/floor/floor.c) extended to serve
 * real files. One thread per loop, WORKERS loops (default 1), each with its own listener
 * on the same port (SO_REUSEPORT: the kernel spreads new connections over the loops) and
 * its own level-triggered epoll set; every socket non-blocking. A connection is read into
 * its own 8 KiB buffer; each whole head in it is answered in turn (pipelined requests in
 * order), the head with send(2) and the body with sendfile(2); what the socket cannot
 * take waits for EPOLLOUT, and the connection is not read meanwhile. Spidey's
 * `--mode event` with `--workers N`.
 *
 * The HTTP/1.1 exchange is ref.h's, shared by the seven references: GET and HEAD of
 * ROOT's regular files, Content-Length, the body by sendfile(2), keep-alive and close.
 * Left out on purpose: timers (no idle timeout: an idle client keeps its connection), a
 * cap on connections, logs and every HTTP feature ref.h lists as left out. The file is
 * opened and stat'ed on the loop thread (no cache of open files).
 *
 *   gcc -O2 -Wall -Wextra -pthread -o epoll bench/ref/epoll.c && ./epoll ROOT [PORT] [WORKERS]
 *
 * Binds 127.0.0.1:PORT (0, the default, for any free port), prints
 * "listening on http://127.0.0.1:PORT" once it accepts, and exits 0 on SIGTERM.
 */
#include "ref.h"
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>

struct conn {
    int fd;
    uint32_t events;      /* what the epoll set waits for on fd */
    int sending;          /* `out` is a response not yet all sent */
    size_t have;          /* bytes of input in `in` */
    char in[REF_HEAD_MAX];
    struct ref_reply out;
};

static void drop(struct conn *c) {
    if (c->sending && c->out.file >= 0) close(c->out.file);
    close(c->fd); /* which also takes it out of the epoll set */
    free(c);
}

static void wait_for(int ep, struct conn *c, uint32_t events) {
    if (c->events == events) return;
    c->events = events;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* The connection is readable (not sending) or writable (sending): goes as far as it can. */
static void step(int ep, struct conn *c) {
    if (!c->sending) {
        ssize_t n = read(c->fd, c->in + c->have, sizeof c->in - c->have);
        if (n < 0 && errno == EAGAIN) return;
        if (n <= 0) {
            drop(c);
            return;
        }
        c->have += (size_t)n;
    }
    for (;;) {
        if (c->sending) {
            int sent = ref_send(c->fd, &c->out);
            if (sent == 0) {
                wait_for(ep, c, EPOLLOUT);
                return;
            }
            c->sending = 0;
            if (sent < 0 || c->out.close) {
                drop(c);
                return;
            }
        }
        size_t head = ref_head_end(c->in, c->have);
        if (!head && c->have < sizeof c->in) {
            wait_for(ep, c, EPOLLIN);
            return;
        }
        ref_answer(c->in, head, &c->out);
        c->sending = 1;
        c->have -= head;
        memmove(c->in, c->in + head, c->have);
    }
}

static void *loop(void *listener) {
    int lfd = (int)(intptr_t)listener;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) ref_die("epoll_create1");
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL}, evs[256];
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0) ref_die("epoll_ctl");
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) ref_die("epoll_wait");
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c) {
                step(ep, c);
                continue;
            }
            int fd; /* the listener: take every waiting connection */
            while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                ref_nodelay(fd);
                if (!(c = malloc(sizeof *c))) ref_die("malloc");
                c->fd = fd, c->events = EPOLLIN, c->sending = 0, c->have = 0;
                struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) drop(c);
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int workers = 1;
    int port = ref_args(argc, argv, &workers);
    int lfd = ref_listen(port, SOCK_NONBLOCK, 1);
    ref_on_term(0);
    for (int i = 1; i < workers; i++) {
        pthread_t t;
        int err = pthread_create(&t, NULL, loop, (void *)(intptr_t)ref_listen(ref_port(lfd), SOCK_NONBLOCK, 1));
        if (err) {
            fprintf(stderr, "pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    ref_announce(lfd);
    loop((void *)(intptr_t)lfd);
}
